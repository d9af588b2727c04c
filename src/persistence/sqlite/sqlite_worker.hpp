#pragma once
// The threads of the SQLite plugin. The writer owns the write connection and groups what is queued
// into one transaction (group commit): the transaction commits once, and only then are the callers
// completed. A write refused by a check (conflict, fence) changed nothing, so the others go on;
// any other failure makes the writer redo the group with one savepoint per write, so that failure
// is rolled back alone. The reader owns a read-only connection and runs tasks one by one.

#include "persistence/group_commit/task.hpp"
#include "persistence/group_commit/task_queue.hpp"
#include "persistence/group_commit/writer_loop.hpp"
#include "persistence/sqlite/sqlite_connection.hpp"
#include "persistence/sqlite/sqlite_heads.hpp"
#include "persistence/sqlite/sqlite_operations.hpp"

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <thread>
#include <utility>

namespace troupe::persistence::sqlite {

/// A write, run on the writer's session.
class write_task : public group_commit::task<write_session> {
 public:
  /// For an append: the request, so the writer can take a run of appends in one go.
  [[nodiscard]] virtual const append_request* append() const noexcept { return nullptr; }
  /// For an append done in a run: its outcome.
  virtual void set_outcome(group_commit::run_outcome /*outcome*/) noexcept {}
};
/// A read, run on the reader's connection.
using read_task = group_commit::task<connection>;

/// Makes a task completing `h` (a completion<T> or void_completion) with `fn(context)`, where the
/// context is a write_session (for a write_task) or a connection (for a read_task).
template <class Task, class T, class Handler, class Fn>
std::unique_ptr<Task> make_task(Handler h, Fn fn) {
  return std::make_unique<group_commit::typed_task<Task, T, Handler, Fn>>(std::move(h),
                                                                          std::move(fn));
}

/// Makes an append: in a run of appends it goes in with the others, alone it runs sqlite::append.
std::unique_ptr<write_task> make_append_task(append_request r, completion<sequence_nr> h);

/// The thread owning the write connection, committing what is queued in groups.
class writer {
 public:
  /// Takes the connection; `max_batch` bounds a group commit, `max_queued` the writes waiting.
  writer(std::unique_ptr<connection> c, std::size_t max_batch, std::size_t max_queued,
         group_commit::group_metrics metrics = {});
  writer(const writer&) = delete;
  writer& operator=(const writer&) = delete;

  /// Queues a write; after close it completes at once with errc::store_closed.
  void submit(std::unique_ptr<write_task> t) { loop_.submit(std::move(t)); }

  /// Writes run so far.
  [[nodiscard]] std::uint64_t tasks_run() const noexcept { return loop_.tasks_run(); }
  /// Transactions committed.
  [[nodiscard]] std::uint64_t transactions() const noexcept {
    return transactions_.load(std::memory_order_relaxed);
  }

 private:
  using batch = group_commit::writer_loop<write_task>::batch;

  void run_group(batch& b);
  bool try_group(batch& b, bool savepoints);
  /// Runs the writes in order, runs of appends in one go; false when one failed mid-way.
  bool run_in_runs(batch& b);
  /// Runs each write in a savepoint of its own, so that a failed one is rolled back alone.
  void run_with_savepoints(batch& b);
  /// Throws when a failed write made SQLite roll the whole transaction back.
  void check_still_open(bool ok) const;
  void rollback() noexcept;

  std::unique_ptr<connection> connection_;
  journal_heads heads_;
  write_session session_;
  std::atomic<std::uint64_t> transactions_{0};
  group_commit::writer_loop<write_task> loop_;  // last: its thread uses everything above
};

/// The thread owning a read-only connection, running reads one by one.
class reader {
 public:
  explicit reader(std::unique_ptr<connection> c);
  /// Runs the reads still queued, then joins the thread.
  ~reader();
  reader(const reader&) = delete;
  reader& operator=(const reader&) = delete;

  /// Queues a read; after close it completes at once with errc::store_closed.
  void submit(std::unique_ptr<read_task> t) { queue_.submit(std::move(t)); }

 private:
  void loop();

  std::unique_ptr<connection> connection_;
  group_commit::task_queue<read_task> queue_{"SQLite store"};
  std::thread thread_;
};

}  // namespace troupe::persistence::sqlite
