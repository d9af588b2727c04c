// The writes many at a time: a run of appends or of durable-state upserts in a few statements,
// whatever its length. This is where a group commit spends its time under load.
#include "persistence/postgres/pg_operations.hpp"
#include "persistence/postgres/pg_refusals.hpp"
#include "persistence/postgres/pg_values.hpp"

#include <pqxx/result>
#include <pqxx/stream_to>

#include <algorithm>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace troupe::persistence::pg {

namespace {

/// Stores the raised fences of a run in one statement (the group holds the fence generation
/// exclusively: see pg_heads.hpp).
void raise_fences(write_session& s, const std::vector<std::string>& pids,
                  const std::vector<long long>& epochs) {
  if (pids.empty()) return;
  s.t.exec_prepared("raise_fences", text_array(pids), bigint_array(epochs));
  s.heads.changed_fences();
}

/// The events of the accepted requests (with their ids' numbers), sorted by number so that two
/// processes writing the same ids take the rows' locks in one order, in one COPY.
void copy_events(write_session& s, const std::vector<const append_request*>& requests,
                 const std::vector<run_outcome>& out, const std::vector<std::int64_t>& numbers) {
  std::vector<std::size_t> accepted;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!out[i].refusal) accepted.push_back(i);
  }
  std::stable_sort(accepted.begin(), accepted.end(),
                   [&](std::size_t a, std::size_t b) { return numbers[a] < numbers[b]; });
  pqxx::stream_to copy(
      s.t, "journal",
      std::vector<std::string>{"pid_id", "seq", "type_name", "version", "payload", "epoch"});
  for (auto i : accepted) {
    const auto& r = *requests[i];
    auto seq = static_cast<long long>(r.expected_next);
    auto epoch = static_cast<long long>(r.epoch);
    for (const auto& e : r.events) {
      copy << std::make_tuple(static_cast<long long>(numbers[i]), seq++, e.manifest.type_name,
                              static_cast<long long>(e.manifest.version), bytea_hex(e.payload),
                              epoch);
    }
  }
  copy.complete();
}

/// The refusal of a write whose shard fence is not at its epoch; null when it passes. One read
/// per write that names a shard (single-node writes name none).
std::exception_ptr owner_fence_refusal_of(write_session& s,
                                          const std::optional<fenced_shard>& shard,
                                          ownership_epoch epoch) {
  try {
    check_owner_fence(s.t, shard, epoch);
  } catch (const persistence_error& e) {
    if (e.value() != errc::epoch_fenced) throw;
    return std::current_exception();
  }
  return nullptr;
}

}  // namespace

std::vector<run_outcome> append_run(write_session& s,
                                    const std::vector<const append_request*>& requests) {
  std::vector<run_outcome> out(requests.size());
  // The checks, in request order, against the heads as the earlier requests leave them. The
  // heads change here, before the rows are written: if writing fails, the writer forgets them.
  std::vector<std::string> raised;
  std::vector<long long> raised_to;
  std::vector<pid_head*> heads(requests.size());  // of the accepted requests; map nodes are stable
  std::size_t accepted = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = *requests[i];
    if (auto refusal = owner_fence_refusal_of(s, r.shard_fence, r.epoch)) {
      out[i].refusal = refusal;
      continue;
    }
    auto& h = s.heads.get(s.t, r.persistence_id, true);
    if (r.epoch < h.fence) {
      out[i].refusal = std::make_exception_ptr(epoch_refusal(r.persistence_id, r.epoch, h.fence));
      continue;
    }
    // The cache never knows more than the journal; when the caller does, read the journal again.
    if (r.expected_next > h.highest + 1) s.heads.reload_highest(s.t, h);
    if (r.expected_next != h.highest + 1) {
      out[i].refusal = std::make_exception_ptr(sequence_refusal(r, h.highest));
      continue;
    }
    auto last = r.expected_next + r.events.size() - 1;
    bigint(last);  // refuse numbers PostgreSQL cannot store before anything is written
    if (r.epoch > h.fence) {
      raised.push_back(r.persistence_id);
      raised_to.push_back(bigint(r.epoch));
      h.fence = r.epoch;
    }
    h.highest = last;
    heads[i] = &h;
    out[i].result = last;
    ++accepted;
  }
  if (accepted > 0) {
    // Ids appended to for the first time get their numbers, all in one go.
    std::vector<std::string> unnumbered;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (heads[i] != nullptr && heads[i]->number == 0) {
        unnumbered.push_back(requests[i]->persistence_id);
      }
    }
    std::sort(unnumbered.begin(), unnumbered.end());
    unnumbered.erase(std::unique(unnumbered.begin(), unnumbered.end()), unnumbered.end());
    s.heads.number_ids(s.t, std::move(unnumbered));
  }
  std::vector<std::int64_t> numbers(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (heads[i] != nullptr) numbers[i] = heads[i]->number;
  }
  if (accepted == 1 && requests.size() == 1) {
    // One request: an INSERT costs one round trip where a COPY costs two.
    const auto& r = *requests[0];
    auto seq = static_cast<long long>(r.expected_next);
    for (const auto& e : r.events) {
      s.t.exec_prepared("insert_event", numbers[0], seq++, e.manifest.type_name,
                        static_cast<long long>(e.manifest.version), bytea(e.payload),
                        static_cast<long long>(r.epoch));
    }
  } else if (accepted > 0) {
    copy_events(s, requests, out, numbers);
  }
  // Later requests of one id may raise its fence again: the highest is what the run leaves.
  if (!raised.empty()) {
    std::unordered_map<std::string, long long> highest;
    for (std::size_t k = 0; k < raised.size(); ++k) {
      highest[raised[k]] = std::max(highest[raised[k]], raised_to[k]);
    }
    raised.clear();
    raised_to.clear();
    for (auto& [pid, epoch] : highest) {
      raised.push_back(pid);
      raised_to.push_back(epoch);
    }
    raise_fences(s, raised, raised_to);
  }
  return out;
}

