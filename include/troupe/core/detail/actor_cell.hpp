#pragma once
/// INTERNAL. The runtime side of one actor: mailbox, scheduling state, lifecycle, children,
/// supervision. Everything here runs either on any thread (enqueue*, send_system) or inside the
/// actor's turn, which the scheduler runs on one worker at a time.

#include <troupe/core/clock.hpp>
#include <troupe/core/detail/actor_target.hpp>
#include <troupe/core/detail/envelope.hpp>
#include <troupe/core/detail/message_convert.hpp>
#include <troupe/core/detail/mpsc_queue.hpp>
#include <troupe/core/entity_identity.hpp>
#include <troupe/core/mailbox.hpp>
#include <troupe/core/supervision.hpp>

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {
class actor_base;
class actor_system;
class untyped_ref;
}  // namespace troupe

namespace troupe::detail {

class system_impl;
struct cell_extras;
struct timer_entry;
struct cell_access;
struct bounded_mailbox;

/// Builds a message envelope for a timer firing (key and generation ride along).
using timer_message_factory =
    std::function<envelope_base*(const std::string& key, std::uint64_t gen)>;

class actor_cell : public actor_target {
 public:
  enum state_bits : std::uint32_t {
    scheduled = 1u,  // queued on or running on a worker (owned by exactly one)
    suspended = 2u,  // waiting for a coroutine or a supervisor: user messages wait, no scheduling
    dead = 4u,       // terminated: whatever arrives drains to dead letters
  };

  /// What the cell's label is: the actor's name, or (a sharded entity) its id, from which
  /// the name is built when asked for, so that an entity keeps one copy of its id.
  enum class label_kind : std::uint8_t { name, entity_id };

  actor_cell(system_impl& system, intrusive_ptr<actor_cell> parent, std::string&& label,
             const mailbox_config& mailbox, label_kind kind = label_kind::name);
  ~actor_cell() override;

  // -- actor_target (any thread) ---------------------------------------------------------------
  void enqueue(envelope_base* e) noexcept override;
  void enqueue_any(envelope_base* e) noexcept override;
  std::error_code try_enqueue(envelope_base* e) noexcept override;
  void enqueue_or_wait(envelope_base* e,
                       std::function<void(std::error_code)> done) noexcept override;
  void send_system(system_message* m) noexcept override;
  [[nodiscard]] std::string path() const override;
  [[nodiscard]] system_impl* owner() const noexcept override;
  [[nodiscard]] bool is_terminated() const noexcept override {
    return (state_.load(std::memory_order_acquire) & dead) != 0;
  }

  // -- identity --------------------------------------------------------------------------------
  /// The actor's name; a sharded entity's is built from its id and its home on each call.
  [[nodiscard]] std::string name() const;
  /// Appends the name to `out` (paths are built this way).
  void append_name(std::string& out) const;
  [[nodiscard]] actor_cell* parent() const noexcept { return parent_.get(); }
  [[nodiscard]] system_impl& system() const noexcept { return system_; }
  /// The entity id it was spawned with; null for ordinary actors.
  [[nodiscard]] virtual const std::string* entity_id() const noexcept { return nullptr; }
  /// The entity's home (type, shard, gate); null for ordinary actors.
  [[nodiscard]] virtual const entity_home* home() const noexcept { return nullptr; }
  /// Sharding: the home of the entities this actor (a shard) spawns; they find it here instead
  /// of each keeping a pointer. Set before the first entity spawns.
  void set_child_entity_home(const entity_home* home);

  // -- scheduling (worker thread) --------------------------------------------------------------
  /// Runs one turn: system messages, then up to `throughput` user messages.
  void run_turn() noexcept;

  /// Registers with the parent and runs constructor + pre_start on the calling thread (the
  /// cell is not visible to anyone else yet). Throws troupe::error for a bad or taken name.
  void start();
  /// Spawned with spawn_options::unique_name: the parent's name index skips it.
  void set_unindexed_name() noexcept { unindexed_name_ = true; }
  /// Guardians take spawns from any thread: create their rarely used state up front, so that
  /// it is never created concurrently with a spawn.
  void prepare_for_foreign_spawns() { (void)ext(); }

  // -- inside the actor's turn (via actor_context) ---------------------------------------------
  [[nodiscard]] actor_base* instance() const noexcept { return actor_; }
  [[nodiscard]] const intrusive_ptr<actor_target>& current_sender() const noexcept;
  /// Hands the envelope of the message a plain handler is handling to the caller, who passes
  /// it on as it is (no copy, no allocation); the cell will not free it. Null outside one.
  envelope_base* release_current() noexcept;
  void stop_self();
  void stop_child(actor_target& target);
  void watch(const intrusive_ptr<actor_target>& target);
  void unwatch(const intrusive_ptr<actor_target>& target);
  [[nodiscard]] std::vector<intrusive_ptr<actor_cell>> children() const;
  [[nodiscard]] intrusive_ptr<actor_cell> child(std::string_view name) const;
  void start_timer(const std::string& key, duration delay, bool periodic,
                   timer_message_factory make);
  bool cancel_timer(std::string_view key);
  void cancel_all_timers();
  [[nodiscard]] bool timer_active(std::string_view key) const;
  void set_receive_timeout(duration d, std::function<envelope_base*()> make);
  void cancel_receive_timeout();
  void stash(envelope_base* e);
  void unstash_all();
  [[nodiscard]] std::size_t stash_size() const;
  /// Coroutine actors: user messages wait until `end_async_turn`.
  void begin_async_turn();
  void end_async_turn(std::exception_ptr failure);
  /// Queues work to run inside this actor's turn (coroutine resumptions); runs after the
  /// current step when called from inside the turn.
  void post(system_message* m) noexcept;

