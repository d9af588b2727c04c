// ctest-labels: concurrency
// Persistent entities as sharded entities: recovery after passivation, after a restart of the
// process (a new actor system reopening the same SQLite file), and the durable-state revision
// flow, including a write that loses the revision check.
#include <troupe/persistence/sqlite_config.hpp>
#include <troupe/persistence/sqlite_plugin.hpp>
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
using troupe::sharding::cluster_sharding;
using troupe::testkit::await_condition;
using troupe::testkit::dilated;

using history = std::vector<std::int64_t>;

troupe::system_config two_workers() { return troupe::system_config{}.with_workers(2); }

template <class R, class M>
R ask(const actor_ref<M>& to, M message) {
  return to.template ask<R>(std::move(message), dilated(5s), troupe::use_future).get();
}

TEST(ShardedEntity, RecoversItsStateAfterPassivation) {
  troupe::actor_system system(two_workers());
  register_codecs(system);
  auto& sharding = cluster_sharding::get(system);
  auto accounts = sharding.start<account>();
  EXPECT_EQ(ask<std::int64_t>(accounts, account_command{deposit{"alice", 30}}), 30);
  EXPECT_EQ(ask<std::int64_t>(accounts, account_command{withdraw{"alice", 12}}), 18);
  EXPECT_EQ(ask<std::int64_t>(accounts, account_command{deposit{"bob", 5}}), 5);

  const auto shard = troupe::sharding::shard_of("alice", 64);
  accounts.tell(passivate{"alice"});
  await_condition(
      [&] {
        auto ids = sharding.entity_ids("account", shard);
        return std::find(ids.begin(), ids.end(), "alice") == ids.end();
      },
      5s, "alice is passivated");
  // The next message starts a new incarnation, which recovers from the journal.
  EXPECT_EQ(ask<history>(accounts, account_command{get_history{"alice"}}), (history{30, -12}));
  EXPECT_EQ(ask<std::int64_t>(accounts, account_command{deposit{"alice", 2}}), 20);
  auto events =
      tp::get(system).default_plugin()->journal().async_read({"account-alice"}, use_future).get();
  EXPECT_EQ(events.size(), 3U);
}

TEST(ShardedEntity, RecoversAfterAProcessRestartWithTheSqlitePlugin) {
  temp_dir dir;
  {
    troupe::actor_system system(two_workers());
    register_codecs(system);
    tp::get(system).set_default_plugin(tp::open_sqlite_plugin({.file = dir.file()}));
    tp::get(system).set_snapshot_every(4);
    auto accounts = cluster_sharding::get(system).start<account>();
    for (int i = 1; i <= 6; ++i) {
      ask<std::int64_t>(accounts, account_command{deposit{"carol", i}});
    }
    EXPECT_EQ(ask<std::int64_t>(accounts, account_command{withdraw_with_fee{"carol", 10, 1}}), 10);
    auto counters = cluster_sharding::get(system).start<counter>();
    EXPECT_EQ(ask<std::int64_t>(counters, counter_command{increment{"hits", "a"}}), 1);
    EXPECT_EQ(ask<std::int64_t>(counters, counter_command{increment{"hits", "b"}}), 2);
  }  // the system stops, then its extension closes the SQLite plugin

  troupe::actor_system system(two_workers());
  register_codecs(system);
  tp::get(system).set_default_plugin(tp::open_sqlite_plugin({.file = dir.file()}));
  auto accounts = cluster_sharding::get(system).start<account>();
  EXPECT_EQ(ask<history>(accounts, account_command{get_history{"carol"}}),
            (history{1, 2, 3, 4, 5, 6, -10, -1}));
  EXPECT_EQ(ask<std::int64_t>(accounts, account_command{deposit{"carol", 1}}), 11);
  auto counters = cluster_sharding::get(system).start<counter>();
  EXPECT_EQ(ask<std::int64_t>(counters, counter_command{get_value{"hits"}}), 2);
  EXPECT_EQ(ask<std::uint64_t>(counters, counter_command{get_revision{"hits"}}), 2U);
  auto snap =
      tp::get(system).default_plugin()->snapshots().async_load({"account-carol"}, use_future).get();
  ASSERT_TRUE(snap.has_value());
  // Every 4 events: the atomic pair 7..8 crossed the second mark.
  EXPECT_EQ(snap->sequence, 8U);
}

