#pragma once
/// Event-sourced entities (like Akka's EventSourcedBehavior): the state is the fold of the events
/// the entity has persisted. A command handler decides; apply() evolves the state.
///
///     class account final
///         : public persistent_entity<account_command, account_event, account_state> {
///       effect_type on_command(const account_state& s, account_command& cmd) override {
///         return std::visit(overloaded{
///             [&](deposit& d) {
///               return persist(deposited{d.amount})
///                   .then_reply([](const account_state& st) { return st.balance; });
///             },
///             [&](get_balance&) { return reply(s.balance); },
///         }, cmd);
///       }
///       account_state apply(account_state s, const account_event& e) const override { ... }
///     };
///
/// On start the entity recovers (latest snapshot, then the events after it, through the codec
/// registry with its upcasters) before it handles its first command; commands that arrive
/// meanwhile wait in its mailbox, in order. A persist keeps the entity busy until the store has
/// made the events durable; then the state moves on, then the replies and side effects run. A
/// failed write stops the entity (the sender hears the error); a failed recovery stops it too.
/// See docs/persistence.md, "Entities".

#include <troupe/persistence/detail/entity_base.hpp>
#include <troupe/persistence/effect.hpp>

#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace troupe::persistence {

/// Base of an event-sourced entity. Command is the message type (what sharding routes), Event
/// what is stored (usually a std::variant of registered event structs), State what apply()
/// folds the events into (registered too when snapshots are on).
template <class Command, class Event, class State>
class persistent_entity : public detail::entity_base<Command> {
 public:
  using command_type = Command;
  using event_type = Event;
  using state_type = State;
  using effect_type = effect<Event, State>;

 protected:
  /// Decides what a command does. Runs only after recovery, one command at a time, never
  /// while a persist is in flight. Do not change members here: change state through events.
  virtual effect_type on_command(const State& state, Command& command) = 0;
  /// The state after `event`. Called during recovery and after each durable persist; it must
  /// be a pure function of its arguments.
  virtual State apply(State state, const Event& event) const = 0;
  /// The state before the first event; State{} by default.
  [[nodiscard]] virtual State initial_state() const { return State{}; }
  /// Events between two snapshots (0: none); by default the extension's setting.
  [[nodiscard]] virtual std::uint64_t snapshot_every() const {
    return this->extension().snapshot_every();
  }
  /// Events read per journal query during recovery.
  [[nodiscard]] virtual std::size_t recovery_batch() const { return 1024; }

  // -- building effects ------------------------------------------------------------------------

  /// Persists the events atomically (all or none), in this order.
  template <class... Es>
  requires(sizeof...(Es) > 0 && (std::is_constructible_v<Event, Es&&> && ...)) static effect_type
      persist(Es&&... events) {
    std::vector<Event> all;
    all.reserve(sizeof...(Es));
    (all.emplace_back(std::forward<Es>(events)), ...);
    return effect_type(std::move(all));
  }
  /// Persists a run of events atomically (none: like none()).
  static effect_type persist_all(std::vector<Event> events) {
    return effect_type(std::move(events));
  }
  /// Writes nothing.
  static effect_type none() { return effect_type(); }
  /// Writes nothing and replies `value` (or fn(state) when given a function of the state).
  template <class T>
  static effect_type reply(T value) {
    return none().then_reply(std::move(value));
  }
  /// Writes nothing and stops the entity.
  static effect_type stop() { return none().then_stop(); }

  // -- the entity's view -----------------------------------------------------------------------

  /// The current state (after recovery: every persisted event applied).
  [[nodiscard]] const State& state() const noexcept { return state_; }
  /// The sequence number of the last persisted event (0: none).
  [[nodiscard]] sequence_nr last_sequence_nr() const noexcept { return sequence_; }

 private:
  bool on_message(Command& command) final {
    effect_type decided = on_command(state_, command);
    if (decided.events_.empty()) {
      decided.run_callbacks(this->context(), state_);
      if (decided.stops()) this->context().stop();
      return false;
    }
    this->start_turn(persist_turn(std::move(decided)));
    return true;
  }

