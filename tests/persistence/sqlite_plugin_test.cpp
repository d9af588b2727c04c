// ctest-labels: concurrency
// What only the SQLite plugin promises beyond the conformance suite: WAL mode, refusing files it
// cannot use, moving a version 1 file to the current layout, seeing another process's writes to
// the same file, finishing queued writes when closed, a refused write inside a group commit
// leaving the others committed, completions reaching a coroutine actor on its own executor, and
// the writer's metrics.
#include <troupe/core/actor_system.hpp>
#include <troupe/core/async_actor.hpp>
#include <troupe/core/config.hpp>
#include <troupe/core/metrics.hpp>
#include <troupe/persistence/errc.hpp>
#include <troupe/persistence/serialization/codec.hpp>
#include <troupe/persistence/sqlite_config.hpp>
#include <troupe/persistence/sqlite_plugin.hpp>
#include <troupe/testkit/metric_values.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <stdlib.h>

#include <filesystem>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace tp = troupe::persistence;
using boost::asio::use_future;

/// A temporary directory, removed with everything in it.
class temp_dir {
 public:
  temp_dir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "troupe-sqlite-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  [[nodiscard]] std::filesystem::path file() const { return path_ / "store.db"; }

 private:
  std::filesystem::path path_;
};

tp::serialized text(const std::string& s) { return {{"test.text", 1}, tp::encode(s)}; }

/// Runs one SQL statement returning one text or integer column, through its own connection.
std::string query(const std::filesystem::path& file, const char* sql) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open(file.c_str(), &db) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return out;
}

/// Runs SQL (several statements allowed) through its own connection; false on an error.
bool exec_sql(const std::filesystem::path& file, const char* sql) {
  sqlite3* db = nullptr;
  bool ok = sqlite3_open(file.c_str(), &db) == SQLITE_OK &&
            sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
  sqlite3_close(db);
  return ok;
}

tp::errc open_error(const tp::sqlite_options& options) {
  try {
    auto p = tp::open_sqlite_plugin(options);
  } catch (const tp::persistence_error& e) {
    return e.value();
  }
  return tp::errc{};
}

