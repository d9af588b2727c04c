// The epoch fence, for every plugin and every kind of write: once a write with epoch N was
// stored for an id, a write with a lower epoch is refused and changes nothing.
#include "persistence/conformance/store_fixture.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace troupe::persistence::conformance {
namespace {

template <class Factory>
class StoreEpochFence : public store_test<Factory> {};
TYPED_TEST_SUITE(StoreEpochFence, all_plugins, plugin_names);

TYPED_TEST(StoreEpochFence, RefusesJournalWritesFromALowerEpoch) {
  this->append("p", 1, {"a"}, 5);
  EXPECT_EQ(error_of(this->journal().async_append({"p", 2, {value_of("old")}, 4, std::nullopt},
                                                  use_future)),
            errc::epoch_fenced);
  EXPECT_EQ(error_of(this->journal().async_delete_to({"p", 1, 4}, use_future)), errc::epoch_fenced);
  EXPECT_EQ(this->read_texts("p"), (std::vector<std::string>{"a"}));
  EXPECT_EQ(this->append("p", 2, {"same epoch"}, 5), 2U);
  EXPECT_EQ(this->append("p", 3, {"newer"}, 6), 3U);
  EXPECT_EQ(error_of(this->journal().async_append({"p", 4, {value_of("x")}, 5, std::nullopt},
                                                  use_future)),
            errc::epoch_fenced);
  // The fence is per persistence id.
  EXPECT_EQ(this->append("q", 1, {"other id"}, 0), 1U);
}

TYPED_TEST(StoreEpochFence, ARefusedWriteDoesNotRaiseTheFence) {
  this->append("p", 1, {"a"}, 1);
  EXPECT_EQ(error_of(this->journal().async_append({"p", 7, {value_of("x")}, 9, std::nullopt},
                                                  use_future)),
            errc::sequence_conflict);
  EXPECT_EQ(this->append("p", 2, {"b"}, 1), 2U);
}

TYPED_TEST(StoreEpochFence, RefusesSnapshotWritesFromALowerEpoch) {
  auto& s = this->snapshots();
  s.async_save({"p", 1, value_of("s1"), 3, std::nullopt}, use_future).get();
  EXPECT_EQ(error_of(s.async_save({"p", 2, value_of("old"), 2, std::nullopt}, use_future)),
            errc::epoch_fenced);
  EXPECT_EQ(error_of(s.async_delete({"p", 1, 2}, use_future)), errc::epoch_fenced);
  EXPECT_EQ(s.async_load({"p"}, use_future).get()->sequence, 1U);
}

TYPED_TEST(StoreEpochFence, SharesOneFencePerIdBetweenJournalAndSnapshots) {
  this->snapshots().async_save({"p", 1, value_of("s"), 8, std::nullopt}, use_future).get();
  EXPECT_EQ(error_of(this->journal().async_append({"p", 1, {value_of("x")}, 7, std::nullopt},
                                                  use_future)),
            errc::epoch_fenced);
}

TYPED_TEST(StoreEpochFence, RefusesDurableStateWritesFromALowerEpoch) {
  auto& st = this->states();
  st.async_upsert({"p", 0, value_of("v1"), 4, std::nullopt}, use_future).get();
  EXPECT_EQ(error_of(st.async_upsert({"p", 1, value_of("old"), 3, std::nullopt}, use_future)),
            errc::epoch_fenced);
  EXPECT_EQ(error_of(st.async_delete({"p", 1, 3}, use_future)), errc::epoch_fenced);
  st.async_delete({"p", 1, 4}, use_future).get();
  // The fence outlives the state it guarded.
  EXPECT_EQ(error_of(st.async_upsert({"p", 0, value_of("stale"), 3, std::nullopt}, use_future)),
            errc::epoch_fenced);
}

TYPED_TEST(StoreEpochFence, RefusesRememberEntitiesUpdatesFromALowerEpochPerShard) {
  auto& r = this->remembered();
  r.async_update({"cart", 1, {"a"}, {}, 2, std::nullopt}, use_future).get();
  EXPECT_EQ(error_of(r.async_update({"cart", 1, {"b"}, {"a"}, 1, std::nullopt}, use_future)),
            errc::epoch_fenced);
  EXPECT_EQ(r.async_list({"cart", 1}, use_future).get(), (std::vector<std::string>{"a"}));
  r.async_update({"cart", 2, {"c"}, {}, 1, std::nullopt}, use_future).get();
  r.async_update({"user", 1, {"u"}, {}, 0, std::nullopt}, use_future).get();
}

}  // namespace
}  // namespace troupe::persistence::conformance
