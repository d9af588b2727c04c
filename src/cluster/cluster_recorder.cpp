#include "cluster/cluster_recorder.hpp"

#include <chrono>
#include <vector>

namespace troupe::cluster {
namespace {

double seconds(duration d) { return std::chrono::duration<double>(d).count(); }

/// A fence reason as a label value: short and stable, unlike the log's wording.
std::string_view label_of(fence_reason why) {
  switch (why) {
    case fence_reason::deadline_passed:
      return "deadline_passed";
    case fence_reason::no_ttl:
      return "no_ttl";
    case fence_reason::lease_not_found:
      return "lease_not_found";
    case fence_reason::grant_failed:
      return "grant_failed";
    case fence_reason::revoked:
      return "revoked";
    case fence_reason::stopped:
      return "stopped";
  }
  return "unknown";
}

// A renewal is a store round trip: a millisecond on loopback, seconds when the store struggles.
const std::vector<double> renewal_bounds{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                         0.1,   0.25,   0.5,   1,    2.5};
// A hand-off waits for the old owner's mailboxes and a flush: tens of milliseconds to the
// hand-off timeout (10 s by default).
const std::vector<double> handoff_bounds{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};

}  // namespace

cluster_recorder::cluster_recorder(metrics_registry& registry)
    : renewals_(registry
                    .histogram_family("troupe_lease_renewal_seconds",
                                      "Round trip of the node's lease renewals that extended it",
                                      {}, renewal_bounds)
                    .with({})),
      fences_(registry.counter_family("troupe_self_fences_total",
                                      "Times the node fenced itself, by reason", {"reason"})),
      allocations_(registry.counter_family(
          "troupe_shard_allocations_total",
          "Shards this node's coordinator allocated (placed or reallocated after a failure)",
          {"type"})),
      handoffs_(registry.counter_family(
          "troupe_handoffs_total",
          "Hand-offs this node's coordinator began, completed or aborted, by outcome",
          {"type", "outcome"})),
      handoff_seconds_(registry.histogram_family(
          "troupe_handoff_duration_seconds",
          "From a hand-off's begin to its commit, as the coordinator that began it saw it",
          {"type"}, handoff_bounds)),
      rounds_(registry.counter_family("troupe_rebalance_rounds_total",
                                      "Rebalance rounds this node's coordinator ran", {"type"})),
      leading_(registry.gauge_family("troupe_coordinator_leader",
                                     "1 while this node's coordinator of the type leads it, else 0",
                                     {"type"})),
      info_(registry.gauge_family("troupe_node_info",
                                  "The node's identity in its labels; the value is always 1",
                                  {"cluster", "node", "address", "app_version"})) {}

void cluster_recorder::identify(std::string_view cluster, std::string_view node,
                                std::string_view address, std::string_view app_version) {
  info_.with({cluster, node, address, app_version}).set(1.0);
}

void cluster_recorder::lease_renewed(duration round_trip) noexcept {
  renewals_.observe(seconds(round_trip));
}

void cluster_recorder::fenced(fence_reason why) { fences_.with({label_of(why)}).inc(); }

void cluster_recorder::allocated(const std::string& type, std::size_t n) {
  allocations_.with({type}).add(n);
}

void cluster_recorder::handoffs(const std::string& type, std::string_view outcome, std::size_t n) {
  handoffs_.with({std::string_view(type), outcome}).add(n);
}

void cluster_recorder::handoff_took(const std::string& type, duration took) {
  handoff_seconds_.with({type}).observe(seconds(took));
}

void cluster_recorder::rebalance_rounds(const std::string& type, std::uint64_t n) {
  if (n > 0) rounds_.with({type}).add(n);
}

void cluster_recorder::leading(const std::string& type, bool leads) {
  leading_.with({type}).set(leads ? 1.0 : 0.0);
}

}  // namespace troupe::cluster
