#pragma once
/// Counters a shard keeps about its own work, read by introspection and metrics. Plain values:
/// the shard updates them in its own turns, so they need no atomics; whoever reads them from
/// elsewhere asks the shard for a copy.

#include <troupe/core/clock.hpp>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace troupe::sharding {

/// How many messages a shard handled per batch (a turn), in power-of-two buckets.
struct batch_size_histogram {
  /// The buckets: [1], [2, 3], [4, 7], ..., [128, 255] and [256, infinity).
  static constexpr std::size_t bucket_count = 9;

  /// Batches counted per bucket; counts[i] holds sizes in [2^i, 2^(i+1)), the last 256 and up.
  std::array<std::uint64_t, bucket_count> counts{};

  /// The smallest batch size bucket `i` holds.
  [[nodiscard]] static constexpr std::size_t lower_bound(std::size_t i) {
    return std::size_t{1} << i;
  }

  /// The bucket a batch of `size` messages (at least 1) falls in.
  [[nodiscard]] static constexpr std::size_t bucket_of(std::size_t size) {
    const auto log2 = static_cast<std::size_t>(std::bit_width(size)) - 1;
    return log2 < bucket_count ? log2 : bucket_count - 1;
  }

  /// Counts one batch of `size` messages. An empty batch (0) is no batch and is not counted.
  void record(std::size_t size) {
    if (size != 0) ++counts[bucket_of(size)];
  }

  /// The number of batches counted.
  [[nodiscard]] std::uint64_t total() const {
    std::uint64_t sum = 0;
    for (const std::uint64_t c : counts) sum += c;
    return sum;
  }
};

/// Per-shard metrics, updated by the shard as it works.
struct shard_stats {
  /// Messages delivered to entities of the shard.
  std::uint64_t messages_processed = 0;
  /// Entities running in the shard.
  std::size_t entity_count = 0;
  /// Messages waiting in the shard's mailbox when last observed (sampled: 1 delivery in 16).
  std::size_t mailbox_depth = 0;
  /// The largest mailbox_depth observed.
  std::size_t mailbox_depth_peak = 0;
  /// The longest a message waited between being sent to the shard (by a sender or the region)
  /// and the shard handling it (sampled: 1 message in 16 carries its send time).
  duration max_queue_wait = duration::zero();
  /// Messages handled per turn of the shard actor (a busy shard takes many per turn).
  batch_size_histogram batch_sizes;
  /// The shard's hottest entity ids over the last 30 to 60 seconds, hottest first, with their
  /// estimated message counts (sampled: 1 delivery in 16 counts as 16).
  std::vector<std::pair<std::string, std::uint64_t>> hottest;

  /// Records the mailbox depth seen now, raising the peak when it is higher.
  void observe_mailbox_depth(std::size_t depth) {
    mailbox_depth = depth;
    if (depth > mailbox_depth_peak) mailbox_depth_peak = depth;
  }

  /// Records how long one message waited, raising max_queue_wait when it is longer.
  void observe_queue_wait(duration wait) {
    if (wait > max_queue_wait) max_queue_wait = wait;
  }
};

}  // namespace troupe::sharding
