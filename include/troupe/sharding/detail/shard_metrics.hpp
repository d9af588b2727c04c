#pragma once
/// INTERNAL. The metrics the sharding layer records itself, on the hot path, into the registry
/// attached to its system (actor_system::record_metrics). Everything else it counts is copied
/// into a registry when one is read (observability's sharding_metrics).

#include <troupe/core/metrics.hpp>

#include <string>

namespace troupe::sharding::detail {

/// troupe_shard_queue_wait_seconds{type}: how long a sampled delivery waited between being sent
/// to its shard and the shard handling it.
[[nodiscard]] histogram& shard_queue_wait(metrics_registry& registry, const std::string& type);

}  // namespace troupe::sharding::detail
