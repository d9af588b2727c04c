#include <troupe/persistence/errc.hpp>

#include "persistence/shard_fence_refusal.hpp"
#include "persistence/sqlite/sqlite_operations.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace troupe::persistence::sqlite {

namespace {

// Fences are keyed by scope: 'p' for a persistence id, 's' for a shard's remembered entities,
// 'o' for a shard's owner (the shard fence raised by raise_shard_fence).
constexpr std::uint64_t max_integer = std::numeric_limits<std::int64_t>::max();

ownership_epoch stored_fence(connection& c, const char* scope, const std::string& key) {
  auto s = c.prepare("SELECT epoch FROM fences WHERE scope = ?1 AND key = ?2");
  s.bind(1, std::string_view(scope)).bind(2, key);
  return s.step() ? s.unsigned_integer(0, "fence epoch", 0, max_integer) : 0;
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

void check_append(const append_request& r, const journal_head& head) {
  if (r.epoch < head.fence) refuse_epoch(r.persistence_id, r.epoch, head.fence);
  if (r.expected_next != head.highest + 1) {
    throw persistence_error(errc::sequence_conflict,
                            "append to " + r.persistence_id + " expected next " +
                                std::to_string(r.expected_next) + ", highest is " +
                                std::to_string(head.highest));
  }
}

/// Gives a persistence id its number in the journal (on its first append).
std::int64_t number_id(connection& c, const std::string& pid) {
  c.prepare("INSERT INTO persistence_ids(pid) VALUES (?1)").bind(1, pid).run();
  return c.last_insert_rowid();
}

/// One event to insert.
struct journal_row {
  std::int64_t number;
  sequence_nr seq;
  const serialized* event;
  ownership_epoch epoch;
};

/// Rows per INSERT of many rows: SQLite runs one statement for them, not one each.
constexpr std::size_t rows_per_insert = 32;

const char* insert_many_sql() {
  static const std::string sql = [] {
    std::string out =
        "INSERT INTO journal(pid_id, seq, type_name, version, payload, epoch) VALUES ";
    for (std::size_t k = 0; k < rows_per_insert; ++k)
      out += k == 0 ? "(?,?,?,?,?,?)" : ",(?,?,?,?,?,?)";
    return out;
  }();
  return sql.c_str();  // stable: the connection caches statements by this address
}

void bind_row(statement& st, int first, const journal_row& row) {
  st.bind(first, row.number)
      .bind(first + 1, static_cast<std::int64_t>(row.seq))
      .bind(first + 2, row.event->manifest.type_name)
      .bind(first + 3, std::int64_t{row.event->manifest.version})
      .bind(first + 4, row.event->payload)
      .bind(first + 5, static_cast<std::int64_t>(row.epoch));
}

/// Inserts the rows (their numbers were checked to fit), many per statement.
void insert_rows(connection& c, const std::vector<journal_row>& rows) {
  std::size_t i = 0;
  for (; i + rows_per_insert <= rows.size(); i += rows_per_insert) {
    auto st = c.prepare(insert_many_sql());
    for (std::size_t k = 0; k < rows_per_insert; ++k) {
      bind_row(st, static_cast<int>(k * 6 + 1), rows[i + k]);
    }
    st.run();
  }
  for (; i < rows.size(); ++i) {
    auto st = c.prepare(
        "INSERT INTO journal(pid_id, seq, type_name, version, payload, epoch) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    bind_row(st, 1, rows[i]);
    st.run();
  }
}

std::string shard_key(const fenced_shard& shard) {
  // The shard number first: it holds no ':', so the key is injective.
  return std::to_string(shard.shard) + ":" + shard.type_name;
}

std::optional<ownership_epoch> stored_owner_fence(connection& c, const fenced_shard& shard) {
  auto s = c.prepare("SELECT epoch FROM fences WHERE scope = 'o' AND key = ?1");
  s.bind(1, shard_key(shard));
  if (!s.step()) return std::nullopt;
  return s.unsigned_integer(0, "shard fence epoch", 0, max_integer);
}

/// Refuses a write naming a shard whose fence is not at `epoch`. The writer's transaction began
/// IMMEDIATE, so no raise commits between this read and the write's commit.
void check_owner_fence(connection& c, const std::optional<fenced_shard>& shard,
                       ownership_epoch epoch) {
  if (!shard) return;
  auto fence = stored_owner_fence(c, *shard);
  if (fence != epoch) throw owner_fence_refusal(*shard, epoch, fence);
}

revision_nr stored_revision(connection& c, const std::string& pid) {
  auto s = c.prepare("SELECT revision FROM durable_state WHERE pid = ?1");
  s.bind(1, pid);
  return s.step() ? s.unsigned_integer(0, "state revision", 1, max_integer) : 0;
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
  // A run of appends goes through append_run; this is an append alone (in a savepoint).
  check_owner_fence(s.db, r.shard_fence, r.epoch);
  auto& head = s.heads.get(s.db, r.persistence_id);
  check_append(r, head);
  auto number = head.number != 0 ? head.number : number_id(s.db, r.persistence_id);
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

std::vector<group_commit::run_outcome> append_run(
    write_session& s, const std::vector<const append_request*>& requests) {
  std::vector<group_commit::run_outcome> out(requests.size());
  std::vector<journal_row> rows;
  // The checks, in request order, against the heads as the earlier requests leave them. The
  // heads change before the rows are written: if writing fails, the writer's rollback clears them.
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = *requests[i];
    auto& head = s.heads.get(s.db, r.persistence_id);
    try {
      check_owner_fence(s.db, r.shard_fence, r.epoch);
      check_append(r, head);
    } catch (const persistence_error&) {
      out[i].refusal = std::current_exception();
      continue;
    }
    auto last = r.expected_next + r.events.size() - 1;
    if (last > max_integer || r.epoch > max_integer || last < r.expected_next) {
      throw persistence_error(errc::invalid_request, "append to " + r.persistence_id +
                                                         ": a number is too large for SQLite");
    }
    auto number = head.number != 0 ? head.number : number_id(s.db, r.persistence_id);
    sequence_nr seq = r.expected_next;
    for (const auto& e : r.events) rows.push_back({number, seq++, &e, r.epoch});
    raise_fence(s.db, "p", r.persistence_id, head.fence, r.epoch);
    head.number = number;
    head.highest = last;
    head.fence = std::max(head.fence, r.epoch);
    out[i].result = last;
  }
  insert_rows(s.db, rows);
  return out;
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
      .bind(2, static_cast<std::int64_t>(std::min<std::uint64_t>(r.to, max_integer)))
      .run();
  raise_fence(s.db, "p", r.persistence_id, fence, r.epoch);
}

void save_snapshot(write_session& s, const snapshot_write& w) {
  check_owner_fence(s.db, w.shard_fence, w.epoch);
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
      .bind(2, static_cast<std::int64_t>(std::min<std::uint64_t>(d.max_sequence, max_integer)))
      .run();
  raise_fence(s.db, "p", d.persistence_id, fence, d.epoch);
}

revision_nr upsert_state(write_session& s, const state_write& w) {
  check_owner_fence(s.db, w.shard_fence, w.epoch);
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
  check_owner_fence(s.db, u.shard_fence, u.epoch);
  auto key = shard_key(fenced_shard{u.type_name, u.shard});
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

fence_raise raise_shard_fence(write_session& s, const shard_fence_raise& r) {
  auto fence = stored_owner_fence(s.db, r.shard);
  if (fence && *fence > r.epoch) return fence_raise::superseded;
  if (fence != r.epoch) {
    s.db.prepare(
            "INSERT INTO fences(scope, key, epoch) VALUES ('o', ?1, ?2) "
            "ON CONFLICT(scope, key) DO UPDATE SET epoch = excluded.epoch")
        .bind(1, shard_key(r.shard))
        .bind_unsigned(2, r.epoch)
        .run();
  }
  return fence_raise::raised;
}

}  // namespace troupe::persistence::sqlite
