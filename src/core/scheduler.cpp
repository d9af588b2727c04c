#include "core/scheduler.hpp"

#include <troupe/core/detail/real_time_use.hpp>

#include "core/timer_queue.hpp"

#include <boost/asio/detail/thread_context.hpp>
#include <boost/asio/detail/thread_info_base.hpp>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <optional>

namespace troupe::detail {

namespace {

/// A full barrier between our last write and our next read (the park/notify handshake).
/// ThreadSanitizer does not model fences, so there a seq_cst RMW stands in for it.
inline void store_load_barrier(std::atomic<int>& on) noexcept {
#if defined(__SANITIZE_THREAD__)
  on.fetch_add(0, std::memory_order_seq_cst);
#else
  (void)on;
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

// How long an idle worker looks for work before it parks (waking a parked core costs ~30 us).
constexpr auto spin_budget = std::chrono::microseconds(50);
// An idle worker whose next timer is this close spins to it instead of parking: waking from a
// timed wait costs ~30 us on this kind of VM, which a 1 ms sleep would pay every time.
constexpr auto timer_spin_window = std::chrono::microseconds(120);
// A parked worker looks for work at least this often, whatever woke it or not: a safety net
// under the park/notify handshake. A lost wake-up has been seen (an actor left in the global
// queue with both workers idle, about 1 in 10 runs of TwoWorkersRunTwoActorsAtTheSameTime on
// a loaded VM) and not yet explained; it now costs at most this long instead of for ever.
constexpr auto park_backstop = std::chrono::milliseconds(20);
// A worker fires another's timers between its own turns once they are this late; it looks
// every this many passes of its loop.
constexpr auto overdue_timer_grace = std::chrono::microseconds(50);
constexpr std::uint32_t overdue_check_interval = 8;
// Every this many pops while actors wait in front of a worker's queue, the oldest one behind them
// goes first instead.
constexpr std::uint32_t back_turn_interval = 32;
// Every this many passes a worker takes from the global queue before its own: actors woken by
// threads that are no workers (a producer's tells wake shards) would otherwise wait as long as
// the workers' own queues never run dry.
constexpr std::uint32_t global_queue_interval = 61;
// Local timer ids: the top bit, the worker's index, 24 bits of the slot's generation, the slot.
constexpr unsigned local_timer_generation_bits = 24;
constexpr std::size_t max_local_timer_workers = 128;
// Consecutive runs from the next slot before the local queue gets a turn (fairness).
constexpr int max_next_slot_streak = 32;

/// Asio recycles coroutine frames and cancellation-handler memory per thread, but only on threads
/// it knows; a worker introduces itself, so a coroutine handler reuses the frames the previous
/// one freed instead of calling aligned_alloc and free.
class asio_thread_scope : boost::asio::detail::thread_context {
 public:
  asio_thread_scope() : context_(this, info_) {}

 private:
  boost::asio::detail::thread_info_base info_;
  thread_call_stack::context context_;
};

}  // namespace

struct scheduler::worker {
  scheduler* owner = nullptr;
  std::size_t index = 0;
  actor_cell* next_slot = nullptr;  // only the worker's own thread touches it
  bool next_continues = false;      // next_slot's actor is mid-way (see schedule())
  int next_streak = 0;
  std::uint32_t passes = 0;    // of the loop: now and then it looks at shared queues
  bool firing_timers = false;  // inside run_timers_due_by() on this thread
  spinlock lock;
  std::deque<actor_cell*> local;
  std::atomic<std::size_t> local_size{0};
  // Under `lock`: how many of `local`'s first actors were put in front, and pops taken from
  // those (every back_turn_interval-th goes to the back's oldest instead).
  std::size_t ahead = 0;
  std::uint32_t pops_ahead = 0;
  std::mutex park_mutex;
  std::condition_variable park_cv;
  bool parked = false;
  bool notified = false;
  std::thread thread;
  // Timers armed by turns on this worker (a coroutine's sleep_for): fired here between turns.
  spinlock timer_lock;
  timer_queue timers;
  std::atomic<std::size_t> timer_count{0};
  // The earliest deadline in steady-clock ticks: the loop looks at it without the lock.
  std::atomic<std::int64_t> next_due{0};