TEST(ShardedEntity, OpensTheSqlitePluginTheConfigurationNames) {
  temp_dir dir;
  auto conf = troupe::config::parse_string(
      "troupe.persistence { plugin = sqlite\n"
      "  snapshot-every = 2\n"
      "  sqlite { file = \"" +
      dir.file().string() + "\", durability = normal } }");
  {
    troupe::actor_system system(two_workers().with_config(conf));
    register_codecs(system);
    tp::register_sqlite_plugin(system);
    EXPECT_EQ(tp::get(system).snapshot_every(), 2U);
    auto accounts = cluster_sharding::get(system).start<account>();
    EXPECT_EQ(ask<std::int64_t>(accounts, account_command{deposit{"erin", 9}}), 9);
  }
  EXPECT_TRUE(std::filesystem::exists(dir.file()));
  troupe::actor_system system(two_workers().with_config(conf));
  register_codecs(system);
  tp::register_sqlite_plugin(system);
  auto accounts = cluster_sharding::get(system).start<account>();
  EXPECT_EQ(ask<history>(accounts, account_command{get_history{"erin"}}), history{9});

  troupe::actor_system unregistered(
      two_workers().with_config(troupe::config::parse_string("troupe.persistence.plugin = pg")));
  EXPECT_THROW((void)tp::get(unregistered).default_plugin(), tp::persistence_error);
  EXPECT_THROW((void)tp::get(unregistered).default_plugin(), troupe::error);
}

TEST(DurableStateEntity, WritesEachNewStateWithTheNextRevision) {
  auto storage = tp::make_memory_storage();
  {
    troupe::actor_system system(two_workers());
    register_codecs(system);
    tp::get(system).set_default_plugin(tp::make_memory_plugin(storage));
    auto counters = cluster_sharding::get(system).start<counter>();
    EXPECT_EQ(ask<std::uint64_t>(counters, counter_command{get_revision{"c1"}}), 0U);
    for (int i = 1; i <= 3; ++i) {
      EXPECT_EQ(ask<std::int64_t>(counters, counter_command{increment{"c1", "x"}}), i);
    }
    EXPECT_EQ(ask<std::uint64_t>(counters, counter_command{get_revision{"c1"}}), 3U);
    auto stored =
        tp::get(system).default_plugin()->durable_state().async_get("counter-c1", use_future).get();
    ASSERT_TRUE(stored.has_value());
    EXPECT_EQ(stored->revision, 3U);
    EXPECT_EQ(tp::get(system).codecs().deserialize<counter_state>(stored->value).value, 3);
  }
  troupe::actor_system system(two_workers());
  register_codecs(system);
  tp::get(system).set_default_plugin(tp::make_memory_plugin(storage));
  auto c1 = system.spawn<counter>(
      troupe::spawn_options("c1").with_entity(troupe::entity_identity{"c1", "counter", 0}));
  EXPECT_EQ(ask<std::int64_t>(c1, counter_command{get_value{"c1"}}), 3);
  EXPECT_EQ(ask<std::uint64_t>(c1, counter_command{get_revision{"c1"}}), 3U);
}

TEST(DurableStateEntity, ALostRevisionCheckStopsTheEntityAndTheAskerHears) {
  troupe::testkit::log_capture logs;
  troupe::actor_system system(two_workers());
  register_codecs(system);
  auto c2 = system.spawn<counter>(
      troupe::spawn_options("c2").with_entity(troupe::entity_identity{"c2", "counter", 0}));
  EXPECT_EQ(ask<std::int64_t>(c2, counter_command{increment{"c2", "x"}}), 1);
  // Someone else writes revision 2 behind the entity's back.
  auto& codecs = tp::get(system).codecs();
  tp::state_write other{"counter-c2", 1, codecs.serialize(counter_state{100, "other"}), 0,
                        std::nullopt};
  tp::get(system).default_plugin()->durable_state().async_upsert(other, use_future).get();

  try {
    ask<std::int64_t>(c2, counter_command{increment{"c2", "y"}});
    ADD_FAILURE() << "the write should lose the revision check";
  } catch (const troupe::error& e) {  // every layer's failures are troupe::error
    EXPECT_EQ(e.code(), tp::errc::revision_conflict) << e.what();
  }
  await_condition([&] { return c2.is_terminated(); }, 5s, "c2 stopped");
  EXPECT_FALSE(logs.wait_for_line({"counter-c2", "revision 2", "failed"}).empty()) << logs.text();
  // A new incarnation loads the winner's state.
  auto again = system.spawn<counter>(
      troupe::spawn_options("c2-again").with_entity(troupe::entity_identity{"c2", "counter", 0}));
  EXPECT_EQ(ask<std::int64_t>(again, counter_command{increment{"c2", "z"}}), 101);
  EXPECT_EQ(ask<std::uint64_t>(again, counter_command{get_revision{"c2"}}), 3U);
}

TEST(ShardedEntity, WritesCarryTheEpochTheExtensionSupplies) {
  troupe::actor_system system(two_workers());
  register_codecs(system);
  tp::get(system).set_epoch_provider(
      [](const std::optional<troupe::entity_identity>& who) -> tp::ownership_epoch {
        return who && who->type_name == "account" ? 7 : 0;
      });
  auto accounts = cluster_sharding::get(system).start<account>();
  EXPECT_EQ(ask<std::int64_t>(accounts, account_command{deposit{"dave", 1}}), 1);
  auto events =
      tp::get(system).default_plugin()->journal().async_read({"account-dave"}, use_future).get();
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].epoch, 7U);
}

}  // namespace
