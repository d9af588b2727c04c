#include "persistence/postgres/pg_operations.hpp"
#include "persistence/postgres/pg_values.hpp"

#include <pqxx/except>
#include <pqxx/result>
#include <pqxx/stream_to>

#include <algorithm>
#include <tuple>
#include <unordered_map>

namespace troupe::persistence::pg {

namespace {

/// A persistence id's fence row, locked for this transaction.
struct head {
  ownership_epoch fence = 0;
  sequence_nr highest = 0;
};

head lock_pid(pqxx::transaction_base& t, const std::string& pid) {
  auto rows = t.exec_prepared("lock_pid", pid);
  return {number(rows[0][0], "fence epoch"), number(rows[0][1], "highest sequence number")};
}

[[noreturn]] void refuse_epoch(const std::string& name, ownership_epoch epoch,
                               ownership_epoch fence) {
  throw persistence_error(errc::epoch_fenced, "write to " + name + " with epoch " +
                                                  std::to_string(epoch) + " refused: epoch " +
                                                  std::to_string(fence) + " has written");
}

persistence_error sequence_conflict(const append_request& r, sequence_nr highest) {
  return {errc::sequence_conflict, "append to " + r.persistence_id + " expected next " +
                                       std::to_string(r.expected_next) + ", highest is " +
                                       std::to_string(highest)};
}

/// Locks the id's fence row and refuses a write below the fence.
head check_pid(pqxx::transaction_base& t, const std::string& pid, ownership_epoch epoch) {
  auto h = lock_pid(t, pid);
  if (epoch < h.fence) refuse_epoch(pid, epoch, h.fence);
  return h;
}

void raise_fence(pqxx::transaction_base& t, const std::string& pid, const head& h,
                 ownership_epoch epoch) {
  if (epoch <= h.fence) return;  // most writes: nothing to store
  t.exec_prepared("set_fence", pid, bigint(epoch), bigint(h.highest));
}

void check_revision(pqxx::transaction_base& t, const std::string& pid, revision_nr expected) {
  auto rows = t.exec_prepared("state_revision", pid);
  revision_nr stored = rows.empty() ? 0 : number(rows[0][0], "state revision", 1);
  if (stored != expected) {
    throw persistence_error(errc::revision_conflict, "state " + pid + " is at revision " +
                                                         std::to_string(stored) + ", expected " +
                                                         std::to_string(expected));
  }
}

}  // namespace

sequence_nr append(pqxx::transaction_base& t, const append_request& r) {
  auto h = check_pid(t, r.persistence_id, r.epoch);
  if (r.expected_next != h.highest + 1) throw sequence_conflict(r, h.highest);
  auto epoch = bigint(r.epoch);
  sequence_nr seq = r.expected_next;
  for (const auto& e : r.events) {
    t.exec_prepared("insert_event", r.persistence_id, bigint(seq), e.manifest.type_name,
                    static_cast<long long>(e.manifest.version), bytea(e.payload), epoch);
    ++seq;
  }
  t.exec_prepared("set_fence", r.persistence_id, std::max(epoch, bigint(h.fence)), bigint(seq - 1));
  return seq - 1;
}

std::vector<append_outcome> append_many(pqxx::transaction_base& t,
                                        const std::vector<const append_request*>& requests) {
  if (requests.size() == 1) {
    // Not worth a COPY; refusals are kept, as in the bulk path.
    std::vector<append_outcome> out(1);
    try {
      out[0].last = append(t, *requests[0]);
    } catch (const persistence_error& e) {
      if (e.value() != errc::sequence_conflict && e.value() != errc::epoch_fenced) throw;
      out[0].refusal = std::current_exception();
    }
    return out;
  }

  // Lock every id's fence row in one statement, in one order (so two writers cannot deadlock).
  std::vector<std::string> pids;
  pids.reserve(requests.size());
  for (const auto* r : requests) pids.push_back(r->persistence_id);
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  // Ids seen before have a row to lock; the others get one (an upsert, which also waits for a
  // writer creating the same row at the same moment).
  std::unordered_map<std::string, head> heads;
  auto take = [&heads](const pqxx::result& rows) {
    for (const auto& row : rows) {
      heads[std::string(row[0].c_str(), row[0].size())] = {
          number(row[1], "fence epoch"), number(row[2], "highest sequence number")};
    }
  };
  take(t.exec_prepared("lock_existing_pids", text_array(pids)));
  if (heads.size() < pids.size()) {
    std::vector<std::string> fresh;
    for (const auto& pid : pids) {
      if (!heads.contains(pid)) fresh.push_back(pid);
    }
    take(t.exec_prepared("lock_pids", text_array(fresh)));
  }

  // The checks, in request order, against the heads as the earlier requests leave them.
  std::vector<append_outcome> out(requests.size());
  std::size_t rows = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = *requests[i];
    auto& h = heads.at(r.persistence_id);
    if (r.epoch < h.fence) {
      try {
        refuse_epoch(r.persistence_id, r.epoch, h.fence);
      } catch (...) {
        out[i].refusal = std::current_exception();
      }
      continue;
    }
    if (r.expected_next != h.highest + 1) {
      out[i].refusal = std::make_exception_ptr(sequence_conflict(r, h.highest));
      continue;
    }
    bigint(r.epoch);
    bigint(r.expected_next + r.events.size() - 1);
    h.highest = r.expected_next + r.events.size() - 1;
    h.fence = std::max(h.fence, r.epoch);
    out[i].last = h.highest;
    rows += r.events.size();
  }
  if (rows == 0) return out;