TEST(SqlitePlugin, CreatesTheDatabaseInWalMode) {
  temp_dir dir;
  auto store = tp::open_sqlite_plugin({.file = dir.file()});
  EXPECT_EQ(query(dir.file(), "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(query(dir.file(), "PRAGMA user_version"), "2");
}

TEST(SqlitePlugin, RefusesAFileItCannotOpenOrADatabaseWithANewerSchema) {
  temp_dir dir;
  EXPECT_EQ(open_error({.file = dir.file().parent_path() / "missing" / "store.db"}),
            tp::errc::store_failure);
  EXPECT_EQ(open_error({}), tp::errc::invalid_request);
  (void)query(dir.file(), "PRAGMA user_version = 99");
  EXPECT_EQ(open_error({.file = dir.file()}), tp::errc::store_failure);
}

TEST(SqlitePlugin, MovesAVersion1JournalToTheCurrentLayout) {
  temp_dir dir;
  // The tables of version 1 that changed, as that version created them, with a few events and
  // the floor of an id whose events were deleted.
  ASSERT_TRUE(
      exec_sql(dir.file(),
               "CREATE TABLE journal(pid TEXT NOT NULL, seq INTEGER NOT NULL, type_name TEXT,"
               "  version INTEGER, payload BLOB, epoch INTEGER, PRIMARY KEY(pid, seq))"
               "  WITHOUT ROWID;"
               "CREATE TABLE journal_floors(pid TEXT PRIMARY KEY NOT NULL,"
               "  highest INTEGER NOT NULL) WITHOUT ROWID;"
               "INSERT INTO journal VALUES ('b', 1, 'test.text', 1, x'0162', 3),"
               "  ('a', 2, 'test.text', 1, x'0161', 0), ('a', 1, 'test.text', 1, x'0161', 0);"
               "INSERT INTO journal_floors VALUES ('gone', 7);"
               "PRAGMA user_version = 1;"));
  auto store = tp::open_sqlite_plugin({.file = dir.file()});
  auto& journal = store->journal();
  auto a = journal.async_read({"a"}, use_future).get();
  ASSERT_EQ(a.size(), 2U);
  EXPECT_EQ(a[1], (tp::event_record{2, text("a"), 0}));
  EXPECT_EQ(journal.async_read({"b"}, use_future).get(),
            (std::vector<tp::event_record>{{1, text("b"), 3}}));
  EXPECT_EQ(journal.async_highest_sequence_nr("gone", use_future).get(), 7U);
  EXPECT_EQ(journal.async_append({"a", 3, {text("c")}, 0, std::nullopt}, use_future).get(), 3U);
  EXPECT_THROW(journal.async_append({"gone", 1, {text("x")}, 0, std::nullopt}, use_future).get(),
               tp::persistence_error);
  EXPECT_EQ(query(dir.file(), "PRAGMA user_version"), "2");
}

TEST(SqlitePlugin, SeesWhatAnotherProcessWroteToTheSameFile) {
  // Two plugins over one file stand in for two processes: each writer caches the heads of the
  // journals it wrote, and must notice the other's commits before trusting them.
  temp_dir dir;
  auto first = tp::open_sqlite_plugin({.file = dir.file()});
  auto second = tp::open_sqlite_plugin({.file = dir.file()});
  auto append = [](tp::plugin& p, tp::append_request r) {
    return p.journal().async_append(std::move(r), use_future);
  };
  EXPECT_EQ(append(*first, {"p", 1, {text("first")}, 0, std::nullopt}).get(), 1U);
  EXPECT_EQ(append(*second, {"p", 2, {text("second")}, 0, std::nullopt}).get(), 2U);
  EXPECT_THROW(append(*first, {"p", 2, {text("stale")}, 0, std::nullopt}).get(),
               tp::persistence_error);
  EXPECT_EQ(append(*first, {"p", 3, {text("third")}, 0, std::nullopt}).get(), 3U);
  EXPECT_EQ(append(*second, {"q", 1, {text("raises")}, 5, std::nullopt}).get(), 1U);
  try {
    append(*first, {"q", 2, {text("old epoch")}, 4, std::nullopt}).get();
    ADD_FAILURE() << "appended below the fence another process raised";
  } catch (const tp::persistence_error& e) {
    EXPECT_EQ(e.value(), tp::errc::epoch_fenced) << e.what();
  }
  EXPECT_EQ(first->journal().async_read({"p"}, use_future).get().size(), 3U);
}

TEST(SqlitePlugin, FinishesQueuedWritesWhenClosed) {
  temp_dir dir;
  std::vector<std::future<tp::sequence_nr>> pending;
  {
    auto store =
        tp::open_sqlite_plugin({.file = dir.file(), .durability = tp::sqlite_durability::normal});
    for (int i = 0; i < 100; ++i) {
      pending.push_back(store->journal().async_append(
          {"p-" + std::to_string(i), 1, {text("e")}, 0, std::nullopt}, use_future));
    }
  }
  for (auto& f : pending) EXPECT_EQ(f.get(), 1U);
  auto store = tp::open_sqlite_plugin({.file = dir.file()});
  EXPECT_EQ(store->journal().async_highest_sequence_nr("p-99", use_future).get(), 1U);
}

TEST(SqlitePlugin, RecordsEachWritesWaitAndEachGroupsSizeInTheRegistryItWasGiven) {
  temp_dir dir;
  auto registry = std::make_shared<troupe::metrics_registry>();
  auto store = tp::open_sqlite_plugin(
      {.file = dir.file(), .durability = tp::sqlite_durability::normal, .metrics = registry});
  // Queued together, so that the writer may take them in fewer groups; then one alone.
  std::vector<std::future<tp::sequence_nr>> pending;
  for (int i = 0; i < 20; ++i) {
    pending.push_back(store->journal().async_append(
        {"m-" + std::to_string(i), 1, {text("e")}, 0, std::nullopt}, use_future));
  }
  for (auto& f : pending) EXPECT_EQ(f.get(), 1U);
  EXPECT_EQ(
      store->journal().async_append({"m-0", 2, {text("f")}, 0, std::nullopt}, use_future).get(),
      2U);
  // A write is recorded before its caller is completed: every completed write shows.
  const auto s = registry->collect();
  EXPECT_EQ(troupe::testkit::observations(s, "troupe_persistence_write_seconds", {"sqlite"}), 21U);
  const auto* groups = troupe::testkit::find_child(s, "troupe_persistence_group_size", {"sqlite"});
  ASSERT_NE(groups, nullptr);
  EXPECT_EQ(groups->histogram.sum, 21.0);  // every write in exactly one group
  EXPECT_GE(groups->histogram.count, 2U);  // the last write came after the others completed
  EXPECT_LE(groups->histogram.count, 21U);
  EXPECT_EQ(store->stats().writes, 21U);
}

TEST(SqlitePlugin, ARefusedWriteInAGroupCommitLeavesTheOthersCommitted) {
  temp_dir dir;
  auto store = tp::open_sqlite_plugin({.file = dir.file()});
  auto& journal = store->journal();
  // Queued together, so they usually share a transaction; the outcome must not depend on it.
  auto first = journal.async_append({"p", 1, {text("a"), text("b")}, 0, std::nullopt}, use_future);
  auto conflicting = journal.async_append({"p", 1, {text("x")}, 0, std::nullopt}, use_future);
  auto other = journal.async_append({"q", 1, {text("c")}, 0, std::nullopt}, use_future);
  EXPECT_EQ(first.get(), 2U);
  EXPECT_THROW(conflicting.get(), tp::persistence_error);
  EXPECT_EQ(other.get(), 1U);
  EXPECT_EQ(journal.async_read({"p"}, use_future).get().size(), 2U);
  EXPECT_EQ(journal.async_read({"q"}, use_future).get().size(), 1U);
}

TEST(SqlitePlugin, AWriteFailingMidwayIsRolledBackAloneInItsGroup) {
  temp_dir dir;
  auto store = tp::open_sqlite_plugin({.file = dir.file()});
  auto& journal = store->journal();
  journal.async_append({"setup", 1, {text("s")}, 0, std::nullopt}, use_future).get();
  // Events of "edge" were deleted up to 2^63 - 2: its next append's second event would be
  // numbered 2^63, which SQLite cannot store, so that append fails after writing its first row.
  (void)query(dir.file(),
              "INSERT INTO journal_floors(pid, highest) VALUES ('edge', 9223372036854775806)");
  auto before = journal.async_append({"a", 1, {text("a")}, 0, std::nullopt}, use_future);
  auto failing = journal.async_append(
      {"edge", 9223372036854775807ULL, {text("x"), text("y")}, 0, std::nullopt}, use_future);
  auto after = journal.async_append({"b", 1, {text("b")}, 0, std::nullopt}, use_future);
  EXPECT_EQ(before.get(), 1U);
  EXPECT_THROW(failing.get(), tp::persistence_error);
  EXPECT_EQ(after.get(), 1U);
  EXPECT_TRUE(journal.async_read({"edge"}, use_future).get().empty());
  EXPECT_EQ(journal.async_read({"a"}, use_future).get().size(), 1U);
  EXPECT_EQ(journal.async_read({"b"}, use_future).get().size(), 1U);
}

TEST(SqlitePlugin, ReportsACorruptFenceAsAnErrorOfThatWriteOnly) {
  temp_dir dir;
  auto store = tp::open_sqlite_plugin({.file = dir.file()});
  auto& journal = store->journal();
  journal.async_append({"setup", 1, {text("s")}, 0, std::nullopt}, use_future).get();
  (void)query(dir.file(), "INSERT INTO fences(scope, key, epoch) VALUES ('p', 'bad', 'high')");
  auto bad = journal.async_append({"bad", 1, {text("x")}, 0, std::nullopt}, use_future);
  auto good = journal.async_append({"good", 1, {text("y")}, 0, std::nullopt}, use_future);
  try {
    bad.get();
    ADD_FAILURE() << "appended despite a corrupt fence";
  } catch (const tp::persistence_error& e) {
    EXPECT_EQ(e.value(), tp::errc::corrupt_record) << e.what();
  }
  EXPECT_EQ(good.get(), 1U);
}

/// Appends one event per message and replies with the sequence number written, or 0 on error.
class writer final : public troupe::async_actor<std::string> {
 public:
  explicit writer(tp::journal* journal) : journal_(journal) {}

 private:
  boost::asio::awaitable<void> receive(std::string event) override {
    tp::append_request r{std::string("actor"), next_, {text(event)}, 0, std::nullopt};
    try {
      next_ = co_await journal_->async_append(std::move(r), boost::asio::use_awaitable) + 1;
      context().reply(next_ - 1);
    } catch (const tp::persistence_error&) {
      context().reply(tp::sequence_nr{0});
    }
  }

  tp::journal* journal_;
  tp::sequence_nr next_ = 1;
};

TEST(SqlitePlugin, CompletesInsideACoroutineActorsTurn) {
  temp_dir dir;
  auto store = tp::open_sqlite_plugin({.file = dir.file()});
  troupe::actor_system system(troupe::system_config{}.with_name("sqlite").with_workers(2));
  troupe::testkit::test_probe<tp::sequence_nr> probe(system);
  auto ref = system.spawn<writer>("writer", &store->journal());
  for (int i = 0; i < 3; ++i) ref.tell("event", probe.untyped());
  EXPECT_EQ(probe.expect_message(), 1U);
  EXPECT_EQ(probe.expect_message(), 2U);
  EXPECT_EQ(probe.expect_message(), 3U);
}

TEST(SqliteConfig, ReadsTheQueueBoundAndRefusesZero) {
  const auto read = [](std::string_view text) {
    return tp::sqlite_options_from_config(troupe::config::parse_string(text, "test.conf"));
  };
  EXPECT_EQ(read("troupe.persistence.sqlite.file = x.db").max_queued, 65536U);
  EXPECT_EQ(read("troupe.persistence.sqlite { file = x.db, max-queued = 10 }").max_queued, 10U);
  try {
    (void)read("troupe.persistence.sqlite { file = x.db, max-queued = 0 }");
    ADD_FAILURE() << "max-queued = 0 was accepted";
  } catch (const tp::persistence_error& e) {
    EXPECT_EQ(e.value(), tp::errc::invalid_request);
  }
}

}  // namespace