  // -- used by the runtime's system messages ---------------------------------------------------
  void handle_stop();
  void continue_termination();
  void handle_watch(const intrusive_ptr<actor_target>& watcher);
  void handle_unwatch(const intrusive_ptr<actor_target>& watcher);
  void handle_terminated(const intrusive_ptr<actor_target>& who);
  void handle_child_terminated(actor_cell& child);
  void handle_child_failed(actor_cell& child, std::exception_ptr error);
  void handle_timer_check(std::uint64_t generation);
  void drain_to_dead_letters(const char* reason) noexcept;

  // Declared first so that it fills the 4 bytes after ref_counted's count (a smaller cell).
 private:
  std::atomic<std::uint32_t> state_{0};

 public:
  // intrusive sibling list, guarded by the parent's children lock (the head is in the parent's
  // extras: most actors have no children)
  actor_cell* next_sibling_ = nullptr;
  actor_cell* prev_sibling_ = nullptr;

 protected:
  /// Constructs the actor instance (placement into the cell); may throw.
  virtual actor_base* construct() = 0;
  /// Destroys the instance built by construct().
  virtual void destroy_instance(actor_base* a) noexcept = 0;
  /// Converts a message of another type into the actor's type, or returns null.
  virtual envelope_base* convert(envelope_base* e) noexcept = 0;

 private:
  enum class phase : std::uint8_t { starting, running, failed, terminating, dead };

  // `mid_way`: the turn that just ended left a backlog (see scheduler::schedule).
  void schedule(bool mid_way = false) noexcept;
  void push_user(envelope_base* e) noexcept;
  std::error_code enqueue_bounded(envelope_base* e) noexcept;
  void admit_waiters() noexcept;
  // `mid_way`: see schedule().
  void release_turn(bool mid_way = false) noexcept;
  void process_system_messages() noexcept;
  void apply_system(system_message* m) noexcept;
  void run_local_posts() noexcept;
  [[nodiscard]] envelope_base* next_user_envelope() noexcept;
  /// An entity whose node no longer stands for its shard (entity_home::standing).
  [[nodiscard]] bool standing_lost() const noexcept;
  void handle_user_envelope(envelope_base* e) noexcept;
  std::size_t run_batch(std::size_t cap) noexcept;
  void fail(std::exception_ptr error, const std::string& while_doing) noexcept;
  void create_instance(std::exception_ptr restart_reason) noexcept;
  void handle_directive(directive d, std::exception_ptr error, const supervisor_strategy& strategy);
  void restart(std::exception_ptr error);
  void finish_termination() noexcept;
  void try_finish_termination() noexcept;
  [[nodiscard]] actor_cell* first_child_locked() const;
  // The first child, or null; call with the children lock held.
  [[nodiscard]] actor_cell* first_child() const noexcept;

 public:
  /// A stamp the actor's owner keeps in the cell: a shard stamps each entity with the tick of
  /// its last delivery, so its map of entities holds refs alone (8 bytes less per entity).
  /// Read and written only by the owner's turns.
  [[nodiscard]] std::uint8_t idle_stamp() const noexcept { return idle_stamp_; }
  void set_idle_stamp(std::uint8_t stamp) noexcept { idle_stamp_ = stamp; }

  // The home set_child_entity_home() gave (entities read it from their own threads: it is set
  // before any of them exists and never changes).
  [[nodiscard]] const entity_home* child_entity_home() const noexcept;

 protected:
  /// The name, or a sharded entity's id (see label_kind).
  [[nodiscard]] const std::string& label() const noexcept { return label_; }

 private:
  void dead_letter(envelope_base* e, std::error_code code, std::string reason) noexcept;
  timer_id arm_timer(const std::string& key, const timer_entry& entry);
  bool accept_timer(envelope_base& e);
  void arm_idle_check();
  cell_extras& ext();
  // A bounded mailbox's state, or null; read from any thread (ext_ of a bounded cell is set
  // before the cell is shared and never replaced).
  [[nodiscard]] bounded_mailbox* bounded() const noexcept;
  // Whether the actor's name is `name` (without building an entity's name when it cannot be).
  [[nodiscard]] bool has_name(std::string_view name) const;
  [[nodiscard]] bool user_messages_allowed() const noexcept;
  void update_suspended() noexcept;

