#pragma once
/// The consensus store the cluster keeps its truth in: members, regions, coordinator elections and
/// shard allocations. It is the subset of etcd's v3 API the cluster needs — keys with revisions,
/// leases, multi-key transactions with compares, and watches — behind one interface with two
/// implementations: the etcd client (make_etcd_store) and an in-process model of etcd on a
/// troupe::clock (make_in_process_store), the embedded default and the base of deterministic tests.
/// One conformance suite (tests/cluster/consensus_store_conformance.hpp) runs against both.
///
/// Semantics are etcd's: every modifying request gets the next cluster-wide revision (a
/// transaction's operations all share one); a key's create_revision is fixed while it exists and
/// its mod_revision names its last write (the shard epoch is an allocation key's mod_revision);
/// a lease's keys are deleted in one revision when it expires or is revoked; a watch delivers every
/// change of its range in revision order, whole revisions at a time, with no gaps.
///
/// Threading: every handler runs on the store's executor, never inline inside the call that
/// started it. Methods may be called from any thread. A write that fails with
/// `errc::store_unavailable` may or may not have been applied (as with etcd: a timed-out request
/// can still commit), so callers guard writes with compares and re-read.

#include <troupe/cluster/errc.hpp>
#include <troupe/core/clock.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

namespace troupe::cluster {

/// A store revision; revisions grow by one per modifying request, starting at 1 (empty store).
using revision = std::int64_t;
/// A lease; 0 means "no lease".
using lease_id = std::int64_t;

/// One key as stored.
struct key_value {
  std::string key;
  std::string value;
  revision create_revision = 0;
  revision mod_revision = 0;
  /// Writes since creation (1 after the first put).
  std::int64_t version = 0;
  lease_id lease = 0;

  friend bool operator==(const key_value&, const key_value&) = default;
};

/// A key range: one key when `end` is empty, else [key, end). prefix("a/") is ["a/", "a0").
struct key_range {
  std::string key;
  std::string end;

  static key_range single(std::string key) { return {std::move(key), {}}; }
  static key_range prefix(std::string prefix);
};

/// One condition of a transaction, evaluated against a single key. A missing key has version,
/// create_revision, mod_revision and lease 0, as in etcd; a `value` compare on a missing key
/// never holds, whatever the relation (etcd cannot tell a missing value from an empty one).
struct compare {
  enum class target { version, create_revision, mod_revision, value, lease };
  enum class relation { equal, not_equal, less, greater };

  std::string key;
  target what = target::version;
  relation rel = relation::equal;
  /// For every target but `value`.
  std::int64_t number = 0;
  /// For `target::value`.
  std::string value;

  static compare missing(std::string key) {
    return {std::move(key), target::version, relation::equal, 0, {}};
  }
  static compare create_revision_is(std::string key, revision r) {
    return {std::move(key), target::create_revision, relation::equal, r, {}};
  }
  static compare mod_revision_is(std::string key, revision r) {
    return {std::move(key), target::mod_revision, relation::equal, r, {}};
  }
  static compare value_is(std::string key, std::string v) {
    return {std::move(key), target::value, relation::equal, 0, std::move(v)};
  }
};

/// Writes `value` at `key`, attached to `lease` (0: none; a lease that does not exist fails the
/// whole request with errc::lease_not_found).
struct put_op {
  std::string key;
  std::string value;
  lease_id lease = 0;
};
/// Deletes every key in `range`.
struct delete_op {
  key_range range;
};
/// Reads every key in `range` (in key order) as of the transaction's revision.
struct range_op {
  key_range range;
};
using txn_op = std::variant<put_op, delete_op, range_op>;

/// If every compare holds, `success` runs, else `failure`; atomically, in one revision. At most
/// `max_txn_ops` compares and ops per branch, and no key written twice in one branch (both refused
/// with errc::invalid_store_request before anything is applied).
struct txn_request {
  std::vector<compare> compares;
  std::vector<txn_op> success;
  std::vector<txn_op> failure;
};

/// etcd's default limit (--max-txn-ops); callers batch in groups of at most 126 writes plus guards.
inline constexpr std::size_t max_txn_ops = 128;

struct txn_result {
  bool succeeded = false;
  /// The store's revision after the request (the revision it wrote, when it wrote anything).
  revision header_revision = 0;
  /// One entry per range_op of the branch that ran, in order.
  std::vector<std::vector<key_value>> ranges;
};

struct range_result {
  revision header_revision = 0;
  std::vector<key_value> kvs;
};

struct lease_grant {
  lease_id id = 0;
  duration ttl{};
};

/// One change seen by a watch. For a deletion `kv` holds the key and the deleting revision as
/// its mod_revision (other fields empty), as etcd reports it.
struct watch_event {
  enum class kind { put, del };
  kind type = kind::put;
  key_value kv;
};

/// What a watch delivers: the events of one or more whole revisions, in order, or (no events)
/// a progress notice: every change up to `header_revision` has been delivered.
struct watch_batch {
  revision header_revision = 0;
  std::vector<watch_event> events;
};

/// A running watch; destroying or cancelling it stops delivery (a batch already queued on the
/// executor may still arrive before cancel returns, none after the handler has seen cancel).
class watch_handle {
 public:
  virtual ~watch_handle() = default;
  virtual void cancel() noexcept = 0;
};

class consensus_store {
 public:
  template <class T>
  using handler = std::function<void(std::error_code, T)>;
  /// Gets batches; an error ends the watch: errc::compacted when `start` is older than the
  /// store's history (the caller re-reads and watches again from the read's revision + 1),
  /// errc::store_unavailable when the connection is lost.
  using watch_handler = std::function<void(std::error_code, watch_batch)>;

