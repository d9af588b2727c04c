#include <troupe/persistence/errc.hpp>

#include "persistence/sqlite/sqlite_operations.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <limits>
#include <string>

namespace troupe::persistence::sqlite {

namespace {

// Fences are keyed by scope: 'p' for a persistence id, 's' for a shard's remembered entities.
constexpr std::uint64_t max_epoch = std::numeric_limits<std::int64_t>::max();

ownership_epoch stored_fence(connection& c, const char* scope, const std::string& key) {
  auto s = c.prepare("SELECT epoch FROM fences WHERE scope = ?1 AND key = ?2");
  s.bind(1, std::string_view(scope)).bind(2, key);
  return s.step() ? s.unsigned_integer(0, "fence epoch", 0, max_epoch) : 0;
}

[[noreturn]] void refuse_epoch(const std::string& name, ownership_epoch epoch,
                               ownership_epoch fence) {
  throw persistence_error(errc::epoch_fenced, "write to " + name + " with epoch " +
                                                  std::to_string(epoch) + " refused: epoch " +
                                                  std::to_string(fence) + " has written");
}

/// Refuses a write below the fence; returns the stored fence for raise_fence.
ownership_epoch check_fence(connection& c, const char* scope, const std::string& key,
                            const std::string& name, ownership_epoch epoch) {
  auto fence = stored_fence(c, scope, key);
  if (epoch < fence) refuse_epoch(name, epoch, fence);
  return fence;
}

void raise_fence(connection& c, const char* scope, const std::string& key, ownership_epoch fence,
                 ownership_epoch epoch) {
  if (epoch <= fence) return;  // most writes: nothing to store
  c.prepare(
       "INSERT INTO fences(scope, key, epoch) VALUES (?1, ?2, ?3) "
       "ON CONFLICT(scope, key) DO UPDATE SET epoch = excluded.epoch")
      .bind(1, std::string_view(scope))
      .bind(2, key)
      .bind_unsigned(3, epoch)
      .run();
}

std::string shard_key(const remember_update& u) {
  // The shard number first: it holds no ':', so the key is injective.
  return std::to_string(u.shard) + ":" + u.type_name;
}

revision_nr stored_revision(connection& c, const std::string& pid) {
  auto s = c.prepare("SELECT revision FROM durable_state WHERE pid = ?1");
  s.bind(1, pid);
  return s.step() ? s.unsigned_integer(0, "state revision", 1, max_epoch) : 0;
}

void check_revision(connection& c, const std::string& pid, revision_nr expected) {
  auto stored = stored_revision(c, pid);
  if (stored != expected) {
    throw persistence_error(errc::revision_conflict, "state " + pid + " is at revision " +
                                                         std::to_string(stored) + ", expected " +
                                                         std::to_string(expected));
  }
}

}  // namespace

void create_schema(connection& c) {
  {
    auto s = c.prepare("PRAGMA user_version");
    s.step();
    auto version = s.integer(0, "schema version");
    if (version > schema_version) {
      throw persistence_error(
          errc::store_failure,
          "database schema version " + std::to_string(version) + " is newer than this troupe's");
    }
  }
  c.exec(
      "BEGIN IMMEDIATE;"
      "CREATE TABLE IF NOT EXISTS fences("
      "  scope TEXT NOT NULL, key TEXT NOT NULL, epoch INTEGER NOT NULL,"
      "  PRIMARY KEY(scope, key)) WITHOUT ROWID;"
      // The highest sequence number when events were last deleted: it outlives the events,
      // so numbers are never reused. Otherwise the highest is max(seq) of the journal.
      "CREATE TABLE IF NOT EXISTS journal_floors("
      "  pid TEXT PRIMARY KEY NOT NULL, highest INTEGER NOT NULL) WITHOUT ROWID;"
      "CREATE TABLE IF NOT EXISTS journal("
      "  pid TEXT NOT NULL, seq INTEGER NOT NULL, type_name TEXT, version INTEGER,"
      "  payload BLOB, epoch INTEGER, PRIMARY KEY(pid, seq)) WITHOUT ROWID;"
      "CREATE TABLE IF NOT EXISTS snapshots("
      "  pid TEXT NOT NULL, seq INTEGER NOT NULL, type_name TEXT, version INTEGER,"
      "  payload BLOB, epoch INTEGER, PRIMARY KEY(pid, seq)) WITHOUT ROWID;"
      "CREATE TABLE IF NOT EXISTS durable_state("
      "  pid TEXT PRIMARY KEY NOT NULL, revision INTEGER, type_name TEXT, version INTEGER,"
      "  payload BLOB, epoch INTEGER) WITHOUT ROWID;"
      "CREATE TABLE IF NOT EXISTS remembered("
      "  type_name TEXT NOT NULL, shard INTEGER NOT NULL, entity_id TEXT NOT NULL,"
      "  PRIMARY KEY(type_name, shard, entity_id)) WITHOUT ROWID;"
      "PRAGMA user_version = 1;"
      "COMMIT;");
}

sequence_nr append(connection& c, const append_request& r) {
  // The hot path of every persistent entity: one lookup for fence and highest, then the rows.
  auto s = c.prepare(
      "SELECT (SELECT epoch FROM fences WHERE scope = 'p' AND key = ?1),"
      "       (SELECT max(seq) FROM journal WHERE pid = ?1),"
      "       (SELECT highest FROM journal_floors WHERE pid = ?1)");
  s.bind(1, r.persistence_id);
  s.step();
  auto fence = s.unsigned_or_zero(0, "fence epoch", max_epoch);
  auto highest = std::max(s.unsigned_or_zero(1, "event sequence number", max_epoch),
                          s.unsigned_or_zero(2, "deleted highest sequence number", max_epoch));
  if (r.epoch < fence) refuse_epoch(r.persistence_id, r.epoch, fence);
  if (r.expected_next != highest + 1) {
    throw persistence_error(errc::sequence_conflict, "append to " + r.persistence_id +
                                                         " expected next " +
                                                         std::to_string(r.expected_next) +
                                                         ", highest is " + std::to_string(highest));
  }
  sequence_nr seq = r.expected_next;
  for (const auto& e : r.events) {
    c.prepare(
         "INSERT INTO journal(pid, seq, type_name, version, payload, epoch) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
        .bind(1, r.persistence_id)
        .bind_unsigned(2, seq)
        .bind(3, e.manifest.type_name)
        .bind(4, std::int64_t{e.manifest.version})
        .bind(5, e.payload)
        .bind_unsigned(6, r.epoch)
        .run();
    ++seq;
  }
  raise_fence(c, "p", r.persistence_id, fence, r.epoch);
  return seq - 1;
}

void delete_to(connection& c, const delete_events_request& r) {
  auto fence = check_fence(c, "p", r.persistence_id, r.persistence_id, r.epoch);
  auto highest = highest_sequence_nr(c, r.persistence_id);
  if (highest == 0) return;
  c.prepare(
       "INSERT INTO journal_floors(pid, highest) VALUES (?1, ?2) "
       "ON CONFLICT(pid) DO UPDATE SET highest = excluded.highest")
      .bind(1, r.persistence_id)
      .bind_unsigned(2, highest)
      .run();
  c.prepare("DELETE FROM journal WHERE pid = ?1 AND seq <= ?2")
      .bind(1, r.persistence_id)
      .bind(2, static_cast<std::int64_t>(std::min<std::uint64_t>(r.to, max_epoch)))
      .run();
  raise_fence(c, "p", r.persistence_id, fence, r.epoch);
}

void save_snapshot(connection& c, const snapshot_write& w) {
  auto fence = check_fence(c, "p", w.persistence_id, w.persistence_id, w.epoch);
  c.prepare(
       "INSERT OR REPLACE INTO snapshots(pid, seq, type_name, version, payload, epoch) "
       "VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
      .bind(1, w.persistence_id)
      .bind_unsigned(2, w.sequence)
      .bind(3, w.state.manifest.type_name)
      .bind(4, std::int64_t{w.state.manifest.version})
      .bind(5, w.state.payload)
      .bind_unsigned(6, w.epoch)
      .run();
  raise_fence(c, "p", w.persistence_id, fence, w.epoch);
}

void delete_snapshots(connection& c, const snapshot_delete& d) {
  auto fence = check_fence(c, "p", d.persistence_id, d.persistence_id, d.epoch);
  c.prepare("DELETE FROM snapshots WHERE pid = ?1 AND seq <= ?2")
      .bind(1, d.persistence_id)
      .bind(2, static_cast<std::int64_t>(std::min<std::uint64_t>(d.max_sequence, max_epoch)))
      .run();
  raise_fence(c, "p", d.persistence_id, fence, d.epoch);
}

revision_nr upsert_state(connection& c, const state_write& w) {
  auto fence = check_fence(c, "p", w.persistence_id, w.persistence_id, w.epoch);
  check_revision(c, w.persistence_id, w.expected_revision);
  revision_nr next = w.expected_revision + 1;
  c.prepare(
       "INSERT OR REPLACE INTO durable_state(pid, revision, type_name, version, payload, epoch) "
       "VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
      .bind(1, w.persistence_id)
      .bind_unsigned(2, next)
      .bind(3, w.value.manifest.type_name)
      .bind(4, std::int64_t{w.value.manifest.version})
      .bind(5, w.value.payload)
      .bind_unsigned(6, w.epoch)
      .run();
  raise_fence(c, "p", w.persistence_id, fence, w.epoch);
  return next;
}

void delete_state(connection& c, const state_delete& d) {
  auto fence = check_fence(c, "p", d.persistence_id, d.persistence_id, d.epoch);
  check_revision(c, d.persistence_id, d.expected_revision);
  c.prepare("DELETE FROM durable_state WHERE pid = ?1").bind(1, d.persistence_id).run();
  raise_fence(c, "p", d.persistence_id, fence, d.epoch);
}

void update_remembered(connection& c, const remember_update& u) {
  auto key = shard_key(u);
  auto fence = check_fence(c, "s", key, "shard " + key, u.epoch);
  for (const auto& id : u.added) {
    c.prepare("INSERT OR IGNORE INTO remembered(type_name, shard, entity_id) VALUES (?1, ?2, ?3)")
        .bind(1, u.type_name)
        .bind(2, std::int64_t{u.shard})
        .bind(3, id)
        .run();
  }
  for (const auto& id : u.removed) {
    c.prepare("DELETE FROM remembered WHERE type_name = ?1 AND shard = ?2 AND entity_id = ?3")
        .bind(1, u.type_name)
        .bind(2, std::int64_t{u.shard})
        .bind(3, id)
        .run();
  }
  raise_fence(c, "s", key, fence, u.epoch);
}

}  // namespace troupe::persistence::sqlite
