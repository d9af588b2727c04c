#include "persistence/postgres/pg_heads.hpp"

#include "persistence/postgres/pg_values.hpp"

#include <pqxx/result>

#include <algorithm>

namespace troupe::persistence::pg {

bool pid_heads::may_raise(std::string_view pid, ownership_epoch epoch) const {
  if (epoch == 0 || pid.empty()) return false;
  auto it = heads_.find(pid);
  return it == heads_.end() || epoch > it->second.fence;
}

void pid_heads::lock_generation(pqxx::transaction_base& t, bool exclusive) {
  auto rows = t.exec_prepared(exclusive ? "lock_generation_exclusive" : "lock_generation_shared");
  auto n = static_cast<std::int64_t>(number(rows[0][0], "fence generation"));
  if (generation_ != n) {
    ++stamp_;  // another process changed fences or floors: read them again before trusting them
    generation_ = n;
  }
  changed_ = false;
}

void pid_heads::before_commit(pqxx::transaction_base& t) {
  if (changed_) t.exec_prepared("bump_generation");
}

void pid_heads::committed() noexcept {
  // Our own change: the cache already holds what this transaction wrote.
  if (changed_ && generation_) ++*generation_;
  changed_ = false;
  // Trimmed only here: during a transaction, the writes hold references to their heads.
  if (heads_.size() > max_entries) heads_.clear();
}

void pid_heads::reset() noexcept {
  heads_.clear();
  generation_.reset();
  changed_ = false;
}

bool pid_heads::needs_read(std::string_view pid, bool with_highest) const {
  auto it = heads_.find(pid);
  return it == heads_.end() || it->second.stamp != stamp_ ||
         (with_highest && !it->second.highest_known);
}

void pid_heads::load(pqxx::transaction_base& t, const std::vector<head_wanted>& wanted) {
  std::vector<std::string> pids;
  std::vector<std::string> want_highest;  // a boolean[] literal's items
  for (const auto& w : wanted) {
    if (!needs_read(w.persistence_id, w.highest)) continue;
    auto it = heads_.find(w.persistence_id);
    pids.emplace_back(w.persistence_id);
    want_highest.emplace_back(w.highest && (it == heads_.end() || !it->second.highest_known) ? "t"
                                                                                             : "f");
  }
  if (pids.empty()) return;
  auto rows = t.exec_prepared("load_heads", text_array(pids), text_array(want_highest));
  for (const auto& row : rows) {
    // Read into a copy: a damaged row leaves the cache as it was.
    std::string pid(row[0].c_str(), row[0].size());
    pid_head h = heads_.contains(pid) ? heads_.at(pid) : pid_head{};
    h.fence = row[1].is_null() ? 0 : number(row[1], "fence epoch");
    h.floor = row[2].is_null() ? 0 : number(row[2], "deleted highest sequence number");
    if (!row[4].is_null()) h.number = static_cast<std::int64_t>(number(row[4], "id number", 1));
    if (row[3].as<bool>()) {
      if (!row[5].is_null()) {
        h.highest = std::max(h.highest, number(row[5], "event sequence number"));
      }
      h.highest_known = true;
    }
    h.highest = std::max(h.highest, h.floor);
    h.stamp = stamp_;
    heads_[pid] = h;
  }
}

pid_head& pid_heads::get(pqxx::transaction_base& t, const std::string& pid, bool with_highest) {
  auto it = heads_.find(pid);
  if (it == heads_.end() || it->second.stamp != stamp_ ||
      (with_highest && !it->second.highest_known)) {
    load(t, {{pid, with_highest}});
    it = heads_.find(pid);
  }
  return it->second;
}

void pid_heads::reload_highest(pqxx::transaction_base& t, pid_head& head) {
  if (head.number != 0) {
    auto rows = t.exec_prepared("journal_highest", head.number);
    head.highest = std::max(head.highest, number(rows[0][0], "event sequence number"));
  }
  head.highest = std::max(head.highest, head.floor);
  head.highest_known = true;
}

void pid_heads::number_ids(pqxx::transaction_base& t, std::vector<std::string> pids) {
  if (pids.empty()) return;
  // Sorted, so that two processes numbering the same new ids take their locks in one order.
  std::sort(pids.begin(), pids.end());
  auto list = text_array(pids);
  t.exec_prepared("number_ids", list);
  for (const auto& row : t.exec_prepared("id_numbers", list)) {
    auto it = heads_.find(std::string_view(row[0].c_str(), row[0].size()));
    if (it != heads_.end()) {
      it->second.number = static_cast<std::int64_t>(number(row[1], "id number", 1));
    }
  }
}

}  // namespace troupe::persistence::pg
