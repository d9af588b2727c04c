// The shard fence, for every plugin: a new owner raises a shard's fence to its allocation's epoch,
// after which a write naming the shard commits only at that epoch. A stale owner's write either
// commits before the raise (and the new owner's recovery read sees it) or fails with
// errc::epoch_fenced and stores nothing.
#include "persistence/conformance/store_fixture.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace troupe::persistence::conformance {
namespace {

template <class Factory>
class StoreShardFence : public store_test<Factory> {
 protected:
  static fence_raise raise(plugin& p, const std::string& type, std::uint32_t shard,
                           ownership_epoch epoch) {
    return p.async_raise_shard_fence({{type, shard}, epoch}, use_future).get();
  }
  /// A raise that keeps trying while the store is busy, as a new owner's recovery does: a
  /// second SQLite connection can wait out its busy timeout behind writers that keep the
  /// file's write lock (slow under ThreadSanitizer).
  static fence_raise raise_until_answered(plugin& p, const std::string& type, std::uint32_t shard,
                                          ownership_epoch epoch) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
      try {
        return raise(p, type, shard, epoch);
      } catch (const persistence_error& e) {
        if (e.value() != errc::store_failure || std::chrono::steady_clock::now() > deadline) {
          throw;
        }
      }
    }
  }
  fence_raise raise(const std::string& type, std::uint32_t shard, ownership_epoch epoch) {
    return raise(this->store(), type, shard, epoch);
  }

  /// Appends one event to `pid` as a write of (type, shard) at `epoch`.
  errc append_fenced(const std::string& pid, sequence_nr next, const std::string& text,
                     const std::string& type, std::uint32_t shard, ownership_epoch epoch) {
    append_request r{pid, next, {value_of(text)}, epoch, fenced_shard{type, shard}};
    return error_of(this->journal().async_append(std::move(r), use_future));
  }
  errc save_fenced(const std::string& pid, const std::string& type, std::uint32_t shard,
                   ownership_epoch epoch) {
    snapshot_write w{pid, 1, value_of("snap"), epoch, fenced_shard{type, shard}};
    return error_of(this->snapshots().async_save(std::move(w), use_future));
  }
  errc upsert_fenced(const std::string& pid, revision_nr expected, const std::string& type,
                     std::uint32_t shard, ownership_epoch epoch) {
    state_write w{pid, expected, value_of("state"), epoch, fenced_shard{type, shard}};
    return error_of(this->states().async_upsert(std::move(w), use_future));
  }
  errc remember_fenced(const std::string& id, const std::string& type, std::uint32_t shard,
                       ownership_epoch epoch) {
    remember_update u{type, shard, {id}, {}, epoch, fenced_shard{type, shard}};
    return error_of(this->remembered().async_update(std::move(u), use_future));
  }
};
TYPED_TEST_SUITE(StoreShardFence, all_plugins, plugin_names);

TYPED_TEST(StoreShardFence, WritesAtTheRaisedEpochSucceed) {
  EXPECT_EQ(this->raise("cart", 1, 5), fence_raise::raised);
  EXPECT_EQ(this->append_fenced("cart-a", 1, "e1", "cart", 1, 5), errc{});
  EXPECT_EQ(this->append_fenced("cart-a", 2, "e2", "cart", 1, 5), errc{});
  EXPECT_EQ(this->save_fenced("cart-a", "cart", 1, 5), errc{});
  EXPECT_EQ(this->upsert_fenced("cart-b", 0, "cart", 1, 5), errc{});
  EXPECT_EQ(this->remember_fenced("a", "cart", 1, 5), errc{});
  EXPECT_EQ(this->read_texts("cart-a"), (std::vector<std::string>{"e1", "e2"}));
  auto events = this->journal().async_read({"cart-a"}, use_future).get();
  EXPECT_EQ(events.at(0).epoch, 5U);
  EXPECT_EQ(this->states().async_get("cart-b", use_future).get()->revision, 1U);
}

TYPED_TEST(StoreShardFence, AStaleOwnersWritesAreFencedAndStoreNothing) {
  ASSERT_EQ(this->raise("cart", 1, 5), fence_raise::raised);
  ASSERT_EQ(this->append_fenced("cart-a", 1, "old owner", "cart", 1, 5), errc{});
  // A new owner takes the shard over.
  auto new_owner = this->factory().open();
  ASSERT_EQ(this->raise(*new_owner, "cart", 1, 6), fence_raise::raised);

  EXPECT_EQ(this->append_fenced("cart-a", 2, "stale", "cart", 1, 5), errc::epoch_fenced);
  EXPECT_EQ(this->append_fenced("cart-c", 1, "stale", "cart", 1, 5), errc::epoch_fenced);
  EXPECT_EQ(this->save_fenced("cart-a", "cart", 1, 5), errc::epoch_fenced);
  EXPECT_EQ(this->upsert_fenced("cart-b", 0, "cart", 1, 5), errc::epoch_fenced);
  EXPECT_EQ(this->remember_fenced("a", "cart", 1, 5), errc::epoch_fenced);

  EXPECT_EQ(this->read_texts("cart-a"), (std::vector<std::string>{"old owner"}));
  EXPECT_TRUE(this->read_texts("cart-c").empty());
  EXPECT_EQ(this->journal().async_highest_sequence_nr("cart-c", use_future).get(), 0U);
  EXPECT_FALSE(this->snapshots().async_load({"cart-a"}, use_future).get());
  EXPECT_FALSE(this->states().async_get("cart-b", use_future).get());
  EXPECT_TRUE(this->remembered().async_list({"cart", 1}, use_future).get().empty());
  // The new owner continues where the old one stopped.
  EXPECT_EQ(this->append_fenced("cart-a", 2, "new owner", "cart", 1, 6), errc{});
  EXPECT_EQ(this->read_texts("cart-a"), (std::vector<std::string>{"old owner", "new owner"}));
}

