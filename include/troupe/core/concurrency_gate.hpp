#pragma once
/// A counting semaphore for coroutine handlers: at most N of the actors that share a gate are
/// inside a handler at once. The others wait for a permit in arrival order, still in their own
/// turn (their later messages keep waiting behind them). Sharding gives every entity of a
/// region the region's gate (sharding_options::with_max_concurrent), so that an entity per key
/// cannot flood the store behind it.
///
///     co_await gate.acquire();                // inside a coroutine handler
///     troupe::gate_permit permit(gate);       // released when it goes out of scope

#include <troupe/core/detail/async_waiter.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

namespace troupe {

class concurrency_gate {
 public:
  /// `permits` handlers at once; at least 1.
  explicit concurrency_gate(std::size_t permits);
  concurrency_gate(const concurrency_gate&) = delete;
  concurrency_gate& operator=(const concurrency_gate&) = delete;

  /// Completes when the caller holds a permit (at once when one is free), on the handler's
  /// executor. Cancelled with operation_aborted through the handler's cancellation slot (an
  /// actor that stops while waiting). The caller must release() what it acquired.
  template <class Token = boost::asio::use_awaitable_t<>>
  auto acquire(Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [this](auto handler) {
          auto w = detail::make_async_waiter(std::move(handler));
          if (!enqueue_or_grant(w)) w->complete({});
        },
        token);
  }

  /// Gives a permit back: the longest waiter gets it, else it becomes free.
  void release();

  [[nodiscard]] std::size_t permits() const noexcept { return permits_; }
  /// Permits held now.
  [[nodiscard]] std::size_t in_use() const;
  /// The most permits ever held at once.
  [[nodiscard]] std::size_t peak_in_use() const;
  /// Acquirers waiting now.
  [[nodiscard]] std::size_t waiting() const;

 private:
  // True when `w` has to wait (it was queued); false when it got a permit at once.
  bool enqueue_or_grant(const std::shared_ptr<detail::async_waiter_base>& w);

  const std::size_t permits_;
  mutable std::mutex mutex_;
  std::size_t in_use_ = 0;
  std::size_t peak_ = 0;
  std::deque<std::shared_ptr<detail::async_waiter_base>> waiters_;
};

/// Holds one permit of a gate and gives it back when destroyed.
class gate_permit {
 public:
  explicit gate_permit(concurrency_gate& gate) noexcept : gate_(&gate) {}
  gate_permit(const gate_permit&) = delete;
  gate_permit& operator=(const gate_permit&) = delete;
  ~gate_permit() { gate_->release(); }

 private:
  concurrency_gate* gate_;
};

}  // namespace troupe
