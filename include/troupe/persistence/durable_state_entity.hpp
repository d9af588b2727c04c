#pragma once
/// Durable-state entities: the entity's whole state is stored as one value per persistence id,
/// replaced on each change with a revision check (optimistic concurrency).
///
///     class counter final : public durable_state_entity<counter_command, counter_state> {
///       effect_type on_command(const counter_state& s, counter_command& cmd) override {
///         if (std::holds_alternative<increment>(cmd)) {
///           return persist(counter_state{s.value + 1})
///               .then_reply([](const counter_state& st) { return st.value; });
///         }
///         return reply(s.value);
///       }
///     };
///
/// On start the entity loads its state (commands wait in its mailbox, in order, until then).
/// A persist writes the whole new state expecting the revision it loaded or last wrote; the
/// state, revision, replies and side effects move on only once the write is durable. A failed
/// write (a revision conflict included) or a failed load stops the entity, as for
/// persistent_entity.

#include <troupe/persistence/detail/entity_base.hpp>
#include <troupe/persistence/effect.hpp>

#include <boost/asio/use_awaitable.hpp>

#include <exception>
#include <string>
#include <utility>

namespace troupe::persistence {

/// Base of a durable-state entity; State must be registered in the codec registry.
template <class Command, class State>
class durable_state_entity : public detail::entity_base<Command> {
 public:
  using command_type = Command;
  using state_type = State;
  using effect_type = state_effect<State>;

 protected:
  /// Decides what a command does; runs after the state is loaded, one command at a time.
  virtual effect_type on_command(const State& state, Command& command) = 0;
  /// The state when none is stored; State{} by default.
  [[nodiscard]] virtual State initial_state() const { return State{}; }

  /// Replaces the stored state with `next`.
  static effect_type persist(State next) { return effect_type(std::move(next)); }
  /// Writes nothing.
  static effect_type none() { return effect_type(); }
  /// Writes nothing and replies `value` (or fn(state) when given a function of the state).
  template <class T>
  static effect_type reply(T value) {
    return none().then_reply(std::move(value));
  }
  /// Writes nothing and stops the entity.
  static effect_type stop() { return none().then_stop(); }

  [[nodiscard]] const State& state() const noexcept { return state_; }
  /// The stored revision this state corresponds to (0: nothing stored yet).
  [[nodiscard]] revision_nr revision() const noexcept { return revision_; }

 private:
  bool on_message(Command& command) final {
    effect_type decided = on_command(state_, command);
    if (!decided.next_) {
      decided.run_callbacks(this->context(), state_);
      if (decided.stops()) this->context().stop();
      return false;
    }
    this->start_turn(persist_turn(std::move(decided)));
    return true;
  }

  boost::asio::awaitable<void> persist_turn(effect_type decided) {
    revision_nr written = 0;
    try {
      state_write w{this->persistence_id_, revision_, this->codecs().serialize(*decided.next_),
                    this->epoch_, this->shard_fence_};
      written = co_await this->store_->durable_state().async_upsert(std::move(w),
                                                                    boost::asio::use_awaitable);
    } catch (...) {
      this->fail_persist(this->context(), std::current_exception(),
                         "writing the state at revision " + std::to_string(revision_ + 1));
      co_return;
    }
    state_ = std::move(*decided.next_);
    revision_ = written;
    decided.run_callbacks(this->context(), state_);
    if (decided.stops()) this->context().stop();
  }

  boost::asio::awaitable<void> recover() final {
    try {
      std::string id = this->persistence_id_;
      auto stored = co_await this->store_->durable_state().async_get(std::move(id),
                                                                     boost::asio::use_awaitable);
      if (stored) {
        state_ = this->codecs().template deserialize<State>(stored->value);
        revision_ = stored->revision;
      } else {
        state_ = initial_state();
        revision_ = 0;
      }
    } catch (...) {
      if (!this->stopping()) {
        this->fail_recovery(this->context(), std::current_exception(), "loading the state");
      }
      co_return;
    }
    this->recovered_ = true;
    this->on_recovered();
  }

  State state_{};
  revision_nr revision_ = 0;
};

}  // namespace troupe::persistence