TYPED_TEST(StoreShardFence, AWriteCommitsOnlyAtTheFencesEpoch) {
  // Never raised: no owner may write in the shard's name.
  EXPECT_EQ(this->append_fenced("cart-a", 1, "x", "cart", 1, 0), errc::epoch_fenced);
  ASSERT_EQ(this->raise("cart", 1, 3), fence_raise::raised);
  // An owner that has not raised the fence to its own epoch yet is refused too.
  EXPECT_EQ(this->append_fenced("cart-a", 1, "x", "cart", 1, 4), errc::epoch_fenced);
  EXPECT_TRUE(this->read_texts("cart-a").empty());
  EXPECT_EQ(this->append_fenced("cart-a", 1, "y", "cart", 1, 3), errc{});
}

TYPED_TEST(StoreShardFence, RaisingToAnOlderEpochIsSuperseded) {
  ASSERT_EQ(this->raise("cart", 1, 7), fence_raise::raised);
  EXPECT_EQ(this->raise("cart", 1, 3), fence_raise::superseded);
  EXPECT_EQ(this->raise("cart", 1, 0), fence_raise::superseded);
  // The fence stayed at 7.
  EXPECT_EQ(this->append_fenced("cart-a", 1, "at 7", "cart", 1, 7), errc{});
  EXPECT_EQ(this->append_fenced("cart-a", 2, "at 3", "cart", 1, 3), errc::epoch_fenced);
}

TYPED_TEST(StoreShardFence, RaisingToTheSameEpochAgainIsIdempotent) {
  ASSERT_EQ(this->raise("cart", 1, 4), fence_raise::raised);
  EXPECT_EQ(this->append_fenced("cart-a", 1, "one", "cart", 1, 4), errc{});
  EXPECT_EQ(this->raise("cart", 1, 4), fence_raise::raised);
  auto other = this->factory().open();
  EXPECT_EQ(this->raise(*other, "cart", 1, 4), fence_raise::raised);
  EXPECT_EQ(this->append_fenced("cart-a", 2, "two", "cart", 1, 4), errc{});
  EXPECT_EQ(this->read_texts("cart-a"), (std::vector<std::string>{"one", "two"}));
}

TYPED_TEST(StoreShardFence, FencesOfDifferentShardsAndTypesAreIndependent) {
  ASSERT_EQ(this->raise("cart", 1, 9), fence_raise::raised);
  EXPECT_EQ(this->raise("cart", 2, 1), fence_raise::raised);
  EXPECT_EQ(this->raise("user", 1, 1), fence_raise::raised);
  // Type names that could collide if joined carelessly.
  EXPECT_EQ(this->raise("cart:1", 1, 2), fence_raise::raised);
  EXPECT_EQ(this->append_fenced("cart-x", 1, "x", "cart", 2, 1), errc{});
  EXPECT_EQ(this->append_fenced("user-x", 1, "x", "user", 1, 1), errc{});
  EXPECT_EQ(this->append_fenced("cart-y", 1, "y", "cart", 1, 1), errc::epoch_fenced);
  EXPECT_EQ(this->append_fenced("odd-y", 1, "y", "cart:1", 1, 2), errc{});
  EXPECT_EQ(this->append_fenced("cart-z", 1, "z", "cart", 3, 1), errc::epoch_fenced);
  // The remember-entities store's own per-shard fence is a different thing: raising a shard
  // fence does not touch it, and updates without a shard fence behave as before.
  this->remembered().async_update({"cart", 1, {"r"}, {}, 0, std::nullopt}, use_future).get();
  EXPECT_EQ(this->remembered().async_list({"cart", 1}, use_future).get(),
            (std::vector<std::string>{"r"}));
}

TYPED_TEST(StoreShardFence, WritesWithoutAShardFenceBehaveAsBefore) {
  ASSERT_EQ(this->raise("cart", 1, 9), fence_raise::raised);
  // A single node's entity of the same shard names no shard fence: only the per-id fence applies.
  EXPECT_EQ(this->append("cart-a", 1, {"plain"}, 0), 1U);
  this->states().async_upsert({"cart-b", 0, value_of("v"), 0, std::nullopt}, use_future).get();
  EXPECT_EQ(this->read_texts("cart-a"), (std::vector<std::string>{"plain"}));
}

