#pragma once
/// The node's lease in the consensus store and the node's self-fence. The keeper grants one lease,
/// renews it every TTL/3 with at most one renewal in flight, and fences itself at s + TTL - margin,
/// where s is the send time of the last renewal answered with a TTL: etcd renews a lease no earlier
/// than the request was sent, and a leader change only extends leases, so etcd expires it no
/// earlier than s + TTL and the node has always stopped acting before anyone can take its shards.
/// It also fences on an answer without a TTL or on errc::lease_not_found. A fenced keeper is
/// finished: it never un-fences (the node rejoins as a new incarnation with a new lease).

#include <troupe/cluster/membership/consensus_store.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/core/node_standing.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <system_error>

namespace troupe::cluster {

/// Why a lease keeper fenced itself.
enum class fence_reason {
  /// No renewal was answered with a TTL by s + TTL - margin (store lost, partition, pause).
  deadline_passed,
  /// A renewal was answered without a TTL (etcd's answer for a dead lease).
  no_ttl,
  /// The store answered errc::lease_not_found: the lease expired or was revoked.
  lease_not_found,
  /// The grant failed, so the node never held a lease.
  grant_failed,
  /// The node left: revoke() fences before it revokes.
  revoked,
  /// The keeper was stopped (the node shuts down).
  stopped,
};

/// The reason's name, for logs.
std::string_view to_string(fence_reason reason) noexcept;

struct lease_keeper_options {
  /// The lease's TTL; at least 2 s (etcd's minimum with default election timeouts).
  duration ttl = std::chrono::seconds(3);
  /// How long before s + TTL the node fences: covers clock drift, timer lateness and the time
  /// between the fence and the last delivery it stops.
  duration margin = std::chrono::milliseconds(500);
  /// Where the keeper publishes its deadline for the node's entities (it expires when the keeper
  /// fences); made on the keeper's clock. Null: the keeper makes its own.
  std::shared_ptr<troupe::detail::node_standing> standing;
  /// Called with each renewal's round trip when its answer extends the lease (for the metrics);
  /// under the keeper's lock, so it must be quick and must not call the keeper.
  std::function<void(duration)> on_renewed;
  /// Test-only: plants the bug the simulator's single-activation checker must catch. The keeper
  /// never fences on its deadline: it neither publishes the deadline nor acts when it passes.
  bool plant_no_self_fence = false;
};

/// Keeps one lease alive and fences the node when it cannot be sure the lease is.
class lease_keeper : public std::enable_shared_from_this<lease_keeper> {
 public:
  /// Called once, on the store's executor, when the keeper fences.
  using fence_callback = std::function<void(fence_reason)>;
  /// Called once, on the store's executor, when the grant is answered (the lease or an error).
  using granted_callback = std::function<void(std::error_code, lease_id)>;

  /// Grants the lease and starts renewing it. `clock` must count suspended time in production
  /// (make_boottime_clock); tests pass a manual_clock. Throws std::invalid_argument for a TTL
  /// below 2 s or a margin that leaves no time for the first renewal (margin >= 2/3 TTL).
  static std::shared_ptr<lease_keeper> start(std::shared_ptr<consensus_store> store,
                                             std::shared_ptr<troupe::clock> clock,
                                             lease_keeper_options options,
                                             granted_callback on_granted, fence_callback on_fence);

  ~lease_keeper();
  lease_keeper(const lease_keeper&) = delete;
  lease_keeper& operator=(const lease_keeper&) = delete;

  /// True once the node must not act: fenced for any reason, or past its deadline on the clock
  /// (even before the fence timer has run, so a check right after a resume sees it).
  [[nodiscard]] bool fenced() const noexcept;
  /// The standing the keeper publishes its deadline to.
  [[nodiscard]] const std::shared_ptr<troupe::detail::node_standing>& standing() const noexcept {
    return standing_;
  }
  /// The reason, once fenced() has been reported through the callback.
  [[nodiscard]] std::optional<fence_reason> reason() const;
  /// The lease (0 until granted).
  [[nodiscard]] lease_id lease() const noexcept { return lease_.load(std::memory_order_acquire); }
  /// The time by which the keeper fences unless a renewal is answered (nullopt before the grant
  /// and once fenced).
  [[nodiscard]] std::optional<time_point> deadline() const;

  /// Leaves: fences (reason revoked) first, so nothing acts once the keys may vanish, then
  /// revokes the lease, which deletes the node's keys in one revision. `done` runs on the store's
  /// executor with the store's answer (an immediate success when there was no lease).
  void revoke(std::function<void(std::error_code)> done);
  /// Stops renewing and fences (reason stopped) without revoking: the lease runs out on its own.
  void stop();

 private:
  struct token {};

 public:
  lease_keeper(token, std::shared_ptr<consensus_store> store, std::shared_ptr<troupe::clock> clock,
               lease_keeper_options options, fence_callback on_fence);

 private:
  void grant(granted_callback on_granted);
  void on_grant(std::error_code ec, lease_grant grant, time_point sent, granted_callback cb);
  void renew_due();
  void send_renewal(std::unique_lock<std::mutex>& lock);
  void on_renewal(std::error_code ec, duration ttl, time_point sent);
  /// Moves the deadline to sent + ttl - margin and re-arms the fence timer (under the lock).
  void extend(time_point sent, duration ttl);
  void schedule_renewal(time_point at);
  /// Fences (under the lock); the callback runs after the lock is released via post.
  void fence(std::unique_lock<std::mutex>& lock, fence_reason why);
  void cancel_timers();

  const std::shared_ptr<consensus_store> store_;
  const std::shared_ptr<troupe::clock> clock_;
  const lease_keeper_options options_;

  mutable std::mutex mutex_;
  fence_callback on_fence_;
  std::atomic<lease_id> lease_{0};
  std::atomic<bool> fenced_{false};
  std::optional<fence_reason> reason_;
  std::optional<time_point> deadline_;
  /// Mirrors deadline_ for fenced() and the entities, without the lock.
  const std::shared_ptr<troupe::detail::node_standing> standing_;
  bool in_flight_ = false;
  /// A renewal fell due while one was in flight: send it when that one is answered.
  bool renewal_due_ = false;
  timer_id renew_timer_ = 0;
  timer_id fence_timer_ = 0;
};

}  // namespace troupe::cluster
