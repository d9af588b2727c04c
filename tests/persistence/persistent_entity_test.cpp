// ctest-labels: concurrency
// Event-sourced entities on the in-memory plugin: recovery from a snapshot and the events after
// it (with upcasting), commands waiting in order during recovery, atomic multi-event persists,
// replies only after the write is durable, a failed persist stopping the entity (the asker hears
// the store's error), and a failed recovery stopping only that entity.
#include <troupe/testkit/log_capture.hpp>

#include "persistence/entity_support.hpp"

#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <system_error>
#include <vector>

namespace {

using namespace std::chrono_literals;
using namespace entity_test;
using boost::asio::use_future;
using troupe::actor_ref;
using troupe::testkit::await_condition;
using troupe::testkit::dilated;

using history = std::vector<std::int64_t>;

troupe::system_config two_workers() { return troupe::system_config{}.with_workers(2); }

/// A plain (not sharded) account actor with persistence id `pid`.
actor_ref<account_command> spawn_account(troupe::actor_system& system, const std::string& pid,
                                         std::string name = {}) {
  return system.spawn<account>(name.empty() ? pid : name, pid);
}

std::int64_t ask_balance(const actor_ref<account_command>& a, account_command c) {
  return a.ask<std::int64_t>(std::move(c), dilated(5s), troupe::use_future).get();
}
history ask_history(const actor_ref<account_command>& a) {
  return a.ask<history>(get_history{}, dilated(5s), troupe::use_future).get();
}

/// One event of `pid`, stored straight into the journal.
void store_event(tp::plugin& store, const std::string& pid, tp::sequence_nr seq,
                 tp::serialized event) {
  store.journal().async_append({pid, seq, {std::move(event)}, 0, std::nullopt}, use_future).get();
}

TEST(PersistentEntity, RecoversFromTheLatestSnapshotThenTheEventsAfterIt) {
  auto storage = tp::make_memory_storage();
  {
    troupe::actor_system system(two_workers());
    register_codecs(system);
    tp::get(system).set_default_plugin(tp::make_memory_plugin(storage));
    tp::get(system).set_snapshot_every(3);
    auto a = spawn_account(system, "acct-1");
    for (int i = 1; i <= 5; ++i) ask_balance(a, deposit{"", i});
  }
  auto store = tp::make_memory_plugin(storage);
  auto snap = store->snapshots().async_load({"acct-1"}, use_future).get();
  ASSERT_TRUE(snap.has_value());
  EXPECT_EQ(snap->sequence, 3U);
  // Without the snapshot, recovery could not rebuild events 1..3 any more.
  store->journal().async_delete_to({"acct-1", 3, 0}, use_future).get();

  troupe::actor_system system(two_workers());
  register_codecs(system);
  tp::get(system).set_default_plugin(std::move(store));
  auto a = spawn_account(system, "acct-1");
  EXPECT_EQ(ask_history(a), (history{1, 2, 3, 4, 5}));
  // Numbering goes on after the recovered events.
  EXPECT_EQ(ask_balance(a, deposit{"", 10}), 25);
  auto events =
      tp::get(system).default_plugin()->journal().async_read({"acct-1", 6, 6}, use_future).get();
  ASSERT_EQ(events.size(), 1U);
}

TEST(PersistentEntity, UpcastsOldEventsDuringRecovery) {
  troupe::actor_system system(two_workers());
  register_codecs(system);
  auto store = tp::get(system).default_plugin();
  store_event(*store, "acct-old", 1, {{"test.deposited", 1}, tp::encode(deposited_v1{3})});
  store_event(*store, "acct-old", 2, {{"test.deposited", 2}, tp::encode(deposited{5})});
  auto a = spawn_account(system, "acct-old");
  EXPECT_EQ(ask_history(a), (history{300, 5}));
}

TEST(PersistentEntity, CommandsArrivingDuringRecoveryRunAfterItInOrder) {
  troupe::actor_system system(two_workers());
  register_codecs(system);
  auto gate = std::make_shared<gated_plugin>(tp::make_memory_plugin());
  tp::get(system).set_default_plugin(gate);
  store_event(*gate, "acct-2", 1, tp::get(system).codecs().serialize(account_event{deposited{10}}));

  gate->hold_reads(true);
  auto a = spawn_account(system, "acct-2");
  await_condition([&] { return gate->held() == 1; }, 5s, "the snapshot load is held");
  std::vector<std::future<std::int64_t>> replies;
  for (int i = 1; i <= 20; ++i) {
    replies.push_back(a.ask<std::int64_t>(deposit{"", i}, dilated(10s), troupe::use_future));
  }
  auto seen = a.ask<history>(get_history{}, dilated(10s), troupe::use_future);
  // Recovery has not finished, so no command ran.
  EXPECT_EQ(seen.wait_for(0s), std::future_status::timeout);
  gate->release();

  std::int64_t expected = 10;
  history want{10};
  for (int i = 1; i <= 20; ++i) {
    expected += i;
    want.push_back(i);
    EXPECT_EQ(replies[static_cast<std::size_t>(i - 1)].get(), expected);
  }
  EXPECT_EQ(seen.get(), want);
}

TEST(PersistentEntity, PersistsSeveralEventsOfOneCommandInOneAtomicAppend) {
  troupe::actor_system system(two_workers());
  register_codecs(system);
  auto gate = std::make_shared<gated_plugin>(tp::make_memory_plugin());
  tp::get(system).set_default_plugin(gate);
  auto a = spawn_account(system, "acct-3");
  EXPECT_EQ(ask_balance(a, deposit{"", 100}), 100);
  EXPECT_EQ(ask_balance(a, withdraw_with_fee{"", 30, 2}), 68);
  EXPECT_EQ(gate->append_sizes(), (std::vector<std::size_t>{1, 2}));
  auto events = gate->journal().async_read({"acct-3"}, use_future).get();
  ASSERT_EQ(events.size(), 3U);
  EXPECT_EQ(events[1].sequence, 2U);
  EXPECT_EQ(events[2].sequence, 3U);
  // A refused command writes nothing.
  EXPECT_EQ(ask_balance(a, withdraw_with_fee{"", 68, 1}), -1);
  EXPECT_EQ(gate->append_sizes().size(), 2U);
}

TEST(PersistentEntity, RepliesOnlyOnceTheEventsAreDurable) {
  troupe::actor_system system(two_workers());
  register_codecs(system);
  auto gate = std::make_shared<gated_plugin>(tp::make_memory_plugin());
  tp::get(system).set_default_plugin(gate);
  auto a = spawn_account(system, "acct-4");
  EXPECT_EQ(ask_history(a), history{});  // recovered

  gate->hold_appends(true);
  auto reply = a.ask<std::int64_t>(deposit{"", 7}, dilated(10s), troupe::use_future);
  auto later = a.ask<history>(get_history{}, dilated(10s), troupe::use_future);
  await_condition([&] { return gate->held() == 1; }, 5s, "the append is held");
  // Held in the store: not written, no reply, and the next command waits behind it.
  EXPECT_EQ(reply.wait_for(0s), std::future_status::timeout);
  EXPECT_EQ(later.wait_for(0s), std::future_status::timeout);
  EXPECT_TRUE(gate->journal().async_read({"acct-4"}, use_future).get().empty());
  gate->release();
  EXPECT_EQ(reply.get(), 7);
  EXPECT_EQ(later.get(), history{7});
}

TEST(PersistentEntity, AFailedPersistStopsTheEntityAndTheAskerGetsTheError) {
  troupe::testkit::log_capture logs;
  troupe::actor_system system(two_workers());
  register_codecs(system);
  auto gate = std::make_shared<gated_plugin>(tp::make_memory_plugin());
  tp::get(system).set_default_plugin(gate);
  auto a = spawn_account(system, "acct-5");
  EXPECT_EQ(ask_balance(a, deposit{"", 5}), 5);

  gate->fail_next_append(tp::errc::store_failure);
  gate->hold_appends(true);  // whatever comes next must not reach the store
  auto failed = a.ask<std::int64_t>(deposit{"", 1}, dilated(30s), troupe::use_future);
  auto after = a.ask<history>(get_history{}, dilated(30s), troupe::use_future);
  try {
    failed.get();
    ADD_FAILURE() << "the ask should fail";
  } catch (const troupe::error& e) {  // every layer's failures are troupe::error
    EXPECT_EQ(e.code(), tp::errc::store_failure) << e.what();
    EXPECT_NE(std::string(e.what()).find("acct-5"), std::string::npos) << e.what();
  }
  // The command queued behind it never ran against the unpersisted state.
  EXPECT_THROW(after.get(), troupe::error);
  await_condition([&] { return a.is_terminated(); }, 5s, "the entity stopped");
  EXPECT_EQ(gate->held(), 0U);
  EXPECT_FALSE(
      logs.wait_for_line({"acct-5", "persisting events 2..2", "injected failure"}).empty());

  // A new incarnation recovers what was durable.
  gate->hold_appends(false);
  auto again = spawn_account(system, "acct-5", "acct-5-again");
  EXPECT_EQ(ask_history(again), history{5});
}

TEST(PersistentEntity, AFailedRecoveryStopsOnlyThatEntity) {
  troupe::testkit::log_capture logs;
  auto storage = tp::make_memory_storage();
  troupe::actor_system system(two_workers());
  register_codecs(system);
  tp::get(system).set_default_plugin(tp::make_memory_plugin(storage));
  auto store = tp::get(system).default_plugin();
  const auto& codecs = tp::get(system).codecs();
  for (const std::string pid : {"acct-ok", "acct-corrupt", "acct-unknown", "acct-bytes"}) {
    store_event(*store, pid, 1, codecs.serialize(account_event{deposited{1}}));
  }
  store_event(*store, "acct-ok", 2, codecs.serialize(account_event{deposited{2}}));
  store_event(*store, "acct-corrupt", 2, codecs.serialize(account_event{deposited{2}}));
  ASSERT_TRUE(tp::corrupt_stored_event(*storage, "acct-corrupt", 2));
  store_event(*store, "acct-unknown", 2, {{"test.renamed", 1}, tp::encode(std::int64_t{2})});
  store_event(*store, "acct-bytes", 2, {{"test.deposited", 2}, tp::bytes{std::byte{0xff}}});

  auto ok = spawn_account(system, "acct-ok");
  for (const std::string pid : {"acct-corrupt", "acct-unknown", "acct-bytes"}) {
    auto bad = spawn_account(system, pid);
    // The question waits for recovery, which fails: the entity stops and the ask fails at once.
    EXPECT_THROW(ask_history(bad), troupe::error) << pid;
    await_condition([&] { return bad.is_terminated(); }, 5s, pid + " stopped");
    EXPECT_FALSE(
        logs.wait_for_line({"recovery of persistence id '" + pid + "'", "at sequence nr 2"})
            .empty())
        << logs.text();
  }
  EXPECT_EQ(ask_history(ok), (history{1, 2}));
  EXPECT_EQ(ask_balance(ok, deposit{"", 3}), 6);
}

TEST(PersistentEntity, APlainActorSpawnedWithAnEntityIdentityUsesTheDefaultId) {
  troupe::testkit::log_capture logs;
  troupe::actor_system system(two_workers());
  register_codecs(system);
  // Spawned with an entity identity, the default id is <type name>-<entity id>.
  auto a = system.spawn<account>(
      troupe::spawn_options("acc").with_entity(troupe::entity_identity{"42", "account", 0}));
  EXPECT_EQ(ask_balance(a, deposit{"", 4}), 4);
  auto events =
      tp::get(system).default_plugin()->journal().async_read({"account-42"}, use_future).get();
  EXPECT_EQ(events.size(), 1U);
}

TEST(PersistentEntity, WritesAtTheShardFenceEpochItsShardHandsIt) {
  troupe::testkit::log_capture logs;  // the refused persist logs an error
  troupe::actor_system system(two_workers());
  register_codecs(system);
  std::shared_ptr<tp::plugin> store = tp::make_memory_plugin();
  tp::get(system).set_default_plugin(store);
  const tp::shard_fence_raise to_7{{"account", 3}, 7};
  ASSERT_EQ(store->async_raise_shard_fence(to_7, use_future).get(), tp::fence_raise::raised);
  // The home a shard hands its entities once the cluster raised the shard's fence to epoch 7.
  static const troupe::detail::entity_home home{"account", 3, nullptr, nullptr, 7, nullptr};
  auto a = system.spawn<account>(
      troupe::spawn_options("acc").with_entity(troupe::detail::entity_tag{"42", &home}));
  EXPECT_EQ(ask_balance(a, deposit{"", 4}), 4);
  auto events = store->journal().async_read({"account-42"}, use_future).get();
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].epoch, 7U);

  // A new owner raises the fence: this incarnation's next write is refused and stores nothing.
  const tp::shard_fence_raise to_8{{"account", 3}, 8};
  ASSERT_EQ(store->async_raise_shard_fence(to_8, use_future).get(), tp::fence_raise::raised);
  auto refused = a.ask<std::int64_t>(deposit{"", 1}, dilated(30s), troupe::use_future);
  try {
    refused.get();
    ADD_FAILURE() << "the ask should fail";
  } catch (const troupe::error& e) {
    EXPECT_EQ(e.code(), tp::errc::epoch_fenced) << e.what();
  }
  await_condition([&] { return a.is_terminated(); }, 5s, "the entity stopped");
  EXPECT_EQ(store->journal().async_read({"account-42"}, use_future).get().size(), 1U);
}

}  // namespace
