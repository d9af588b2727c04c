#pragma once
/// Coroutine actors: `asio::awaitable<void> receive(M msg)` may co_await timers, sockets, asks and
/// database calls. The actor stays busy until the handler finishes (turn-based, like Orleans
/// grains): the next message starts only after the previous handler completed, while every
/// other actor keeps running. The coroutine runs on the actor's executor, so all its code runs
/// inside the actor's turns, never concurrently with them.

#include <troupe/core/actor.hpp>
#include <troupe/core/concurrency_gate.hpp>
#include <troupe/core/errc.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_state.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <system_error>
#include <type_traits>
#include <vector>

namespace troupe {

namespace detail {
/// The execution context behind an actor's executor (the system's io_context).
boost::asio::execution_context& execution_context_of(actor_cell& cell);
/// The cell of the running turn; throws errc::not_in_actor when there is none.
actor_cell& require_current_cell();
/// The clock of a cell's system.
std::shared_ptr<clock> clock_of_cell(actor_cell& cell);
/// Arms a sleep's timer: on a worker of the cell's system, when the system runs on its own
/// steady clock, that worker's own timers (it fires them between turns: no clock thread and no
/// cross-thread wake-up per sleep); otherwise the system's clock.
timer_id arm_sleep_timer(actor_cell& cell, duration d, clock::callback fn);
/// Cancels what arm_sleep_timer() armed; false when it has fired or is firing.
bool cancel_sleep_timer(actor_cell& cell, timer_id id) noexcept;

/// The gate a cell's coroutine handlers pass, if its entity home has one.
concurrency_gate* gate_of(const actor_cell& cell) noexcept;

/// Runs `work` once it holds a permit of `gate`.
boost::asio::awaitable<void> run_gated(concurrency_gate& gate, boost::asio::awaitable<void> work);

/// Starts a coroutine handler on `executor` (through the cell's gate, if it has one); the turn
/// ends when it does.
template <class Executor>
void spawn_handler(actor_cell& cell, const Executor& executor,
                   boost::asio::cancellation_signal& cancel, boost::asio::awaitable<void> work) {
  auto done = boost::asio::bind_cancellation_slot(
      cancel.slot(), [c = intrusive_ptr<actor_cell>(&cell)](std::exception_ptr failure) {
        c->end_async_turn(failure);
      });
  if (concurrency_gate* gate = gate_of(cell)) {
    boost::asio::co_spawn(executor, run_gated(*gate, std::move(work)), std::move(done));
  } else {
    boost::asio::co_spawn(executor, std::move(work), std::move(done));
  }
}

template <class F>
struct resume_message final : system_message {
  explicit resume_message(F f) : fn(std::move(f)) {}
  void apply(actor_cell& /*cell*/) override { fn(); }
  F fn;
};
}  // namespace detail

/// An Asio executor that runs work inside an actor's turns (like a strand per actor).
class actor_executor {
 public:
  actor_executor(detail::intrusive_ptr<detail::actor_cell> cell,
                 boost::asio::execution_context* context) noexcept
      : cell_(std::move(cell)), context_(context) {}

  template <class F>
  void execute(F&& f) const {
    cell_->post(new detail::resume_message<std::decay_t<F>>(std::forward<F>(f)));
  }

  [[nodiscard]] boost::asio::execution_context& query(
      boost::asio::execution::context_t /*unused*/) const noexcept {
    return *context_;
  }
  static constexpr boost::asio::execution::blocking_t query(
      boost::asio::execution::blocking_t /*unused*/) noexcept {
    return boost::asio::execution::blocking.never;
  }
  [[nodiscard]] actor_executor require(
      boost::asio::execution::blocking_t::never_t /*unused*/) const noexcept {
    return *this;
  }

  /// The actor whose turns run the work.
  [[nodiscard]] detail::actor_cell* cell() const noexcept { return cell_.get(); }

  friend bool operator==(const actor_executor& a, const actor_executor& b) noexcept {
    return a.cell_ == b.cell_;
  }
  friend bool operator!=(const actor_executor& a, const actor_executor& b) noexcept {
    return !(a == b);
  }