  // Under timer_lock, after every change.
  void timers_changed() noexcept {
    timer_count.store(timers.size(), std::memory_order_relaxed);
    next_due.store(timers.empty() ? 0 : timers.next_deadline().time_since_epoch().count(),
                   std::memory_order_relaxed);
  }

  void push_local_front(actor_cell* c) noexcept {
    std::lock_guard g(lock);
    // Behind the actors put in front before it: in front they keep their order, or a stream
    // of newer ones (a sleep's completion on every pass) would bury an older one, the hot key.
    local.insert(local.begin() + static_cast<std::ptrdiff_t>(ahead), c);
    ++ahead;
    local_size.store(local.size(), std::memory_order_relaxed);
  }
  void push_local(actor_cell* c) noexcept {
    std::lock_guard g(lock);
    local.push_back(c);
    local_size.store(local.size(), std::memory_order_relaxed);
  }
  actor_cell* pop_local() noexcept {
    if (local_size.load(std::memory_order_relaxed) == 0) return nullptr;
    std::lock_guard g(lock);
    if (local.empty()) return nullptr;
    // Now and then the oldest actor that queued at the back goes first, so that actors put in
    // front (mid-way, see schedule()) cannot hold back the rest for ever.
    std::size_t at = 0;
    if (ahead > 0 && ahead < local.size() && ++pops_ahead % back_turn_interval == 0) at = ahead;
    actor_cell* c = local[at];
    local.erase(local.begin() + static_cast<std::ptrdiff_t>(at));
    if (at == 0 && ahead > 0) --ahead;
    local_size.store(local.size(), std::memory_order_relaxed);
    return c;
  }
};

namespace {
thread_local scheduler::worker* tls_worker = nullptr;  // NOLINT
}  // namespace

scheduler::scheduler(std::size_t workers, std::string name) : name_(std::move(name)) {
  for (std::size_t i = 0; i < workers; ++i) {
    auto w = std::make_unique<worker>();
    w->owner = this;
    w->index = i;
    workers_.push_back(std::move(w));
  }
  for (auto& w : workers_) {
    note_real_time_use("a scheduler worker thread");
    w->thread = std::thread([this, wp = w.get()] { run_worker(*wp); });
  }
}

scheduler::~scheduler() { shutdown(); }

void scheduler::shutdown() {
  if (stopped_.exchange(true)) return;
  stopping_.store(true);
  for (auto& w : workers_) {
    {
      std::lock_guard g(w->park_mutex);
      w->notified = true;
    }
    w->park_cv.notify_one();
  }
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
  // Whatever is still queued belongs to cells that will only drain; run them here.
  for (;;) {
    actor_cell* c = nullptr;
    {
      // Not pop_global(): its unlocked size check may miss a push that just took the lock.
      std::lock_guard g(global_lock_);
      if (!global_.empty()) {
        c = global_.front();
        global_.pop_front();
        global_size_.store(global_.size(), std::memory_order_relaxed);
      }
    }
    for (auto& w : workers_) {
      if (c == nullptr) c = w->pop_local();
    }
    if (c == nullptr) break;
    run_cell(c);
  }
}

void scheduler::run_cell(actor_cell* cell) noexcept {
  cell->run_turn();
  cell->release();
}

void scheduler::schedule(actor_cell* cell, bool mid_way) noexcept {
  cell->add_ref();
  worker* w = tls_worker;
  if (w != nullptr && w->owner == this && !stopping_.load(std::memory_order_relaxed)) {
    // The woken actor runs next on this core; the one it displaces becomes stealable. A
    // displaced actor that is mid-way (a timer resumes its handler, or its turn stopped at the
    // budget or a full batch: a busy shard, a hot key) goes to the front: at the back it would
    // wait behind the whole backlog, and a hot key's serial chain with it. Others take their
    // turn at the back.
    if (mid_way && cell == current_cell()) {
      // Its own turn ended with a backlog (a busy shard at its budget): in front, behind the
      // actors put there before it. In the next slot a streak of such turns would end at the
      // back of the queue, behind every fresh wake-up (measured: 0.5 s, with the hot key that
      // the shard feeds idle all that time).
      w->push_local_front(cell);
      notify_one();
      return;
    }
    actor_cell* displaced = w->next_slot;
    const bool displaced_continues = w->next_continues;
    w->next_slot = cell;
    w->next_continues = w->firing_timers || mid_way;
    if (displaced != nullptr) {
      if (displaced_continues) {
        w->push_local_front(displaced);
      } else {
        w->push_local(displaced);
      }
      notify_one();
    }
    return;
  }
  {
    // Decided under the queue's lock: shutdown() sets stopped_ and then drains the queue under
    // the same lock, so a cell is either drained there or run here, never stranded.
    std::unique_lock g(global_lock_);
    if (!stopped_.load(std::memory_order_acquire)) {
      global_.push_back(cell);
      global_size_.store(global_.size(), std::memory_order_relaxed);
      g.unlock();
      if (!manual()) notify_one();
      return;
    }
  }
  run_cell(cell);
}

void scheduler::push_global(actor_cell* cell) noexcept {
  std::lock_guard g(global_lock_);
  global_.push_back(cell);
  global_size_.store(global_.size(), std::memory_order_relaxed);
}

actor_cell* scheduler::pop_global() noexcept {
  if (global_size_.load(std::memory_order_relaxed) == 0) return nullptr;
  std::lock_guard g(global_lock_);
  if (global_.empty()) return nullptr;
  actor_cell* c = global_.front();
  global_.pop_front();
  global_size_.store(global_.size(), std::memory_order_relaxed);
  return c;
}

void scheduler::notify_one() noexcept {
  // Pairs with the barrier in park(): either we see the parked count or it sees our work.
  store_load_barrier(parked_);
  if (parked_.load(std::memory_order_seq_cst) == 0) return;
  if (spinning_.load(std::memory_order_seq_cst) > 0) return;  // a spinner will find it
  for (auto& w : workers_) {
    std::unique_lock g(w->park_mutex);
    if (w->parked && !w->notified) {
      w->notified = true;
      g.unlock();
      w->park_cv.notify_one();
      return;
    }
  }
}

actor_cell* scheduler::steal(worker& thief) noexcept {
  const std::size_t n = workers_.size();
  for (std::size_t i = 1; i < n; ++i) {
    worker& victim = *workers_[(thief.index + i) % n];
    if (victim.local_size.load(std::memory_order_relaxed) == 0) continue;
    // Take half of the victim's queue so a thief does not come back for every actor.
    std::deque<actor_cell*> taken;
    {
      std::lock_guard g(victim.lock);
      const std::size_t count = (victim.local.size() + 1) / 2;
      for (std::size_t k = 0; k < count; ++k) {
        taken.push_back(victim.local.back());
        victim.local.pop_back();
      }
      victim.ahead = std::min(victim.ahead, victim.local.size());
      victim.local_size.store(victim.local.size(), std::memory_order_relaxed);
    }
    if (taken.empty()) continue;
    actor_cell* first = taken.back();
    taken.pop_back();
    if (!taken.empty()) {
      std::lock_guard g(thief.lock);
      for (auto it = taken.rbegin(); it != taken.rend(); ++it) thief.local.push_back(*it);
      thief.local_size.store(thief.local.size(), std::memory_order_relaxed);
    }
    return first;
  }
  return nullptr;
}

timer_id scheduler::add_local_timer(time_point at, clock::callback& fn) {
  worker* w = tls_worker;
  if (w == nullptr || w->owner != this || w->index >= max_local_timer_workers) return 0;
  timer_id id;
  {
    std::lock_guard g(w->timer_lock);
    id = w->timers.insert(at, std::move(fn));
    w->timers_changed();
  }
  const std::uint64_t generation = (id >> 32U) & ((1ULL << local_timer_generation_bits) - 1);
  return (1ULL << 63U) | (static_cast<std::uint64_t>(w->index) << 56U) | (generation << 32U) |
         (id & 0xffffffffULL);
}

bool scheduler::cancel_local_timer(timer_id id) noexcept {
  const auto index = static_cast<std::size_t>((id >> 56U) & 0x7fU);
  if (!is_local_timer(id) || index >= workers_.size()) return false;
  worker& w = *workers_[index];
  clock::callback dropped;  // destroyed unlocked: it may hold the last ref of an actor
  std::lock_guard g(w.timer_lock);
  const bool erased = w.timers.erase(id & ~(0xffULL << 56U), dropped, local_timer_generation_bits);
  w.timers_changed();
  return erased;
}

bool scheduler::run_due_timers(worker& w, bool steal) noexcept {
  if (w.timer_count.load(std::memory_order_relaxed) == 0) return false;
  return run_timers_due_by(w, std::chrono::steady_clock::now(), steal);
}

bool scheduler::run_timers_due_by(worker& w, time_point now, bool steal) noexcept {
  // Checked on every pass of the worker loop: nothing due costs no lock.
  if (now.time_since_epoch().count() < w.next_due.load(std::memory_order_relaxed)) return false;
  bool fired = false;
  for (;;) {
    clock::callback fn;
    {
      std::unique_lock g(w.timer_lock, std::defer_lock);
      if (steal) {
        if (!g.try_lock()) return fired;
      } else {
        g.lock();
      }
      auto due = w.timers.pop_due(now);
      if (!due) return fired;
      fn = std::move(*due);
      w.timers_changed();
    }
    // What the callback schedules lands on this thread's worker (the thief's, when stealing).
    worker* self = tls_worker;
    if (self != nullptr) self->firing_timers = true;
    fn();
    if (self != nullptr) self->firing_timers = false;
    fired = true;
  }
}

bool scheduler::steal_due_timers(worker& thief) noexcept {
  bool fired = false;
  for (auto& other : workers_) {
    if (other.get() != &thief) fired = run_due_timers(*other, true) || fired;
  }
  return fired;
}

void scheduler::run_timers_between_turns(worker& w) noexcept {
  run_due_timers(w, false);
  // Now and then, another worker's timers overdue by more than the grace: that worker is inside
  // a long turn, or the OS has taken its core (threads outnumber cores). Not on every pass:
  // their queue's cache lines change with every timer, and reading them costs a miss.
  if (w.passes % overdue_check_interval != 0) return;
  const std::size_t n = workers_.size();
  for (std::size_t i = 1; i < n; ++i) {
    worker& other = *workers_[(w.index + i) % n];
    if (other.timer_count.load(std::memory_order_relaxed) == 0) continue;
    run_timers_due_by(other, std::chrono::steady_clock::now() - overdue_timer_grace, true);
  }
}

actor_cell* scheduler::find_work(worker& w) noexcept {
  if (actor_cell* c = w.pop_local()) return c;
  if (actor_cell* c = pop_global()) return c;
  return steal(w);
}

bool scheduler::has_work() noexcept {
  if (global_size_.load(std::memory_order_seq_cst) != 0) return true;
  for (auto& w : workers_) {
    if (w->local_size.load(std::memory_order_seq_cst) != 0) return true;
  }
  return false;
}

void scheduler::park(worker& w) {
  // With timers of its own, the worker wakes a little before the first (and spins to it).
  std::optional<time_point> wake_at;
  {
    std::lock_guard g(w.timer_lock);
    if (!w.timers.empty()) wake_at = w.timers.next_deadline() - timer_spin_window;
  }
  const auto backstop = std::chrono::steady_clock::now() + park_backstop;
  if (!wake_at || *wake_at > backstop) wake_at = backstop;
  {
    std::lock_guard g(w.park_mutex);
    w.parked = true;
  }
  parked_.fetch_add(1, std::memory_order_seq_cst);
  store_load_barrier(parked_);
  if (!has_work() && !stopping_.load()) {
    std::unique_lock g(w.park_mutex);
    auto woken = [&] { return w.notified || stopping_.load(); };
    w.park_cv.wait_until(g, *wake_at, woken);
  }
  parked_.fetch_sub(1, std::memory_order_seq_cst);
  std::lock_guard g(w.park_mutex);
  w.parked = false;
  w.notified = false;
}

bool scheduler::timer_due_soon(worker& w, time_point now) noexcept {
  if (w.timer_count.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard g(w.timer_lock);
  return !w.timers.empty() && w.timers.next_deadline() <= now + timer_spin_window;
}

void scheduler::run_worker(worker& w) {
  const asio_thread_scope asio_scope;
  tls_worker = &w;
  const std::string thread_name = (name_.substr(0, 10) + "-w" + std::to_string(w.index));
  ::pthread_setname_np(::pthread_self(), thread_name.c_str());
  while (!stopping_.load(std::memory_order_relaxed)) {
    // Due timers first: each completion lands in this worker's next slot.
    ++w.passes;
    run_timers_between_turns(w);
    // Now and then the global queue goes first (the next slot keeps its actor meanwhile).
    actor_cell* cell = w.passes % global_queue_interval == 0 ? pop_global() : nullptr;
    if (cell != nullptr) {
      run_cell(cell);
      continue;
    }
    if (w.next_slot != nullptr && w.next_streak < max_next_slot_streak) {
      cell = w.next_slot;
      w.next_slot = nullptr;
      ++w.next_streak;
    } else {
      w.next_streak = 0;
      if (w.next_slot != nullptr) {
        w.push_local(w.next_slot);
        w.next_slot = nullptr;
      }
      cell = find_work(w);
    }
    if (cell != nullptr) {
      run_cell(cell);
      continue;
    }
    // Nothing found: spin a little (longer while a timer of its own is about to fall due),
    // firing due timers, this worker's or a busy one's; then park.
    spinning_.fetch_add(1, std::memory_order_seq_cst);
    const auto until = std::chrono::steady_clock::now() + spin_budget;
    bool fired = false;
    for (int i = 0; cell == nullptr && !stopping_.load(std::memory_order_relaxed); ++i) {
      cell = find_work(w);
      if (cell != nullptr) break;
      if ((i & 15) == 15 && (run_due_timers(w, false) || steal_due_timers(w))) {
        fired = true;
        break;
      }
      cpu_relax();
      if ((i & 63) == 63) {
        // A few microseconds apart, the core goes to any other thread waiting for it: with
        // more runnable threads than cores (a node's io thread, another process's workers),
        // a spinner would otherwise hold the core the work it waits for must come from.
        ::sched_yield();
        const auto now = std::chrono::steady_clock::now();
        if (now > until && !timer_due_soon(w, now)) break;
      }
    }
    spinning_.fetch_sub(1, std::memory_order_seq_cst);
    if (cell != nullptr) {
      notify_one();  // there may be more where this came from
      run_cell(cell);
      continue;
    }
    if (fired || w.next_slot != nullptr) continue;
    park(w);
  }
  if (w.next_slot != nullptr) {
    push_global(w.next_slot);
    w.next_slot = nullptr;
  }
  tls_worker = nullptr;
}

std::size_t scheduler::run_until_idle() {
  std::size_t turns = 0;
  while (actor_cell* c = pop_global()) {
    run_cell(c);
    ++turns;
  }
  return turns;
}

}  // namespace troupe::detail
