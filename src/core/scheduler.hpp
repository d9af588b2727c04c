#pragma once
/// INTERNAL. Runs actor turns on worker threads. Each worker keeps a "next" slot (the actor its
/// current turn just woke, run next on the same core: ping-pong stays cache-hot and never
/// crosses threads) and a local queue others can steal from. Idle workers spin briefly before
/// they park, because waking a parked core costs ~30 us here.

#include <troupe/core/clock.hpp>
#include <troupe/core/detail/actor_cell.hpp>
#include <troupe/core/detail/spinlock.hpp>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace troupe::detail {

class scheduler {
 public:
  /// `workers` == 0: manual scheduling (run_until_idle on the caller's thread).
  scheduler(std::size_t workers, std::string name);
  ~scheduler();
  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;

  /// Queues a cell whose `scheduled` bit the caller just set. After shutdown, runs the turn
  /// inline (dead cells draining their mail). `mid_way`: the cell's own turn just ended with a
  /// backlog left; pushed out of a worker's next slot, it keeps its place in line.
  void schedule(actor_cell* cell, bool mid_way = false) noexcept;
  /// Wakes a parked worker, if no worker is awake, so that work about to arrive (a timer's
  /// completion) finds one spinning.
  void wake_one() noexcept { notify_one(); }
  /// On one of this scheduler's workers, takes `fn` on that worker's own timers and returns
  /// its id: the worker fires it between turns (no clock thread, no cross-thread wake-up when it
  /// fires). Elsewhere returns 0 and the caller uses the clock.
  timer_id add_local_timer(time_point at, clock::callback& fn);
  /// Cancels a timer add_local_timer() queued; false when it has fired (or is firing).
  bool cancel_local_timer(timer_id id) noexcept;
  [[nodiscard]] static bool is_local_timer(timer_id id) noexcept { return (id >> 63U) != 0; }
  /// Stops and joins the workers.
  void shutdown();
  std::size_t run_until_idle();
  [[nodiscard]] bool manual() const noexcept { return workers_.empty(); }

  struct worker;  // public only so the thread-local "current worker" can name it

 private:
  void run_worker(worker& w);
  actor_cell* find_work(worker& w) noexcept;
  actor_cell* steal(worker& thief) noexcept;
  actor_cell* pop_global() noexcept;
  void push_global(actor_cell* cell) noexcept;
  [[nodiscard]] bool has_work() noexcept;
  void park(worker& w);
  // Fires `w`'s due timers on this thread; `steal` only tries the lock (another worker's).
  bool run_due_timers(worker& w, bool steal) noexcept;
  // Fires those of `w`'s timers due by `now`.
  bool run_timers_due_by(worker& w, time_point now, bool steal) noexcept;
  // Between turns: this worker's due timers, and other workers' overdue ones.
  void run_timers_between_turns(worker& w) noexcept;
  // Another worker's due timers, when this one has nothing else to do.
  bool steal_due_timers(worker& thief) noexcept;
  // Whether `w`'s earliest timer falls due within the spin window after `now`.
  bool timer_due_soon(worker& w, time_point now) noexcept;
  void notify_one() noexcept;
  static void run_cell(actor_cell* cell) noexcept;

  std::string name_;
  std::vector<std::unique_ptr<worker>> workers_;
  spinlock global_lock_;
  std::deque<actor_cell*> global_;
  std::atomic<std::size_t> global_size_{0};
  std::atomic<int> parked_{0};
  std::atomic<int> spinning_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> stopped_{false};
};

}  // namespace troupe::detail
