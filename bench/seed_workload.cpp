#include "seed_workload.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>

namespace troupe::bench::seed {

std::uint64_t splitmix64::next() noexcept {
  state_ += 0x9E3779B97F4A7C15ULL;
  std::uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double splitmix64::next_unit() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

std::vector<std::uint32_t> generate_keys(const workload_spec& spec) {
  const auto k = static_cast<std::size_t>(spec.keys);
  const auto last = static_cast<std::uint32_t>(k - 1);
  std::vector<std::uint32_t> keys;
  keys.reserve(static_cast<std::size_t>(spec.messages));
  splitmix64 rng(spec.seed);
  if (spec.dist == distribution::uniform) {
    for (std::int64_t i = 0; i < spec.messages; ++i) {
      const double x = std::floor(rng.next_unit() * static_cast<double>(k));
      keys.push_back(std::min(static_cast<std::uint32_t>(x), last));
    }
    return keys;
  }
  // Summed from rank 1 upwards in doubles, as the other implementations do, so that the
  // cumulative weights (and thus the key sequence) agree bit for bit.
  std::vector<double> cum(k);
  double total = 0;
  for (std::size_t r = 1; r <= k; ++r) {
    total += std::pow(static_cast<double>(r), -spec.zipf_s);
    cum[r - 1] = total;
  }
  for (std::int64_t i = 0; i < spec.messages; ++i) {
    const double target = rng.next_unit() * total;
    const auto pos =
        static_cast<std::size_t>(std::upper_bound(cum.begin(), cum.end(), target) - cum.begin());
    keys.push_back(std::min(static_cast<std::uint32_t>(pos), last));
  }
  return keys;
}

std::uint32_t workload_crc32(const std::vector<std::uint32_t>& keys) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  for (const std::uint32_t v : keys) {
    const unsigned char le[4] = {static_cast<unsigned char>(v), static_cast<unsigned char>(v >> 8),
                                 static_cast<unsigned char>(v >> 16),
                                 static_cast<unsigned char>(v >> 24)};
    crc = ::crc32(crc, le, 4);
  }
  return static_cast<std::uint32_t>(crc);
}

std::string key_name(std::uint32_t index) { return "k" + std::to_string(index); }

std::uint32_t shard_of_key(std::string_view key, std::uint32_t shards) {
  const uLong crc =
      ::crc32(0L, reinterpret_cast<const Bytef*>(key.data()), static_cast<uInt>(key.size()));
  return static_cast<std::uint32_t>(crc % shards);
}

std::vector<std::int64_t> per_key_counts(const std::vector<std::uint32_t>& keys,
                                         std::int64_t key_count) {
  std::vector<std::int64_t> counts(static_cast<std::size_t>(key_count));
  for (const std::uint32_t k : keys) ++counts[k];
  return counts;
}

std::vector<std::int64_t> per_shard_counts(const std::vector<std::int64_t>& key_counts,
                                           std::uint32_t shards) {
  std::vector<std::int64_t> counts(shards);
  for (std::size_t k = 0; k < key_counts.size(); ++k) {
    counts[shard_of_key(key_name(static_cast<std::uint32_t>(k)), shards)] += key_counts[k];
  }
  return counts;
}

std::int64_t serial_writes(std::int64_t count, std::int64_t batch) {
  return batch > 0 ? (count + batch - 1) / batch : count;
}

double bound_msgs_per_s(std::int64_t messages, std::int64_t busiest_count, std::int64_t batch,
                        double io_ms) {
  const double seconds = static_cast<double>(serial_writes(busiest_count, batch)) * io_ms / 1e3;
  return seconds > 0 ? static_cast<double>(messages) / seconds : 0;
}

}  // namespace troupe::bench::seed
