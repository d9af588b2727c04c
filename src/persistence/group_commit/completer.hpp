#pragma once
// The thread that completes the callers of committed groups, so that a writer can begin its next
// group while the callers of the last one are being completed. Completing a caller costs about as
// much as writing its row (a dispatch to the caller's executor, freeing the task); done on the
// writer's thread it delays every following group.

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

namespace troupe::persistence::group_commit {

/// Completes batches of tasks (`Task` has complete(), as group_commit::task does) in the order
/// they were handed over, each task in its batch's order.
template <class Task>
class completer {
 public:
  using batch = std::deque<std::unique_ptr<Task>>;

  completer() : thread_([this] { loop(); }) {}
  /// Completes every batch handed over, then joins the thread.
  ~completer() {
    {
      std::scoped_lock lock(mutex_);
      closing_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  completer(const completer&) = delete;
  completer& operator=(const completer&) = delete;

  /// Queues a finished batch (committed, or failed as a whole) for completion.
  void hand_over(batch b) {
    {
      std::scoped_lock lock(mutex_);
      batches_.push_back(std::move(b));
    }
    wake_.notify_one();
  }

 private:
  void loop() {
    for (;;) {
      batch b;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [this] { return closing_ || !batches_.empty(); });
        if (batches_.empty()) return;  // closing, and everything handed over is done
        b = std::move(batches_.front());
        batches_.pop_front();
      }
      for (auto& t : b) t->complete();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<batch> batches_;
  bool closing_ = false;
  std::thread thread_;  // last: it starts once the members above exist
};

}  // namespace troupe::persistence::group_commit
