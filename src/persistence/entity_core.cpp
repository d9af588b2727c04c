#include "troupe/persistence/detail/entity_base.hpp"

#include <boost/system/system_error.hpp>

namespace troupe::persistence::detail {

std::string default_persistence_id(const actor_context& context) {
  auto who = context.entity();
  if (!who) {
    throw persistence_error(errc::invalid_request,
                            context.path() +
                                " is not a sharded entity: override make_persistence_id() or "
                                "spawn it with spawn_options::with_entity");
  }
  return who->type_name + "-" + who->entity_id;
}

std::error_code error_code_of(const std::exception_ptr& failure) noexcept {
  try {
    std::rethrow_exception(failure);
  } catch (const persistence_error& e) {
    return e.code();
  } catch (const std::system_error& e) {
    return e.code();
  } catch (...) {
    return make_error_code(errc::store_failure);
  }
}

std::string message_of(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

void notify_sender(const actor_context& context, std::error_code code, const std::string& what) {
  const untyped_ref sender = context.sender();
  if (sender) sender.target()->notify_undelivered(code, what);
}

void entity_core::resolve(actor_context& context, std::string persistence_id,
                          std::shared_ptr<plugin> store, ownership_epoch epoch) {
  if (persistence_id.empty()) {
    throw persistence_error(errc::invalid_request,
                            context.path() + ": make_persistence_id() returned an empty id");
  }
  if (!store) {
    throw persistence_error(errc::invalid_request,
                            context.path() + ": choose_plugin() returned no plugin");
  }
  persistence_id_ = std::move(persistence_id);
  store_ = std::move(store);
  epoch_ = epoch;
  recovered_ = false;
  failed_ = false;
  cancelling_ = false;
}

void entity_core::adopt_shard_fence(const actor_context& context) {
  shard_fence_.reset();
  const troupe::detail::entity_home* home = context.entity() ? context.cell().home() : nullptr;
  if (home == nullptr || !home->fence_epoch) return;
  shard_fence_ = fenced_shard{home->type_name, home->shard_id};
  epoch_ = *home->fence_epoch;
}

void entity_core::fail_persist(actor_context& context, const std::exception_ptr& failure,
                               const std::string& what) {
  failed_ = true;
  failure_code_ = error_code_of(failure);
  failure_what_ = "persistence id '" + persistence_id_ + "': " + what +
                  " failed: " + message_of(failure) + "; the entity stops";
  context.log().error("{}", failure_what_);
  notify_sender(context, failure_code_, failure_what_);
  context.stop();
}

void entity_core::fail_recovery(actor_context& context, const std::exception_ptr& failure,
                                const std::string& where) {
  failed_ = true;
  failure_code_ = error_code_of(failure);
  failure_what_ = "recovery of persistence id '" + persistence_id_ + "' failed " + where + ": " +
                  message_of(failure) + "; the entity stops";
  context.log().error("{}", failure_what_);
  context.stop();
}

void entity_core::reject(actor_context& context) const {
  notify_sender(context, failure_code_, failure_what_);
}

}  // namespace troupe::persistence::detail