  phase phase_ = phase::starting;
  bool async_in_flight_ = false;
  bool children_closed_ = false;  // no more spawns: we are stopping (guarded by children lock)
  bool unindexed_name_ = false;   // not in the parent's name index (unique by construction)
  bool bounded_ = false;          // ext_->bounded exists (set before the cell is shared)
  label_kind label_kind_;         // what label_ holds
  // Fresh wake-ups left that keep the actor's place in line, refilled by every turn that ends
  // with a backlog (a full batch, the whole budget). A hot key drains its mailbox now and then
  // while the shard that feeds it catches up; woken again, it must not wait behind every actor
  // queued on the worker (measured: 0.2-0.5 s, a third of a run). Written by the turn's owner,
  // read by the sender that wins the `scheduled` bit: the bit orders the two.
  std::atomic<std::uint8_t> backlog_wakeups_{0};
  // The owner's idle stamp (see idle_stamp()); it fills the byte of padding before mailbox_.
  std::uint8_t idle_stamp_ = 0;
  mpsc_queue mailbox_;
  std::atomic<system_message*> system_inbox_{nullptr};
  system_impl& system_;
  intrusive_ptr<actor_cell> parent_;
  // The name, or a sharded entity's id (label_kind_): one string either way.
  std::string label_;
  actor_base* actor_ = nullptr;
  // A coroutine handler's message (and with it its sender), kept until it ends (reply(),
  // failure logs).
  envelope_base* async_message_ = nullptr;
  envelope_base* current_ = nullptr;  // null while a plain handler runs: it released its message
  std::unique_ptr<cell_extras> ext_;

  friend struct cell_access;
};

/// The cell whose turn runs on this thread, or null.
actor_cell* current_cell() noexcept;
/// The cell whose actor is being constructed on this thread, or null.
actor_cell* constructing_cell() noexcept;

/// A cell holding an actor of type A, built by `Factory` (a callable returning nothing that
/// placement-constructs A at the given address). Instance and cell share one allocation.
template <class A, class Factory>
class actor_cell_of : public actor_cell {
 public:
  actor_cell_of(system_impl& system, intrusive_ptr<actor_cell> parent, std::string&& label,
                const mailbox_config& mailbox, Factory&& factory,
                label_kind kind = label_kind::name)
      : actor_cell(system, std::move(parent), std::move(label), mailbox, kind),
        factory_(std::move(factory)) {}

 protected:
  actor_base* construct() override {
    A* a = factory_(static_cast<void*>(storage_));
    return a;
  }
  void destroy_instance(actor_base* a) noexcept override { static_cast<A*>(a)->~A(); }
  envelope_base* convert(envelope_base* e) noexcept override {
    using M = typename A::message_type;
    // Already an M: the handler reads payload() as an M, whatever envelope carries it.
    if (e->kind == envelope_kind::user && e->type() == typeid(M)) return e;
    try {
      auto m = convert_payload<M>(*e);
      if (!m) return nullptr;
      auto* out = new envelope<M>(std::move(*m));
      out->sender = std::move(e->sender);
      delete e;
      return out;
    } catch (...) {
      return nullptr;
    }
  }

 private:
  [[no_unique_address]] Factory factory_;
  alignas(A) unsigned char storage_[sizeof(A)];
};

/// A cell for a sharded entity: the same, with its id as its label (its name, built from the id
/// by its home's scheme, is not stored); its home is its shard's (ordinary actors pay nothing).
template <class A, class Factory>
class entity_cell_of final : public actor_cell_of<A, Factory> {
 public:
  entity_cell_of(system_impl& system, intrusive_ptr<actor_cell> parent,
                 const mailbox_config& mailbox, Factory&& factory, std::string&& entity_id)
      : actor_cell_of<A, Factory>(system, std::move(parent), std::move(entity_id), mailbox,
                                  std::move(factory), actor_cell::label_kind::entity_id) {}

  [[nodiscard]] const std::string* entity_id() const noexcept override { return &this->label(); }
  [[nodiscard]] const entity_home* home() const noexcept override {
    return this->parent()->child_entity_home();
  }
};

/// An entity spawned on its own (spawn_options::with_entity, in tests): it keeps its home.
template <class A, class Factory>
class standalone_entity_cell_of final : public actor_cell_of<A, Factory> {
 public:
  standalone_entity_cell_of(system_impl& system, intrusive_ptr<actor_cell> parent,
                            std::string&& name, const mailbox_config& mailbox, Factory&& factory,
                            entity_tag&& identity)
      : actor_cell_of<A, Factory>(system, std::move(parent), std::move(name), mailbox,
                                  std::move(factory)),
        identity_(std::move(identity)) {}

  [[nodiscard]] const std::string* entity_id() const noexcept override {
    return &identity_.entity_id;
  }
  [[nodiscard]] const entity_home* home() const noexcept override { return identity_.home; }

 private:
  entity_tag identity_;
};

}  // namespace troupe::detail
