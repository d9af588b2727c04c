#pragma once
// One directed link of the in-memory network (`from` -> `to`): its faults, the PRNG that decides
// them, and its counters. Streams hold their outgoing link directly, so a write looks up nothing
// in the network and the link outlives the network if the streams do.

#include <troupe/cluster/memory_network.hpp>
#include <troupe/cluster/node_address.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

namespace troupe::cluster::detail {

class link_state {
 public:
  /// What becomes of one write.
  struct verdict {
    bool lost = false;
    std::chrono::nanoseconds delay{0};
  };

  link_state(std::uint64_t network_seed, const node_address& from, const node_address& to);

  /// Decides the fate of the next write, consuming the PRNG only for faults that are set (so
  /// the choices depend on the seed and the order of writes alone), and counts a loss.
  verdict next_write();
  /// Counts a write lost without a verdict: the far end is gone and its reset cannot come back.
  void count_loss() noexcept { dropped_.fetch_add(1, std::memory_order_relaxed); }
  void count_delivery() noexcept { delivered_.fetch_add(1, std::memory_order_relaxed); }

  [[nodiscard]] bool blocked() const;
  /// Whether it is blocked and holds writes (partition_kind::holds_writes) instead of losing
  /// them: the receiving end waits for the heal before it reads on.
  [[nodiscard]] bool holding() const;
  /// Blocks it; `hold`: writes wait for the heal instead of being lost (unless it is blocked
  /// losing writes already).
  void block(bool hold);
  /// Throws std::invalid_argument unless 0 <= probability <= 1.
  void drop(double probability);
  /// Throws std::invalid_argument unless 0 <= min <= max.
  void delay(std::chrono::nanoseconds min, std::chrono::nanoseconds max);
  /// Clears every fault (the PRNG and the counters continue).
  void heal();

  [[nodiscard]] link_stats stats() const noexcept;

 private:
  std::uint64_t next_random();

  mutable std::mutex mutex_;
  std::uint64_t rng_state_;
  bool blocked_ = false;
  bool holds_ = false;  // meaningful while blocked_
  double drop_probability_ = 0;
  std::chrono::nanoseconds delay_min_{0};
  std::chrono::nanoseconds delay_max_{0};
  std::atomic<std::uint64_t> delivered_{0};
  std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace troupe::cluster::detail
