// The simulated cluster of the scale model (issue 18): the real coordinator state machine, fed
// through the real keys and transactions of the cluster layer on the in-process etcd model, with
// simulated time on a manual clock and no thread. The nodes host no entities: a node answers a
// hand-off key by writing its stopped key at once, and leaves (revokes its lease) once the store
// shows it owns no shard. See the comment at the top of scale_model.cpp.

#pragma once

#include <troupe/cluster/membership/consensus_store.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/sharding/coordination/coordinator.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace troupe::bench::scale {

namespace coord = troupe::sharding::coordination;

/// What the model writes to, and what one node's watch of the cluster prefix receives.
struct store_tally {
  /// Transactions (a member's registration or leave, a region's, the coordinator's writes, the
  /// stopped reports), counting those whose compares failed.
  std::int64_t txns = 0;
  /// Keys put and deleted by transactions that succeeded, and lease revokes.
  std::int64_t puts = 0;
  std::int64_t deletes = 0;
  std::int64_t revokes = 0;
  /// Bytes of the keys and values put, and of the keys deleted.
  std::int64_t bytes = 0;
  /// Events and bytes (key + value) one watch of `P/` received: what every node's placement and
  /// the coordinator's feeder each receive.
  std::int64_t watch_events = 0;
  std::int64_t watch_bytes = 0;
};

/// The coordinator's work between one stimulus (a tick, a join, a leave) and quiet.
struct cycle {
  /// The coordinator's time in handle() (steady clock), over every event of the cycle, and its
  /// longest call.
  double cpu_ms = 0;
  /// The same calls in this thread's CPU time (what the steady clock shows, minus preemption
  /// by other processes on a shared machine).
  double thread_cpu_ms = 0;
  double max_call_ms = 0;
  /// The handle() call of the stimulus' own event (a tick that rebalances: the plan).
  double plan_ms = 0;
  /// Hand-offs committed in the cycle.
  std::int64_t moved = 0;
  /// A rebalance round ran in it.
  bool round = false;
};

/// The model's settings.
struct cluster_settings {
  std::size_t shards = 100'000;
  coord::rebalance_limits limits{};
  std::chrono::seconds rebalance_interval{10};
};

class sim_cluster {
 public:
  explicit sim_cluster(cluster_settings settings);
  ~sim_cluster();
  sim_cluster(const sim_cluster&) = delete;
  sim_cluster& operator=(const sim_cluster&) = delete;

  /// A node joins: its lease, member key and region key. Returns its index.
  std::size_t join(const std::string& app_version);
  /// The node announces a graceful leave (its member key, state leaving); it revokes its lease
  /// once it owns no shard.
  void leave(std::size_t node);
  /// Elects the coordinator, and has the first node's region ask for every shard while the
  /// coordinator reads (as regions ask at a cluster's start), then runs until quiet.
  cycle bootstrap();
  /// Runs queued work until nothing is left (etcd answers at once; no time passes).
  cycle settle();
  /// Advances the clock one rebalance interval, feeds a tick, and runs until quiet.
  cycle tick();

  /// The tally so far.
  [[nodiscard]] const store_tally& tally() const noexcept { return tally_; }
  /// Seconds of simulated time so far.
  [[nodiscard]] double sim_seconds() const;

  /// The nodes that live (their lease was not revoked), and whether each is leaving.
  [[nodiscard]] std::vector<std::size_t> live_nodes() const;
  [[nodiscard]] bool leaving(std::size_t node) const { return nodes_.at(node).leaving; }
  /// Shards each node owns, as the store says (the watch of the allocation keys).
  [[nodiscard]] std::int64_t owned(std::size_t node) const { return nodes_.at(node).owned; }
  /// Shards with no allocation, or one to a node whose lease is gone.
  [[nodiscard]] std::size_t homeless_shards() const;
  /// Hand-offs in progress or writes outstanding, as the coordinator says.
  [[nodiscard]] bool moving() const;
  /// Strategy errors and aborted hand-offs seen (none expected).
  [[nodiscard]] std::int64_t troubles() const noexcept { return troubles_; }

 private:
  struct node {
    std::string id;
    std::int64_t lease = 0;
    std::string app_version;
    bool leaving = false;
    bool gone = false;
    bool revoking = false;
    std::int64_t owned = 0;
  };
  class counting_store;

  void pump_into(cycle& c);
  void feed(const coord::coordinator_event& event, cycle& c, bool stimulus);
  void carry_out(const std::vector<coord::coordinator_decision>& decisions);
  void read_state();
  void on_watch(const cluster::watch_batch& batch);
  void write(coord::write_id id, cluster::txn_request t, bool is_commit);
  [[nodiscard]] std::int64_t grant();
  [[nodiscard]] coord::member_id member_of(std::size_t node) const;
  [[nodiscard]] std::string address_of(std::size_t node) const;

  cluster_settings settings_;
  std::shared_ptr<manual_clock> clock_;
  time_point start_;
  boost::asio::io_context io_;
  store_tally tally_;
  std::shared_ptr<cluster::consensus_store> store_;
  std::unique_ptr<cluster::watch_handle> watch_;
  coord::coordinator coordinator_;
  std::string own_key_;
  std::int64_t coordinator_lease_ = 0;
  std::vector<node> nodes_;
  std::map<std::string, std::size_t> by_id_;
  std::vector<std::int64_t> owner_of_;  // per shard: node index, -1 when none
  std::deque<coord::coordinator_event> queue_;
  std::map<coord::write_id, bool> commits_;  // write id -> is a commit_handoff
  std::int64_t troubles_ = 0;
};

}  // namespace troupe::bench::scale
