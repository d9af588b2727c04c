#pragma once
/// Whether this node still stands for the shards it hosts: the cluster's lease as its entities
/// see it. Every entity of a clustered shard checks it before each message, and handles nothing
/// more once it is lost. It is lost when the node gives its shards up (revoke), and also as soon
/// as the clock reaches the deadline the lease keeper last published, before anything has
/// noticed: a node resumed after a pause past its deadline delivers nothing, though its fence
/// timer has not run yet.

#include <troupe/core/clock.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

namespace troupe::detail {

/// How many node_standings in this process have a deadline or were revoked: while none has, an
/// entity's check costs one load of a line nobody writes (a node without a cluster).
inline std::atomic<std::uint32_t> standings_in_force{0};

class node_standing {
 public:
  /// `clock` is the one the deadline is read on; null for a standing that never gets one.
  explicit node_standing(std::shared_ptr<troupe::clock> clock = nullptr)
      : clock_(std::move(clock)) {}
  ~node_standing() {
    if (counted_.load(std::memory_order_acquire)) {
      standings_in_force.fetch_sub(1, std::memory_order_release);
    }
  }
  node_standing(const node_standing&) = delete;
  node_standing& operator=(const node_standing&) = delete;

  /// Revoked, or past the deadline.
  [[nodiscard]] bool lost() const noexcept {
    if (revoked_.load(std::memory_order_acquire)) return true;
    const auto ticks = deadline_ticks_.load(std::memory_order_acquire);
    return ticks != 0 && clock_->now().time_since_epoch().count() >= ticks;
  }
  /// Lost without the node choosing to: revoked, or past the deadline unless the node gave its
  /// lease back first (a graceful leave, whose shards were handed off and whose regions still
  /// pass on what other nodes send them). Other nodes count what they sent a lapsed node as
  /// lost with it, so it passes nothing on.
  [[nodiscard]] bool lapsed() const noexcept {
    return revoked_.load(std::memory_order_acquire) ||
           (!given_back_.load(std::memory_order_acquire) && lost());
  }
  /// Revoked: the node gave its shards up without choosing to (it fenced itself).
  [[nodiscard]] bool revoked() const noexcept { return revoked_.load(std::memory_order_acquire); }
  /// Gives the shards up for good.
  void revoke() noexcept {
    revoked_.store(true, std::memory_order_release);
    in_force();
  }
  /// The node must stop acting at `at` on the clock unless a later deadline comes first (the
  /// lease keeper's s + TTL - margin). Needs a clock.
  void set_deadline(time_point at) noexcept {
    deadline_ticks_.store(std::max<time_point::rep>(at.time_since_epoch().count(), 1),
                          std::memory_order_release);
    in_force();
  }
  /// The deadline has passed already: the lease is gone or given back, though nothing may have
  /// revoked the shards (a graceful leave's last ones). Needs a clock.
  void expire() noexcept { set_deadline(time_point{} + duration{1}); }
  /// The node gives its lease back by choice, before its deadline: expired, but not lapsed().
  void give_back() noexcept {
    given_back_.store(true, std::memory_order_release);
    expire();
  }

 private:
  void in_force() noexcept {
    if (!counted_.exchange(true, std::memory_order_acq_rel)) {
      standings_in_force.fetch_add(1, std::memory_order_release);
    }
  }

  const std::shared_ptr<troupe::clock> clock_;
  std::atomic<bool> revoked_{false};
  std::atomic<bool> given_back_{false};
  std::atomic<time_point::rep> deadline_ticks_{0};  // 0: none
  std::atomic<bool> counted_{false};
};

}  // namespace troupe::detail
