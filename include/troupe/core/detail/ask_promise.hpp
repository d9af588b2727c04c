#pragma once
/// The one-shot target behind an ask: completes its handler with the first reply, a timeout,
/// the news that the question could not be delivered, or the system's shutdown.

#include <troupe/core/clock.hpp>
#include <troupe/core/detail/actor_target.hpp>
#include <troupe/core/detail/message_convert.hpp>
#include <troupe/core/detail/pending_ask.hpp>
#include <troupe/core/detail/runtime_instruments.hpp>
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
class ask_promise final : public pending_ask {
 public:
  ask_promise(Handler handler, intrusive_ptr<actor_target> recipient, std::shared_ptr<clock> clk,
              duration timeout)
      : clock_(std::move(clk)),
        timeout_(timeout),
        handler_(std::move(handler)),
        recipient_(std::move(recipient)) {}

  ~ask_promise() override = default;

  /// Lists the ask with its system (terminate() fails it); false when the system is shutting
  /// down, in which case the ask has failed with errc::system_terminated.
  bool enlist() {
    // Both set before listing: terminate() may complete us as soon as we are listed.
    system_ = recipient_->owner();
    system_ref_ = keep_system_alive(system_);
    // The clock is read for the latency only with a registry attached: none otherwise.
    instruments_ = instruments_of(system_);
    if (instruments_ != nullptr) started_ = clock_->now();
    if (list_ask(system_, *this)) return true;
    fail(make_error_code(errc::system_terminated),
         "ask to " + recipient_->path() + ": the actor system is shutting down");
    return false;
  }

  void arm_timeout() {
    intrusive_ptr<ask_promise> self(this);
    timer_.store(clock_->schedule_after(timeout_, [self] { self->on_timeout(); }),
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
  void fail_on_shutdown() noexcept override {
    fail(make_error_code(errc::system_terminated),
         "ask to " + recipient_->path() + " failed: the actor system is shutting down");
  }

  void fail(std::error_code code, const std::string& what) noexcept {
    complete(
        std::make_exception_ptr(error(code, what)), R{},
        code == make_error_code(errc::ask_timeout) ? ask_outcome::timed_out : ask_outcome::failed);
  }

 private:
  void accept(envelope_base* e) noexcept {
    std::optional<R> value;
    try {
      value = convert_payload<R>(*e);
    } catch (...) {
      complete(std::current_exception(), R{}, ask_outcome::failed);
      delete e;
      return;
    }
    if (value) {
      complete(nullptr, std::move(*value), ask_outcome::replied);
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
    if (id != 0) clock_->cancel(id);
  }

  void complete(std::exception_ptr error, R value, ask_outcome outcome) noexcept {
    if (done_.exchange(true, std::memory_order_acq_rel)) return;
    if (instruments_ != nullptr) {
      instruments_->ask(outcome).observe(
          std::chrono::duration<double>(clock_->now() - started_).count());
    }
    // The first completion wins (reply, timeout, undelivered question or shutdown); the others
    // return above. Keep ourselves alive: delisting drops the registry's reference.
    intrusive_ptr<ask_promise> self(this);
    cancel_timer();
    if (system_ != nullptr) delist_ask(system_, *this);
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
  const std::shared_ptr<clock> clock_;
  const duration timeout_;
  std::optional<Handler> handler_;
  intrusive_ptr<actor_target> recipient_;
  system_impl* system_ = nullptr;
  intrusive_ptr<ref_counted> system_ref_;  // keeps the registry alive while we may be listed
  // The system's instruments when the ask started (kept alive by the system, which
  // system_ref_ keeps alive), and the start.
  const runtime_instruments* instruments_ = nullptr;
  time_point started_{};
};

/// Creates the promise, lists it with its system and arms its timeout; fails the handler at once
/// (returning null) when there is no recipient or no running system.
template <class R, class Handler>
intrusive_ptr<actor_target> make_ask_promise(Handler handler,
                                             const intrusive_ptr<actor_target>& recipient,
                                             duration timeout) {
  std::shared_ptr<clock> clk = recipient ? clock_of(recipient->owner()) : nullptr;
  if (clk == nullptr) {
    const auto code = !recipient ? errc::recipient_terminated : errc::system_terminated;
    const std::string what =
        !recipient ? "ask through an empty actor_ref"
                   : "ask to " + recipient->path() + ": the actor system is terminated";
    auto ex = boost::asio::get_associated_executor(handler);
    boost::asio::dispatch(ex, [h = std::move(handler), code, what]() mutable {
      std::move(h)(std::make_exception_ptr(error(code, what)), R{});
    });
    return nullptr;
  }
  auto* p = new ask_promise<R, Handler>(std::move(handler), recipient, std::move(clk), timeout);
  intrusive_ptr<actor_target> ref(p, adopt);
  // A shutting-down system fails the ask first, so that every ask it refuses fails alike.
  if (!p->enlist()) return nullptr;
  if (recipient->is_terminated()) {
    p->fail(make_error_code(errc::recipient_terminated),
            "ask to " + recipient->path() + ": the recipient is terminated");
    return nullptr;
  }
  p->arm_timeout();
  return ref;
}

}  // namespace troupe::detail
