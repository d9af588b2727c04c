#pragma once
/// INTERNAL. Back-pressure through a region (sharding_options::with_shard_capacity): each shard
/// id has a credit of `capacity` messages. A ref takes one slot per message it sends to the
/// shard and wraps the message in a counted_envelope, which travels as it is through the route,
/// the shard and into the entity's mailbox; the slot comes back when that envelope is freed,
/// i.e. when the entity has handled the message (or the message was dropped on the way, as a
/// dead letter). So a shard's messages in flight, in its route, its mailbox and its entities'
/// mailboxes, never exceed the capacity. A sender that finds no slot is refused (try_tell,
/// tell) or waits in line (send): a freed slot goes straight to the oldest waiter.

#include <troupe/core/detail/envelope.hpp>
#include <troupe/core/detail/ref_counted.hpp>
#include <troupe/core/errc.hpp>

#include <atomic>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <typeinfo>
#include <utility>

namespace troupe::sharding::detail {

/// The slots of one shard id.
class shard_credit final : public troupe::detail::ref_counted {
 public:
  /// A sender waiting for a slot: `send` takes the envelope on its way once a slot is its own,
  /// then `done` reports the outcome.
  struct waiter {
    troupe::detail::envelope_base* e;
    std::function<void(troupe::detail::envelope_base*)> send;
    std::function<void(std::error_code)> done;
  };

  explicit shard_credit(std::size_t capacity) : capacity_(capacity) {}
  shard_credit(const shard_credit&) = delete;
  shard_credit& operator=(const shard_credit&) = delete;
  ~shard_credit() override {
    // Senders still waiting when the last ref is gone: their recipient is gone too.
    for (auto& w : waiters_) {
      delete w.e;
      w.done(make_error_code(errc::recipient_terminated));
    }
  }

  /// Takes a slot when one is free and nobody waits for one (first come, first served).
  bool try_acquire() {
    std::lock_guard lock(mutex_);
    return take_locked();
  }

  /// Takes a slot for `w` now (returns true: the caller sends) or queues `w` for the next one.
  bool acquire_or_queue(waiter&& w) {
    std::lock_guard lock(mutex_);
    if (take_locked()) return true;
    waiters_.push_back(std::move(w));
    return false;
  }

  /// Gives a slot back; the oldest waiter, if any, gets it and sends on this thread. (Not
  /// release(), which drops a reference to this credit.)
  void give_back() noexcept {
    std::unique_lock lock(mutex_);
    --outstanding_;
    if (waiters_.empty()) return;
    ++outstanding_;
    waiter w = std::move(waiters_.front());
    waiters_.pop_front();
    lock.unlock();
    w.send(w.e);
    w.done({});
  }

  [[nodiscard]] std::size_t outstanding() const {
    std::lock_guard lock(mutex_);
    return outstanding_;
  }
  /// The most slots ever taken at once.
  [[nodiscard]] std::size_t peak() const {
    std::lock_guard lock(mutex_);
    return peak_;
  }

 private:
  bool take_locked() {
    if (!waiters_.empty() || outstanding_ >= capacity_) return false;
    if (++outstanding_ > peak_) peak_ = outstanding_;
    return true;
  }

  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::size_t outstanding_ = 0;
  std::size_t peak_ = 0;
  std::deque<waiter> waiters_;
};

/// A message holding a slot of its shard's credit until it is freed. It is of type M to every
/// reader (the shard reads the id from it, or from `entity_id` for an entity ref's message,
/// and passes it on to the entity as it is).
template <class M>
struct counted_envelope final : troupe::detail::envelope_base {
  M value;
  std::string entity_id;  // set by an entity ref; empty: the extractor reads it
  troupe::detail::intrusive_ptr<shard_credit> credit;

  counted_envelope(M&& v, std::string id, troupe::detail::intrusive_ptr<shard_credit> c)
      : value(std::move(v)), entity_id(std::move(id)), credit(std::move(c)) {}
  ~counted_envelope() override { credit->give_back(); }
  [[nodiscard]] const std::type_info& type() const noexcept override { return typeid(M); }
  [[nodiscard]] void* payload() noexcept override { return &value; }
  [[nodiscard]] std::string describe() const override {
    return troupe::detail::describe_payload(value);
  }
};

/// The credits of one region, one per shard id below `count`, made on first use.
class credit_table {
 public:
  credit_table(std::uint32_t count, std::size_t capacity)
      : slots_(new std::atomic<shard_credit*>[count]), count_(count), capacity_(capacity) {
    for (std::uint32_t i = 0; i < count; ++i) slots_[i].store(nullptr, std::memory_order_relaxed);
  }
  ~credit_table() {
    for (std::uint32_t i = 0; i < count_; ++i) {
      if (auto* c = slots_[i].load(std::memory_order_relaxed)) c->release();
    }
  }
  credit_table(const credit_table&) = delete;
  credit_table& operator=(const credit_table&) = delete;

  /// The credit of `shard`; null beyond the table (custom shard ids: not bounded).
  shard_credit* at(std::uint32_t shard) {
    if (shard >= count_) return nullptr;
    auto& slot = slots_[shard];
    shard_credit* c = slot.load(std::memory_order_acquire);
    if (c != nullptr) return c;
    auto* made = new shard_credit(capacity_);  // the table's reference
    if (slot.compare_exchange_strong(c, made, std::memory_order_acq_rel)) return made;
    made->release();
    return c;
  }

  /// Calls `f(const shard_credit&)` for every credit made so far.
  template <class F>
  void for_each(F&& f) const {
    for (std::uint32_t i = 0; i < count_; ++i) {
      if (auto* c = slots_[i].load(std::memory_order_acquire)) f(*c);
    }
  }

  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

 private:
  std::unique_ptr<std::atomic<shard_credit*>[]> slots_;
  std::uint32_t count_;
  std::size_t capacity_;
};

}  // namespace troupe::sharding::detail
