#pragma once
/// Typed references to actors. A ref is one pointer: cheap to copy, comparable, hashable and
/// printable as its path. What it points at (a local actor, an ask's promise, later an actor on
/// another node) is hidden behind detail::actor_target, so user code never changes.

#include <troupe/core/clock.hpp>
#include <troupe/core/detail/actor_target.hpp>
#include <troupe/core/detail/ask_promise.hpp>
#include <troupe/core/errc.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <fmt/format.h>

#include <concepts>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

namespace troupe {

/// Stops the recipient when it reaches the message in its mailbox (after earlier messages).
struct poison_pill {};

/// Completion token for `ask` from plain threads: the ask returns a std::future.
inline constexpr boost::asio::use_future_t<> use_future{};

/// A reference to an actor whose message type is not known statically (senders, watchers).
class untyped_ref {
 public:
  untyped_ref() noexcept = default;
  explicit untyped_ref(detail::intrusive_ptr<detail::actor_target> target) noexcept
      : target_(std::move(target)) {}

  /// The actor's path, e.g. /user/bank/account-7; "<empty>" for an empty ref.
  [[nodiscard]] std::string path() const { return target_ ? target_->path() : "<empty>"; }
  explicit operator bool() const noexcept { return static_cast<bool>(target_); }
  /// True once the actor will never handle another message.
  [[nodiscard]] bool is_terminated() const noexcept { return !target_ || target_->is_terminated(); }

  /// Sends a message whose type the recipient checks on arrival (e.g. a reply to an asker).
  /// A message the recipient cannot accept goes to dead letters with the reason.
  template <class T>
  void tell_any(T&& msg) const {
    require_target();
    target_->enqueue_any(new detail::envelope<std::decay_t<T>>(std::forward<T>(msg)));
  }

  /// Asks with a message whose type the recipient checks on arrival (see tell_any); the
  /// reply handling is as for actor_ref<M>::ask.
  template <class R, class T, class Token = boost::asio::use_awaitable_t<>>
  auto ask_any(T msg, duration timeout, Token&& token = {}) const {
    static_assert(
        std::is_default_constructible_v<R>,
        "ask<R>: the reply type must be default-constructible (it fills the failed case)");
    return boost::asio::async_initiate<Token, void(std::exception_ptr, R)>(
        [](auto handler, detail::intrusive_ptr<detail::actor_target> target, T message,
           duration limit) {
          auto promise = detail::make_ask_promise<R>(std::move(handler), target, limit);
          if (!promise) return;
          auto* e = new detail::envelope<T>(std::move(message));
          e->sender = promise;
          target->enqueue_any(e);
        },
        token, target_, std::move(msg), timeout);
  }

  /// Sends a poison pill: the actor stops after handling what is already queued.
  void tell(poison_pill /*unused*/) const {
    require_target();
    target_->enqueue(new detail::poison_envelope());
  }

  [[nodiscard]] detail::actor_target* target() const noexcept { return target_.get(); }
  [[nodiscard]] const detail::intrusive_ptr<detail::actor_target>& target_ptr() const noexcept {
    return target_;
  }

  friend bool operator==(const untyped_ref& a, const untyped_ref& b) noexcept {
    return a.target_ == b.target_;
  }
  friend std::ostream& operator<<(std::ostream& os, const untyped_ref& r) { return os << r.path(); }

 protected:
  void require_target() const {
    if (!target_) throw error(errc::recipient_terminated, "send through an empty actor_ref");
  }

  detail::intrusive_ptr<detail::actor_target> target_;
};

/// A reference to an actor handling messages of type M (often a std::variant of commands).
template <class M>
class actor_ref : public untyped_ref {
 public:
  using message_type = M;

  actor_ref() noexcept = default;
  explicit actor_ref(detail::intrusive_ptr<detail::actor_target> target) noexcept
      : untyped_ref(std::move(target)) {}

  /// Sends without waiting; callable from any thread. Never blocks and never throws for the
  /// recipient's sake: an undeliverable message (stopped recipient, full bounded mailbox) goes
  /// to dead letters. Use try_tell or send to learn about a full mailbox.
  void tell(M msg) const {
    require_target();
    target_->enqueue(new detail::envelope<M>(std::move(msg)));
  }

