#include <troupe/core/boottime_clock.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/core/detail/real_time_use.hpp>

#include "core/timer_queue.hpp"

#include <sys/prctl.h>
#include <time.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace troupe {

namespace {

/// The real clock: one thread sleeping until the earliest deadline. The thread owns the shared
/// state, so the clock may be destroyed from inside one of its own callbacks.
class steady_clock_source final : public clock {
 public:
  explicit steady_clock_source(bool boottime) : shared_(std::make_shared<shared>()) {
    shared_->boottime = boottime;
    detail::note_real_time_use("a real clock's timer thread");
    thread_ = std::thread([s = shared_] { run(*s); });
  }

  ~steady_clock_source() override {
    {
      std::lock_guard lock(shared_->mutex);
      shared_->stopping = true;
    }
    shared_->wake.notify_one();
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();
    } else {
      thread_.join();
    }
  }

  [[nodiscard]] time_point now() const noexcept override {
    detail::note_real_time_use("a read of a real clock");
    return read(*shared_);
  }

  timer_id schedule_at(time_point at, callback fn) override {
    bool earliest;
    timer_id id;
    {
      std::lock_guard lock(shared_->mutex);
      earliest = shared_->queue.empty() || at < shared_->queue.next_deadline();
      id = shared_->queue.insert(at, std::move(fn));
    }
    if (earliest) {
      shared_->earlier.store(true, std::memory_order_release);  // ends a spin (see run)
      shared_->wake.notify_one();
    }
    return id;
  }

  void set_wake_hint(callback hint) override {
    std::lock_guard lock(shared_->mutex);
    shared_->wake_hint = std::move(hint);
  }

  bool cancel(timer_id id) noexcept override {
    clock::callback dropped;  // destroyed outside the lock: it may hold the last ref of an actor
    std::lock_guard lock(shared_->mutex);
    return shared_->queue.erase(id, dropped);
  }

 private:
  struct shared {
    std::mutex mutex;
    std::condition_variable wake;
    detail::timer_queue queue;
    bool stopping = false;
    // Set when a timer became the earliest: a spinning thread looks again.
    std::atomic<bool> earlier{false};
    callback wake_hint;     // called under the mutex: set_wake_hint(nullptr) waits for it
    bool boottime = false;  // set before the thread starts, never changed
  };

  // The condition variable waits on CLOCK_MONOTONIC, which stops while the machine is
  // suspended; a boottime clock's thread therefore sleeps at most this long at a time, so a
  // deadline that passed during a suspend runs at most this late after the resume.
  static constexpr duration boottime_max_sleep = std::chrono::milliseconds(100);

  /// The time on this clock's source.
  static time_point read(const shared& s) noexcept {
    if (!s.boottime) return std::chrono::steady_clock::now();
    timespec ts{};
    ::clock_gettime(CLOCK_BOOTTIME, &ts);
    return time_point(std::chrono::duration_cast<duration>(std::chrono::seconds(ts.tv_sec) +
                                                           std::chrono::nanoseconds(ts.tv_nsec)));
  }

  /// Sleeps until `until` on this clock's source, a notify or a spurious wake-up.
  static void sleep_until(shared& s, std::unique_lock<std::mutex>& lock, time_point until) {
    if (!s.boottime) {
      s.wake.wait_until(lock, until);
      return;
    }
    s.wake.wait_for(lock, std::min(until - read(s), boottime_max_sleep));
  }

  // How long before a deadline the thread stops sleeping and spins: waking from a timed wait
  // costs ~30 us on this kind of VM (idle vCPUs halt), which a 1 ms await would pay every time.
  static constexpr duration spin_window = std::chrono::microseconds(60);
  // With more timers pending than this the thread sleeps to each deadline instead.
  static constexpr std::size_t spin_max_pending = 256;

  /// Spins until `deadline`, a new earliest timer or a stop, whichever comes first.
  static void spin_until(shared& s, time_point deadline) {
    while (read(s) < deadline) {
      if (s.earlier.load(std::memory_order_acquire)) return;
      for (int i = 0; i < 32; ++i) cpu_relax();
    }
  }

  static void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  static void run(shared& s) {
    // Deadlines of 1 ms matter here; the default 50 us slack would dominate their lateness.
    ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    std::vector<clock::callback> due;
    std::unique_lock lock(s.mutex);
    while (!s.stopping) {
      if (s.queue.empty()) {
        s.wake.wait(lock);
        continue;
      }
      const time_point next = s.queue.next_deadline();
      const time_point now_before = read(s);
      if (next > now_before) {
        if (next - now_before > spin_window) {
          sleep_until(s, lock, next - spin_window);
        } else {
          if (s.wake_hint) s.wake_hint();
          if (s.queue.size() > spin_max_pending) {
            // Deadlines this dense keep the thread busy anyway; spinning would take a core
            // from the workers that run the completions.
            sleep_until(s, lock, next);
            continue;
          }
          s.earlier.store(false, std::memory_order_relaxed);
          lock.unlock();
          spin_until(s, next);
          lock.lock();
        }
        continue;
      }
      // Take everything due under one lock: thousands of 1 ms timers expire together.
      const time_point now = read(s);
      while (auto fn = s.queue.pop_due(now)) due.push_back(std::move(*fn));
      lock.unlock();
      for (auto& fn : due) fn();
      due.clear();  // destroyed unlocked: a callback may hold the last ref of an actor
      lock.lock();
    }
    // Callbacks left behind hold refs; drop them without running.
    detail::timer_queue leftover = std::move(s.queue);
    lock.unlock();
  }

  std::shared_ptr<shared> shared_;
  std::thread thread_;
};

}  // namespace

std::shared_ptr<clock> make_steady_clock() { return std::make_shared<steady_clock_source>(false); }

std::shared_ptr<clock> make_boottime_clock() { return std::make_shared<steady_clock_source>(true); }

// -- manual clock -----------------------------------------------------------------------------

struct manual_clock::state {
  mutable std::mutex mutex;
  time_point now{std::chrono::hours(1)};  // not zero, so "now - d" stays valid in tests
  detail::timer_queue queue;
};

manual_clock::manual_clock() : state_(std::make_unique<state>()) {}
manual_clock::~manual_clock() = default;

time_point manual_clock::now() const noexcept {
  std::lock_guard lock(state_->mutex);
  return state_->now;
}

timer_id manual_clock::schedule_at(time_point at, callback fn) {
  std::lock_guard lock(state_->mutex);
  return state_->queue.insert(at, std::move(fn));
}

bool manual_clock::cancel(timer_id id) noexcept {
  clock::callback dropped;
  std::lock_guard lock(state_->mutex);
  return state_->queue.erase(id, dropped);
}

void manual_clock::advance(duration d) {
  std::unique_lock lock(state_->mutex);
  const time_point target = state_->now + d;
  for (;;) {
    if (state_->queue.empty() || state_->queue.next_deadline() > target) break;
    // Time stands at each deadline while its callback runs, as it would on a real clock.
    if (state_->queue.next_deadline() > state_->now) state_->now = state_->queue.next_deadline();
    auto fn = state_->queue.pop_due(state_->now);
    lock.unlock();
    (*fn)();
    fn.reset();
    lock.lock();
  }
  state_->now = target;
}

std::optional<time_point> manual_clock::next_deadline() const {
  std::lock_guard lock(state_->mutex);
  if (state_->queue.empty()) return std::nullopt;
  return state_->queue.next_deadline();
}

std::size_t manual_clock::pending() const {
  std::lock_guard lock(state_->mutex);
  return state_->queue.size();
}

}  // namespace troupe
