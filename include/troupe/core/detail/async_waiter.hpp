#pragma once
/// INTERNAL. One waiting asynchronous operation, completed exactly once from any thread: by
/// whoever grants it, or by its cancellation slot. Completion runs on the handler's executor.

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <utility>

namespace troupe::detail {

struct async_waiter_base {
  async_waiter_base() = default;
  async_waiter_base(const async_waiter_base&) = delete;
  async_waiter_base& operator=(const async_waiter_base&) = delete;
  virtual ~async_waiter_base() = default;

  /// Completes the operation with `ec`; false when it had completed already.
  virtual bool complete(boost::system::error_code ec) = 0;
  [[nodiscard]] bool done() const noexcept { return done_.load(std::memory_order_acquire); }

 protected:
  bool claim() noexcept { return !done_.exchange(true, std::memory_order_acq_rel); }

 private:
  std::atomic<bool> done_{false};
};

template <class Handler>
class async_waiter final : public async_waiter_base {
 public:
  explicit async_waiter(Handler h) : handler_(std::move(h)) {}

  bool complete(boost::system::error_code ec) override {
    if (!claim()) return false;
    Handler h = std::move(*handler_);
    handler_.reset();
    auto ex = boost::asio::get_associated_executor(h);
    boost::asio::dispatch(ex, [h = std::move(h), ec]() mutable { std::move(h)(ec); });
    return true;
  }

 private:
  std::optional<Handler> handler_;
};

/// Wraps `handler`; its cancellation slot (when connected) completes it with
/// operation_aborted.
template <class Handler>
std::shared_ptr<async_waiter_base> make_async_waiter(Handler handler) {
  auto slot = boost::asio::get_associated_cancellation_slot(handler);
  auto w = std::make_shared<async_waiter<Handler>>(std::move(handler));
  if (slot.is_connected()) {
    slot.assign([weak = std::weak_ptr<async_waiter<Handler>>(w)](boost::asio::cancellation_type) {
      if (auto s = weak.lock()) s->complete(boost::asio::error::operation_aborted);
    });
  }
  return w;
}

}  // namespace troupe::detail
