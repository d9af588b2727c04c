// The rules of the etcd model: validation, compares, writes, leases and history, as etcd 3.4
// applies them (apply.go, lessor.go, v3rpc/key.go).
#include "key_space.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

namespace troupe::cluster::in_process {

bool in_range(const key_range& range, const std::string& key) {
  if (range.end.empty()) return key == range.key;
  if (range.end == std::string(1, '\0')) return key >= range.key;
  return key >= range.key && key < range.end;
}

namespace {

bool overlaps_put(const key_range& range, const std::set<std::string>& put_keys) {
  if (range.end.empty()) return put_keys.contains(range.key);
  return std::any_of(put_keys.begin(), put_keys.end(),
                     [&](const std::string& k) { return in_range(range, k); });
}

bool bad_range(const key_range& range) { return range.key.empty() && range.end.empty(); }

/// etcd's checkIntervals for one branch: a key put twice, or put and deleted, is refused.
bool valid_branch(const std::vector<txn_op>& ops) {
  std::set<std::string> put_keys;
  for (const auto& op : ops) {
    if (const auto* p = std::get_if<put_op>(&op)) {
      if (p->key.empty() || !put_keys.insert(p->key).second) return false;
    } else if (const auto* r = std::get_if<range_op>(&op)) {
      if (bad_range(r->range)) return false;
    } else if (bad_range(std::get<delete_op>(op).range)) {
      return false;
    }
  }
  for (const auto& op : ops) {
    if (const auto* d = std::get_if<delete_op>(&op);
        d != nullptr && overlaps_put(d->range, put_keys))
      return false;
  }
  return true;
}

template <class T>
bool compare_numbers(compare::relation rel, T have, T want) {
  switch (rel) {
    case compare::relation::equal:
      return have == want;
    case compare::relation::not_equal:
      return have != want;
    case compare::relation::less:
      return have < want;
    case compare::relation::greater:
      return have > want;
  }
  return false;
}

}  // namespace

key_space::key_space(duration min_ttl, std::size_t history, revision_listener on_revision)
    : min_ttl_(min_ttl),
      history_limit_(std::max<std::size_t>(history, 1)),
      on_revision_(std::move(on_revision)) {}

std::vector<key_value> key_space::range(const key_range& range) const {
  std::vector<key_value> out;
  if (range.end.empty()) {
    if (auto it = keys_.find(range.key); it != keys_.end()) out.push_back(it->second);
    return out;
  }
  for (auto it = keys_.lower_bound(range.key); it != keys_.end() && in_range(range, it->first);
       ++it)
    out.push_back(it->second);
  return out;
}

bool key_space::holds(const compare& c) const {
  const auto it = keys_.find(c.key);
  if (it == keys_.end() && c.what == compare::target::value) {
    // etcd fails every value compare on a missing key: it cannot tell missing from empty.
    return false;
  }
  const key_value missing{};
  const key_value& kv = it == keys_.end() ? missing : it->second;
  switch (c.what) {
    case compare::target::version:
      return compare_numbers(c.rel, kv.version, c.number);
    case compare::target::create_revision:
      return compare_numbers(c.rel, kv.create_revision, c.number);
    case compare::target::mod_revision:
      return compare_numbers(c.rel, kv.mod_revision, c.number);
    case compare::target::lease:
      return compare_numbers(c.rel, kv.lease, c.number);
    case compare::target::value:
      return compare_numbers(c.rel, std::string_view(kv.value), std::string_view(c.value));
  }
  return false;
}

std::error_code key_space::txn(const txn_request& request, txn_result& result) {
  if (request.compares.size() > max_txn_ops || request.success.size() > max_txn_ops ||
      request.failure.size() > max_txn_ops || !valid_branch(request.success) ||
      !valid_branch(request.failure))
    return errc::invalid_store_request;
  if (std::any_of(request.compares.begin(), request.compares.end(),
                  [](const compare& c) { return c.key.empty(); }))
    return errc::invalid_store_request;

  const bool succeeded = std::all_of(request.compares.begin(), request.compares.end(),
                                     [&](const compare& c) { return holds(c); });
  const auto& ops = succeeded ? request.success : request.failure;
  // Checked before anything is written: a put with an unknown lease fails the whole request.
  for (const auto& op : ops) {
    if (const auto* p = std::get_if<put_op>(&op);
        p != nullptr && p->lease != 0 && !leases_.contains(p->lease))
      return errc::lease_not_found;
  }

  const revision next = revision_ + 1;
  std::vector<watch_event> events;
  result = {};
  result.succeeded = succeeded;
  for (const auto& op : ops) {
    if (const auto* p = std::get_if<put_op>(&op)) {
      put(*p, next, events);
    } else if (const auto* d = std::get_if<delete_op>(&op)) {
      erase(d->range, next, events);
    } else {
      result.ranges.push_back(range(std::get<range_op>(op).range));
    }
  }
  if (!events.empty()) record({next, std::move(events)});
  result.header_revision = revision_;
  return {};
}

void key_space::put(const put_op& op, revision rev, std::vector<watch_event>& events) {
  auto [it, created] = keys_.try_emplace(op.key);
  key_value& kv = it->second;
  if (created) {
    kv.key = op.key;
    kv.create_revision = rev;
  } else if (kv.lease != op.lease) {
    detach(kv);
  }
  kv.value = op.value;
  kv.mod_revision = rev;
  ++kv.version;
  kv.lease = op.lease;
  if (op.lease != 0) leases_.at(op.lease).keys.insert(op.key);
  events.push_back({watch_event::kind::put, kv});
}

void key_space::erase(const key_range& range, revision rev, std::vector<watch_event>& events) {
  auto it = range.end.empty() ? keys_.find(range.key) : keys_.lower_bound(range.key);
  while (it != keys_.end() && in_range(range, it->first)) {
    detach(it->second);
    key_value gone;
    gone.key = it->first;
    gone.mod_revision = rev;
    events.push_back({watch_event::kind::del, std::move(gone)});
    it = keys_.erase(it);
    if (range.end.empty()) break;
  }
}

void key_space::detach(const key_value& kv) {
  if (kv.lease == 0) return;
  if (auto l = leases_.find(kv.lease); l != leases_.end()) l->second.keys.erase(kv.key);
}

void key_space::record(revision_events changes) {
  revision_ = changes.rev;
  history_.push_back(std::move(changes));
  while (history_.size() > history_limit_) {
    compact_revision_ = history_.front().rev + 1;
    history_.pop_front();
  }
  if (on_revision_) on_revision_(history_.back());
}

lease_grant key_space::grant(duration ttl, time_point now) {
  // etcd grants whole seconds and raises a TTL below its minimum to the minimum.
  duration granted = std::chrono::ceil<std::chrono::seconds>(ttl);
  granted = std::max(granted, min_ttl_);
  const lease_id id = next_lease_++;
  leases_[id] = {granted, now + granted, {}};
  return {id, granted};
}

std::error_code key_space::renew(lease_id lease, time_point now, duration& ttl) {
  auto it = leases_.find(lease);
  if (it == leases_.end()) return errc::lease_not_found;
  if (it->second.deadline <= now) {
    (void)revoke(lease);
    return errc::lease_not_found;
  }
  it->second.deadline = now + it->second.ttl;
  ttl = it->second.ttl;
  return {};
}

std::error_code key_space::revoke(lease_id lease) {
  auto it = leases_.find(lease);
  if (it == leases_.end()) return errc::lease_not_found;
  const std::set<std::string> keys = std::move(it->second.keys);
  leases_.erase(it);
  const revision next = revision_ + 1;
  std::vector<watch_event> events;
  for (const auto& key : keys) {
    auto k = keys_.find(key);
    if (k == keys_.end()) continue;
    key_value gone;
    gone.key = key;
    gone.mod_revision = next;
    events.push_back({watch_event::kind::del, std::move(gone)});
    keys_.erase(k);
  }
  if (!events.empty()) record({next, std::move(events)});
  return {};
}

void key_space::expire(time_point now) {
  std::vector<std::pair<time_point, lease_id>> due;
  for (const auto& [id, l] : leases_) {
    if (l.deadline <= now) due.emplace_back(l.deadline, id);
  }
  std::sort(due.begin(), due.end());
  for (const auto& [deadline, id] : due) (void)revoke(id);
}

std::error_code key_space::history(const key_range& range, revision start,
                                   std::vector<watch_event>& out) const {
  if (start < compact_revision_) return errc::compacted;
  auto it = std::lower_bound(history_.begin(), history_.end(), start,
                             [](const revision_events& r, revision s) { return r.rev < s; });
  for (; it != history_.end(); ++it) {
    for (const auto& e : it->events) {
      if (in_range(range, e.kv.key)) out.push_back(e);
    }
  }
  return {};
}

void key_space::compact(revision rev) {
  rev = std::min(rev, revision_);
  if (rev <= compact_revision_) return;
  compact_revision_ = rev;
  while (!history_.empty() && history_.front().rev < rev) history_.pop_front();
}

}  // namespace troupe::cluster::in_process
