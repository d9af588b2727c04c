#pragma once
/// INTERNAL. The routes by which senders deliver straight to a shard actor on their own thread,
/// without the region actor: no serial hop, envelope or actor turn of the region per message.
///
/// A route is open while its shard actor runs: senders queue into the actor's mailbox. While no
/// actor runs (not started yet, or stopping), senders hold their messages in the route, in
/// arrival order; the first to find the route idle asks the region to start the shard. The
/// region starts the actor and, under the route's lock, moves what was held into its mailbox and
/// opens the route: every held message lands ahead of any direct one, so each sender's messages
/// keep their order. The region stops a shard actor only after shutting its route when every
/// delivery sent to it has arrived (none is still on its way).
///
/// A shard that lives on another node has a route too: once the region has sent what waited
/// for it there, it opens the route to that home, and senders encode and send their messages
/// there themselves, under the route's lock. When the home changes, the region shuts the route
/// under that lock before its flush marker follows what was sent (docs/cluster.md, "Order").

#include <troupe/core/actor_ref.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/core/detail/envelope.hpp>
#include <troupe/core/detail/spinlock.hpp>
#include <troupe/sharding/detail/shard_actor.hpp>
#include <troupe/sharding/placement.hpp>
#include <troupe/sharding/shard_id.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

namespace troupe::sharding::detail {

enum class route_state : std::uint8_t {
  idle,      // no shard actor; nothing held
  starting,  // no shard actor; the region has been asked to start one
  open,      // the shard actor runs: deliver to it directly
  stopping,  // the shard actor is on its way out; the region starts the next one
  remote,    // the shard lives on another node: senders send there through `remote`
  closed,    // the region has stopped: send to it (it dead-letters)
};

/// One shard id's route; every field is guarded by `lock`.
template <class M>
struct shard_route {
  troupe::detail::spinlock lock;
  route_state state = route_state::idle;
  /// The running shard actor (null: none) and its setup, whose `sent` counts what it was sent.
  actor_ref<shard_message<M>> shard;
  std::shared_ptr<shard_setup<M>> setup;
  /// Deliveries to this shard id, over all its shard actors (introspection).
  std::uint64_t messages = 0;
  /// Entities started in this shard id, over all its shard actors (introspection); each shard
  /// actor's setup shares it.
  std::shared_ptr<std::atomic<std::uint64_t>> activations =
      std::make_shared<std::atomic<std::uint64_t>>(0);
  /// Picks 1 direct delivery in 16 to carry its send time (the shard's queue-wait sample).
  std::uint32_t sampled = 0;
  /// Messages held while no shard actor runs, oldest first, linked through their queue nodes.
  std::size_t held = 0;
  /// While `remote`: the way to the shard's home, and that home (named in dead letters).
  std::shared_ptr<placement::remote_link> remote;
  placed_remote remote_home;
  /// Messages other nodes sent to this shard that wait in the region's mailbox: while any
  /// does, later ones go there too, behind them, not straight to the actor.
  std::uint32_t arrivals_in_region = 0;

  shard_route() = default;
  shard_route(const shard_route&) = delete;
  shard_route& operator=(const shard_route&) = delete;
  ~shard_route() { drop_held(); }

  /// Counts a delivery (a shard_message<M>, or the sender's own envelope of M) to the running
  /// shard actor and queues it there. Under the lock: the region cannot stop the actor meanwhile.
  void deliver_locked(troupe::detail::envelope_base* e) noexcept {
    ++messages;
    setup->sent.store(setup->sent.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    shard.target()->enqueue(e);
  }

  /// Holds `e` behind what is held already.
  void hold_locked(troupe::detail::envelope_base* e) noexcept {
    e->next.store(nullptr, std::memory_order_relaxed);
    if (held_tail_ == nullptr) {
      held_head_ = e;
    } else {
      held_tail_->next.store(e, std::memory_order_relaxed);
    }
    held_tail_ = e;
    ++held;
  }

  /// Moves everything held, in order, into the running shard actor's mailbox.
  void release_held_locked() noexcept {
    for_each(take_held_locked(), [this](troupe::detail::envelope_base* e) { deliver_locked(e); });
  }

  /// Takes everything held out of the route, oldest first (walk it with for_each).
  troupe::detail::mpsc_node* take_held_locked() noexcept {
    troupe::detail::mpsc_node* head = std::exchange(held_head_, nullptr);
    held_tail_ = nullptr;
    held = 0;
    return head;
  }

  /// Calls `f` on each envelope of a list take_held_locked() returned, in order; `f` may queue
  /// or free it.
  template <class F>
  static void for_each(troupe::detail::mpsc_node* head, F&& f) {
    while (head != nullptr) {
      auto* e = static_cast<troupe::detail::envelope_base*>(head);
      head = e->next.load(std::memory_order_relaxed);
      f(e);
    }
  }

 private:
  void drop_held() noexcept {
    for_each(take_held_locked(), [](troupe::detail::envelope_base* e) { delete e; });
  }

  troupe::detail::mpsc_node* held_head_ = nullptr;
  troupe::detail::mpsc_node* held_tail_ = nullptr;
};

/// The routes of one region, made on first use and kept as long as a ref to the region is
/// (senders holding refs may outlive the region: its routes are then closed).
template <class M>
class shard_routes {
 public:
  /// Routes for shard ids below `count`; `direct` false keeps every route out of use (with an
  /// LRU limit the region must see every message).
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

  /// Calls `f(shard_id, shard_route<M>&)` for every route made so far.
  template <class F>
  void for_each(F&& f) {
    for (std::uint32_t i = 0; i < count_; ++i) {
      if (auto* route = routes_[i].load(std::memory_order_acquire)) f(shard_id{i}, *route);
    }
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
