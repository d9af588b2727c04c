#pragma once
// troupe_bench_cluster's `failover` case: three cluster nodes in three child processes (this
// program started again with --serve-node) on a real etcd and one SQLite journal file, and the
// bench process as a fourth node that only routes (a proxy). See cluster_failover.cpp.

#include "bench_support.hpp"

#include <cstddef>
#include <cstdint>

namespace troupe::bench::failover {

/// What happens to the one node the run takes out.
enum class fault {
  /// kill -9 of the node holding the most accounts.
  kill,
  /// Node n1 talks to etcd through a proxy, which freezes: n1 cannot renew its lease, fences
  /// itself (its entities stop) and lives on cut off from etcd, still reachable by the others.
  etcd_cut,
  /// SIGTERM to the node holding the most accounts: it leaves gracefully (its shards are handed
  /// off under load), and nothing sent may be lost or reordered.
  leave,
};

/// One run: deposits under load to `entities` persistent accounts over 64 shards, `what`
/// happens to one node, then asks to `samples` of its accounts until each answers from a
/// survivor with at least the balance acknowledged before the fault. Value: seconds from the
/// fault until the last sample answered; fields p50_s, max_s, duplicate_activations,
/// lost_events, and for a leave lost (deposits sent and not applied) and reordered (deposits
/// applied after a later one). Throws bench_failure without TROUPE_ETCD_ENDPOINTS, or when an
/// account is lost, runs on two nodes at once, or holds more than was ever deposited.
run_result run(std::size_t workers, std::int64_t entities, std::int64_t samples, fault what);

/// Whether this process was started as a node (argv[1] is --serve-node).
bool is_node(int argc, char** argv);
/// Runs the node: joins the cluster, hosts the accounts, prints READY, runs until stdin closes;
/// on SIGTERM it leaves the cluster (cluster_node::leave) first.
int serve_node(int argc, char** argv);

}  // namespace troupe::bench::failover
