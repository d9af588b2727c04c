// The definitions of the metrics the sharding layer records itself (see the header).
#include <troupe/sharding/detail/shard_metrics.hpp>

namespace troupe::sharding::detail {

histogram& shard_queue_wait(metrics_registry& registry, const std::string& type) {
  // From 10 µs (a delivery to a shard whose worker is awake) to ~10 s (a stuck shard).
  return registry
      .histogram_family(
          "troupe_shard_queue_wait_seconds",
          "How long a delivery waited in its shard's mailbox before the shard handled "
          "it (sampled: 1 delivery in 16)",
          {"type"}, exponential_buckets(0.00001, 2, 20))
      .with({type});
}

}  // namespace troupe::sharding::detail
