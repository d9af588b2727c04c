#pragma once
/// What event-sourced and durable-state entities share: the persistence id, the store, the
/// epoch, the recovery turn started from pre_start, the persist turns, and failure handling.

#include <troupe/core/actor.hpp>
#include <troupe/core/async_actor.hpp>
#include <troupe/persistence/errc.hpp>
#include <troupe/persistence/persistence_extension.hpp>
#include <troupe/persistence/plugin.hpp>
#include <troupe/persistence/records.hpp>
#include <troupe/persistence/serialization/codec_registry.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

namespace troupe::persistence::detail {

/// `<type name>-<entity id>` for an entity; throws errc::invalid_request for a plain actor.
std::string default_persistence_id(const actor_context& context);

/// The error code an exception stands for (persistence errc, or errc::store_failure).
std::error_code error_code_of(const std::exception_ptr& failure) noexcept;
/// The exception's message.
std::string message_of(const std::exception_ptr& failure);

/// Tells the current sender (an asker fails at once) that its command failed.
void notify_sender(const actor_context& context, std::error_code code, const std::string& what);

/// Non-template part of every persistent entity.
class entity_core {
 public:
  entity_core() = default;
  entity_core(const entity_core&) = delete;
  entity_core& operator=(const entity_core&) = delete;

 protected:
  ~entity_core() = default;

  /// Resolves id, store, codecs and epoch; throws when there is no persistence id.
  void resolve(actor_context& context, std::string persistence_id, std::shared_ptr<plugin> store,
               ownership_epoch epoch);

  /// Takes the shard fence its shard hands it (entity_home::fence_epoch): when there is one, the
  /// entity writes at that epoch and names its shard in every write. Call after resolve.
  void adopt_shard_fence(const actor_context& context);

  /// Logs, tells the sender, marks the entity failed and stops it.
  void fail_persist(actor_context& context, const std::exception_ptr& failure,
                    const std::string& what);
  /// Logs (with `where`: "at sequence nr 7"), marks the entity failed and stops it.
  void fail_recovery(actor_context& context, const std::exception_ptr& failure,
                     const std::string& where);
  /// A command that arrived after a failure: its sender hears the failure, nothing runs.
  void reject(actor_context& context) const;

  std::string persistence_id_;
  std::shared_ptr<plugin> store_;
  ownership_epoch epoch_ = 0;
  /// The shard every write names (its fence must be at epoch_); empty without a shard fence.
  std::optional<fenced_shard> shard_fence_;
  bool recovered_ = false;
  bool failed_ = false;
  bool cancelling_ = false;
  std::error_code failure_code_;
  std::string failure_what_;
};

/// The actor side: pre_start starts recovery as an asynchronous turn (so commands wait in the
/// mailbox, in order, until it ends); a command either completes at once or starts a persist
/// turn that keeps the entity busy until the write is durable and the effect has run.
template <class Command>
class entity_base : public basic_actor<Command>, protected entity_core {
 protected:
  entity_base() = default;

  /// The persistence id: `<type name>-<entity id>` unless make_persistence_id() says
  /// otherwise. Readable from on_start() (pre_start) on; throws before.
  [[nodiscard]] const std::string& persistence_id() const {
    if (persistence_id_.empty()) {
      throw persistence_error(errc::invalid_request,
                              "persistence_id() is readable from pre_start on, not before");
    }
    return persistence_id_;
  }
  /// True once recovery has finished (commands run only then).
  [[nodiscard]] bool recovered() const noexcept { return recovered_; }
  /// The epoch this incarnation writes with.
  [[nodiscard]] ownership_epoch epoch() const noexcept { return epoch_; }

  // -- what an entity may override ---------------------------------------------------------------

  /// The persistence id; by default `<type name>-<entity id>` (sharded entities, or actors
  /// spawned with spawn_options::with_entity). A plain actor must override it.
  [[nodiscard]] virtual std::string make_persistence_id() const {
    return default_persistence_id(this->context());
  }
  /// The store; by default the extension's plugin for this entity's type name.
  [[nodiscard]] virtual std::shared_ptr<plugin> choose_plugin() {
    auto who = this->context().entity();
    return who ? extension().plugin_for(who->type_name) : extension().default_plugin();
  }
  /// The codecs of events, snapshots and states; by default the extension's registry.
  [[nodiscard]] virtual const codec_registry& codecs() const { return extension().codecs(); }
  /// The ownership epoch of this incarnation's writes; by default the extension's provider (0).
  /// A shard fence epoch handed down by the entity's shard (entity_home::fence_epoch) replaces
  /// it.
  [[nodiscard]] virtual ownership_epoch choose_epoch() const {
    return extension().epoch_for(this->context().entity());
  }
  /// The system's persistence extension. Kept after the first look-up, which takes the
  /// system's lock: a persist needs it for each event's codec and for the snapshot interval.
  [[nodiscard]] persistence_extension& extension() const {
    if (extension_ == nullptr) extension_ = &persistence::get(this->context().system());
    return *extension_;
  }
  /// Runs in pre_start, before recovery begins (persistence_id() is readable).
  virtual void on_start() {}
  /// Runs once recovery has finished, before the first command.
  virtual void on_recovered() {}

  /// Starts a turn running `work`: the entity handles no other command until it ends. Its code
  /// up to the first co_await (a persist: encoding the events, handing them to the store) runs
  /// now, inside this turn.
  void start_turn(boost::asio::awaitable<void> work) {
    // Not co_spawn: that posts the coroutine's start to the actor twice (its entry point, then
    // its first step), two extra turns per persist; it made a persisting ask cost ~40 % more
    // instructions (docs/persistence.md, "persist_entity").
    troupe::detail::start_handler(this->context().cell(), cancel_, std::move(work));
  }

  [[nodiscard]] actor_executor executor() const {
    auto& cell = this->context().cell();
    return actor_executor(troupe::detail::intrusive_ptr<troupe::detail::actor_cell>(&cell),
                          &troupe::detail::execution_context_of(cell));
  }

  /// Called when a cancelled turn (the entity is stopping) throws: true means "just end".
  [[nodiscard]] bool stopping() const noexcept { return cancelling_; }

 private:
  /// Recovers the state; runs as the entity's first turn. Must not throw (failures stop the
  /// entity through fail_recovery).
  virtual boost::asio::awaitable<void> recover() = 0;
  /// Runs the command handler; returns true when it started a turn (start_turn).
  virtual bool on_message(Command& command) = 0;

  void pre_start() final {
    on_start();
    resolve(this->context(), make_persistence_id(), choose_plugin(), choose_epoch());
    adopt_shard_fence(this->context());
    start_turn(recover());
  }
  void post_restart(const std::exception_ptr& /*reason*/) final { pre_start(); }

  bool handle(troupe::detail::envelope_base& e) final {
    if (failed_) {
      reject(this->context());
      return false;
    }
    return on_message(*static_cast<Command*>(e.payload()));
  }
  void cancel_turn() noexcept final {
    cancelling_ = true;
    cancel_.emit(boost::asio::cancellation_type::terminal);
  }

  boost::asio::cancellation_signal cancel_;
  /// Null until extension() looks it up; the extension outlives the entity.
  mutable persistence_extension* extension_ = nullptr;
};

}  // namespace troupe::persistence::detail
