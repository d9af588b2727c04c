#pragma once
/// A shard's figures, read by introspection and metrics (ask the shard, or
/// cluster_sharding::shards()).

#include <troupe/core/clock.hpp>

#include <cstddef>
#include <cstdint>

namespace troupe::sharding {

/// Per-shard metrics of the running shard actor.
struct shard_stats {
  /// Messages sent to entities of the shard since this shard actor started.
  std::uint64_t messages_processed = 0;
  /// Entities running in the shard.
  std::size_t entity_count = 0;
  /// Messages waiting for their entity to start, or to finish stopping, now.
  std::size_t held = 0;
  /// The most messages that waited so at once.
  std::size_t held_peak = 0;
  /// The longest the first message for an entity waited for it to start (or for its previous
  /// incarnation to stop), on the system clock.
  duration max_hold = duration::zero();
};

}  // namespace troupe::sharding
