#pragma once
/// Writing an actor: derive from `actor<M>` (plain handler) or `async_actor<M>` (coroutine
/// handler, in async_actor.hpp) and override `receive`. An actor handles one message at a time;
/// `context()` gives the runtime's services inside a turn.

#include <troupe/core/actor_ref.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/core/detail/actor_cell.hpp>
#include <troupe/core/detail/ask_promise.hpp>
#include <troupe/core/entity_identity.hpp>
#include <troupe/core/errc.hpp>
#include <troupe/core/mailbox.hpp>
#include <troupe/core/supervision.hpp>

#include <spdlog/logger.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

namespace troupe {

class actor_system;
class actor_base;

/// The runtime's spdlog logger, named "troupe": set its level or add sinks before creating an
/// actor system (spdlog's sink list must not change while threads log). An application may
/// instead register its own logger under that name before the runtime first logs.
const std::shared_ptr<spdlog::logger>& logger();

namespace detail {
/// The library's logger ("troupe").
spdlog::logger& runtime_logger();

/// What spawn_options ask for: an ordinary actor, an entity whose shard holds its home, or an
/// entity that keeps its own (out of line: GCC's uninitialized-use analysis trips over the
/// optional when this is inlined).
enum class spawned_as { actor, sharded_entity, standalone_entity };
spawned_as spawned_as_of(const spawn_options& options) noexcept;

template <class A, class... Args>
actor_ref<typename A::message_type> spawn_actor(actor_cell& parent, spawn_options&& options,
                                                Args&&... args) {
  // Arguments are kept (copied) to rebuild the actor on restart.
  auto factory = [tuple = std::make_tuple(std::decay_t<Args>(std::forward<Args>(args))...)](
                     void* where) -> A* {
    return std::apply([where](const auto&... a) { return new (where) A(a...); }, tuple);
  };
  actor_cell* cell;
  const spawned_as kind = spawned_as_of(options);
  if (kind == spawned_as::actor) {
    cell = new actor_cell_of<A, decltype(factory)>(parent.system(), intrusive_ptr(&parent),
                                                   std::move(options.name), options.mailbox,
                                                   std::move(factory));
  } else if (kind == spawned_as::sharded_entity) {
    // Sharding: the parent (a shard) holds the home, and with it how the entity's name is
    // built from its id (options.name is not used: the cell keeps the id only).
    cell = new entity_cell_of<A, decltype(factory)>(parent.system(), intrusive_ptr(&parent),
                                                    options.mailbox, std::move(factory),
                                                    std::move(options.entity->entity_id));
  } else {
    cell = new standalone_entity_cell_of<A, decltype(factory)>(
        parent.system(), intrusive_ptr(&parent), std::move(options.name), options.mailbox,
        std::move(factory), std::move(*options.entity));
  }
  intrusive_ptr<actor_cell> ref(cell, adopt);
  if (options.unique_name) cell->set_unindexed_name();
  cell->start();
  return actor_ref<typename A::message_type>(intrusive_ptr<actor_target>(std::move(ref)));
}
}  // namespace detail

/// Logs through spdlog with the actor's path in front of every line.
class actor_logger {
 public:
  explicit actor_logger(std::string path) : path_(std::move(path)) {}
  template <class... Args>
  void debug(fmt::format_string<Args...> f, Args&&... args) const {
    log(spdlog::level::debug, f, std::forward<Args>(args)...);
  }
  template <class... Args>
  void info(fmt::format_string<Args...> f, Args&&... args) const {
    log(spdlog::level::info, f, std::forward<Args>(args)...);
  }
  template <class... Args>
  void warn(fmt::format_string<Args...> f, Args&&... args) const {
    log(spdlog::level::warn, f, std::forward<Args>(args)...);
  }
  template <class... Args>
  void error(fmt::format_string<Args...> f, Args&&... args) const {
    log(spdlog::level::err, f, std::forward<Args>(args)...);
  }

 private:
  template <class... Args>
  void log(spdlog::level::level_enum level, fmt::format_string<Args...> f, Args&&... args) const {
    auto& logger = detail::runtime_logger();
    if (!logger.should_log(level)) return;
    logger.log(level, "[{}] {}", path_, fmt::format(f, std::forward<Args>(args)...));
  }
  std::string path_;
};

/// The runtime's services for the actor whose turn is running.
class actor_context {
 public:
  explicit actor_context(detail::actor_cell* cell) noexcept : cell_(cell) {}

  /// This actor, untyped (the typed form is actor<M>::self()).
  [[nodiscard]] untyped_ref self_ref() const { return untyped_ref(intrusive(cell())); }
  /// The parent; empty for the guardians.
  [[nodiscard]] untyped_ref parent() const {
    auto* p = cell().parent();
    return p ? untyped_ref(intrusive(*p)) : untyped_ref();
  }
  /// This actor's name (a sharded entity's is built from its id on each call).
  [[nodiscard]] std::string name() const { return cell().name(); }
  [[nodiscard]] std::string path() const { return cell().path(); }
  [[nodiscard]] actor_system& system() const;
  [[nodiscard]] troupe::clock& clock() const;

