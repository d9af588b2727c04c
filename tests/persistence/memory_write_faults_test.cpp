// Write faults injected into the in-memory plugin (a disk that refuses a write, loses its answer,
// or is slow), as the whole-cluster simulation uses them: what each does to the journal and to
// the writer, that a slow write meets the fences as they stand when it is done, and that closing
// the plugin fails what it still holds back.
#include <troupe/persistence/errc.hpp>
#include <troupe/persistence/memory_plugin.hpp>

#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <future>

namespace troupe::persistence {
namespace {

using namespace std::chrono_literals;
using boost::asio::use_future;

serialized text(const std::string& s) {
  return {{"test.text", 1},
          std::vector<std::byte>(reinterpret_cast<const std::byte*>(s.data()),
                                 reinterpret_cast<const std::byte*>(s.data()) + s.size())};
}

template <class T>
std::error_code error_of(std::future<T>& f) {
  try {
    f.get();
  } catch (const persistence_error& e) {
    return e.code();
  }
  return {};
}

/// A plugin whose appends take their faults, in order, from `faults` (none once it is empty).
struct faulty_store {
  std::shared_ptr<memory_storage> storage = make_memory_storage();
  std::shared_ptr<manual_clock> clock = std::make_shared<manual_clock>();
  std::shared_ptr<std::deque<write_fault>> faults = std::make_shared<std::deque<write_fault>>();
  std::unique_ptr<plugin> store = make_memory_plugin(
      storage,
      [faults = faults](const append_request&) {
        if (faults->empty()) return write_fault{};
        auto f = faults->front();
        faults->pop_front();
        return f;
      },
      clock);

  std::future<sequence_nr> append(const std::string& pid, sequence_nr next,
                                  ownership_epoch epoch = 0) {
    return store->journal().async_append(append_request{pid, next, {text("e")}, epoch, {}},
                                         use_future);
  }
  sequence_nr highest(const std::string& pid) {
    return store->journal().async_highest_sequence_nr(pid, use_future).get();
  }
};

TEST(MemoryWriteFaults, ARefusedWriteStoresNothingAndFailsWithStoreFailure) {
  faulty_store s;
  s.faults->push_back({.fail = true});
  auto refused = s.append("p", 1);
  EXPECT_EQ(error_of(refused), make_error_code(errc::store_failure));
  EXPECT_EQ(s.highest("p"), 0U);
  EXPECT_EQ(s.append("p", 1).get(), 1U);  // the next write goes through
}

TEST(MemoryWriteFaults, AWriteWhoseAnswerIsLostIsStoredYetFails) {
  faulty_store s;
  s.faults->push_back({.answer_lost = true});
  auto lost = s.append("p", 1);
  EXPECT_EQ(error_of(lost), make_error_code(errc::store_failure));
  EXPECT_EQ(s.highest("p"), 1U);
  auto again = s.append("p", 1);  // a writer that retries as if nothing were stored
  EXPECT_EQ(error_of(again), make_error_code(errc::sequence_conflict));
}

TEST(MemoryWriteFaults, ASlowWriteIsDoneAndAnsweredOnlyWhenItsDelayHasPassed) {
  faulty_store s;
  s.faults->push_back({.delay = 300ms});
  auto slow = s.append("p", 1);
  s.clock->advance(299ms);
  EXPECT_EQ(slow.wait_for(0s), std::future_status::timeout);
  EXPECT_EQ(s.highest("p"), 0U);
  s.clock->advance(1ms);
  EXPECT_EQ(slow.get(), 1U);
  EXPECT_EQ(s.highest("p"), 1U);
}

TEST(MemoryWriteFaults, ASlowWriteMeetsTheFenceRaisedWhileItWaited) {
  faulty_store s;
  const fenced_shard shard{"cart", 3};
  ASSERT_EQ(s.store->async_raise_shard_fence({shard, 5}, use_future).get(), fence_raise::raised);
  s.faults->push_back({.delay = 1s});
  auto stale =
      s.store->journal().async_append(append_request{"p", 1, {text("e")}, 5, shard}, use_future);
  // A new owner raises the fence while the old owner's write is still on its way to the disk.
  ASSERT_EQ(s.store->async_raise_shard_fence({shard, 6}, use_future).get(), fence_raise::raised);
  s.clock->advance(1s);
  EXPECT_EQ(error_of(stale), make_error_code(errc::epoch_fenced));
  EXPECT_EQ(s.highest("p"), 0U);
}

TEST(MemoryWriteFaults, ClosingThePluginFailsTheWritesItHoldsBack) {
  faulty_store s;
  s.faults->push_back({.delay = 1s});
  auto slow = s.append("p", 1);
  s.store.reset();
  EXPECT_EQ(error_of(slow), make_error_code(errc::store_closed));
  EXPECT_EQ(s.clock->pending(), 0U);
  s.clock->advance(2s);  // nothing left to run
  auto reopened = make_memory_plugin(s.storage);
  EXPECT_EQ(reopened->journal().async_highest_sequence_nr("p", use_future).get(), 0U);
}

TEST(MemoryWriteFaults, APolicyNeedsAClock) {
  EXPECT_THROW(
      (void)make_memory_plugin(
          make_memory_storage(), [](const append_request&) { return write_fault{}; }, nullptr),
      persistence_error);
}

}  // namespace
}  // namespace troupe::persistence
