#pragma once
// The state of the in-process etcd model and every rule that changes it: keys with revisions,
// leases, transactions and the retained history. Pure: no locks, no clock, no executor; the
// caller passes the time and serialises the calls.

#include <troupe/cluster/membership/consensus_store.hpp>

#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <vector>

namespace troupe::cluster::in_process {

/// True when `key` lies in `range` (a single key, [key, end), or every key from `key` when
/// `end` is "\0", as in etcd).
bool in_range(const key_range& range, const std::string& key);

/// The changes one revision made.
struct revision_events {
  revision rev = 0;
  std::vector<watch_event> events;
};

class key_space {
 public:
  /// Called with every revision as it is written (for the watches).
  using revision_listener = std::function<void(const revision_events&)>;

  key_space(duration min_ttl, std::size_t history, revision_listener on_revision);

  [[nodiscard]] revision current_revision() const noexcept { return revision_; }
  /// Watches from a revision below this one fail with errc::compacted.
  [[nodiscard]] revision compact_revision() const noexcept { return compact_revision_; }

  [[nodiscard]] std::vector<key_value> range(const key_range& range) const;
  /// Validates and runs `request`; on an error nothing is applied.
  std::error_code txn(const txn_request& request, txn_result& result);

  /// Grants a lease with `ttl` rounded up to whole seconds and raised to the minimum TTL.
  lease_grant grant(duration ttl, time_point now);
  /// Renews `lease` until now + its TTL; a lease past its deadline is expired first (as etcd
  /// answers a late renewal only after the revoke), so the answer is lease_not_found.
  std::error_code renew(lease_id lease, time_point now, duration& ttl);
  /// Deletes the lease and its keys in one revision (none when it has no keys).
  std::error_code revoke(lease_id lease);
  /// Revokes every lease whose deadline is at or before `now`, earliest first, one revision each.
  void expire(time_point now);
  [[nodiscard]] bool has_leases() const noexcept { return !leases_.empty(); }

  /// Appends the events of revisions >= `start` in `range`; errc::compacted when `start` is
  /// older than the retained history.
  std::error_code history(const key_range& range, revision start,
                          std::vector<watch_event>& out) const;
  /// Drops the history of revisions below `rev` (etcd's compaction).
  void compact(revision rev);

 private:
  struct lease_state {
    duration ttl{};
    time_point deadline{};
    std::set<std::string> keys;
  };

  [[nodiscard]] bool holds(const compare& c) const;
  void put(const put_op& op, revision rev, std::vector<watch_event>& events);
  void erase(const key_range& range, revision rev, std::vector<watch_event>& events);
  void detach(const key_value& kv);
  void record(revision_events changes);

  duration min_ttl_;
  std::size_t history_limit_;
  revision_listener on_revision_;
  revision revision_ = 1;  // etcd's empty store is at revision 1
  revision compact_revision_ = 0;
  std::map<std::string, key_value> keys_;
  std::map<lease_id, lease_state> leases_;
  lease_id next_lease_ = 1;
  std::deque<revision_events> history_;
};

}  // namespace troupe::cluster::in_process
