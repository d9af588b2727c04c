#include <troupe/core/async_actor.hpp>

#include "core/system_impl.hpp"

namespace troupe::detail {

clock& clock_ref_of_cell(actor_cell& cell) noexcept { return cell.system().clock(); }

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
