// ctest-labels: concurrency
// What only the PostgreSQL plugin promises: it survives the server dropping its connections,
// creating its schema is idempotent (also when several plugins start together), a version 1
// schema is moved to the current one, two plugins over one schema (two nodes) never interleave a
// journal and each sees the other's appends, fences, deletes and states despite its cache, a
// write failing with an SQL error in a group fails alone, the writer records its metrics, and a
// bad URL fails at open with a clear error that does not show the password. The cases that need a
// server skip unless TROUPE_PG_URL names one (scripts/test.sh starts one).
#include <troupe/core/metrics.hpp>
#include <troupe/persistence/errc.hpp>
#include <troupe/persistence/postgres_plugin.hpp>
#include <troupe/testkit/metric_values.hpp>

#include "persistence/conformance/plugin_factories.hpp"
#include "persistence/conformance/store_fixture.hpp"

#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>
#include <pqxx/connection>
#include <pqxx/nontransaction>
#include <pqxx/transaction>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace troupe::persistence {
namespace {

using conformance::error_of;
using conformance::postgres_factory;
using conformance::postgres_url;
using conformance::text_of;
using conformance::value_of;
constexpr auto use_future = boost::asio::use_future;

class PostgresPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = postgres_factory::unavailable()) GTEST_SKIP() << *why;
  }

  std::unique_ptr<plugin> open(const std::string& application_name = "troupe") {
    return open_postgres_plugin(
        {.url = *postgres_url(), .schema = factory_.schema, .application_name = application_name});
  }

  static sequence_nr append(plugin& p, const std::string& pid, sequence_nr next,
                            const std::string& text) {
    return p.journal()
        .async_append({pid, next, {value_of(text)}, 0, std::nullopt}, use_future)
        .get();
  }

  postgres_factory factory_;
};

