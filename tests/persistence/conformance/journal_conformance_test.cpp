// Journal contract, for every plugin: round trips, atomic multi-event appends, conflicts between
// concurrent writers (never an interleaved history), ranges, deletes, malformed requests.
#include "persistence/conformance/store_fixture.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace troupe::persistence::conformance {
namespace {

template <class Factory>
class StoreJournal : public store_test<Factory> {};
TYPED_TEST_SUITE(StoreJournal, all_plugins, plugin_names);

TYPED_TEST(StoreJournal, AppendsAndReadsBackEventsWithManifestPayloadAndEpoch) {
  append_request r{"cart-1", 1, {value_of("added", 3), {{"test.empty", 1}, {}}}, 7, std::nullopt};
  EXPECT_EQ(this->journal().async_append(r, use_future).get(), 2U);
  auto events = this->journal().async_read({"cart-1"}, use_future).get();
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(events[0], (event_record{1, value_of("added", 3), 7}));
  EXPECT_EQ(events[1], (event_record{2, {{"test.empty", 1}, {}}, 7}));
  EXPECT_EQ(this->journal().async_highest_sequence_nr("cart-1", use_future).get(), 2U);
  EXPECT_EQ(this->journal().async_highest_sequence_nr("cart-2", use_future).get(), 0U);
  EXPECT_TRUE(this->journal().async_read({"cart-2"}, use_future).get().empty());
}

TYPED_TEST(StoreJournal, ReadsARangeBoundedByFromToAndMaxCount) {
  this->append("p", 1, {"a", "b", "c", "d", "e"});
  EXPECT_EQ(this->read_texts("p", 2, 4), (std::vector<std::string>{"b", "c", "d"}));
  auto first_two = this->journal().async_read({"p", 2, max_sequence_nr, 2}, use_future).get();
  ASSERT_EQ(first_two.size(), 2U);
  EXPECT_EQ(first_two[1].sequence, 3U);
  EXPECT_TRUE(this->read_texts("p", 4, 3).empty());
  EXPECT_TRUE(this->read_texts("p", 9).empty());
}

TYPED_TEST(StoreJournal, RefusesAnAppendWithAStaleExpectedSequenceNumberAndWritesNothing) {
  this->append("p", 1, {"a", "b"});
  append_request stale{"p", 2, {value_of("x"), value_of("y")}, 0, std::nullopt};
  EXPECT_EQ(error_of(this->journal().async_append(stale, use_future)), errc::sequence_conflict);
  append_request gap{"p", 4, {value_of("x")}, 0, std::nullopt};
  EXPECT_EQ(error_of(this->journal().async_append(gap, use_future)), errc::sequence_conflict);
  EXPECT_EQ(this->read_texts("p"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(this->append("p", 3, {"c"}), 3U);
}

TYPED_TEST(StoreJournal, ConcurrentWritersNeverInterleaveTheirBatches) {
  constexpr int writers = 4;
  constexpr int attempts = 25;
  std::vector<int> successes(writers, 0);
  std::atomic<bool> writing{true};
  // A reader beside the writers only ever sees whole batches.
  std::thread reader([this, &writing] {
    while (writing.load()) {
      auto seen = this->journal().async_read({"shared"}, use_future).get().size();
      EXPECT_EQ(seen % 3, 0U) << "a read saw part of an atomic append";
    }
  });
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([this, w, &successes] {
      for (int i = 0; i < attempts; ++i) {
        auto next = this->journal().async_highest_sequence_nr("shared", use_future).get() + 1;
        append_request r{"shared", next, {}, 0, std::nullopt};
        for (int part = 0; part < 3; ++part) {
          r.events.push_back(
              value_of(std::to_string(w) + "/" + std::to_string(i) + "/" + std::to_string(part)));
        }
        auto outcome = error_of(this->journal().async_append(std::move(r), use_future));
        if (outcome == errc{}) {
          ++successes[static_cast<std::size_t>(w)];
        } else {
          EXPECT_EQ(outcome, errc::sequence_conflict);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  writing = false;
  reader.join();

  auto events = this->journal().async_read({"shared"}, use_future).get();
  int total = 0;
  for (int s : successes) total += s;
  ASSERT_EQ(events.size(), static_cast<std::size_t>(total) * 3);
  for (std::size_t i = 0; i < events.size(); i += 3) {
    // Each batch: three parts of one writer's attempt, in order, at consecutive numbers.
    auto head = text_of(events[i].event);
    auto prefix = head.substr(0, head.rfind('/') + 1);
    for (std::size_t part = 0; part < 3; ++part) {
      EXPECT_EQ(events[i + part].sequence, i + part + 1);
      EXPECT_EQ(text_of(events[i + part].event), prefix + std::to_string(part));
    }
  }
}

TYPED_TEST(StoreJournal, ARefusedAppendInABurstFailsAloneAndTheOthersCommit) {
  // Queued all at once, so a plugin with group commit takes them as one or a few groups: a stale
  // sequence number, a fenced epoch and a duplicate among many good appends (several of them to
  // one id, in order) fail alone, each with its own error.
  this->append("stale", 1, {"s1", "s2"});
  this->append("fenced", 1, {"f1"}, 5);
  std::vector<std::future<sequence_nr>> good;
  auto queue_good = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      auto pid = "id-" + std::to_string(i);
      good.push_back(
          this->journal().async_append({pid, 1, {value_of(pid)}, 0, std::nullopt}, use_future));
    }
  };
  queue_good(0, 150);
  auto stale =
      this->journal().async_append({"stale", 2, {value_of("x")}, 0, std::nullopt}, use_future);
  auto chain_1 =
      this->journal().async_append({"chain", 1, {value_of("c1")}, 0, std::nullopt}, use_future);
  auto fenced =
      this->journal().async_append({"fenced", 2, {value_of("x")}, 4, std::nullopt}, use_future);
  auto chain_2 = this->journal().async_append(
      {"chain", 2, {value_of("c2"), value_of("c3")}, 0, std::nullopt}, use_future);
  auto duplicate =
      this->journal().async_append({"chain", 2, {value_of("dup")}, 0, std::nullopt}, use_future);
  auto raising =
      this->journal().async_append({"fenced", 2, {value_of("f2")}, 6, std::nullopt}, use_future);
  queue_good(150, 300);

  EXPECT_EQ(error_of(std::move(stale)), errc::sequence_conflict);
  EXPECT_EQ(error_of(std::move(fenced)), errc::epoch_fenced);
  EXPECT_EQ(error_of(std::move(duplicate)), errc::sequence_conflict);
  EXPECT_EQ(chain_1.get(), 1U);
  EXPECT_EQ(chain_2.get(), 3U);
  EXPECT_EQ(raising.get(), 2U);
  for (auto& f : good) EXPECT_EQ(f.get(), 1U);
  EXPECT_EQ(this->read_texts("stale"), (std::vector<std::string>{"s1", "s2"}));
  EXPECT_EQ(this->read_texts("chain"), (std::vector<std::string>{"c1", "c2", "c3"}));
  EXPECT_EQ(this->read_texts("fenced"), (std::vector<std::string>{"f1", "f2"}));
  EXPECT_EQ(this->read_texts("id-299"), (std::vector<std::string>{"id-299"}));
  // The fence rose with the last write, and a write at the old epoch is refused now.
  EXPECT_EQ(error_of(this->journal().async_append({"fenced", 3, {value_of("x")}, 5, std::nullopt},
                                                  use_future)),
            errc::epoch_fenced);
}

TYPED_TEST(StoreJournal, DeletesUpToASequenceNumberAndKeepsTheHighest) {
  this->append("p", 1, {"a", "b", "c"});
  this->journal().async_delete_to({"p", 2, 0}, use_future).get();
  EXPECT_EQ(this->read_texts("p"), (std::vector<std::string>{"c"}));
  this->journal().async_delete_to({"p", max_sequence_nr, 0}, use_future).get();
  EXPECT_TRUE(this->read_texts("p").empty());
  EXPECT_EQ(this->journal().async_highest_sequence_nr("p", use_future).get(), 3U);
  EXPECT_EQ(error_of(this->journal().async_append({"p", 1, {value_of("again")}, 0, std::nullopt},
                                                  use_future)),
            errc::sequence_conflict);
  EXPECT_EQ(this->append("p", 4, {"d"}), 4U);
}

TYPED_TEST(StoreJournal, RefusesMalformedRequestsBeforeTheyReachTheStore) {
  EXPECT_EQ(
      error_of(this->journal().async_append({"", 1, {value_of("a")}, 0, std::nullopt}, use_future)),
      errc::invalid_request);
  EXPECT_EQ(error_of(this->journal().async_append({"p", 1, {}, 0, std::nullopt}, use_future)),
            errc::invalid_request);
  EXPECT_EQ(error_of(this->journal().async_append({"p", 0, {value_of("a")}, 0, std::nullopt},
                                                  use_future)),
            errc::invalid_request);
  EXPECT_EQ(error_of(this->journal().async_append({"p", 1, {{{"", 1}, {}}}, 0, std::nullopt},
                                                  use_future)),
            errc::invalid_request);
  EXPECT_EQ(error_of(this->journal().async_read({""}, use_future)), errc::invalid_request);
  EXPECT_EQ(this->journal().async_highest_sequence_nr("p", use_future).get(), 0U);
}

TYPED_TEST(StoreJournal, ReportsACorruptStoredEventAsAnErrorAndKeepsServingTheRest) {
  this->append("p", 1, {"a", "b", "c"});
  this->append("other", 1, {"x"});
  ASSERT_TRUE(this->factory().corrupt_event("p", 2));
  EXPECT_EQ(error_of(this->journal().async_read({"p"}, use_future)), errc::corrupt_record);
  EXPECT_EQ(this->read_texts("p", 3), (std::vector<std::string>{"c"}));
  EXPECT_EQ(this->read_texts("other"), (std::vector<std::string>{"x"}));
  EXPECT_EQ(this->append("p", 4, {"d"}), 4U);
}

}  // namespace
}  // namespace troupe::persistence::conformance
