#pragma once
// The queue between the callers of a store and its threads: callers submit, a worker takes what
// has queued up (a whole group, for a writer), and closing lets the workers drain it. The queue is
// bounded: a caller faster than the store for long gets errc::overloaded, not unbounded memory.

#include <troupe/persistence/errc.hpp>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace troupe::persistence::group_commit {

/// How many tasks a queue holds by default (16 groups of the default 4096).
inline constexpr std::size_t default_max_queued = 65536;

/// A queue of tasks (`Task` has fail() and complete(), as group_commit::task does).
template <class Task>
class task_queue {
 public:
  /// `store` names the store in the failure of a task submitted too late or too many;
  /// `max_queued` (at least 1) bounds the tasks waiting to be taken.
  explicit task_queue(std::string store, std::size_t max_queued = default_max_queued)
      : store_(std::move(store)), max_queued_(max_queued == 0 ? 1 : max_queued) {}
  task_queue(const task_queue&) = delete;
  task_queue& operator=(const task_queue&) = delete;

  /// Queues a task; after close() it completes at once with errc::store_closed, and when
  /// `max_queued` tasks already wait, with errc::overloaded (the tasks queued are unaffected).
  void submit(std::unique_ptr<Task> t) {
    bool closed = false;
    {
      std::scoped_lock lock(mutex_);
      if (!closing_ && queue_.size() < max_queued_) {
        queue_.push_back(std::move(t));
        // Notify under the lock: a worker may be destroyed as soon as it sees closing_.
        wake_.notify_one();
        return;
      }
      closed = closing_;
      if (!closed) ++refused_;
    }
    // Completed outside the lock: the caller's handler may submit again.
    t->fail(std::make_exception_ptr(
        closed ? persistence_error(errc::store_closed, store_ + " closed")
               : persistence_error(errc::overloaded,
                                   store_ + " overloaded: " + std::to_string(max_queued_) +
                                       " operations already queued")));
    t->complete();
  }

  /// Tasks refused with errc::overloaded so far.
  [[nodiscard]] std::uint64_t overloaded() const {
    std::scoped_lock lock(mutex_);
    return refused_;
  }

  /// Waits for tasks and takes up to `max` of them (appending to `out`); false when the queue is
  /// closed and empty.
  bool take(std::deque<std::unique_ptr<Task>>& out, std::size_t max) {
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [this] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) return false;
    while (!queue_.empty() && out.size() < max) {
      out.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    return true;
  }

  /// Refuses new tasks and wakes every worker; the tasks already queued are still taken.
  void close() {
    {
      std::scoped_lock lock(mutex_);
      closing_ = true;
    }
    wake_.notify_all();
  }

 private:
  std::string store_;
  std::size_t max_queued_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Task>> queue_;
  bool closing_ = false;
  std::uint64_t refused_ = 0;
};

}  // namespace troupe::persistence::group_commit