  /// Spawns a child. `options` is the child's name (empty: generated) or full spawn_options.
  /// Throws troupe::error for an invalid or taken name.
  template <class A, class... Args>
  actor_ref<typename A::message_type> spawn(spawn_options options, Args&&... args) {
    return detail::spawn_actor<A>(cell(), std::move(options), std::forward<Args>(args)...);
  }
  /// Live children, in no particular order.
  [[nodiscard]] std::vector<untyped_ref> children() const;
  /// The child with this name, or an empty ref.
  [[nodiscard]] untyped_ref child(std::string_view name) const;

  /// Stops a child (or any actor): children first, then post_stop.
  void stop(const untyped_ref& ref);
  /// Stops this actor after the current message.
  void stop();

  /// Death watch: on_terminated(ref) runs once `ref` has stopped (at once if it already has).
  void watch(const untyped_ref& ref);
  void unwatch(const untyped_ref& ref);

  /// The sender of the message being handled; empty when it was sent without one.
  [[nodiscard]] untyped_ref sender() const { return untyped_ref(cell().current_sender()); }
  /// Replies to the sender (e.g. an asker). Without a sender the reply goes to dead letters
  /// (errc::no_sender).
  template <class T>
  void reply(T&& value) const {
    auto* e = new detail::envelope<std::decay_t<T>>(std::forward<T>(value));
    const auto& to = cell().current_sender();
    if (to) {
      to->enqueue_any(e);
    } else {
      reply_without_sender(e);
    }
  }

  [[nodiscard]] actor_logger log() const { return actor_logger(path()); }

  /// The entity identity when this actor is a sharded entity; empty otherwise (also for an
  /// entity's own children). Set before the constructor runs.
  [[nodiscard]] std::optional<entity_identity> entity() const {
    const detail::actor_cell& c = cell();
    const std::string* id = c.entity_id();
    if (id == nullptr) return std::nullopt;
    const detail::entity_home* home = c.home();
    return entity_identity{*id, home->type_name, home->shard_id};
  }

  [[nodiscard]] detail::actor_cell& cell() const {
    if (cell_ == nullptr) {
      throw error(errc::not_in_actor,
                  "actor context used outside the runtime (construct actors with spawn)");
    }
    return *cell_;
  }

 private:
  static detail::intrusive_ptr<detail::actor_target> intrusive(detail::actor_cell& c) {
    return detail::intrusive_ptr<detail::actor_target>(&c);
  }
  void reply_without_sender(detail::envelope_base* e) const;

  detail::actor_cell* cell_;
};

/// Base of every actor: lifecycle hooks, supervision of its children, the context.
class actor_base {
 public:
  actor_base(const actor_base&) = delete;
  actor_base& operator=(const actor_base&) = delete;
  virtual ~actor_base() = default;

 protected:
  actor_base() noexcept : context_(detail::constructing_cell()) {}

  [[nodiscard]] actor_context& context() noexcept { return context_; }
  [[nodiscard]] const actor_context& context() const noexcept { return context_; }

 private:
  // The cell of an entity (throws errc::not_an_entity for other actors).
  [[nodiscard]] const detail::actor_cell& entity_cell() const;

 protected:
  /// This entity's id, as the type's extractor returned it. Throws errc::not_an_entity for an
  /// actor that is not a sharded entity.
  [[nodiscard]] const std::string& entity_id() const { return *entity_cell().entity_id(); }
  /// This entity's id, type name and shard. Throws errc::not_an_entity like entity_id().
  [[nodiscard]] entity_identity entity() const {
    (void)entity_cell();  // throws for an ordinary actor
    return *context_.entity();
  }

  /// After construction, before the first message.
  virtual void pre_start() {}
  /// After the actor and all its children stopped.
  virtual void post_stop() {}
  /// On the failed instance before a restart; by default stops its children and runs post_stop.
  virtual void pre_restart(const std::exception_ptr& reason);
  /// On the fresh instance after a restart; by default runs pre_start.
  virtual void post_restart(const std::exception_ptr& reason);
  /// A watched actor stopped.
  virtual void on_terminated(const untyped_ref& /*who*/) {}
  /// One of this actor's children stopped (no watch needed: a parent always hears). Not called
  /// while this actor stops or restarts.
  virtual void on_child_terminated(const untyped_ref& /*child*/) {}
  /// How this actor supervises its children (default: restart, bounded, with backoff).
  [[nodiscard]] virtual supervisor_strategy child_supervision() const { return {}; }
  /// A turn that handled messages has ended: how many (a metrics hook; sharding records each
  /// shard's batch sizes with it).
  virtual void turn_ended(std::size_t /*messages_handled*/) noexcept {}

 private:
  friend class detail::actor_cell;
  /// Handles one user message; returns true when the handler continues as a coroutine.
  virtual bool handle(detail::envelope_base& e) = 0;
  /// Asks a running coroutine handler to stop (the actor is stopping).
  virtual void cancel_turn() noexcept {}
  /// Batch handlers: how many queued messages one turn may take (0 or 1: no batching).
  [[nodiscard]] virtual std::size_t batch_cap() const noexcept { return 0; }
  /// Handles several user messages at once (batch actors only); true when a coroutine runs on.
  virtual bool handle_batch(std::vector<detail::envelope_base*>& /*batch*/) { return false; }

