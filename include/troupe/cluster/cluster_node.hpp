#pragma once
/// A node's membership in a cluster, and what makes its sharded types run across the cluster:
///
///   auto registry = std::make_shared<troupe::cluster::message_registry>();
///   troupe::cluster::add_cluster_messages(*registry);   // and the sharded types' messages
///   troupe::cluster::remote_node remote(system, remote_options{}.with_registry(registry)...);
///   auto node = troupe::cluster::cluster_node::join(system, sharding, remote, store,
///                                                   cluster_node_options{}.with_roles({"cart"}));
///   node->joined().get();                     // the lease is granted, the member key written
///   sharding.start(cart_options);             // placed by the cluster's coordinator
///
/// Joining grants the node's lease (the lease keeper renews it and fences the node when it can't
/// be sure the lease lives), writes the member key under it, and starts the node's coordinator
/// endpoint. Every sharded type started afterwards gets a coordinator runner (the election picks
/// one per type in the cluster) and a cluster placement: shards are allocated to the regions of
/// the type, and a shard is hosted here only once its store fence is raised to its epoch. A
/// message sent to any node's region reaches its entity on the node that hosts the shard (the
/// type's message type must be in the remote node's registry; start() fails otherwise). See
/// docs/cluster.md for the parts and what is not built yet.

#include <troupe/cluster/cluster_state.hpp>
#include <troupe/cluster/membership/consensus_store.hpp>
#include <troupe/cluster/remote_node.hpp>
#include <troupe/core/actor_system.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/core/metrics.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/sharding/coordination/allocation_strategy.hpp>
#include <troupe/sharding/coordination/cluster_view.hpp>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace troupe::cluster {

struct cluster_node_options {
  /// The cluster's name: its keys live under /troupe/<name>/.
  std::string cluster_name = "troupe";
  /// This node's id (no '/', '#' or newline); empty: the remote address ("host:port").
  std::string node;
  /// The roles the node was started with; a type with a role runs on nodes that have it.
  std::vector<std::string> roles;
  /// The application's version (dot-separated numbers), for rolling updates.
  std::string app_version;
  /// The node's lease: at least 2 s. The node fences itself `lease_margin` before it could
  /// expire.
  duration lease_ttl = std::chrono::seconds(3);
  duration lease_margin = std::chrono::milliseconds(500);
  /// How long before a failed store request or an unanswered home request is repeated.
  duration retry = std::chrono::milliseconds(500);
  /// Each type's allocation strategy; empty: the config's (`troupe.sharding.allocation-strategy`
  /// and the rebalance limits, coordination/strategy_config.hpp), by default hash mod regions.
  std::function<std::unique_ptr<sharding::coordination::allocation_strategy>(
      const sharding::region_settings&)>
      strategy;
  /// How often each type's coordinator asks its strategy which shards to move, and how long a
  /// hand-off may wait for the old owner to stop the shard before it is aborted. Unset: the
  /// config's `troupe.sharding.rebalance-interval` and `troupe.sharding.hand-off-timeout`, else
  /// 10 s each.
  std::optional<duration> rebalance_interval;
  std::optional<duration> handoff_timeout;
  /// How long leave() waits for this node's shards to be handed off before it revokes the
  /// lease anyway (its shards then fail over, and what waited for them here is lost). Unset:
  /// the config's `troupe.sharding.leave-timeout`, else the hand-off timeout plus one lease TTL
  /// (a hand-off that timed out is begun again once).
  std::optional<duration> leave_timeout;
  /// Called once if the node fences itself (it could not keep its lease: see fenced()), with
  /// the reason, right after its entities stopped taking messages; on the store's executor, so
  /// it must not block; never once the cluster_node is destroyed. A node that fenced itself
  /// never hosts again: an application usually logs, alerts, and restarts the process (a new
  /// incarnation).
  std::function<void(const std::string& reason)> on_fenced;
  /// Where the node records its cluster metrics (lease renewals, self-fences, and per type the
  /// coordinator's allocations, hand-offs and rebalance rounds: docs/observability.md); null
  /// records none.
  std::shared_ptr<metrics_registry> metrics;