  boost::asio::awaitable<void> persist_turn(effect_type decided) {
    const sequence_nr first = sequence_ + 1;
    const sequence_nr last = sequence_ + decided.events_.size();
    try {
      append_request request{this->persistence_id_, first, {}, this->epoch_, this->shard_fence_};
      request.events.reserve(decided.events_.size());
      for (const Event& e : decided.events_) request.events.push_back(this->codecs().serialize(e));
      co_await this->store_->journal().async_append(std::move(request), boost::asio::use_awaitable);
    } catch (...) {
      this->fail_persist(
          this->context(), std::current_exception(),
          "persisting events " + std::to_string(first) + ".." + std::to_string(last));
      co_return;
    }
    for (const Event& e : decided.events_) state_ = apply(std::move(state_), e);
    const sequence_nr before = sequence_;
    sequence_ = last;
    decided.run_callbacks(this->context(), state_);
    const std::uint64_t every = snapshot_every();
    if (every > 0 && before / every != last / every) co_await save_snapshot();
    if (decided.stops()) this->context().stop();
  }

  boost::asio::awaitable<void> save_snapshot() {
    try {
      // Requests are named locals, never temporaries inside co_await: GCC 12 mishandles those.
      snapshot_write w{this->persistence_id_, sequence_, this->codecs().serialize(state_),
                       this->epoch_, this->shard_fence_};
      co_await this->store_->snapshots().async_save(std::move(w), boost::asio::use_awaitable);
    } catch (...) {
      // The events are durable; a missing snapshot only makes the next recovery longer.
      if (!this->stopping()) {
        this->context().log().warn("persistence id '{}': snapshot at sequence nr {} failed: {}",
                                   this->persistence_id_, sequence_,
                                   detail::message_of(std::current_exception()));
      }
    }
  }

  boost::asio::awaitable<void> recover() final {
    const std::string& pid = this->persistence_id_;
    sequence_nr at = 0;
    try {
      State recovered = initial_state();
      snapshot_query q{pid, max_sequence_nr};
      auto snapshot =
          co_await this->store_->snapshots().async_load(std::move(q), boost::asio::use_awaitable);
      sequence_nr last = 0;
      if (snapshot) {
        at = snapshot->sequence;
        recovered = this->codecs().template deserialize<State>(snapshot->state);
        last = snapshot->sequence;
      }
      std::size_t batch = std::max<std::size_t>(recovery_batch(), 1);
      for (;;) {
        at = last + 1;
        read_request r{pid, last + 1, max_sequence_nr, batch};
        std::vector<event_record> records;
        std::exception_ptr read_failed;
        try {
          records =
              co_await this->store_->journal().async_read(std::move(r), boost::asio::use_awaitable);
        } catch (...) {
          read_failed = std::current_exception();
        }
        if (read_failed) {
          // A bad row fails its whole batch: read on one event at a time, to replay what is good
          // and name the sequence number of the bad one.
          if (batch == 1 || this->stopping()) std::rethrow_exception(read_failed);
          batch = 1;
          continue;
        }
        for (const event_record& e : records) {
          at = e.sequence;
          if (e.sequence != last + 1) {
            throw persistence_error(errc::corrupt_record, "the journal skips from sequence nr " +
                                                              std::to_string(last) + " to " +
                                                              std::to_string(e.sequence));
          }
          recovered =
              apply(std::move(recovered), this->codecs().template deserialize<Event>(e.event));
          last = e.sequence;
        }
        if (records.size() < batch) break;
      }
      at = last + 1;
      std::string id = pid;
      const sequence_nr highest = co_await this->store_->journal().async_highest_sequence_nr(
          std::move(id), boost::asio::use_awaitable);
      state_ = std::move(recovered);
      sequence_ = std::max(last, highest);
    } catch (...) {
      if (!this->stopping())
        this->fail_recovery(this->context(), std::current_exception(),
                            "at sequence nr " + std::to_string(at));
      co_return;
    }
    this->recovered_ = true;
    this->on_recovered();
  }

  State state_{};
  sequence_nr sequence_ = 0;
};

}  // namespace troupe::persistence