  actor_context context_;
};

/// Timers owned by an actor: each sends a message of the actor's type to itself. Starting a
/// timer with a key in use replaces it; all timers are cancelled when the actor stops or
/// restarts, and a cancelled timer's message never arrives, even if it was already queued.
template <class M>
class timer_scheduler {
 public:
  explicit timer_scheduler(detail::actor_cell& cell) : cell_(cell) {}

  void start_single(std::string key, M msg, duration delay) {
    start(std::move(key), std::move(msg), delay, false);
  }
  void start_periodic(std::string key, M msg, duration interval) {
    start(std::move(key), std::move(msg), interval, true);
  }
  bool cancel(std::string_view key) { return cell_.cancel_timer(key); }
  void cancel_all() { cell_.cancel_all_timers(); }
  [[nodiscard]] bool is_active(std::string_view key) const { return cell_.timer_active(key); }

 private:
  void start(std::string key, M msg, duration d, bool periodic) {
    cell_.start_timer(
        key, d, periodic, [msg = std::move(msg)](const std::string& k, std::uint64_t gen) {
          return static_cast<detail::envelope_base*>(new detail::timer_envelope<M>(msg, k, gen));
        });
  }
  detail::actor_cell& cell_;
};

/// Typed services shared by plain and coroutine actors of message type M.
template <class M>
class basic_actor : public actor_base {
 public:
  using message_type = M;

 protected:
  /// This actor's typed ref.
  [[nodiscard]] actor_ref<M> self() const {
    return actor_ref<M>(detail::intrusive_ptr<detail::actor_target>(&context().cell()));
  }
  [[nodiscard]] timer_scheduler<M> timers() { return timer_scheduler<M>(context().cell()); }

  /// Sends `msg` to itself after `d` without any other message (repeats while idle).
  void set_receive_timeout(duration d, M msg) {
    context().cell().set_receive_timeout(d, [msg = std::move(msg)] {
      auto* e = new detail::envelope<M>(msg);
      e->kind = detail::envelope_kind::idle;  // not activity: re-armed once handled
      return static_cast<detail::envelope_base*>(e);
    });
  }
  void cancel_receive_timeout() { context().cell().cancel_receive_timeout(); }

  /// Keeps a message (with the current sender) for later; throws errc::stash_overflow when the
  /// stash holds 10,000 messages already.
  void stash(M msg) {
    auto* e = new detail::envelope<M>(std::move(msg));
    e->sender = context().cell().current_sender();
    context().cell().stash(e);
  }
  /// Puts every stashed message back in front of the mailbox, in stash order.
  void unstash_all() { context().cell().unstash_all(); }
  [[nodiscard]] std::size_t stash_size() const { return context().cell().stash_size(); }
};

/// An actor with a plain handler: `void receive(M& msg)`. M is usually a std::variant of
/// commands, visited with troupe::overloaded lambdas.
template <class M>
class actor : public basic_actor<M> {
 protected:
  virtual void receive(M& msg) = 0;

 private:
  bool handle(detail::envelope_base& e) final {
    receive(*static_cast<M*>(e.payload()));
    return false;
  }
};

/// One message of a batch, with its sender (to reply to).
template <class M>
struct batch_item {
  M message;
  untyped_ref sender;
};

/// An actor that takes every message queued for it (up to max_batch(), default 200) in one
/// turn, in arrival order: `void receive_batch(std::span<batch_item<M>>)`. Under light load
/// batches have size 1; under a burst they grow, so one write can serve many messages.
template <class M>
class batch_actor : public basic_actor<M> {
 protected:
  virtual void receive_batch(std::span<batch_item<M>> batch) = 0;
  /// The most messages one batch takes.
  [[nodiscard]] virtual std::size_t max_batch() const noexcept { return 200; }

 private:
  [[nodiscard]] std::size_t batch_cap() const noexcept final {
    return std::max<std::size_t>(max_batch(), 2);
  }
  bool handle(detail::envelope_base& e) final {
    batch_item<M> one{std::move(*static_cast<M*>(e.payload())), untyped_ref(e.sender)};
    receive_batch(std::span<batch_item<M>>(&one, 1));
    return false;
  }
  bool handle_batch(std::vector<detail::envelope_base*>& batch) final {
    std::vector<batch_item<M>> items;
    items.reserve(batch.size());
    for (auto* e : batch) {
      items.push_back({std::move(*static_cast<M*>(e->payload())), untyped_ref(e->sender)});
    }
    receive_batch(std::span<batch_item<M>>(items));
    return false;
  }
};

/// Builds one visitor out of several lambdas: std::visit(overloaded{...}, msg).
template <class... Fs>
struct overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
overloaded(Fs...) -> overloaded<Fs...>;

}  // namespace troupe
