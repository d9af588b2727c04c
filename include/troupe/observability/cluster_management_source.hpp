#pragma once
/// The management API's source over a running node: members and shard owners from
/// cluster_node::read_state(), this node's shard figures from cluster_sharding's introspection,
/// readiness from the node's join and its regions, and /metrics from a metrics registry.

#include <troupe/cluster/cluster_node.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/core/metrics.hpp>
#include <troupe/observability/management_source.hpp>
#include <troupe/sharding/cluster_sharding.hpp>

#include <chrono>
#include <memory>

namespace troupe::observability {

struct cluster_source_options {
  /// How long one answer may wait for the consensus store or a region (each call).
  duration timeout = std::chrono::seconds(3);
  /// The clock the message rates are measured with; null: make_steady_clock().
  std::shared_ptr<troupe::clock> clock;
};

/// A source over `node` and `sharding` (the node's system's). `metrics` may be null (then
/// /metrics answers 404); it must outlive the source, and so must the system. A rebalance asks
/// the type's coordinator, wherever it leads, for a round now (cluster_node::rebalance).
/// Where-is hashes the id as the default extractor does (shard_of); a type started with its own
/// shard extractor (with_extract_shard_id) is not located correctly.
[[nodiscard]] std::shared_ptr<management_source> make_cluster_management_source(
    std::shared_ptr<cluster::cluster_node> node, sharding::cluster_sharding& sharding,
    const metrics_registry* metrics = nullptr, cluster_source_options options = {});

}  // namespace troupe::observability
