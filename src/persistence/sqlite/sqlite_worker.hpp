#pragma once
// A thread that owns one SQLite connection and runs queued tasks on it. The writer worker groups
// what is queued into one transaction (group commit): the transaction commits once, and only then
// are the callers completed. A write refused by a check (conflict, fence) changed nothing, so the
// others go on; any other failure makes the worker redo the group with one savepoint per write,
// so that failure is rolled back alone. The reader worker runs tasks one by one.

#include <troupe/persistence/detail/completion.hpp>
#include <troupe/persistence/errc.hpp>

#include "persistence/sqlite/sqlite_connection.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

namespace troupe::persistence::sqlite {

/// One queued store operation.
class task {
 public:
  virtual ~task() = default;
  /// Runs the operation (again, if the group is redone); false when it failed (the failure is
  /// kept for complete()).
  virtual bool run(connection& c) noexcept = 0;
  /// After a failed run: true when the write refused before changing anything (a conflict or an
  /// epoch fence), so the transaction needs no rollback for it.
  [[nodiscard]] virtual bool refused_cleanly() const noexcept = 0;
  /// Replaces the outcome with `failure` (the transaction holding the task did not commit).
  virtual void fail(std::exception_ptr failure) noexcept = 0;
  /// Completes the caller with the outcome, on the caller's executor. noexcept on purpose: a
  /// handler without an executor runs right here, and if it throws, ending the process beats
  /// leaving the rest of its group commit uncompleted.
  virtual void complete() noexcept = 0;
};

/// A task whose body `fn(connection&)` returns T (or void) and completes `Handler`.
template <class T, class Handler, class Fn>
class typed_task final : public task {
 public:
  typed_task(Handler h, Fn fn) : done_(std::move(h)), fn_(std::move(fn)) {}

  bool run(connection& c) noexcept override {
    failure_ = nullptr;
    try {
      if constexpr (std::is_void_v<T>) {
        fn_(c);
      } else {
        result_.emplace(fn_(c));
      }
      return true;
    } catch (...) {
      failure_ = std::current_exception();
      return false;
    }
  }

  [[nodiscard]] bool refused_cleanly() const noexcept override {
    try {
      std::rethrow_exception(failure_);
    } catch (const persistence_error& e) {
      return e.value() == errc::sequence_conflict || e.value() == errc::epoch_fenced ||
             e.value() == errc::revision_conflict;
    } catch (...) {
      return false;
    }
  }

  void fail(std::exception_ptr failure) noexcept override {
    failure_ = std::move(failure);
    if constexpr (!std::is_void_v<T>) result_.reset();
  }

  void complete() noexcept override {
    if constexpr (std::is_void_v<T>) {
      std::move(done_).complete(failure_);
    } else {
      std::move(done_).complete(failure_, result_ ? std::move(*result_) : T{});
    }
  }

 private:
  using result_type = std::conditional_t<std::is_void_v<T>, char, T>;

  persistence::detail::pending<Handler> done_;
  Fn fn_;
  std::optional<result_type> result_;
  std::exception_ptr failure_;
};

/// Makes a task completing `h` (a completion<T> or void_completion) with `fn(connection&)`.
template <class T, class Handler, class Fn>
std::unique_ptr<task> make_task(Handler h, Fn fn) {
  return std::make_unique<typed_task<T, Handler, Fn>>(std::move(h), std::move(fn));
}

/// A thread owning a connection, running the tasks queued to it.
class worker {
 public:
  enum class mode { group_commit, one_by_one };

  /// Takes the connection; `max_batch` bounds a group commit.
  worker(std::unique_ptr<connection> c, mode m, std::size_t max_batch);
  /// Runs the tasks still queued, then joins the thread.
  ~worker();
  worker(const worker&) = delete;
  worker& operator=(const worker&) = delete;

  /// Queues a task; after close() it completes at once with errc::store_closed.
  void submit(std::unique_ptr<task> t);

  /// Tasks run; for the writer, writes.
  [[nodiscard]] std::uint64_t tasks_run() const noexcept {
    return tasks_run_.load(std::memory_order_relaxed);
  }
  /// Transactions committed (group commit only).
  [[nodiscard]] std::uint64_t transactions() const noexcept {
    return transactions_.load(std::memory_order_relaxed);
  }

 private:
  void loop();
  void run_group(std::deque<std::unique_ptr<task>>& batch);
  bool try_group(std::deque<std::unique_ptr<task>>& batch, bool savepoints);
  void rollback() noexcept;
  void run_each(std::deque<std::unique_ptr<task>>& batch);

  std::unique_ptr<connection> connection_;
  mode mode_;
  std::size_t max_batch_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<task>> queue_;
  bool closing_ = false;

  std::atomic<std::uint64_t> tasks_run_{0};
  std::atomic<std::uint64_t> transactions_{0};
  std::thread thread_;
};

}  // namespace troupe::persistence::sqlite
