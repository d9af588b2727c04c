// ctest-labels: concurrency
// What only the PostgreSQL plugin promises: it survives the server dropping its connections,
// creating its schema is idempotent (also when several plugins start together), two plugins over
// one schema (two nodes) never interleave a journal, and a bad URL fails at open with a clear
// error that does not show the password. The cases that need a server skip unless TROUPE_PG_URL
// names one (scripts/test.sh starts one).
#include <troupe/persistence/errc.hpp>
#include <troupe/persistence/postgres_plugin.hpp>

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
    return p.journal().async_append({pid, next, {value_of(text)}, 0}, use_future).get();
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
  ASSERT_EQ(store->durable_state().async_upsert({"s", 0, value_of("one"), 0}, use_future).get(),
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
      fa.push_back(a->journal().async_append({pid, next, {value_of("a")}, 0}, use_future));
      fb.push_back(b->journal().async_append({pid, next, {value_of("b")}, 0}, use_future));
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
