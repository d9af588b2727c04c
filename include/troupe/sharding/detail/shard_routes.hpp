#pragma once
/// INTERNAL. The routes by which senders deliver straight to a running shard actor, skipping the
/// region actor: one serial hop, one envelope and one actor turn per message fewer.
///
/// A route is open while its shard actor runs and no message for that shard is on its way
/// through the region. A sender that finds it closed sends through the region and counts the
/// message on the route (`via_region`), which keeps the route shut to everybody until the
/// region has passed the message on: so each sender's messages reach the shard in the order it
/// sent them, whichever way each one took. Only the region opens and closes routes: it opens one
/// when it starts the shard actor, and closes it before stopping the actor, which it does only
/// when every delivery counted on the route has arrived (nothing direct is still in flight).

#include <troupe/core/actor_ref.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/core/detail/envelope.hpp>
#include <troupe/core/detail/spinlock.hpp>
#include <troupe/sharding/detail/shard_actor.hpp>
#include <troupe/sharding/shard_id.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

namespace troupe::sharding::detail {

/// One shard id's route; every field is guarded by `lock`.
template <class M>
struct shard_route {
  troupe::detail::spinlock lock;
  /// The running shard actor (null: none) and its setup, whose `sent` counts what it was sent.
  actor_ref<shard_message<M>> shard;
  std::shared_ptr<shard_setup<M>> setup;
  /// Senders may deliver to `shard` directly.
  bool open = false;
  /// Messages for this shard that went through the region and are still there.
  std::uint32_t via_region = 0;
  /// Deliveries to this shard id, over all its shard actors (introspection).
  std::uint64_t messages = 0;
  /// Picks 1 direct delivery in 16 to carry its send time (the shard's queue-wait sample).
  std::uint32_t sampled = 0;

  /// Counts a delivery (a shard_message<M>, or the sender's own envelope of M) to the running
  /// shard actor and queues it there. Under the lock: the region cannot stop the actor meanwhile.
  void deliver_locked(troupe::detail::envelope_base* e) noexcept {
    ++messages;
    setup->sent.store(setup->sent.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    shard.target()->enqueue(e);
  }
};

/// The routes of one region, made on first use and kept for the region's lifetime (senders
/// holding refs may outlive it: a route is then closed and they go to the dead region).
template <class M>
class shard_routes {
 public:
  /// Routes for shard ids below `count`; `direct` false keeps every route closed (with an LRU
  /// limit the region must see every message).
  shard_routes(std::uint32_t count, bool direct, troupe::clock& clock)
      : routes_(new std::atomic<shard_route<M>*>[count]),
        count_(count),
        direct_(direct),
        clock_(&clock) {
    for (std::uint32_t i = 0; i < count; ++i) routes_[i].store(nullptr, std::memory_order_relaxed);
  }
  ~shard_routes() {
    for (std::uint32_t i = 0; i < count_; ++i) delete routes_[i].load(std::memory_order_relaxed);
  }
  shard_routes(const shard_routes&) = delete;
  shard_routes& operator=(const shard_routes&) = delete;

  /// The route of `shard`, made on first use; null for ids beyond the table (custom shard ids),
  /// whose messages always go through the region.
  shard_route<M>* at(shard_id shard) {
    if (shard >= count_) return nullptr;
    auto& slot = routes_[shard];
    shard_route<M>* route = slot.load(std::memory_order_acquire);
    if (route != nullptr) return route;
    auto made = std::make_unique<shard_route<M>>();
    if (slot.compare_exchange_strong(route, made.get(), std::memory_order_acq_rel)) {
      return made.release();
    }
    return route;  // another thread made it first
  }

  [[nodiscard]] bool direct() const noexcept { return direct_; }
  [[nodiscard]] troupe::clock& clock() const noexcept { return *clock_; }

 private:
  std::unique_ptr<std::atomic<shard_route<M>*>[]> routes_;
  std::uint32_t count_;
  bool direct_;
  troupe::clock* clock_;  // the system's: read only through an open route, while it runs
};

}  // namespace troupe::sharding::detail
