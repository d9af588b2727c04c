#pragma once
// The plugins the conformance suite runs against. A factory opens its plugin over storage that
// outlives it (so a test can reopen and find its data) and can damage a stored event. To add a
// plugin: write its factory here and add it to `all_plugins`. A factory whose backend may be
// missing (a server) has `static std::optional<std::string> unavailable()`: the fixture skips
// the test with that reason.

#include <troupe/persistence/memory_plugin.hpp>
#include <troupe/persistence/plugin.hpp>
#include <troupe/persistence/postgres_plugin.hpp>
#include <troupe/persistence/sqlite_plugin.hpp>

#include <gtest/gtest.h>
#include <pqxx/connection>
#include <pqxx/transaction>
#include <sqlite3.h>

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>

namespace troupe::persistence::conformance {

/// Fresh storage in one process's memory.
struct memory_factory {
  /// The plugin groups concurrent writes into fewer transactions.
  static constexpr bool groups_commits = false;

  std::unique_ptr<plugin> open() { return make_memory_plugin(storage); }
  bool corrupt_event(const std::string& persistence_id, sequence_nr sequence) {
    return corrupt_stored_event(*storage, persistence_id, sequence);
  }

  std::shared_ptr<memory_storage> storage = make_memory_storage();
};

/// A fresh database file in a temporary directory, removed afterwards.
struct sqlite_factory {
  static constexpr bool groups_commits = true;

  sqlite_factory() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "troupe-sqlite-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir = pattern;
  }
  ~sqlite_factory() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  sqlite_factory(const sqlite_factory&) = delete;
  sqlite_factory& operator=(const sqlite_factory&) = delete;

  std::unique_ptr<plugin> open() { return open_sqlite_plugin({.file = dir / "store.db"}); }

  /// Stores text where the manifest version (an integer) belongs, through a connection of its own.
  bool corrupt_event(const std::string& persistence_id, sequence_nr sequence) {
    sqlite3* db = nullptr;
    bool changed = false;
    if (sqlite3_open((dir / "store.db").c_str(), &db) == SQLITE_OK) {
      sqlite3_busy_timeout(db, 5000);
      sqlite3_stmt* stmt = nullptr;
      sqlite3_prepare_v2(db,
                         "UPDATE journal SET version = 'two' WHERE seq = ?2 AND pid_id = "
                         "(SELECT id FROM persistence_ids WHERE pid = ?1)",
                         -1, &stmt, nullptr);
      sqlite3_bind_text(stmt, 1, persistence_id.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(stmt, 2, static_cast<sqlite3_int64>(sequence));
      changed = sqlite3_step(stmt) == SQLITE_DONE && sqlite3_changes(db) == 1;
      sqlite3_finalize(stmt);
    }
    sqlite3_close(db);
    return changed;
  }

  std::filesystem::path dir;
};

/// The PostgreSQL server the tests use: TROUPE_PG_URL (scripts/test.sh starts one with
/// scripts/postgres.sh and sets it), or nullopt.
inline std::optional<std::string> postgres_url() {
  const char* url = std::getenv("TROUPE_PG_URL");
  if (url == nullptr || *url == '\0') return std::nullopt;
  return std::string(url);
}

/// A fresh schema of its own (so tests running side by side share the server, not their tables)
/// on the server TROUPE_PG_URL names, dropped afterwards.
struct postgres_factory {
  static constexpr bool groups_commits = true;

  static std::optional<std::string> unavailable() {
    if (postgres_url()) return std::nullopt;
    return "TROUPE_PG_URL is not set: no PostgreSQL server to test against (scripts/test.sh "
           "starts one; by hand: export TROUPE_PG_URL=$(scripts/postgres.sh start))";
  }

  postgres_factory() {
    static std::atomic<int> counter{0};
    std::random_device random;
    schema = "troupe_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
             std::to_string(random() % 1000000);
  }
  ~postgres_factory() {
    if (!postgres_url()) return;
    try {
      pqxx::connection c(*postgres_url());
      pqxx::work t(c);
      t.exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
      t.commit();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "cannot drop schema " << schema << ": " << e.what();
    }
  }
  postgres_factory(const postgres_factory&) = delete;
  postgres_factory& operator=(const postgres_factory&) = delete;

  std::unique_ptr<plugin> open() {
    return open_postgres_plugin({.url = *postgres_url(), .schema = schema});
  }

  /// Stores version 0 (versions start at 1), through a connection of its own.
  bool corrupt_event(const std::string& persistence_id, sequence_nr sequence) {
    pqxx::connection c(*postgres_url());
    pqxx::work t(c);
    auto r =
        t.exec_params("UPDATE " + schema + ".journal SET version = 0 WHERE seq = $2 AND pid_id = " +
                          "(SELECT id FROM " + schema + ".persistence_ids WHERE pid = $1)",
                      persistence_id, static_cast<long long>(sequence));
    t.commit();
    return r.affected_rows() == 1;
  }

  std::string schema;
};

using all_plugins = ::testing::Types<memory_factory, sqlite_factory, postgres_factory>;

/// Names the typed tests after the plugin: StoreJournal/memory.AppendsAndReads...
struct plugin_names {
  template <class T>
  static std::string GetName(int /*index*/) {
    if constexpr (std::is_same_v<T, memory_factory>) return "memory";
    if constexpr (std::is_same_v<T, sqlite_factory>) return "sqlite";
    if constexpr (std::is_same_v<T, postgres_factory>) return "postgres";
    return "plugin";
  }
};

}  // namespace troupe::persistence::conformance