  /// Sends with a sender, which the recipient can reply to.
  void tell(M msg, const untyped_ref& sender) const {
    require_target();
    auto* e = new detail::envelope<M>(std::move(msg));
    e->sender = sender.target_ptr();
    target_->enqueue(e);
  }

  using untyped_ref::tell;

  /// Sends, reporting a full bounded mailbox or a stopped recipient as an error instead.
  [[nodiscard]] std::error_code try_tell(M msg) const {
    if (!target_) return make_error_code(errc::recipient_terminated);
    return target_->try_enqueue(new detail::envelope<M>(std::move(msg)));
  }

  /// Sends from a coroutine; with a full bounded mailbox of policy `suspend` it waits for room.
  /// Completes with troupe::error when the message is rejected.
  template <class Token = boost::asio::use_awaitable_t<>>
  auto send(M msg, Token&& token = {}) const {
    return boost::asio::async_initiate<Token, void(std::exception_ptr)>(
        [](auto handler, detail::intrusive_ptr<detail::actor_target> target, M message) {
          auto shared = std::make_shared<decltype(handler)>(std::move(handler));
          auto done = [shared](std::error_code ec) {
            auto ex = boost::asio::get_associated_executor(*shared);
            boost::asio::dispatch(ex, [shared, ec]() {
              std::exception_ptr e;
              if (ec) e = std::make_exception_ptr(error(ec, ec.message()));
              std::move (*shared)(e);
            });
          };
          if (!target) {
            done(make_error_code(errc::recipient_terminated));
            return;
          }
          target->enqueue_or_wait(new detail::envelope<M>(std::move(message)), std::move(done));
        },
        token, target_, std::move(msg));
  }

  /// Sends `msg` with a one-shot reply target and completes with the first reply of type R.
  /// Fails with errc::ask_timeout after `timeout`, at once with errc::recipient_terminated
  /// when the message cannot be delivered, and at once with errc::system_terminated when the
  /// system shuts down first. The token picks the form: by default an
  /// asio::awaitable<R> for coroutines; troupe::use_future gives a std::future<R>.
  template <class R, class Token = boost::asio::use_awaitable_t<>>
  auto ask(M msg, duration timeout, Token&& token = {}) const {
    return ask_impl<R>(
        [msg = std::move(msg)](const untyped_ref&) mutable { return std::move(msg); }, timeout,
        std::forward<Token>(token));
  }

  /// Akka-typed form: builds the message from the reply ref, e.g. `get{.reply_to = r}`.
  template <class R, class MakeMessage, class Token = boost::asio::use_awaitable_t<>>
  requires std::invocable<MakeMessage, actor_ref<R>>
  auto ask(MakeMessage make_message, duration timeout, Token&& token = {}) const {
    return ask_impl<R>(
        [make = std::move(make_message)](const untyped_ref& reply_to) mutable {
          return M(make(actor_ref<R>(reply_to.target_ptr())));
        },
        timeout, std::forward<Token>(token));
  }

 private:
  template <class R, class Build, class Token>
  auto ask_impl(Build build, duration timeout, Token&& token) const {
    static_assert(
        std::is_default_constructible_v<R>,
        "ask<R>: the reply type must be default-constructible (it fills the failed case)");
    return boost::asio::async_initiate<Token, void(std::exception_ptr, R)>(
        [](auto handler, detail::intrusive_ptr<detail::actor_target> target, Build make,
           duration limit) {
          auto promise = detail::make_ask_promise<R>(std::move(handler), target, limit);
          if (!promise) return;  // already failed (empty ref or terminated system)
          auto* e = new detail::envelope<M>(make(untyped_ref(promise)));
          e->sender = promise;
          target->enqueue(e);
        },
        token, target_, std::move(build), timeout);
  }
};

}  // namespace troupe

template <>
struct std::hash<troupe::untyped_ref> {
  std::size_t operator()(const troupe::untyped_ref& r) const noexcept {
    return std::hash<const void*>{}(r.target());
  }
};
template <class M>
struct std::hash<troupe::actor_ref<M>> : std::hash<troupe::untyped_ref> {};

template <>
struct fmt::formatter<troupe::untyped_ref> : fmt::formatter<std::string_view> {
  auto format(const troupe::untyped_ref& r, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(r.path(), ctx);
  }
};
template <class M>
struct fmt::formatter<troupe::actor_ref<M>> : fmt::formatter<troupe::untyped_ref> {};
