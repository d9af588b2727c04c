// The database's tables, and moving a version 1 file to the current layout.
#include <troupe/persistence/errc.hpp>

#include "persistence/sqlite/sqlite_operations.hpp"

#include <string>

namespace troupe::persistence::sqlite {

namespace {

// Version 2 keeps events in a rowid table in the order they were written, so a group commit
// appends to the table's last pages instead of touching one B-tree leaf per persistence id; the
// index on (pid_id, seq) keeps each id's events in order for reads, and its entries are small
// (two integers and the rowid), so a group dirties few of its pages.
constexpr const char* journal_tables =
    "CREATE TABLE IF NOT EXISTS persistence_ids("
    "  id INTEGER PRIMARY KEY, pid TEXT NOT NULL UNIQUE);"
    "CREATE TABLE IF NOT EXISTS journal("
    "  ordering INTEGER PRIMARY KEY, pid_id INTEGER NOT NULL, seq INTEGER NOT NULL,"
    "  type_name TEXT, version INTEGER, payload BLOB, epoch INTEGER);"
    "CREATE UNIQUE INDEX IF NOT EXISTS journal_by_pid ON journal(pid_id, seq);";

constexpr const char* other_tables =
    "CREATE TABLE IF NOT EXISTS fences("
    "  scope TEXT NOT NULL, key TEXT NOT NULL, epoch INTEGER NOT NULL,"
    "  PRIMARY KEY(scope, key)) WITHOUT ROWID;"
    // The highest sequence number when events were last deleted: it outlives the events, so
    // numbers are never reused. Otherwise the highest is max(seq) of the journal.
    "CREATE TABLE IF NOT EXISTS journal_floors("
    "  pid TEXT PRIMARY KEY NOT NULL, highest INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS snapshots("
    "  pid TEXT NOT NULL, seq INTEGER NOT NULL, type_name TEXT, version INTEGER,"
    "  payload BLOB, epoch INTEGER, PRIMARY KEY(pid, seq)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS durable_state("
    "  pid TEXT PRIMARY KEY NOT NULL, revision INTEGER, type_name TEXT, version INTEGER,"
    "  payload BLOB, epoch INTEGER) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS remembered("
    "  type_name TEXT NOT NULL, shard INTEGER NOT NULL, entity_id TEXT NOT NULL,"
    "  PRIMARY KEY(type_name, shard, entity_id)) WITHOUT ROWID;";

// Version 1 kept the journal keyed by (pid, seq) with the events in its leaves.
constexpr const char* journal_from_version_1 =
    "ALTER TABLE journal RENAME TO journal_version_1;"
    "CREATE TABLE persistence_ids(id INTEGER PRIMARY KEY, pid TEXT NOT NULL UNIQUE);"
    "CREATE TABLE journal("
    "  ordering INTEGER PRIMARY KEY, pid_id INTEGER NOT NULL, seq INTEGER NOT NULL,"
    "  type_name TEXT, version INTEGER, payload BLOB, epoch INTEGER);"
    "INSERT INTO persistence_ids(pid) SELECT DISTINCT pid FROM journal_version_1 ORDER BY pid;"
    "INSERT INTO journal(pid_id, seq, type_name, version, payload, epoch)"
    "  SELECT i.id, j.seq, j.type_name, j.version, j.payload, j.epoch"
    "  FROM journal_version_1 j JOIN persistence_ids i ON i.pid = j.pid ORDER BY j.pid, j.seq;"
    "CREATE UNIQUE INDEX journal_by_pid ON journal(pid_id, seq);"
    "DROP TABLE journal_version_1;";

int user_version(connection& c) {
  auto s = c.prepare("PRAGMA user_version");
  s.step();
  return static_cast<int>(s.integer(0, "schema version"));
}

}  // namespace

void create_schema(connection& c) {
  // The version is read under the write lock: two plugins opening one file together take turns.
  c.exec("BEGIN IMMEDIATE");
  try {
    auto version = user_version(c);
    if (version > schema_version) {
      throw persistence_error(
          errc::store_failure,
          "database schema version " + std::to_string(version) + " is newer than this troupe's");
    }
    if (version < schema_version) {
      if (version == 1) c.exec(journal_from_version_1);
      c.exec(other_tables);
      c.exec(journal_tables);
      c.exec(("PRAGMA user_version = " + std::to_string(schema_version)).c_str());
    }
    c.exec("COMMIT");
  } catch (...) {
    try {
      if (!c.autocommit()) c.exec("ROLLBACK");
    } catch (...) {
      // The first failure is the one to report.
    }
    throw;
  }
}

}  // namespace troupe::persistence::sqlite
