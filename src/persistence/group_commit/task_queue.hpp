#pragma once
// The queue between the callers of a store and its threads: callers submit, a worker takes what
// has queued up (a whole group, for a writer), and closing lets the workers drain it.

#include <troupe/persistence/errc.hpp>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace troupe::persistence::group_commit {

/// A queue of tasks (`Task` has fail() and complete(), as group_commit::task does).
template <class Task>
class task_queue {
 public:
  /// `store` names the store in the errc::store_closed failure of a task submitted too late.
  explicit task_queue(std::string store) : store_(std::move(store)) {}
  task_queue(const task_queue&) = delete;
  task_queue& operator=(const task_queue&) = delete;

  /// Queues a task; after close() it completes at once with errc::store_closed.
  void submit(std::unique_ptr<Task> t) {
    {
      std::scoped_lock lock(mutex_);
      if (!closing_) {
        queue_.push_back(std::move(t));
        // Notify under the lock: a worker may be destroyed as soon as it sees closing_.
        wake_.notify_one();
        return;
      }
    }
    t->fail(std::make_exception_ptr(persistence_error(errc::store_closed, store_ + " closed")));
    t->complete();
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
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Task>> queue_;
  bool closing_ = false;
};

}  // namespace troupe::persistence::group_commit