  {
    pqxx::stream_to copy(
        t, "journal",
        std::vector<std::string>{"pid", "seq", "type_name", "version", "payload", "epoch"});
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (out[i].refusal) continue;
      const auto& r = *requests[i];
      auto seq = static_cast<long long>(r.expected_next);
      auto epoch = static_cast<long long>(r.epoch);
      for (const auto& e : r.events) {
        copy << std::make_tuple(r.persistence_id, seq++, e.manifest.type_name,
                                static_cast<long long>(e.manifest.version), bytea_hex(e.payload),
                                epoch);
      }
    }
    copy.complete();
  }

  std::vector<std::string> ids;
  std::vector<long long> epochs;
  std::vector<long long> highests;
  for (const auto& [pid, h] : heads) {
    ids.push_back(pid);
    epochs.push_back(static_cast<long long>(h.fence));
    highests.push_back(static_cast<long long>(h.highest));
  }
  t.exec_prepared("set_fences", text_array(ids), bigint_array(epochs), bigint_array(highests));
  return out;
}

void delete_to(pqxx::transaction_base& t, const delete_events_request& r) {
  auto h = check_pid(t, r.persistence_id, r.epoch);
  t.exec_prepared("delete_events", r.persistence_id, clamp(r.to));
  raise_fence(t, r.persistence_id, h, r.epoch);
}

void save_snapshot(pqxx::transaction_base& t, const snapshot_write& w) {
  auto h = check_pid(t, w.persistence_id, w.epoch);
  t.exec_prepared("save_snapshot", w.persistence_id, bigint(w.sequence), w.state.manifest.type_name,
                  static_cast<long long>(w.state.manifest.version), bytea(w.state.payload),
                  bigint(w.epoch));
  raise_fence(t, w.persistence_id, h, w.epoch);
}

void delete_snapshots(pqxx::transaction_base& t, const snapshot_delete& d) {
  auto h = check_pid(t, d.persistence_id, d.epoch);
  t.exec_prepared("delete_snapshots", d.persistence_id, clamp(d.max_sequence));
  raise_fence(t, d.persistence_id, h, d.epoch);
}

revision_nr upsert_state(pqxx::transaction_base& t, const state_write& w) {
  auto h = check_pid(t, w.persistence_id, w.epoch);
  check_revision(t, w.persistence_id, w.expected_revision);
  revision_nr next = w.expected_revision + 1;
  t.exec_prepared("upsert_state", w.persistence_id, bigint(next), w.value.manifest.type_name,
                  static_cast<long long>(w.value.manifest.version), bytea(w.value.payload),
                  bigint(w.epoch));
  raise_fence(t, w.persistence_id, h, w.epoch);
  return next;
}

void delete_state(pqxx::transaction_base& t, const state_delete& d) {
  auto h = check_pid(t, d.persistence_id, d.epoch);
  check_revision(t, d.persistence_id, d.expected_revision);
  t.exec_prepared("delete_state", d.persistence_id);
  raise_fence(t, d.persistence_id, h, d.epoch);
}

void update_remembered(pqxx::transaction_base& t, const remember_update& u) {
  auto shard = static_cast<long long>(u.shard);
  auto rows = t.exec_prepared("lock_shard", u.type_name, shard);
  auto fence = number(rows[0][0], "shard fence epoch");
  if (u.epoch < fence) {
    refuse_epoch("shard " + std::to_string(u.shard) + " of " + u.type_name, u.epoch, fence);
  }
  if (!u.added.empty()) t.exec_prepared("remember_add", u.type_name, shard, text_array(u.added));
  if (!u.removed.empty()) {
    t.exec_prepared("remember_remove", u.type_name, shard, text_array(u.removed));
  }
  if (u.epoch > fence) t.exec_prepared("set_shard_fence", u.type_name, shard, bigint(u.epoch));
}

}  // namespace troupe::persistence::pg
