// The workload of troupe_bench_seed (issue 4), defined exactly so that every implementation
// replays the same key sequence: message i's key index comes from the i-th output of splitmix64
// seeded with the run's seed, uniformly or by Zipf rank. Library-free apart from zlib's crc32.

#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::bench::seed {

enum class distribution { uniform, zipf };

/// What a workload is made of; ids are "k0" ... "k{keys-1}".
struct workload_spec {
  std::int64_t messages = 10'000;
  std::int64_t keys = 1'000;
  distribution dist = distribution::uniform;
  double zipf_s = 1.1;
  std::uint64_t seed = 42;
};

/// Vigna's splitmix64, as issue 4 spells it out.
class splitmix64 {
 public:
  explicit splitmix64(std::uint64_t seed) noexcept : state_(seed) {}
  std::uint64_t next() noexcept;
  /// The next output as a double in [0, 1): (z >> 11) / 2^53.
  double next_unit() noexcept;

 private:
  std::uint64_t state_;
};

/// The key index of every message, in sending order.
std::vector<std::uint32_t> generate_keys(const workload_spec& spec);

/// zlib's crc32 of the key indices as little-endian uint32s.
std::uint32_t workload_crc32(const std::vector<std::uint32_t>& keys);

/// "k" + index.
std::string key_name(std::uint32_t index);

/// zlib's crc32 of the key's bytes, modulo `shards` (the guide's router and Troupe's shard).
std::uint32_t shard_of_key(std::string_view key, std::uint32_t shards);

/// Messages per key index.
std::vector<std::int64_t> per_key_counts(const std::vector<std::uint32_t>& keys,
                                         std::int64_t key_count);

/// Messages per shard, each key placed by shard_of_key.
std::vector<std::int64_t> per_shard_counts(const std::vector<std::int64_t>& key_counts,
                                           std::uint32_t shards);

/// Serial writes a unit with `count` messages cannot avoid: count, or ceil(count / batch).
std::int64_t serial_writes(std::int64_t count, std::int64_t batch);

/// The physical limit: messages / (serial writes of the busiest unit x io).
double bound_msgs_per_s(std::int64_t messages, std::int64_t busiest_count, std::int64_t batch,
                        double io_ms);

}  // namespace troupe::bench::seed
