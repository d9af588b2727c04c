#pragma once
/// The one-shot target behind an ask: completes its handler with the first reply, a timeout,
/// or the news that the question could not be delivered.

#include <troupe/core/clock.hpp>
#include <troupe/core/detail/actor_target.hpp>
#include <troupe/core/detail/message_convert.hpp>
#include <troupe/core/errc.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/dispatch.hpp>

#include <atomic>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace troupe::detail {

/// The clock of a running system; null when the system is terminating.
std::shared_ptr<clock> clock_of(system_impl* system) noexcept;

template <class R, class Handler>
class ask_promise final : public actor_target {
 public:
  ask_promise(Handler handler, intrusive_ptr<actor_target> recipient)
      : handler_(std::move(handler)), recipient_(std::move(recipient)) {}

  ~ask_promise() override = default;

  void arm_timeout(std::shared_ptr<clock> clk, duration timeout) {
    clock_ = std::move(clk);
    timeout_ = timeout;
    intrusive_ptr<ask_promise> self(this);
    timer_.store(clock_->schedule_after(timeout, [self] { self->on_timeout(); }),
                 std::memory_order_release);
    if (done_.load(std::memory_order_acquire)) cancel_timer();
  }

  void enqueue(envelope_base* e) noexcept override { accept(e); }
  void enqueue_any(envelope_base* e) noexcept override { accept(e); }
  void send_system(system_message* m) noexcept override {
    m->on_undelivered(*this);
    delete m;
  }
  [[nodiscard]] std::string path() const override {
    return "/temp/ask(" + recipient_->path() + ")";
  }
  [[nodiscard]] system_impl* owner() const noexcept override { return recipient_->owner(); }
  [[nodiscard]] bool is_terminated() const noexcept override {
    return done_.load(std::memory_order_acquire);
  }
  void notify_undelivered(std::error_code code, const std::string& reason) noexcept override {
    fail(code, "ask to " + recipient_->path() + " failed: " + reason);
  }

  void fail(std::error_code code, const std::string& what) noexcept {
    if (code.category() == error_category()) {
      complete(std::make_exception_ptr(error(static_cast<errc>(code.value()), what)), R{});
    } else {
      complete(std::make_exception_ptr(std::system_error(code, what)), R{});
    }
  }

 private:
  void accept(envelope_base* e) noexcept {
    std::optional<R> value;
    try {
      value = convert_payload<R>(*e);
    } catch (...) {
      complete(std::current_exception(), R{});
      delete e;
      return;
    }
    if (value) {
      complete(nullptr, std::move(*value));
    } else {
      fail(make_error_code(errc::bad_reply_type),
           "ask to " + recipient_->path() + " expected a reply of type " + type_name(typeid(R)) +
               " but got " + type_name(e->type()));
    }
    delete e;
  }

  void on_timeout() noexcept {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout_).count();
    fail(make_error_code(errc::ask_timeout),
         "ask to " + recipient_->path() + " got no reply within " + std::to_string(ms) + " ms");
  }

  void cancel_timer() noexcept {
    const timer_id id = timer_.exchange(0, std::memory_order_acq_rel);
    if (id != 0 && clock_ != nullptr) clock_->cancel(id);
  }

  void complete(std::exception_ptr error, R value) noexcept {
    if (done_.exchange(true, std::memory_order_acq_rel)) return;
    cancel_timer();
    Handler handler = std::move(*handler_);
    handler_.reset();
    auto ex = boost::asio::get_associated_executor(handler);
    try {
      boost::asio::dispatch(ex, [h = std::move(handler), error, v = std::move(value)]() mutable {
        std::move(h)(error, std::move(v));
      });
    } catch (...) {
      // The asker's executor is gone (its actor stopped); nobody is left to tell.
    }
  }

  std::atomic<bool> done_{false};
  std::atomic<timer_id> timer_{0};
  std::shared_ptr<clock> clock_;
  duration timeout_{};
  std::optional<Handler> handler_;
  intrusive_ptr<actor_target> recipient_;
};

/// Creates the promise and arms its timeout; fails the handler at once (returning null) when
/// there is no recipient or no running system.
template <class R, class Handler>
intrusive_ptr<actor_target> make_ask_promise(Handler handler,
                                             const intrusive_ptr<actor_target>& recipient,
                                             duration timeout) {
  std::shared_ptr<clock> clk = recipient ? clock_of(recipient->owner()) : nullptr;
  if (clk == nullptr || recipient->is_terminated()) {
    const auto code = !recipient       ? errc::recipient_terminated
                      : clk == nullptr ? errc::system_terminated
                                       : errc::recipient_terminated;
    const std::string what =
        !recipient       ? "ask through an empty actor_ref"
        : clk == nullptr ? "ask to " + recipient->path() + ": the actor system is terminated"
                         : "ask to " + recipient->path() + ": the recipient is terminated";
    auto ex = boost::asio::get_associated_executor(handler);
    boost::asio::dispatch(ex, [h = std::move(handler), code, what]() mutable {
      std::move(h)(std::make_exception_ptr(error(code, what)), R{});
    });
    return nullptr;
  }
  auto* p = new ask_promise<R, Handler>(std::move(handler), recipient);
  intrusive_ptr<actor_target> ref(p, adopt);
  p->arm_timeout(std::move(clk), timeout);
  return ref;
}

}  // namespace troupe::detail
