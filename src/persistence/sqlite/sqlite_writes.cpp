#include <troupe/persistence/errc.hpp>

#include "persistence/sqlite/sqlite_operations.hpp"

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

/// Checks the fence of a persistence id's write other than an append, and forgets the id's cached
/// head when the write will raise the fence (the next append reads it again).
ownership_epoch check_pid_fence(write_session& s, const std::string& pid, ownership_epoch epoch) {
  auto fence = check_fence(s.db, "p", pid, pid, epoch);
  if (epoch > fence) s.heads.forget(pid);
  return fence;
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

sequence_nr append(write_session& s, const append_request& r) {
  // The hot path of every persistent entity: the checks against the cached head, then the rows.
  auto& head = s.heads.get(s.db, r.persistence_id);
  if (r.epoch < head.fence) refuse_epoch(r.persistence_id, r.epoch, head.fence);
  if (r.expected_next != head.highest + 1) {
    throw persistence_error(errc::sequence_conflict,
                            "append to " + r.persistence_id + " expected next " +
                                std::to_string(r.expected_next) + ", highest is " +
                                std::to_string(head.highest));
  }
  auto number = head.number;
  if (number == 0) {
    s.db.prepare("INSERT INTO persistence_ids(pid) VALUES (?1)").bind(1, r.persistence_id).run();
    number = s.db.last_insert_rowid();
  }
  sequence_nr seq = r.expected_next;
  for (const auto& e : r.events) {
    s.db.prepare(
            "INSERT INTO journal(pid_id, seq, type_name, version, payload, epoch) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
        .bind(1, number)
        .bind_unsigned(2, seq)
        .bind(3, e.manifest.type_name)
        .bind(4, std::int64_t{e.manifest.version})
        .bind(5, e.payload)
        .bind_unsigned(6, r.epoch)
        .run();
    ++seq;
  }
  raise_fence(s.db, "p", r.persistence_id, head.fence, r.epoch);
  // Only now, with every row written: a failure above leaves the head as it was (and the
  // writer's rollback clears the cache anyway).
  head.number = number;
  head.highest = seq - 1;
  head.fence = std::max(head.fence, r.epoch);
  return seq - 1;
}

void delete_to(write_session& s, const delete_events_request& r) {
  auto fence = check_fence(s.db, "p", r.persistence_id, r.persistence_id, r.epoch);
  const journal_head head = s.heads.get(s.db, r.persistence_id);
  s.heads.forget(r.persistence_id);  // its floor (and maybe its fence) change below
  if (head.highest == 0) return;
  s.db.prepare(
          "INSERT INTO journal_floors(pid, highest) VALUES (?1, ?2) "
          "ON CONFLICT(pid) DO UPDATE SET highest = excluded.highest")
      .bind(1, r.persistence_id)
      .bind_unsigned(2, head.highest)
      .run();
  s.db.prepare("DELETE FROM journal WHERE pid_id = ?1 AND seq <= ?2")
      .bind(1, head.number)
      .bind(2, static_cast<std::int64_t>(std::min<std::uint64_t>(r.to, max_epoch)))
      .run();
  raise_fence(s.db, "p", r.persistence_id, fence, r.epoch);
}

void save_snapshot(write_session& s, const snapshot_write& w) {
  auto fence = check_pid_fence(s, w.persistence_id, w.epoch);
  s.db.prepare(
          "INSERT OR REPLACE INTO snapshots(pid, seq, type_name, version, payload, epoch) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
      .bind(1, w.persistence_id)
      .bind_unsigned(2, w.sequence)
      .bind(3, w.state.manifest.type_name)
      .bind(4, std::int64_t{w.state.manifest.version})
      .bind(5, w.state.payload)
      .bind_unsigned(6, w.epoch)
      .run();
  raise_fence(s.db, "p", w.persistence_id, fence, w.epoch);
}

void delete_snapshots(write_session& s, const snapshot_delete& d) {
  auto fence = check_pid_fence(s, d.persistence_id, d.epoch);
  s.db.prepare("DELETE FROM snapshots WHERE pid = ?1 AND seq <= ?2")
      .bind(1, d.persistence_id)
      .bind(2, static_cast<std::int64_t>(std::min<std::uint64_t>(d.max_sequence, max_epoch)))
      .run();
  raise_fence(s.db, "p", d.persistence_id, fence, d.epoch);
}

revision_nr upsert_state(write_session& s, const state_write& w) {
  auto fence = check_pid_fence(s, w.persistence_id, w.epoch);
  check_revision(s.db, w.persistence_id, w.expected_revision);
  revision_nr next = w.expected_revision + 1;
  s.db.prepare(
          "INSERT OR REPLACE INTO durable_state(pid, revision, type_name, version, payload, "
          "epoch) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
      .bind(1, w.persistence_id)
      .bind_unsigned(2, next)
      .bind(3, w.value.manifest.type_name)
      .bind(4, std::int64_t{w.value.manifest.version})
      .bind(5, w.value.payload)
      .bind_unsigned(6, w.epoch)
      .run();
  raise_fence(s.db, "p", w.persistence_id, fence, w.epoch);
  return next;
}

void delete_state(write_session& s, const state_delete& d) {
  auto fence = check_pid_fence(s, d.persistence_id, d.epoch);
  check_revision(s.db, d.persistence_id, d.expected_revision);
  s.db.prepare("DELETE FROM durable_state WHERE pid = ?1").bind(1, d.persistence_id).run();
  raise_fence(s.db, "p", d.persistence_id, fence, d.epoch);
}

void update_remembered(write_session& s, const remember_update& u) {
  auto key = shard_key(u);
  auto fence = check_fence(s.db, "s", key, "shard " + key, u.epoch);
  for (const auto& id : u.added) {
    s.db.prepare(
            "INSERT OR IGNORE INTO remembered(type_name, shard, entity_id) VALUES (?1, ?2, ?3)")
        .bind(1, u.type_name)
        .bind(2, std::int64_t{u.shard})
        .bind(3, id)
        .run();
  }
  for (const auto& id : u.removed) {
    s.db.prepare("DELETE FROM remembered WHERE type_name = ?1 AND shard = ?2 AND entity_id = ?3")
        .bind(1, u.type_name)
        .bind(2, std::int64_t{u.shard})
        .bind(3, id)
        .run();
  }
  raise_fence(s.db, "s", key, fence, u.epoch);
}

}  // namespace troupe::persistence::sqlite
