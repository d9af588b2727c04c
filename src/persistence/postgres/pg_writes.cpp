// The writes one at a time: what a group runs besides its runs of appends and upserts, and every
// write when a group is redone with one savepoint per write.
#include "persistence/postgres/pg_operations.hpp"
#include "persistence/postgres/pg_refusals.hpp"
#include "persistence/postgres/pg_values.hpp"
#include "persistence/shard_fence_refusal.hpp"

#include <pqxx/except>
#include <pqxx/result>

#include <algorithm>

namespace troupe::persistence::pg {

namespace {

/// Refuses a write below the fence of `pid`; returns its head.
pid_head& check_fence(write_session& s, const std::string& pid, ownership_epoch epoch,
                      bool with_highest = false) {
  auto& h = s.heads.get(s.t, pid, with_highest);
  if (epoch < h.fence) throw epoch_refusal(pid, epoch, h.fence);
  return h;
}

/// Stores a higher fence (the group holds the fence generation exclusively: see pg_heads.hpp).
void raise_fence(write_session& s, const std::string& pid, pid_head& h, ownership_epoch epoch) {
  if (epoch <= h.fence) return;  // most writes: nothing to store
  s.t.exec_prepared("raise_fence", pid, bigint(epoch));
  h.fence = epoch;
  s.heads.changed_fences();
}

revision_nr stored_revision(pqxx::transaction_base& t, const std::string& pid) {
  auto rows = t.exec_prepared("state_revision", pid);
  return rows.empty() ? 0 : number(rows[0][0], "state revision", 1);
}

}  // namespace

sequence_nr append(write_session& s, const append_request& r) {
  check_owner_fence(s.t, r.shard_fence, r.epoch);
  auto& h = check_fence(s, r.persistence_id, r.epoch, true);
  // The cache never knows more than the journal; when the caller does, read the journal again.
  if (r.expected_next > h.highest + 1) s.heads.reload_highest(s.t, h);
  if (r.expected_next != h.highest + 1) throw sequence_refusal(r, h.highest);
  auto epoch = bigint(r.epoch);
  if (h.number == 0) s.heads.number_ids(s.t, {r.persistence_id});
  sequence_nr seq = r.expected_next;
  try {
    for (const auto& e : r.events) {
      s.t.exec_prepared("insert_event", h.number, bigint(seq), e.manifest.type_name,
                        static_cast<long long>(e.manifest.version), bytea(e.payload), epoch);
      ++seq;
    }
  } catch (const pqxx::unique_violation&) {
    // Another process appended at these numbers since the head was read. The statement failed,
    // so this write is rolled back to its savepoint (a group without savepoints is redone).
    s.heads.forget(r.persistence_id);
    throw persistence_error(errc::sequence_conflict, "append to " + r.persistence_id +
                                                         " expected next " +
                                                         std::to_string(r.expected_next) +
                                                         ", but another writer came first");
  }
  raise_fence(s, r.persistence_id, h, r.epoch);
  h.highest = seq - 1;
  return seq - 1;
}

void delete_to(write_session& s, const delete_events_request& r) {
  auto& h = check_fence(s, r.persistence_id, r.epoch, true);
  // Exact: the group holds the fence generation exclusively, so no append runs meanwhile.
  s.heads.reload_highest(s.t, h);
  if (h.highest > 0) {
    // The floor keeps the highest number taken once the events are gone.
    s.t.exec_prepared("set_floor", r.persistence_id, bigint(h.highest));
    if (h.number != 0) s.t.exec_prepared("delete_events", h.number, clamp(r.to));
  }
  if (r.epoch > h.fence) s.t.exec_prepared("raise_fence", r.persistence_id, bigint(r.epoch));
  if (h.highest > 0 || r.epoch > h.fence) s.heads.changed_fences();
  h.floor = h.highest;
  h.fence = std::max(h.fence, r.epoch);
}

void save_snapshot(write_session& s, const snapshot_write& w) {
  check_owner_fence(s.t, w.shard_fence, w.epoch);
  auto& h = check_fence(s, w.persistence_id, w.epoch);
  s.t.exec_prepared("save_snapshot", w.persistence_id, bigint(w.sequence),
                    w.state.manifest.type_name, static_cast<long long>(w.state.manifest.version),
                    bytea(w.state.payload), bigint(w.epoch));
  raise_fence(s, w.persistence_id, h, w.epoch);
}

void delete_snapshots(write_session& s, const snapshot_delete& d) {
  auto& h = check_fence(s, d.persistence_id, d.epoch);
  s.t.exec_prepared("delete_snapshots", d.persistence_id, clamp(d.max_sequence));
  raise_fence(s, d.persistence_id, h, d.epoch);
}

revision_nr upsert_state(write_session& s, const state_write& w) {
  check_owner_fence(s.t, w.shard_fence, w.epoch);
  auto& h = check_fence(s, w.persistence_id, w.epoch);
  revision_nr next = w.expected_revision + 1;
  // The statement checks the revision as it writes (the row lock orders concurrent writers).
  auto rows = w.expected_revision == 0
                  ? s.t.exec_prepared("insert_state", w.persistence_id, bigint(next),
                                      w.value.manifest.type_name,
                                      static_cast<long long>(w.value.manifest.version),
                                      bytea(w.value.payload), bigint(w.epoch))
                  : s.t.exec_prepared("update_state", w.persistence_id, bigint(w.expected_revision),
                                      bigint(next), w.value.manifest.type_name,
                                      static_cast<long long>(w.value.manifest.version),
                                      bytea(w.value.payload), bigint(w.epoch));
  if (rows.empty()) {
    throw revision_refusal(w.persistence_id, stored_revision(s.t, w.persistence_id),
                           w.expected_revision);
  }
  raise_fence(s, w.persistence_id, h, w.epoch);
  return next;
}

void delete_state(write_session& s, const state_delete& d) {
  auto& h = check_fence(s, d.persistence_id, d.epoch);
  if (d.expected_revision == 0) {
    // Nothing is expected to be stored: nothing to delete, unless something is.
    auto stored = stored_revision(s.t, d.persistence_id);
    if (stored != 0) throw revision_refusal(d.persistence_id, stored, 0);
  } else if (s.t.exec_prepared("delete_state", d.persistence_id, bigint(d.expected_revision))
                 .empty()) {
    throw revision_refusal(d.persistence_id, stored_revision(s.t, d.persistence_id),
                           d.expected_revision);
  }
  raise_fence(s, d.persistence_id, h, d.epoch);
}

void update_remembered(write_session& s, const remember_update& u) {
  // A shard's fence row is locked by every update of its remembered ids: they are few.
  check_owner_fence(s.t, u.shard_fence, u.epoch);
  auto shard = static_cast<long long>(u.shard);
  auto rows = s.t.exec_prepared("lock_shard", u.type_name, shard);
  auto fence = number(rows[0][0], "shard fence epoch");
  if (u.epoch < fence) {
    throw epoch_refusal("shard " + std::to_string(u.shard) + " of " + u.type_name, u.epoch, fence);
  }
  if (!u.added.empty()) s.t.exec_prepared("remember_add", u.type_name, shard, text_array(u.added));
  if (!u.removed.empty()) {
    s.t.exec_prepared("remember_remove", u.type_name, shard, text_array(u.removed));
  }
  if (u.epoch > fence) s.t.exec_prepared("set_shard_fence", u.type_name, shard, bigint(u.epoch));
}

void check_owner_fence(pqxx::transaction_base& t, const std::optional<fenced_shard>& shard,
                       ownership_epoch epoch) {
  if (!shard) return;
  auto rows =
      t.exec_prepared("owner_fence", shard->type_name, static_cast<long long>(shard->shard));
  std::optional<ownership_epoch> fence;
  if (!rows.empty()) fence = number(rows[0][0], "shard fence epoch");
  if (fence != epoch) throw owner_fence_refusal(*shard, epoch, fence);
}

fence_raise raise_shard_fence(write_session& s, const shard_fence_raise& r) {
  auto shard = static_cast<long long>(r.shard.shard);
  auto epoch = bigint(r.epoch);
  if (!s.t.exec_prepared("raise_owner_fence", r.shard.type_name, shard, epoch).empty()) {
    return fence_raise::raised;
  }
  // Not raised: the row is there, at r.epoch already (idempotent) or above. The statement locked
  // it, so this reads what it met.
  auto rows = s.t.exec_prepared("owner_fence", r.shard.type_name, shard);
  return number(rows[0][0], "shard fence epoch") == r.epoch ? fence_raise::raised
                                                            : fence_raise::superseded;
}

}  // namespace troupe::persistence::pg