  cluster_node_options& with_cluster_name(std::string n) {
    cluster_name = std::move(n);
    return *this;
  }
  cluster_node_options& with_node(std::string n) {
    node = std::move(n);
    return *this;
  }
  cluster_node_options& with_roles(std::vector<std::string> r) {
    roles = std::move(r);
    return *this;
  }
  cluster_node_options& with_lease_ttl(duration ttl) {
    lease_ttl = ttl;
    return *this;
  }
  cluster_node_options& with_rebalance_interval(duration d) {
    rebalance_interval = d;
    return *this;
  }
  cluster_node_options& with_handoff_timeout(duration d) {
    handoff_timeout = d;
    return *this;
  }
  cluster_node_options& with_metrics(std::shared_ptr<metrics_registry> r) {
    metrics = std::move(r);
    return *this;
  }
  cluster_node_options& with_leave_timeout(duration d) {
    leave_timeout = d;
    return *this;
  }
};

/// One node of a cluster.
class cluster_node {
 public:
  /// Joins `store`'s cluster with `remote`'s address. `clock` must count suspended time in
  /// production (the default, make_boottime_clock). Sharded types must be started on `sharding`
  /// after joined() completes. Throws std::invalid_argument for a bad node id or role.
  static std::shared_ptr<cluster_node> join(actor_system& system,
                                            sharding::cluster_sharding& sharding,
                                            remote_node& remote,
                                            std::shared_ptr<consensus_store> store,
                                            cluster_node_options options = {},
                                            std::shared_ptr<troupe::clock> clock = nullptr);
  /// Stops: the runners resign, the lease is no longer renewed (it runs out on its own).
  ~cluster_node();
  cluster_node(const cluster_node&) = delete;
  cluster_node& operator=(const cluster_node&) = delete;

  /// Ready once the lease is granted and the member key written; holds the error otherwise
  /// (troupe::error with the store's code).
  [[nodiscard]] std::shared_future<void> joined() const;
  /// The type's region is registered and has read the allocations once.
  [[nodiscard]] bool ready(const std::string& type_name) const;
  /// This incarnation: the node id and its lease (lease 0 before joined()).
  [[nodiscard]] sharding::coordination::member_id self() const;
  /// The node fenced itself (lost or left its lease): it hosts no shard any more.
  [[nodiscard]] bool fenced() const;
  /// Whether this node's runner of the type leads it.
  [[nodiscard]] bool leads(const std::string& type_name) const;
  /// How many regions this node's coordinator of the type places shards on now: those
  /// registered whose member it knows and that may host the type (0 unless it leads). A region
  /// is ready once it is registered; the coordinator learns of it through its watch a moment
  /// later, and until then places new shards on the regions it already knows.
  [[nodiscard]] std::size_t hosting_regions(const std::string& type_name) const;
  /// The cluster as the consensus store holds it now (members, each sharded type's coordinator,
  /// regions and allocated shards, all of one revision), with how this node reaches each
  /// member. Holds troupe::error with the store's code when it cannot be read. A shard's
  /// place as this node's region routes to it is in cluster_sharding::shards() (owner, epoch).
  [[nodiscard]] std::future<cluster_state> read_state() const;
  /// Leaves gracefully: the member is marked leaving, the coordinators hand every shard of it
  /// off to the other nodes (each after what its mailbox holds; messages for it wait in the
  /// regions, here and elsewhere, and then go to its new owner), and once none runs here (or
  /// after `leave_timeout` at most) the lease is revoked, so the node's keys go. The regions here
  /// keep routing to the other nodes, and after a complete hand-off they still pass on what
  /// other nodes send here until none has come for a moment (at most one lease TTL). `done`
  /// gets the store's answer to the revoke after that (operation_canceled when the node is
  /// destroyed first), on the store's or the clock's thread: it must not block. The waiting
  /// runs on the node's clock, with no thread of its own.
  /// actor_system::run_until_signal() calls it on SIGTERM or SIGINT and waits for it before the
  /// system shuts down.
  void leave(std::function<void(std::error_code)> done = {});
  /// Asks the coordinator of `type_name`, on whichever node leads it, for a rebalance round now
  /// instead of at the next `rebalance_interval`: it runs at the leader's next tick that finds no
  /// hand-off in progress and no member leaving, with the type's allocation strategy (which may
  /// move nothing). Returns false when the type is not started on this node. A leader elected
  /// while the request travels does not get it; the operator asks again.
  bool rebalance(const std::string& type_name);

  struct state;
  class leave_run;

 private:
  explicit cluster_node(std::shared_ptr<state> s) : state_(std::move(s)) {}
  std::shared_ptr<state> state_;
  /// A leave in progress: it waits, on the node's clock, for the shards to stop before it
  /// revokes the lease (null: not leaving).
  std::shared_ptr<leave_run> leaving_;
};

}  // namespace troupe::cluster
