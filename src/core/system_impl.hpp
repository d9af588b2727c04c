#pragma once
/// INTERNAL. The runtime behind actor_system. Reference-counted: every actor cell keeps it alive
/// through its parent chain, so refs that outlive the actor_system never dangle.

#include <troupe/core/actor_system.hpp>
#include <troupe/core/detail/actor_cell.hpp>
#include <troupe/core/detail/ref_counted.hpp>
#include <troupe/core/detail/runtime_instruments.hpp>

#include "core/pending_asks.hpp"
#include "core/scheduler.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <array>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <typeindex>
#include <utility>
#include <vector>

namespace troupe::detail {

class system_impl final : public ref_counted {
 public:
  system_impl(actor_system& facade, system_config config);
  ~system_impl() override;

  /// Creates the guardians; separate from the constructor because they hold refs to us.
  void start();
  void terminate();
  bool await_termination_for(std::optional<duration> timeout);
  /// Manual scheduling: runs pending turns and I/O handlers on this thread until neither is
  /// left; returns how many ran.
  std::size_t run_manual_turns();
  /// Stops threads; after this, scheduling runs turns inline.
  void shutdown_threads();
  /// Drops our refs to the guardians (they hold us: the cycle ends here).
  void release_guardians();

  [[nodiscard]] const system_config& config() const noexcept { return config_; }
  [[nodiscard]] actor_system* facade() const noexcept { return facade_.load(); }
  void detach_facade() noexcept { facade_.store(nullptr); }
  [[nodiscard]] std::shared_ptr<troupe::clock> clock_ptr() const noexcept;
  [[nodiscard]] troupe::clock& clock() const noexcept { return *clock_; }
  /// Sleeps may use the workers' own timers: the system runs on its steady clock (a clock given
  /// in the config, e.g. a manual one, keeps every timer) and has workers.
  [[nodiscard]] bool worker_timers() const noexcept {
    return !config_.clock && !scheduler_.manual();
  }
  [[nodiscard]] dead_letter_office& dead_letters() noexcept { return dead_letters_; }
  [[nodiscard]] boost::asio::io_context& io() noexcept { return io_; }
  [[nodiscard]] scheduler& sched() noexcept { return scheduler_; }
  /// What the runtime records into now (null: nothing); see actor_system::record_metrics.
  [[nodiscard]] const runtime_instruments* instruments() const noexcept {
    return instruments_.load(std::memory_order_acquire);
  }
  void record_metrics(std::shared_ptr<metrics_registry> registry);

  /// The asks waiting for a reply; terminate() fails them.
  [[nodiscard]] pending_asks& asks() noexcept { return asks_; }
  [[nodiscard]] bool running() const noexcept {
    return !terminated_.load(std::memory_order_acquire);
  }
  [[nodiscard]] std::uint32_t throughput() const noexcept { return config_.throughput; }

  actor_cell& user_guardian() noexcept { return *user_guardian_; }
  actor_cell& system_guardian() noexcept { return *system_guardian_; }

  /// A guardian finished terminating.
  void guardian_terminated(actor_cell& guardian);
  /// Lock guarding the children list of `parent` (striped: cells carry no mutex of their own).
  std::mutex& children_lock(const actor_cell* parent) noexcept;
  /// A fresh name for an anonymous actor: "$" plus base-36 digits.
  std::string anonymous_name();

 private:
  std::atomic<actor_system*> facade_;
  system_config config_;
  std::shared_ptr<troupe::clock> clock_;
  dead_letter_office dead_letters_;
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> io_work_;
  std::thread io_thread_;
  scheduler scheduler_;
  pending_asks asks_;
  intrusive_ptr<actor_cell> user_guardian_;
  intrusive_ptr<actor_cell> system_guardian_;
  std::array<std::mutex, 64> children_locks_;
  std::atomic<const runtime_instruments*> instruments_{nullptr};
  // Every set ever attached, freed with the system (a worker may still hold an older one).
  std::mutex instruments_mutex_;
  std::vector<std::unique_ptr<runtime_instruments>> all_instruments_;
  std::atomic<std::uint64_t> anonymous_counter_{0};

  // Extensions may create others while being created (recursive lock); ordered by creation so
  // that they are destroyed in reverse.
  std::recursive_mutex extensions_mutex_;
  std::vector<std::pair<std::type_index, std::shared_ptr<void>>> extensions_;
  friend class troupe::actor_system;

  // run_until_signal's steps, by id (ids grow: newest last).
  std::mutex signal_steps_mutex_;
  std::map<std::uint64_t, std::function<void()>> signal_steps_;
  std::uint64_t next_signal_step_ = 1;

  std::mutex termination_mutex_;
  std::condition_variable termination_cv_;
  bool terminate_started_ = false;
  std::atomic<bool> terminated_{false};
};

}  // namespace troupe::detail
