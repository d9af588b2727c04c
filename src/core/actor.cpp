#include "troupe/core/actor.hpp"

#include "troupe/core/actor_system.hpp"
#include "troupe/core/async_actor.hpp"
#include "troupe/core/detail/system_messages.hpp"

#include "core/system_impl.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace troupe {

namespace detail {

spdlog::logger& runtime_logger() { return *troupe::logger(); }

std::string type_name(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
  return status == 0 && demangled ? std::string(demangled.get()) : std::string(type.name());
}

spawned_as spawned_as_of(const spawn_options& options) noexcept {
  if (!options.entity) return spawned_as::actor;
  return options.entity->home == nullptr ? spawned_as::sharded_entity
                                         : spawned_as::standalone_entity;
}

boost::asio::execution_context& execution_context_of(actor_cell& cell) {
  return cell.system().io();
}

actor_cell& require_current_cell() {
  actor_cell* c = current_cell();
  if (c == nullptr) {
    throw error(errc::not_in_actor, "troupe::sleep_for and friends run only inside an actor");
  }
  return *c;
}

std::shared_ptr<clock> clock_of_cell(actor_cell& cell) { return cell.system().clock_ptr(); }

}  // namespace detail

const std::shared_ptr<spdlog::logger>& logger() {
  static const std::shared_ptr<spdlog::logger> the_logger = [] {
    // An application may register its own "troupe" logger before the runtime first logs.
    auto existing = spdlog::get("troupe");
    return existing ? existing : spdlog::stderr_color_mt("troupe");
  }();
  return the_logger;
}

// -- actor_context ------------------------------------------------------------------------------

actor_system& actor_context::system() const {
  actor_system* s = cell().system().facade();
  if (s == nullptr) throw error(errc::system_terminated, "the actor system is gone");
  return *s;
}

troupe::clock& actor_context::clock() const { return cell().system().clock(); }

std::vector<untyped_ref> actor_context::children() const {
  std::vector<untyped_ref> out;
  for (auto& c : cell().children())
    out.emplace_back(detail::intrusive_ptr<detail::actor_target>(c));
  return out;
}

untyped_ref actor_context::child(std::string_view name) const {
  auto c = cell().child(name);
  return c ? untyped_ref(detail::intrusive_ptr<detail::actor_target>(c)) : untyped_ref();
}

void actor_context::stop(const untyped_ref& ref) {
  if (!ref) return;
  if (ref.target() == &cell()) {
    cell().stop_self();
    return;
  }
  cell().stop_child(*ref.target());
}

void actor_context::stop() { cell().stop_self(); }

void actor_context::watch(const untyped_ref& ref) { cell().watch(ref.target_ptr()); }
void actor_context::unwatch(const untyped_ref& ref) { cell().unwatch(ref.target_ptr()); }

void actor_context::reply_without_sender(detail::envelope_base* e) const {
  cell().system().dead_letters().publish(e, path() + " (reply)", make_error_code(errc::no_sender),
                                         "reply to a message that had no sender");
}

// -- actor_base ---------------------------------------------------------------------------------

void actor_base::pre_restart(const std::exception_ptr& /*reason*/) {
  for (const auto& child : context_.children()) context_.stop(child);
  post_stop();
}

void actor_base::post_restart(const std::exception_ptr& /*reason*/) { pre_start(); }

const detail::actor_cell& actor_base::entity_cell() const {
  const detail::actor_cell& cell = context_.cell();
  if (cell.entity_id() == nullptr) {
    throw error(errc::not_an_entity,
                context_.path() +
                    " is not a sharded entity: entity() and entity_id() are set only on actors "
                    "spawned by sharding (or with spawn_options::with_entity)");
  }
  return cell;
}

}  // namespace troupe