 private:
  detail::intrusive_ptr<detail::actor_cell> cell_;
  boost::asio::execution_context* context_;
};

namespace detail {
/// The executor type of `asio::awaitable<void>`, the handlers' return type.
using handler_executor = boost::asio::any_io_executor;

/// The bottom frame of a handler's coroutine thread: runs the handler, then ends the turn.
/// Exceptions end the turn as failures (supervision decides).
inline boost::asio::awaitable<boost::asio::detail::awaitable_thread_entry_point, handler_executor>
run_to_end_of_turn(boost::asio::awaitable<void> work, actor_cell* cell) {
  // No ref of its own: the thread's executor, in this very frame, keeps the cell alive.
  std::exception_ptr failure;
  try {
    co_await std::move(work);
  } catch (...) {
    failure = std::current_exception();
  }
  cell->end_async_turn(failure);
}

/// Starts a coroutine handler inside the running turn (through the cell's gate, if it has one):
/// its code up to the first co_await runs now, the rest in later turns of the same actor, and
/// the turn ends when it does. No co_spawn: no dispatch through the executor at start or end
/// (the cost of co_spawn per message was ~1,500 instructions, see docs/hot-keys.md).
inline void start_handler(actor_cell& cell, boost::asio::cancellation_signal& cancel,
                          boost::asio::awaitable<void> work) {
  if (concurrency_gate* gate = gate_of(cell)) work = run_gated(*gate, std::move(work));
  handler_executor executor(
      actor_executor(intrusive_ptr<actor_cell>(&cell), &execution_context_of(cell)));
  auto entry = run_to_end_of_turn(std::move(work), &cell);
  cell.begin_async_turn();  // nothing below throws: the turn always ends
  boost::asio::detail::awaitable_thread<handler_executor> thread(
      std::move(entry), executor, cancel.slot(), boost::asio::cancellation_state(cancel.slot()));
  thread.launch();
}
}  // namespace detail

/// An actor with a coroutine handler.
template <class M>
class async_actor : public basic_actor<M> {
 protected:
  virtual boost::asio::awaitable<void> receive(M msg) = 0;

  /// This actor's executor: work posted here runs inside its turns.
  [[nodiscard]] actor_executor executor() const {
    auto& cell = this->context().cell();
    return actor_executor(detail::intrusive_ptr<detail::actor_cell>(&cell),
                          &detail::execution_context_of(cell));
  }

 private:
  bool handle(detail::envelope_base& e) final {
    detail::start_handler(this->context().cell(), cancel_,
                          receive(std::move(*static_cast<M*>(e.payload()))));
    return true;
  }
  void cancel_turn() noexcept final { cancel_.emit(boost::asio::cancellation_type::terminal); }

  boost::asio::cancellation_signal cancel_;
};

/// A coroutine actor that takes every message queued for it (up to max_batch(), default 200)
/// in one turn: `asio::awaitable<void> receive_batch(std::vector<batch_item<M>>)` — the guide's
/// "batch inside the hot shard", per entity: a burst for one key becomes one awaited write.
template <class M>
class async_batch_actor : public basic_actor<M> {
 protected:
  virtual boost::asio::awaitable<void> receive_batch(std::vector<batch_item<M>> batch) = 0;
  /// The most messages one batch takes.
  [[nodiscard]] virtual std::size_t max_batch() const noexcept { return 200; }

  [[nodiscard]] actor_executor executor() const {
    auto& cell = this->context().cell();
    return actor_executor(detail::intrusive_ptr<detail::actor_cell>(&cell),
                          &detail::execution_context_of(cell));
  }

 private:
  [[nodiscard]] std::size_t batch_cap() const noexcept final {
    return std::max<std::size_t>(max_batch(), 2);
  }
  bool handle(detail::envelope_base& e) final {
    std::vector<batch_item<M>> items;
    items.push_back({std::move(*static_cast<M*>(e.payload())), untyped_ref(e.sender)});
    return start(std::move(items));
  }
  bool handle_batch(std::vector<detail::envelope_base*>& batch) final {
    std::vector<batch_item<M>> items;
    items.reserve(batch.size());
    for (auto* e : batch) {
      items.push_back({std::move(*static_cast<M*>(e->payload())), untyped_ref(e->sender)});
    }
    return start(std::move(items));
  }
  bool start(std::vector<batch_item<M>> items) {
    detail::start_handler(this->context().cell(), cancel_, receive_batch(std::move(items)));
    return true;
  }
  void cancel_turn() noexcept final { cancel_.emit(boost::asio::cancellation_type::terminal); }