TYPED_TEST(StoreShardFence, TheFenceSurvivesReopening) {
  ASSERT_EQ(this->raise("cart", 1, 8), fence_raise::raised);
  this->reopen();
  EXPECT_EQ(this->raise("cart", 1, 7), fence_raise::superseded);
  EXPECT_EQ(this->append_fenced("cart-a", 1, "x", "cart", 1, 7), errc::epoch_fenced);
  EXPECT_EQ(this->append_fenced("cart-a", 1, "x", "cart", 1, 8), errc{});
}

TYPED_TEST(StoreShardFence, RefusesMalformedFenceRequests) {
  EXPECT_EQ(error_of(this->store().async_raise_shard_fence({{"", 1}, 1}, use_future)),
            errc::invalid_request);
  // A remember-entities update can check only its own shard's fence.
  remember_update u{"cart", 1, {"a"}, {}, 1, fenced_shard{"cart", 2}};
  EXPECT_EQ(error_of(this->remembered().async_update(std::move(u), use_future)),
            errc::invalid_request);
  append_request r{"cart-a", 1, {value_of("x")}, 1, fenced_shard{"", 1}};
  EXPECT_EQ(error_of(this->journal().async_append(std::move(r), use_future)),
            errc::invalid_request);
}

// Stale writers (the old owner, one plugin) append as fast as they can while the new owner (a
// second plugin over the same storage, as another node) raises the fence and reads back, as its
// recovery would. Every acknowledged append must be in that recovery read; nothing refused may
// be stored; no append started after the raise completed may succeed.
TYPED_TEST(StoreShardFence, AStaleWriterRacingARaiseNeverCommitsAfterIt) {
  constexpr int iterations = 40;
  constexpr int writers = 3;
  auto new_owner = this->factory().open();
  for (int it = 0; it < iterations; ++it) {
    const auto shard = static_cast<std::uint32_t>(it);
    ASSERT_EQ(this->raise("race", shard, 1), fence_raise::raised);
    std::atomic<int> acked_total{0};
    std::atomic<bool> raised{false};
    std::atomic<bool> abandon{false};  // the test failed early: writers stop at once
    std::vector<std::vector<sequence_nr>> acked(writers);
    std::vector<int> late_successes(writers, 0);
    std::vector<errc> last_errors(writers, errc{});
    std::vector<std::thread> threads;
    // Joins the writers on every way out, a failed assertion or a throw included (a joinable
    // thread destroyed would terminate the test binary and hide the failure).
    struct join_on_exit {
      std::atomic<bool>& abandon;
      std::vector<std::thread>& threads;
      ~join_on_exit() {
        abandon.store(true);
        for (auto& t : threads) {
          if (t.joinable()) t.join();
        }
      }
    } joiner{abandon, threads};
    for (int w = 0; w < writers; ++w) {
      threads.emplace_back([&, w] {
        const std::string pid = "race-" + std::to_string(it) + "-" + std::to_string(w);
        for (sequence_nr next = 1; !abandon.load(); ++next) {
          const bool after_raise = raised.load(std::memory_order_acquire);
          auto e = this->append_fenced(pid, next, "e" + std::to_string(next), "race", shard, 1);
          if (e != errc{}) {
            last_errors[w] = e;
            return;
          }
          acked[w].push_back(next);
          acked_total.fetch_add(1, std::memory_order_release);
          if (after_raise) {
            ++late_successes[w];  // a broken fence: stop rather than write forever
            return;
          }
        }
      });
    }
    // Let the writers get going (no sleep: wait for their first acknowledgements).
    const auto started_by = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (acked_total.load(std::memory_order_acquire) < writers &&
           std::chrono::steady_clock::now() < started_by) {
      std::this_thread::yield();
    }
    ASSERT_GE(acked_total.load(), writers) << "the writers never got going";
    ASSERT_EQ(this->raise_until_answered(*new_owner, "race", shard, 2), fence_raise::raised);
    raised.store(true, std::memory_order_release);
    // The new owner's recovery read, right after its raise.
    std::vector<std::vector<event_record>> recovered(writers);
    for (int w = 0; w < writers; ++w) {
      const std::string pid = "race-" + std::to_string(it) + "-" + std::to_string(w);
      recovered[w] = new_owner->journal().async_read({pid}, use_future).get();
    }
    for (auto& t : threads) t.join();
    for (int w = 0; w < writers; ++w) {
      SCOPED_TRACE("iteration " + std::to_string(it) + ", writer " + std::to_string(w));
      if (late_successes[w] == 0) {
        EXPECT_EQ(last_errors[w], errc::epoch_fenced);
      }
      EXPECT_EQ(late_successes[w], 0);
      std::vector<sequence_nr> seen;
      for (const auto& e : recovered[w]) {
        seen.push_back(e.sequence);
        EXPECT_EQ(e.epoch, 1U);
      }
      // Exactly the acknowledged appends: none lost, none refused yet stored.
      EXPECT_EQ(seen, acked[w]);
      const std::string pid = "race-" + std::to_string(it) + "-" + std::to_string(w);
      EXPECT_EQ(new_owner->journal().async_read({pid}, use_future).get().size(), acked[w].size());
    }
  }
}

}  // namespace
}  // namespace troupe::persistence::conformance
