// Snapshot, durable state and remember-entities contracts, for every plugin.
#include "persistence/conformance/store_fixture.hpp"

#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace troupe::persistence::conformance {
namespace {

template <class Factory>
class StoreSnapshots : public store_test<Factory> {};
TYPED_TEST_SUITE(StoreSnapshots, all_plugins, plugin_names);

TYPED_TEST(StoreSnapshots, LoadsTheLatestOrTheLatestAtOrBelowASequenceNumber) {
  auto& s = this->snapshots();
  EXPECT_EQ(s.async_load({"p"}, use_future).get(), std::nullopt);
  for (sequence_nr seq : {10U, 20U, 30U}) {
    s.async_save({"p", seq, value_of("at " + std::to_string(seq)), 2, std::nullopt}, use_future)
        .get();
  }
  EXPECT_EQ(s.async_load({"p"}, use_future).get(), (snapshot_record{30, value_of("at 30"), 2}));
  EXPECT_EQ(s.async_load({"p", 29}, use_future).get()->sequence, 20U);
  EXPECT_EQ(s.async_load({"p", 20}, use_future).get()->sequence, 20U);
  EXPECT_EQ(s.async_load({"p", 9}, use_future).get(), std::nullopt);
  EXPECT_EQ(s.async_load({"q"}, use_future).get(), std::nullopt);
}

TYPED_TEST(StoreSnapshots, ReplacesASnapshotAtTheSameSequenceNumber) {
  auto& s = this->snapshots();
  s.async_save({"p", 5, value_of("old"), 0, std::nullopt}, use_future).get();
  s.async_save({"p", 5, value_of("new"), 0, std::nullopt}, use_future).get();
  EXPECT_EQ(text_of(s.async_load({"p"}, use_future).get()->state), "new");
}

TYPED_TEST(StoreSnapshots, DeletesTheSnapshotsAtOrBelowASequenceNumber) {
  auto& s = this->snapshots();
  for (sequence_nr seq : {1U, 2U, 3U}) {
    s.async_save({"p", seq, value_of("s"), 0, std::nullopt}, use_future).get();
  }
  s.async_delete({"p", 2, 0}, use_future).get();
  EXPECT_EQ(s.async_load({"p", 2}, use_future).get(), std::nullopt);
  EXPECT_EQ(s.async_load({"p"}, use_future).get()->sequence, 3U);
  s.async_delete({"p"}, use_future).get();
  EXPECT_EQ(s.async_load({"p"}, use_future).get(), std::nullopt);
}

template <class Factory>
class StoreDurableState : public store_test<Factory> {};
TYPED_TEST_SUITE(StoreDurableState, all_plugins, plugin_names);

TYPED_TEST(StoreDurableState, UpsertsWithARevisionCheck) {
  auto& st = this->states();
  EXPECT_EQ(st.async_get("p", use_future).get(), std::nullopt);
  EXPECT_EQ(st.async_upsert({"p", 0, value_of("v1"), 1, std::nullopt}, use_future).get(), 1U);
  EXPECT_EQ(st.async_upsert({"p", 1, value_of("v2"), 1, std::nullopt}, use_future).get(), 2U);
  EXPECT_EQ(st.async_get("p", use_future).get(), (durable_state_record{2, value_of("v2"), 1}));

  EXPECT_EQ(error_of(st.async_upsert({"p", 1, value_of("stale"), 1, std::nullopt}, use_future)),
            errc::revision_conflict);
  EXPECT_EQ(error_of(st.async_upsert({"p", 0, value_of("fresh"), 1, std::nullopt}, use_future)),
            errc::revision_conflict);
  EXPECT_EQ(text_of(st.async_get("p", use_future).get()->value), "v2");
}

TYPED_TEST(StoreDurableState, ConcurrentReadModifyWriteLosesNoUpdate) {
  constexpr int writers = 4;
  constexpr int increments = 20;
  this->states().async_upsert({"counter", 0, value_of("0"), 0, std::nullopt}, use_future).get();
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([this] {
      for (int done = 0; done < increments;) {
        auto current = this->states().async_get("counter", use_future).get();
        auto next = std::to_string(std::stoi(text_of(current->value)) + 1);
        auto outcome = error_of(this->states().async_upsert(
            {"counter", current->revision, value_of(next), 0, std::nullopt}, use_future));
        if (outcome == errc{}) {
          ++done;
        } else {
          EXPECT_EQ(outcome, errc::revision_conflict);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  auto final_state = this->states().async_get("counter", use_future).get();
  EXPECT_EQ(text_of(final_state->value), std::to_string(writers * increments));
  EXPECT_EQ(final_state->revision, revision_nr{writers * increments + 1});
}

TYPED_TEST(StoreDurableState, ARefusedUpsertInABurstFailsAloneAndTheOthersCommit) {
  // Queued all at once (one or a few group commits): a stale revision, a fenced epoch, and two
  // writes of one id in order among many good upserts; only the refused ones fail.
  auto& st = this->states();
  st.async_upsert({"stale", 0, value_of("s1"), 0, std::nullopt}, use_future).get();
  st.async_upsert({"fenced", 0, value_of("f1"), 5, std::nullopt}, use_future).get();
  std::vector<std::future<revision_nr>> good;
  auto queue_good = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      auto pid = "id-" + std::to_string(i);
      good.push_back(st.async_upsert({pid, 0, value_of(pid), 0, std::nullopt}, use_future));
    }
  };
  queue_good(0, 150);
  auto stale = st.async_upsert({"stale", 0, value_of("x"), 0, std::nullopt}, use_future);
  auto twice_1 = st.async_upsert({"twice", 0, value_of("t1"), 0, std::nullopt}, use_future);
  auto fenced = st.async_upsert({"fenced", 1, value_of("x"), 4, std::nullopt}, use_future);
  auto twice_2 = st.async_upsert({"twice", 1, value_of("t2"), 0, std::nullopt}, use_future);
  auto raising = st.async_upsert({"fenced", 1, value_of("f2"), 6, std::nullopt}, use_future);
  queue_good(150, 300);

  EXPECT_EQ(error_of(std::move(stale)), errc::revision_conflict);
  EXPECT_EQ(error_of(std::move(fenced)), errc::epoch_fenced);
  EXPECT_EQ(twice_1.get(), 1U);
  EXPECT_EQ(twice_2.get(), 2U);
  EXPECT_EQ(raising.get(), 2U);
  for (auto& f : good) EXPECT_EQ(f.get(), 1U);
  EXPECT_EQ(st.async_get("stale", use_future).get(), (durable_state_record{1, value_of("s1"), 0}));
  EXPECT_EQ(st.async_get("twice", use_future).get(), (durable_state_record{2, value_of("t2"), 0}));
  EXPECT_EQ(st.async_get("fenced", use_future).get(), (durable_state_record{2, value_of("f2"), 6}));
  EXPECT_EQ(text_of(st.async_get("id-299", use_future).get()->value), "id-299");
  EXPECT_EQ(error_of(st.async_upsert({"fenced", 2, value_of("x"), 5, std::nullopt}, use_future)),
            errc::epoch_fenced);
}

TYPED_TEST(StoreDurableState, DeletesWithARevisionCheckAndStartsAgainAtRevisionZero) {
  auto& st = this->states();
  st.async_upsert({"p", 0, value_of("v1"), 0, std::nullopt}, use_future).get();
  EXPECT_EQ(error_of(st.async_delete({"p", 7, 0}, use_future)), errc::revision_conflict);
  st.async_delete({"p", 1, 0}, use_future).get();
  EXPECT_EQ(st.async_get("p", use_future).get(), std::nullopt);
  EXPECT_EQ(st.async_upsert({"p", 0, value_of("again"), 0, std::nullopt}, use_future).get(), 1U);
}

template <class Factory>
class StoreRememberEntities : public store_test<Factory> {};
TYPED_TEST_SUITE(StoreRememberEntities, all_plugins, plugin_names);

TYPED_TEST(StoreRememberEntities, AddsAndRemovesBatchesPerTypeAndShard) {
  auto& r = this->remembered();
  r.async_update({"cart", 3, {"c", "a", "b", "a"}, {}, 0, std::nullopt}, use_future).get();
  r.async_update({"cart", 4, {"z"}, {}, 0, std::nullopt}, use_future).get();
  r.async_update({"user", 3, {"u"}, {}, 0, std::nullopt}, use_future).get();
  r.async_update({"cart", 3, {"d"}, {"b", "missing"}, 0, std::nullopt}, use_future).get();
  EXPECT_EQ(r.async_list({"cart", 3}, use_future).get(), (std::vector<std::string>{"a", "c", "d"}));
  EXPECT_EQ(r.async_list({"cart", 4}, use_future).get(), (std::vector<std::string>{"z"}));
  EXPECT_EQ(r.async_list({"user", 3}, use_future).get(), (std::vector<std::string>{"u"}));
  EXPECT_TRUE(r.async_list({"user", 4}, use_future).get().empty());
}

TYPED_TEST(StoreRememberEntities, RefusesEmptyNames) {
  auto& r = this->remembered();
  EXPECT_EQ(error_of(r.async_update({"", 1, {"a"}, {}, 0, std::nullopt}, use_future)),
            errc::invalid_request);
  EXPECT_EQ(error_of(r.async_update({"cart", 1, {""}, {}, 0, std::nullopt}, use_future)),
            errc::invalid_request);
}

}  // namespace
}  // namespace troupe::persistence::conformance
