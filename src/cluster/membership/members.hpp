#pragma once
/// Cluster membership in the consensus store. Each node incarnation registers one key,
/// `P/members/<node>#<leaseHex>` (P = /troupe/<cluster>), under its lease and only if absent, whose
/// value names its address, incarnation, roles and state (up or leaving); the key vanishes with
/// the lease (expiry, leave) or on eviction. A members_view reads `P/members/` at a revision R,
/// watches from R + 1 and reports each join, change and departure with its revision; after
/// errc::compacted or a lost watch it reads again and reports the difference.

#include <troupe/cluster/membership/consensus_store.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/sharding/coordination/coordinator_events.hpp>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace troupe::cluster {

/// A member as its key holds it.
struct member_record {
  /// Node id, incarnation (the lease), roles and state.
  sharding::coordination::member_info info;
  /// Where the node's transport listens ("host:port").
  std::string address;

  friend bool operator==(const member_record&, const member_record&) = default;
};

/// `/troupe/<cluster>`, the prefix of every key of a cluster.
std::string cluster_prefix(std::string_view cluster);
/// `P/members/`.
std::string members_prefix(std::string_view cluster);
/// `P/members/<node>#<leaseHex>`.
std::string member_key(std::string_view cluster, std::string_view node, lease_id lease);

/// The key's value: one line per field (address, incarnation, state, roles, app version), so it
/// stays readable with etcdctl. Node ids and roles may not contain a newline or '#'.
std::string encode_member(const member_record& member);
/// Parses a key and its value; nullopt for a key or value this layout does not describe (it is
/// skipped, so one bad key cannot stop the view).
std::optional<member_record> decode_member(std::string_view cluster, std::string_view key,
                                           std::string_view value);

/// Writes this incarnation's key under its lease, create-if-absent; `done` gets the revision of
/// the write, or errc::invalid_store_request when the key exists already (the same incarnation
/// registered twice), or the store's error. Throws std::invalid_argument for a node id or role
/// containing '#' or a newline, or an incarnation that is not a lease.
void register_member(consensus_store& store, std::string_view cluster, const member_record& member,
                     std::function<void(std::error_code, revision)> done);

/// Rewrites this incarnation's key (e.g. state leaving) if it still exists and still carries its
/// lease; errc::lease_not_found when it is gone.
void update_member(consensus_store& store, std::string_view cluster, const member_record& member,
                   std::function<void(std::error_code, revision)> done);

/// What a members_view reports.
struct member_change {
  enum class kind { joined, changed, left };
  kind type = kind::joined;
  /// The revision that made the change (for a re-read: the read's revision).
  revision at = 0;
  /// The member as it is now (for `left`: as it was last seen).
  member_record member;
};

/// The coordinator's form of a change: member_put for a join or change, member_deleted for a
/// departure.
sharding::coordination::coordinator_event to_coordinator_event(const member_change& change);

/// Follows `P/members/`: the current members and every change, in revision order.
class members_view : public std::enable_shared_from_this<members_view> {
 public:
  using change_callback = std::function<void(const member_change&)>;

  /// Starts reading and watching; changes reach `on_change` on the store's executor. The first
  /// read reports every member present as joined. A failed read is retried after `retry` on
  /// `clock`.
  static std::shared_ptr<members_view> start(std::shared_ptr<consensus_store> store,
                                             std::shared_ptr<troupe::clock> clock,
                                             std::string cluster, change_callback on_change,
                                             duration retry = std::chrono::milliseconds(500));
  ~members_view();
  members_view(const members_view&) = delete;
  members_view& operator=(const members_view&) = delete;

  /// The members as of `revision()`, by key.
  [[nodiscard]] std::vector<member_record> members() const;
  /// The revision the view has seen everything up to (0 before the first read).
  [[nodiscard]] revision seen() const;
  /// How many times the view has read the whole prefix (1 after a clean start).
  [[nodiscard]] int reads() const;
  /// Stops watching; no change is reported after it returns, except one already running.
  void stop();

 private:
  struct token {};

 public:
  members_view(token, std::shared_ptr<consensus_store> store, std::shared_ptr<troupe::clock> clock,
               std::string cluster, change_callback on_change, duration retry);

 private:
  void read();
  void on_read(std::error_code ec, range_result r);
  void watch_from(revision start);
  void on_batch(std::error_code ec, watch_batch batch);
  void retry_read();

  const std::shared_ptr<consensus_store> store_;
  const std::shared_ptr<troupe::clock> clock_;
  const std::string cluster_;
  const change_callback on_change_;
  const duration retry_;

  mutable std::mutex mutex_;
  std::map<std::string, member_record> members_;
  revision seen_ = 0;
  int reads_ = 0;
  bool stopped_ = false;
  std::unique_ptr<watch_handle> watch_;
  timer_id retry_timer_ = 0;
};

}  // namespace troupe::cluster