std::vector<run_outcome> upsert_run(write_session& s,
                                    const std::vector<const state_write*>& writes) {
  std::vector<run_outcome> out(writes.size());
  // Columns of the writes that pass the fence, split by whether a stored state is expected.
  struct columns {
    std::vector<std::size_t> index;
    std::vector<std::string> pids, type_names, payloads;
    std::vector<long long> expected, next, versions, epochs;
  } update, insert;
  for (std::size_t i = 0; i < writes.size(); ++i) {
    const auto& w = *writes[i];
    if (auto refusal = owner_fence_refusal_of(s, w.shard_fence, w.epoch)) {
      out[i].refusal = refusal;
      continue;
    }
    auto& h = s.heads.get(s.t, w.persistence_id, false);
    if (w.epoch < h.fence) {
      out[i].refusal = std::make_exception_ptr(epoch_refusal(w.persistence_id, w.epoch, h.fence));
      continue;
    }
    auto& c = w.expected_revision == 0 ? insert : update;
    c.index.push_back(i);
    c.pids.push_back(w.persistence_id);
    c.expected.push_back(bigint(w.expected_revision));
    c.next.push_back(bigint(w.expected_revision + 1));
    c.type_names.push_back(w.value.manifest.type_name);
    c.versions.push_back(static_cast<long long>(w.value.manifest.version));
    c.payloads.push_back(bytea_hex(w.value.payload));
    c.epochs.push_back(bigint(w.epoch));
  }
  // Each statement writes a row only where the stored revision is the expected one, and returns
  // the ids it wrote; the others are refused.
  std::unordered_set<std::string> written;
  auto take = [&written](const pqxx::result& rows) {
    for (const auto& row : rows) written.emplace(row[0].c_str(), row[0].size());
  };
  if (!update.index.empty()) {
    take(s.t.exec_prepared("update_states", text_array(update.pids), bigint_array(update.expected),
                           bigint_array(update.next), text_array(update.type_names),
                           bigint_array(update.versions), text_array(update.payloads),
                           bigint_array(update.epochs)));
  }
  if (!insert.index.empty()) {
    take(s.t.exec_prepared("insert_states", text_array(insert.pids), bigint_array(insert.next),
                           text_array(insert.type_names), bigint_array(insert.versions),
                           text_array(insert.payloads), bigint_array(insert.epochs)));
  }

  std::vector<std::string> refused;
  std::vector<std::string> raised;
  std::vector<long long> raised_to;
  for (std::size_t i = 0; i < writes.size(); ++i) {
    const auto& w = *writes[i];
    if (out[i].refusal) continue;
    if (!written.contains(w.persistence_id)) {
      refused.push_back(w.persistence_id);
      continue;
    }
    out[i].result = w.expected_revision + 1;
    auto& h = s.heads.get(s.t, w.persistence_id, false);
    if (w.epoch > h.fence) {
      raised.push_back(w.persistence_id);
      raised_to.push_back(static_cast<long long>(w.epoch));
      h.fence = w.epoch;
    }
  }
  if (!refused.empty()) {
    // What is stored, for the refusals' messages.
    std::unordered_map<std::string, revision_nr> stored;
    for (const auto& row : s.t.exec_prepared("state_revisions", text_array(refused))) {
      stored[std::string(row[0].c_str(), row[0].size())] = number(row[1], "state revision", 1);
    }
    for (std::size_t i = 0; i < writes.size(); ++i) {
      const auto& w = *writes[i];
      if (out[i].refusal || written.contains(w.persistence_id)) continue;
      auto it = stored.find(w.persistence_id);
      out[i].refusal = std::make_exception_ptr(revision_refusal(
          w.persistence_id, it == stored.end() ? 0 : it->second, w.expected_revision));
    }
  }
  raise_fences(s, raised, raised_to);
  return out;
}

}  // namespace troupe::persistence::pg
