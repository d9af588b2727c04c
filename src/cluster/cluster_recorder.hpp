#pragma once
/// INTERNAL. The cluster's metrics, recorded where the events happen (a lease renewal answered,
/// a fence, a coordinator's write committed): rare events, so each records straight into the
/// registry. docs/observability.md lists the names.

#include <troupe/core/clock.hpp>
#include <troupe/core/metrics.hpp>

#include "cluster/membership/lease_keeper.hpp"

#include <string>
#include <string_view>

namespace troupe::cluster {

class cluster_recorder {
 public:
  explicit cluster_recorder(metrics_registry& registry);

  /// The node's identity as the labels of troupe_node_info (value 1), Prometheus' convention
  /// for what a target is: a query joins it on `instance` to name the node a series came from.
  void identify(std::string_view cluster, std::string_view node, std::string_view address,
                std::string_view app_version);

  void lease_renewed(duration round_trip) noexcept;
  void fenced(fence_reason why);

  /// The coordinator of `type` (on this node) committed a write: `n` shards allocated, or
  /// hand-offs begun, committed or aborted; a committed hand-off took `took` since its begin
  /// committed, when this leader saw the begin.
  void allocated(const std::string& type, std::size_t n);
  void handoffs(const std::string& type, std::string_view outcome, std::size_t n);
  void handoff_took(const std::string& type, duration took);
  void rebalance_rounds(const std::string& type, std::uint64_t n);
  void leading(const std::string& type, bool leads);

 private:
  histogram& renewals_;
  metric_family<counter>& fences_;
  metric_family<counter>& allocations_;
  metric_family<counter>& handoffs_;
  metric_family<histogram>& handoff_seconds_;
  metric_family<counter>& rounds_;
  metric_family<gauge>& leading_;
  metric_family<gauge>& info_;
};

}  // namespace troupe::cluster
