#include <troupe/core/async_actor.hpp>

#include "core/scheduler.hpp"
#include "core/system_impl.hpp"

namespace troupe::detail {

timer_id arm_sleep_timer(actor_cell& cell, duration d, clock::callback fn) {
  system_impl& system = cell.system();
  if (system.worker_timers()) {
    const time_point at = std::chrono::steady_clock::now() + d;
    // The worker may fire it before the id is stored: the op runs only in a later step of
    // this turn (see async_sleep).
    if (const timer_id id = system.sched().add_local_timer(at, fn)) return id;
  }
  return system.clock().schedule_after(d, std::move(fn));
}

bool cancel_sleep_timer(actor_cell& cell, timer_id id) noexcept {
  system_impl& system = cell.system();
  if (scheduler::is_local_timer(id)) return system.sched().cancel_local_timer(id);
  return system.clock().cancel(id);
}

concurrency_gate* gate_of(const actor_cell& cell) noexcept {
  const entity_home* home = cell.home();
  return home != nullptr ? home->gate.get() : nullptr;
}

boost::asio::awaitable<void> run_gated(concurrency_gate& gate, boost::asio::awaitable<void> work) {
  co_await gate.acquire();
  const gate_permit permit(gate);  // given back however the handler ends
  co_await std::move(work);
}

}  // namespace troupe::detail
