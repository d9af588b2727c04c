#pragma once
/// The actor system: worker threads, the clock, the guardians (/user, /system), dead letters and
/// an io_context for sockets. Create one per process (or several in tests).

#include <troupe/core/actor.hpp>
#include <troupe/core/actor_ref.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/core/config.hpp>
#include <troupe/core/dead_letters.hpp>
#include <troupe/core/mailbox.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <typeinfo>

namespace boost::asio {
class io_context;
}

namespace troupe {

/// Settings of an actor system; chain the with_* setters.
struct system_config {
  /// Name, used in logs and thread names.
  std::string name = "troupe";
  /// Worker threads; 0 means one per hardware thread.
  std::size_t workers = 0;
  /// No threads at all (no workers, no I/O thread): actors and the I/O context's handlers run
  /// only inside run_until_idle() on the calling thread, one at a time in a reproducible order
  /// (for deterministic tests and simulations).
  bool manual_scheduling = false;
  /// The clock; null means the real steady clock.
  std::shared_ptr<troupe::clock> clock;
  /// Messages an actor handles per turn before its worker moves on to another actor.
  std::uint32_t throughput = 256;
  /// How long terminate() waits for actors to stop before giving up on them.
  std::chrono::milliseconds shutdown_timeout = std::chrono::seconds(10);
  /// The node's configuration (HOCON): e.g. troupe.sharding.* baselines. Values passed in code
  /// override it; it overrides the built-in defaults.
  troupe::config config = troupe::config::empty();

  system_config& with_name(std::string n) {
    name = std::move(n);
    return *this;
  }
  system_config& with_workers(std::size_t n) {
    workers = n;
    return *this;
  }
  system_config& with_manual_scheduling() {
    manual_scheduling = true;
    return *this;
  }
  system_config& with_clock(std::shared_ptr<troupe::clock> c) {
    clock = std::move(c);
    return *this;
  }
  system_config& with_throughput(std::uint32_t n) {
    throughput = n;
    return *this;
  }
  system_config& with_shutdown_timeout(std::chrono::milliseconds t) {
    shutdown_timeout = t;
    return *this;
  }
  system_config& with_config(troupe::config c) {
    config = std::move(c);
    return *this;
  }
  /// Reads the configuration from a HOCON file (throws troupe::config_error naming file:line).
  system_config& with_config_file(const std::string& path) {
    config = troupe::config::parse_file(path);
    return *this;
  }
};

namespace detail {
class system_impl;
actor_cell& user_guardian(system_impl& impl);
actor_cell& system_guardian(system_impl& impl);
}  // namespace detail

class metrics_registry;

class actor_system {
 public:
  explicit actor_system(system_config config = {});
  /// Terminates gracefully (see terminate) and joins every thread.
  ~actor_system();
  actor_system(const actor_system&) = delete;
  actor_system& operator=(const actor_system&) = delete;

  /// Spawns a top-level actor under /user. `options` is its name (empty: generated) or full
  /// spawn_options; `args` go to A's constructor (kept, to rebuild it on restart). Throws
  /// troupe::error for an invalid or taken name.
  template <class A, class... Args>
  actor_ref<typename A::message_type> spawn(spawn_options options, Args&&... args) {
    return detail::spawn_actor<A>(detail::user_guardian(*impl_), std::move(options),
                                  std::forward<Args>(args)...);
  }
  /// Spawns a runtime actor under /system (sharding, cluster, ...).
  template <class A, class... Args>
  actor_ref<typename A::message_type> spawn_system_actor(spawn_options options, Args&&... args) {
    return detail::spawn_actor<A>(detail::system_guardian(*impl_), std::move(options),
                                  std::forward<Args>(args)...);
  }

  /// Stops an actor: its children first, then it; pending messages go to dead letters.
  void stop(const untyped_ref& ref);

  [[nodiscard]] const std::string& name() const noexcept;
  /// The configuration the system was created with.
  [[nodiscard]] const troupe::config& config() const noexcept;
  [[nodiscard]] troupe::clock& clock() const noexcept;
  [[nodiscard]] dead_letter_office& dead_letters() noexcept;

  /// Records the runtime's hot-path figures into `registry` from now on; null stops recording.
  /// They are troupe_ask_duration_seconds{outcome} (each ask, from its start to its reply,
  /// timeout or failure, on the system's clock) and, for sharded types,
  /// troupe_shard_queue_wait_seconds{type} (1 delivery in 16). Without a registry those paths
  /// read no clock for it. The system keeps every registry it was given until it is destroyed.
  void record_metrics(std::shared_ptr<metrics_registry> registry);
  /// The registry given to record_metrics, or null.
  [[nodiscard]] std::shared_ptr<metrics_registry> recorded_metrics() const;

  /// For sockets and other Asio I/O objects; run by the system's I/O thread.
  [[nodiscard]] boost::asio::io_context& io_context() noexcept;

  /// Starts a graceful shutdown: every pending ask fails at once with errc::system_terminated
  /// (and so does every later ask), /user actors stop top-down (children before parents, each
  /// running post_stop), then /system actors; returns at once.
  void terminate();
  /// Blocks until terminated.
  void await_termination();
  /// Blocks until terminated or `timeout` passed; true when terminated.
  bool await_termination_for(duration timeout);
  [[nodiscard]] bool is_terminated() const noexcept;
  /// Blocks until SIGINT or SIGTERM (or terminate()), then runs the signal steps and shuts down
  /// gracefully; returns the signal number (0 when terminated otherwise).
  int run_until_signal();
  /// Adds a step that run_until_signal() runs when a signal arrives, before the shutdown: steps
  /// run newest first, one at a time, on run_until_signal's thread, and may block for a bounded
  /// time (a cluster node hands its shards off in one: cluster_node::leave). Returns the id
  /// remove_signal_step() takes.
  std::uint64_t add_signal_step(std::function<void()> step);
  /// Removes a step; an id that is not added (any more) is ignored.
  void remove_signal_step(std::uint64_t id);

  /// With manual scheduling: runs actors and I/O handlers on this thread until none has work;
  /// returns the number of turns and handlers run.
  std::size_t run_until_idle();

  /// The system's single instance of T, created on first use as T(actor_system&) and destroyed
  /// after the actors: how the layers above the core attach to a system (e.g. sharding).
  template <class T>
  T& extension() {
    return *static_cast<T*>(extension_slot(
        typeid(T), [this] { return std::shared_ptr<void>(std::make_shared<T>(*this)); }));
  }

  [[nodiscard]] detail::system_impl& impl() noexcept { return *impl_; }

 private:
  void run_signal_steps();
  void* extension_slot(const std::type_info& type,
                       const std::function<std::shared_ptr<void>()>& make);

  detail::intrusive_ptr<detail::system_impl> impl_;
};

}  // namespace troupe