  boost::asio::cancellation_signal cancel_;
};

namespace detail {
/// One pending sleep_for: the completion handler and the cell to complete it on, in one
/// allocation that is also the system message which completes it (no shared state, no
/// type-erased dispatch). The clock's callback posts it to the cell; a cancellation that
/// removes the timer before it fired posts it with operation_aborted. Either way it completes
/// inside the actor's turn.
template <class Handler>
struct sleep_op final : system_message {
  sleep_op(Handler h, actor_cell& c) : handler(std::move(h)), cell(&c) {}

  /// Called when the deadline passed (on a worker, or the clock's thread).
  void fire() {
    const intrusive_ptr<actor_cell> keep = cell;  // the op may be gone once posted
    keep->post(this);
  }

  void apply(actor_cell& /*cell*/) override {
    Handler h = std::move(handler);
    boost::asio::get_associated_cancellation_slot(h).clear();  // it points at this op
    auto ex = boost::asio::get_associated_executor(h);
    if constexpr (std::is_same_v<decltype(ex), boost::asio::any_io_executor>) {
      const auto* target = ex.template target<actor_executor>();
      if (target != nullptr && target->cell() == cell.get()) {
        std::move(h)(ec);  // already inside this actor's turn: resume the coroutine here
        return;
      }
    }
    boost::asio::dispatch(ex, [h = std::move(h), e = ec]() mutable { std::move(h)(e); });
  }

  Handler handler;
  intrusive_ptr<actor_cell> cell;
  timer_id id = 0;
  boost::system::error_code ec;
};
}  // namespace detail

namespace detail {
/// Starts a sleep of `d` for `cell` (see sleep_for).
template <class Token>
auto async_sleep(actor_cell* cell, duration d, Token&& token) {
  return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
      // The cell outlives the initiation: it runs now or, when co_awaited, later in the same
      // step of the cell's turn.
      [](auto handler, actor_cell* on_cell, duration wait) {
        using op_t = sleep_op<decltype(handler)>;
        auto slot = boost::asio::get_associated_cancellation_slot(handler);
        auto* op = new op_t(std::move(handler), *on_cell);
        if (slot.is_connected()) {
          // Emitted inside the actor's turn (cancel_turn), as is the op's completion, which
          // clears the slot: the op is alive whenever this runs.
          slot.assign([op](boost::asio::cancellation_type /*type*/) {
            if (cancel_sleep_timer(*op->cell, op->id)) {  // the callback will never run
              op->ec = boost::asio::error::operation_aborted;
              op->cell->post(op);
            }
          });
        }
        // The callback may post the op before the id is stored; the op runs only in a later
        // step of this turn, which is ours until the initiation returns.
        op->id = arm_sleep_timer(*on_cell, wait, [op] { op->fire(); });
      },
      token, cell, d);
}

/// `sleep_for(d)` without a token: an asynchronous operation a coroutine handler co_awaits
/// directly. Asio runs such an operation in the awaiting frame, where `use_awaitable` would add
/// a coroutine frame of its own per await (~1,600 instructions to start and resume it).
class sleep_operation {
 public:
  sleep_operation(actor_cell* cell, duration d) noexcept : cell_(cell), d_(d) {}
  // Constrained: Asio also offers an awaited object the awaiting frame, which must not match.
  template <boost::asio::completion_token_for<void(boost::system::error_code)> Token>
  auto operator()(Token&& token) const {
    return async_sleep(cell_, d_, std::forward<Token>(token));
  }

 private:
  actor_cell* cell_;  // the actor whose handler awaits: alive while it does
  duration d_;
};
}  // namespace detail

/// Waits `d` on the actor system's clock (a manual clock in tests), inside an actor's
/// coroutine: `co_await troupe::sleep_for(d)`. Cancelled with the handler when the actor stops
/// (completes with operation_aborted, which throws in the coroutine). Completes inside the
/// actor's turn.
inline detail::sleep_operation sleep_for(duration d) {
  return {&detail::require_current_cell(), d};
}

/// The same with a completion token (use_awaitable, a callback, ...).
template <class Token>
auto sleep_for(duration d, Token&& token) {
  return detail::async_sleep(&detail::require_current_cell(), d, std::forward<Token>(token));
}

}  // namespace troupe
