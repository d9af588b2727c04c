#pragma once
// The writer's half of group commit, the same for every store: one thread takes what has queued
// up (at most a group), has the store run it as one transaction, counts it and hands it to the
// completer, which completes the callers while the next group runs.

#include "persistence/group_commit/completer.hpp"
#include "persistence/group_commit/group_metrics.hpp"
#include "persistence/group_commit/task_queue.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

namespace troupe::persistence::group_commit {

template <class Task>
class writer_loop {
 public:
  using batch = std::deque<std::unique_ptr<Task>>;

  /// `run_group` runs one group on the writer's thread; at most `max_queued` writes wait for it
  /// (see task_queue). Declare this object last in its owner: it is built after what run_group
  /// uses, and destroyed (its thread joined) before it. With `metrics` on, each write's time
  /// from submit to commit and each group's size are recorded.
  writer_loop(std::string store, std::size_t max_batch, std::size_t max_queued,
              std::function<void(batch&)> run_group, group_metrics metrics = {})
      : queue_(std::move(store), max_queued),
        max_batch_(max_batch == 0 ? 1 : max_batch),
        run_group_(std::move(run_group)),
        metrics_(std::move(metrics)),
        thread_([this] { loop(); }) {}
  /// Runs the writes still queued, then joins the thread.
  ~writer_loop() {
    queue_.close();
    thread_.join();
  }
  writer_loop(const writer_loop&) = delete;
  writer_loop& operator=(const writer_loop&) = delete;

  /// Queues a write; after close it completes at once with errc::store_closed, and with
  /// errc::overloaded when the queue is full.
  void submit(std::unique_ptr<Task> t) {
    // A clock read per write, only with metrics on: a write costs a disk's group commit anyway.
    if (metrics_.on()) t->submitted_at = std::chrono::steady_clock::now();
    queue_.submit(std::move(t));
  }

  /// Writes run so far.
  [[nodiscard]] std::uint64_t tasks_run() const noexcept {
    return tasks_run_.load(std::memory_order_relaxed);
  }

 private:
  void loop() {
    batch b;
    while (queue_.take(b, max_batch_)) {
      run_group_(b);
      tasks_run_.fetch_add(b.size(), std::memory_order_relaxed);
      if (metrics_.on()) record(b);
      completer_.hand_over(std::move(b));
      b.clear();
    }
  }

  // Committed (or refused): the callers are completed next, so this is their wait, less the
  // hop to their executors.
  void record(const batch& b) noexcept {
    const auto now = std::chrono::steady_clock::now();
    for (const auto& t : b) {
      metrics_.write_seconds->observe(std::chrono::duration<double>(now - t->submitted_at).count());
    }
    metrics_.group_size->observe(static_cast<double>(b.size()));
  }

  task_queue<Task> queue_;
  std::size_t max_batch_;
  std::function<void(batch&)> run_group_;
  group_metrics metrics_;
  std::atomic<std::uint64_t> tasks_run_{0};
  // Before the thread: destroyed after it, so it completes every batch the loop handed over.
  completer<Task> completer_;
  std::thread thread_;
};

}  // namespace troupe::persistence::group_commit
