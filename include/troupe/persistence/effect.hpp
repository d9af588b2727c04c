#pragma once
/// What a persistent entity's command handler returns: the events (or the new durable state) to
/// write, and what to do once the write is durable. A handler only decides; the entity writes,
/// waits for the store, updates its state and only then replies and runs the side effects.
///
///     return persist(deposited{cmd.amount})
///         .then_reply([](const account_state& s) { return s.balance; });
///     return reply(state.balance);           // nothing to write
///     return persist(closed{}).then_stop();  // stop once `closed` is durable

#include <troupe/core/actor.hpp>

#include <functional>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace troupe::persistence {

template <class Command, class Event, class State>
class persistent_entity;
template <class Command, class State>
class durable_state_entity;

namespace detail {

/// The part both effects share: callbacks run after the write, and whether to stop.
template <class State, class Self>
class basic_effect {
 public:
  /// Runs `fn(state)` once the write is durable (at once when there is nothing to write), with
  /// the state after it. Runs inside the entity's turn; a throw fails the entity like a handler.
  Self&& then(std::function<void(const State&)> fn) && { return std::move(then(std::move(fn))); }
  Self& then(std::function<void(const State&)> fn) & {
    callbacks_.push_back([f = std::move(fn)](actor_context&, const State& s) { f(s); });
    return self();
  }

  /// Replies to the command's sender once the write is durable: with `fn(state)` when `fn`
  /// takes the new state, otherwise with `fn` itself (a value).
  template <class F>
  Self&& then_reply(F fn) && {
    return std::move(then_reply(std::move(fn)));
  }
  template <class F>
  Self& then_reply(F fn) & {
    if constexpr (std::is_invocable_v<const F&, const State&>) {
      callbacks_.push_back(
          [f = std::move(fn)](actor_context& c, const State& s) { c.reply(f(s)); });
    } else {
      callbacks_.push_back([v = std::move(fn)](actor_context& c, const State&) { c.reply(v); });
    }
    return self();
  }

  /// Stops the entity after the callbacks (and after the write, if any).
  Self&& then_stop() && { return std::move(then_stop()); }
  Self& then_stop() & {
    stop_ = true;
    return self();
  }

  [[nodiscard]] bool stops() const noexcept { return stop_; }

 protected:
  Self& self() noexcept { return static_cast<Self&>(*this); }

  void run_callbacks(actor_context& context, const State& state) {
    for (auto& cb : callbacks_) cb(context, state);
  }

 private:
  std::vector<std::function<void(actor_context&, const State&)>> callbacks_;
  bool stop_ = false;
};

}  // namespace detail

/// The decision of an event-sourced entity's command handler: events to persist atomically (none
/// for a reply-only or read-only command), then replies and side effects. Build one with the
/// entity's persist(...), none(), reply(...) and stop().
template <class Event, class State>
class effect : public detail::basic_effect<State, effect<Event, State>> {
 public:
  effect() = default;
  explicit effect(std::vector<Event> events) : events_(std::move(events)) {}

  [[nodiscard]] const std::vector<Event>& events() const noexcept { return events_; }

 private:
  template <class, class, class>
  friend class persistent_entity;

  std::vector<Event> events_;
};

/// The decision of a durable-state entity's command handler: a new state to write (or none),
/// then replies and side effects.
template <class State>
class state_effect : public detail::basic_effect<State, state_effect<State>> {
 public:
  state_effect() = default;
  explicit state_effect(State next) : next_(std::move(next)) {}

  [[nodiscard]] const std::optional<State>& next_state() const noexcept { return next_; }

 private:
  template <class, class>
  friend class durable_state_entity;

  std::optional<State> next_;
};

}  // namespace troupe::persistence