  virtual ~consensus_store() = default;
  consensus_store() = default;
  consensus_store(const consensus_store&) = delete;
  consensus_store& operator=(const consensus_store&) = delete;

  /// Reads `range` at the current revision (linearizable).
  virtual void range(key_range range, handler<range_result> done) = 0;
  /// Runs a transaction (a plain put is a transaction with no compares).
  virtual void txn(txn_request request, handler<txn_result> done) = 0;
  /// Grants a lease of `ttl` (etcd's minimum TTL is 2 s; shorter requests are raised to it).
  virtual void grant_lease(duration ttl, handler<lease_grant> done) = 0;
  /// Renews `lease` once and answers its TTL: errc::lease_not_found when it has expired or was
  /// revoked. One request, one answer, so the caller knows when the renewal it got was sent.
  virtual void keep_alive(lease_id lease, handler<duration> done) = 0;
  /// Revokes `lease`, deleting its keys in one revision.
  virtual void revoke_lease(lease_id lease, handler<revision> done) = 0;
  /// Watches `range` from revision `start` (inclusive; never 0: read first, then watch from the
  /// read's revision + 1).
  virtual std::unique_ptr<watch_handle> watch(key_range range, revision start,
                                              watch_handler on_batch) = 0;
  /// Where every handler runs.
  [[nodiscard]] virtual boost::asio::any_io_executor executor() const = 0;
};

/// The in-process model of etcd: one store shared by every node of a process (or of a simulated
/// run). Leases expire on `clock` (checked every `expiry_scan`, as etcd's 500 ms scan); history
/// older than `history` revisions is compacted. Handlers run on `executor`. For one client per
/// node and the fault hooks (a node cut off from etcd), see in_process_store.hpp.
struct in_process_store_options {
  duration min_ttl = std::chrono::seconds(2);
  duration expiry_scan = std::chrono::milliseconds(500);
  std::size_t history = 10'000;
  /// How long a client cut off from the store waits before a request fails with
  /// errc::store_unavailable (the etcd client's request timeout).
  duration request_timeout = std::chrono::seconds(2);
};

std::shared_ptr<consensus_store> make_in_process_store(std::shared_ptr<troupe::clock> clock,
                                                       boost::asio::any_io_executor executor,
                                                       in_process_store_options options = {});

/// The etcd client: etcd 3.4's /v3/ JSON gateway over HTTP on `endpoints` ("127.0.0.1:2379"),
/// tried in order when one fails. Requests time out after `request_timeout`
/// (errc::store_unavailable).
struct etcd_store_options {
  std::vector<std::string> endpoints;
  duration request_timeout = std::chrono::seconds(2);
  duration connect_timeout = std::chrono::milliseconds(500);
};

std::shared_ptr<consensus_store> make_etcd_store(boost::asio::any_io_executor executor,
                                                 etcd_store_options options);

}  // namespace troupe::cluster