/// Ends every backend of `application_name`, as a server restart or an administrator would, and
/// waits (with a deadline) until they are gone.
void drop_connections(const std::string& application_name) {
  pqxx::connection admin(*postgres_url());
  pqxx::nontransaction t(admin);
  t.exec_params(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
      application_name);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    auto left = t.exec_params("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                              application_name)[0][0]
                    .as<long long>();
    if (left == 0) return;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << left << " backends still alive";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

TEST_F(PostgresPlugin, ReconnectsAfterTheServerDropsItsConnections) {
  auto name = "troupe_reconnect_" + factory_.schema;
  auto store = open(name);
  EXPECT_EQ(append(*store, "p", 1, "before"), 1U);
  ASSERT_EQ(store->durable_state()
                .async_upsert({"s", 0, value_of("one"), 0, std::nullopt}, use_future)
                .get(),
            1U);

  drop_connections(name);

  // The writer and the readers notice at their next operation, connect again and redo it.
  EXPECT_EQ(append(*store, "p", 2, "after"), 2U);
  auto events = store->journal().async_read({"p"}, use_future).get();
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(text_of(events[1].event), "after");
  for (int i = 0; i < 4; ++i) {  // every reader of the pool, whichever takes the read
    EXPECT_EQ(store->durable_state().async_get("s", use_future).get()->revision, 1U);
  }
}

TEST_F(PostgresPlugin, CreatesItsSchemaOnceWhenPluginsStartTogetherAndKeepsItsData) {
  std::vector<std::future<std::unique_ptr<plugin>>> opening;
  for (int i = 0; i < 4; ++i) {
    opening.push_back(std::async(std::launch::async, [this] { return open(); }));
  }
  std::vector<std::unique_ptr<plugin>> stores;
  for (auto& f : opening) stores.push_back(f.get());
  EXPECT_EQ(append(*stores[0], "p", 1, "a"), 1U);
  stores.clear();

  auto again = open();
  EXPECT_EQ(again->journal().async_highest_sequence_nr("p", use_future).get(), 1U);
}

TEST_F(PostgresPlugin, RefusesASchemaWrittenByANewerVersion) {
  open().reset();
  {
    pqxx::connection c(*postgres_url());
    pqxx::work t(c);
    t.exec("INSERT INTO " + factory_.schema + ".schema_version(version) VALUES (99)");
    t.commit();
  }
  try {
    open();
    FAIL() << "opened a schema of version 99";
  } catch (const persistence_error& e) {
    EXPECT_EQ(e.value(), errc::store_failure);
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
  }
}

TEST_F(PostgresPlugin, TwoPluginsOverOneSchemaNeverInterleaveAJournal) {
  // Two nodes racing for the same ids: in each round both append to every id at the same
  // sequence number (queued together, so each node's writer takes them as one group), and for
  // each id exactly one of them wins. The first round races to create the ids.
  auto a = open();
  auto b = open();
  constexpr int ids = 8;
  for (sequence_nr next = 1; next <= 10; ++next) {
    std::vector<std::future<sequence_nr>> fa;
    std::vector<std::future<sequence_nr>> fb;
    for (int i = 0; i < ids; ++i) {
      auto pid = "p" + std::to_string(i);
      fa.push_back(
          a->journal().async_append({pid, next, {value_of("a")}, 0, std::nullopt}, use_future));
      fb.push_back(
          b->journal().async_append({pid, next, {value_of("b")}, 0, std::nullopt}, use_future));
    }
    for (int i = 0; i < ids; ++i) {
      auto ea = error_of(std::move(fa[i]));
      auto eb = error_of(std::move(fb[i]));
      EXPECT_TRUE((ea == errc{} && eb == errc::sequence_conflict) ||
                  (eb == errc{} && ea == errc::sequence_conflict))
          << "round " << next << ", id " << i;
    }
  }
  for (int i = 0; i < ids; ++i) {
    auto events = a->journal().async_read({"p" + std::to_string(i)}, use_future).get();
    ASSERT_EQ(events.size(), 10U);
    for (sequence_nr k = 0; k < 10; ++k) EXPECT_EQ(events[k].sequence, k + 1);
  }
}

TEST_F(PostgresPlugin, EachNodeSeesWhatTheOtherWroteBeforeItsOwnWriteCounts) {
  // Each writer caches the heads of the ids it wrote; the other node's appends, fences, deletes
  // and states must still decide the outcome of its next write.
  auto a = open();
  auto b = open();
  auto append_on = [](plugin& p, append_request r) {
    return error_of(p.journal().async_append(std::move(r), use_future));
  };
  EXPECT_EQ(append(*a, "p", 1, "a1"), 1U);
  EXPECT_EQ(append(*b, "p", 2, "b2"), 2U);
  EXPECT_EQ(append_on(*a, {"p", 2, {value_of("stale")}, 0, std::nullopt}), errc::sequence_conflict);
  EXPECT_EQ(append(*a, "p", 3, "a3"), 3U);

  // A fence raised on b refuses a's lower epoch, whether a expects to raise it or not.
  EXPECT_EQ(append(*a, "q", 1, "a1"), 1U);
  EXPECT_EQ(
      b->journal().async_append({"q", 2, {value_of("b2")}, 5, std::nullopt}, use_future).get(), 2U);
  EXPECT_EQ(append_on(*a, {"q", 3, {value_of("old")}, 4, std::nullopt}), errc::epoch_fenced);
  EXPECT_EQ(append_on(*a, {"q", 3, {value_of("older")}, 0, std::nullopt}), errc::epoch_fenced);

  // Events b deleted keep their numbers taken for a.
  EXPECT_EQ(append(*a, "r", 1, "a1"), 1U);
  EXPECT_EQ(append(*b, "r", 2, "b2"), 2U);
  b->journal().async_delete_to({"r", 2, 0}, use_future).get();
  EXPECT_EQ(append_on(*a, {"r", 2, {value_of("reused")}, 0, std::nullopt}),
            errc::sequence_conflict);
  EXPECT_EQ(append(*a, "r", 3, "a3"), 3U);

  // A durable state written by b is not overwritten by a's stale revision.
  EXPECT_EQ(
      a->durable_state().async_upsert({"s", 0, value_of("a"), 0, std::nullopt}, use_future).get(),
      1U);
  EXPECT_EQ(
      b->durable_state().async_upsert({"s", 1, value_of("b"), 0, std::nullopt}, use_future).get(),
      2U);
  EXPECT_EQ(error_of(a->durable_state().async_upsert({"s", 1, value_of("stale"), 0, std::nullopt},
                                                     use_future)),
            errc::revision_conflict);

  auto events = b->journal().async_read({"p"}, use_future).get();
  ASSERT_EQ(events.size(), 3U);
  EXPECT_EQ(text_of(events[2].event), "a3");
  EXPECT_EQ(b->journal().async_highest_sequence_nr("r", use_future).get(), 3U);
  EXPECT_EQ(text_of(b->durable_state().async_get("s", use_future).get()->value), "b");
}

TEST_F(PostgresPlugin, AWriteFailingWithAnSqlErrorFailsAloneInItsGroup) {
  // PostgreSQL refuses text that is not UTF-8 with an error that aborts the transaction: the
  // group is redone with a savepoint per write, and only the bad writes fail.
  auto store = open();
  auto& journal = store->journal();
  append(*store, "setup", 1, "s");
  std::vector<std::future<sequence_nr>> good;
  for (int i = 0; i < 20; ++i) {
    good.push_back(journal.async_append(
        {"good-" + std::to_string(i), 1, {value_of("g")}, 0, std::nullopt}, use_future));
  }
  auto bad_append =
      journal.async_append({"bad\xff", 1, {value_of("x")}, 0, std::nullopt}, use_future);
  auto bad_state = store->durable_state().async_upsert(
      {"s", 0, {{"bad\xff", 1}, {}}, 0, std::nullopt}, use_future);
  auto good_state =
      store->durable_state().async_upsert({"t", 0, value_of("t"), 0, std::nullopt}, use_future);
  for (int i = 20; i < 40; ++i) {
    good.push_back(journal.async_append(
        {"good-" + std::to_string(i), 1, {value_of("g")}, 0, std::nullopt}, use_future));
  }
  EXPECT_EQ(error_of(std::move(bad_append)), errc::store_failure);
  EXPECT_EQ(error_of(std::move(bad_state)), errc::store_failure);
  EXPECT_EQ(good_state.get(), 1U);
  for (auto& f : good) EXPECT_EQ(f.get(), 1U);
  EXPECT_EQ(journal.async_read({"good-39"}, use_future).get().size(), 1U);
  EXPECT_EQ(store->durable_state().async_get("s", use_future).get(), std::nullopt);
}

TEST_F(PostgresPlugin, RecordsEachWritesWaitAndEachGroupsSizeInTheRegistryItWasGiven) {
  auto registry = std::make_shared<metrics_registry>();
  auto store = open_postgres_plugin(
      {.url = *postgres_url(), .schema = factory_.schema, .metrics = registry});
  std::vector<std::future<sequence_nr>> pending;
  for (int i = 0; i < 20; ++i) {
    pending.push_back(store->journal().async_append(
        {"m-" + std::to_string(i), 1, {value_of("e")}, 0, std::nullopt}, use_future));
  }
  for (auto& f : pending) EXPECT_EQ(f.get(), 1U);
  // A write is recorded before its caller is completed: every completed write shows.
  const auto s = registry->collect();
  EXPECT_EQ(testkit::observations(s, "troupe_persistence_write_seconds", {"postgres"}), 20U);
  const auto* groups = testkit::find_child(s, "troupe_persistence_group_size", {"postgres"});
  ASSERT_NE(groups, nullptr);
  EXPECT_EQ(groups->histogram.sum, 20.0);
  EXPECT_GE(groups->histogram.count, 1U);
  EXPECT_LE(groups->histogram.count, 20U);
}

TEST_F(PostgresPlugin, MovesAVersion1SchemaToTheCurrentOne) {
  {
    // Version 1 kept each id's highest sequence number in its fence row, updated by every append.
    pqxx::connection c(*postgres_url());
    pqxx::work t(c);
    const auto& s = factory_.schema;
    t.exec("CREATE SCHEMA " + s);
    t.exec("CREATE TABLE " + s + ".schema_version(version integer NOT NULL)");
    t.exec("INSERT INTO " + s + ".schema_version VALUES (1)");
    t.exec("CREATE TABLE " + s +
           ".fences(pid text COLLATE \"C\" PRIMARY KEY, epoch bigint NOT NULL DEFAULT 0,"
           " highest bigint NOT NULL DEFAULT 0)");
    t.exec("CREATE TABLE " + s +
           ".journal(pid text COLLATE \"C\" NOT NULL, seq bigint NOT NULL,"
           " type_name text NOT NULL, version bigint NOT NULL, payload bytea NOT NULL,"
           " epoch bigint NOT NULL, PRIMARY KEY(pid, seq))");
    t.exec("INSERT INTO " + s + ".fences VALUES ('p', 2, 2), ('gone', 0, 7)");
    t.exec("INSERT INTO " + s +
           ".journal VALUES ('p', 1, 'test.text', 1, '\\x0161', 2),"
           " ('p', 2, 'test.text', 1, '\\x0162', 2)");
    t.commit();
  }
  auto store = open();
  EXPECT_EQ(store->journal().async_highest_sequence_nr("p", use_future).get(), 2U);
  EXPECT_EQ(store->journal().async_highest_sequence_nr("gone", use_future).get(), 7U);
  EXPECT_EQ(error_of(store->journal().async_append({"p", 3, {value_of("old")}, 1, std::nullopt},
                                                   use_future)),
            errc::epoch_fenced);
  EXPECT_EQ(
      store->journal().async_append({"p", 3, {value_of("c")}, 2, std::nullopt}, use_future).get(),
      3U);
  EXPECT_EQ(error_of(store->journal().async_append({"gone", 7, {value_of("x")}, 0, std::nullopt},
                                                   use_future)),
            errc::sequence_conflict);
  auto events = store->journal().async_read({"p"}, use_future).get();
  ASSERT_EQ(events.size(), 3U);
  EXPECT_EQ(text_of(events[1].event), "b");
  pqxx::connection c(*postgres_url());
  pqxx::nontransaction t(c);
  EXPECT_EQ(
      t.exec("SELECT max(version) FROM " + factory_.schema + ".schema_version")[0][0].as<int>(), 2);
}

TEST(PostgresPluginOpen, RefusesAnUnreachableServerWithAClearErrorWithoutThePassword) {
  try {
    auto p = open_postgres_plugin({.url = "postgresql://troupe:s3cret@127.0.0.1:1/db"});
    FAIL() << "opened a server on port 1";
  } catch (const persistence_error& e) {
    std::string what = e.what();
    EXPECT_EQ(e.value(), errc::store_failure);
    EXPECT_NE(what.find("cannot connect to PostgreSQL"), std::string::npos) << what;
    EXPECT_NE(what.find("127.0.0.1:1"), std::string::npos) << what;
    EXPECT_EQ(what.find("s3cret"), std::string::npos) << what;
  }
}

TEST(PostgresPluginOpen, RefusesAMalformedUrl) {
  try {
    auto p = open_postgres_plugin({.url = "this is not a url password=s3cret"});
    FAIL() << "opened a malformed URL";
  } catch (const persistence_error& e) {
    EXPECT_EQ(e.value(), errc::store_failure);
    EXPECT_EQ(std::string(e.what()).find("s3cret"), std::string::npos) << e.what();
  }
  try {
    auto p = open_postgres_plugin({.url = ""});
    FAIL() << "opened an empty URL";
  } catch (const persistence_error& e) {
    EXPECT_EQ(e.value(), errc::invalid_request);
  }
}

}  // namespace
}  // namespace troupe::persistence
