#pragma once
// The threads of the PostgreSQL plugin. The writer owns one connection and groups what is queued
// into one transaction (group commit): runs of appends become one COPY and runs of durable-state
// upserts a few statements, other writes run one after the other, the transaction commits once,
// and only then are the callers completed. A write refused by a check (conflict, fence) changed
// nothing, so the others go on; an SQL error aborts a PostgreSQL transaction, so the writer then
// redoes the group with one savepoint per write and that failure is rolled back alone. Readers run
// tasks one by one, each reader on its own connection. A connection the server dropped is opened
// again, and the interrupted work is redone once when it cannot have committed.

#include <troupe/persistence/detail/completion.hpp>

#include "persistence/group_commit/task.hpp"
#include "persistence/group_commit/task_queue.hpp"
#include "persistence/group_commit/writer_loop.hpp"
#include "persistence/postgres/pg_heads.hpp"
#include "persistence/postgres/pg_operations.hpp"
#include "persistence/postgres/pg_session.hpp"

#include <pqxx/transaction_base>

#include <atomic>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace troupe::persistence::pg {

/// The persistence_error a failure becomes (libpqxx errors turn into errc::store_failure).
std::exception_ptr as_persistence_error(const std::exception_ptr& e) noexcept;

/// What a task keeps of a failure: a lost connection and a transaction PostgreSQL rolled back (a
/// deadlock with another writer) escape run(), since they concern the whole group; anything else
/// becomes the task's persistence_error.
struct escalate_connection_failures {
  static std::exception_ptr kept(std::exception_ptr e);
};

/// What the writer needs to know of a write before it runs the group.
struct write_info {
  /// The persistence id written; empty for a write of no persistence id (remembered entities).
  std::string_view persistence_id;
  ownership_epoch epoch = 0;
  /// Deletes events (which changes the id's floor).
  bool deletes_events = false;
  /// Needs the journal's highest sequence number.
  bool needs_highest = false;
};

/// A queued write.
class write_task : public group_commit::task<write_session> {
 public:
  [[nodiscard]] virtual write_info info() const noexcept = 0;
  /// For an append: the request, so the writer can take a run of appends in one go.
  [[nodiscard]] virtual const append_request* append() const noexcept { return nullptr; }
  /// For a durable-state upsert: the request, so the writer can take a run of them in one go.
  [[nodiscard]] virtual const state_write* upsert() const noexcept { return nullptr; }
  /// For a write done in a run: its outcome.
  virtual void set_outcome(run_outcome /*outcome*/) noexcept {}
};

/// A queued read.
using read_task = group_commit::task<pqxx::transaction_base>;

/// Makes a write completing `h` with `fn(write_session&)` for the id `pid` (empty for none).
template <class T, class Handler, class Fn>
std::unique_ptr<write_task> make_write_task(Handler h, Fn fn, std::string pid,
                                            ownership_epoch epoch, bool deletes_events = false) {
  class body_task final
      : public group_commit::typed_task<write_task, T, Handler, Fn, escalate_connection_failures> {
   public:
    body_task(Handler h, Fn fn, std::string pid, ownership_epoch epoch, bool deletes_events)
        : body_task::typed_task(std::move(h), std::move(fn)),
          pid_(std::move(pid)),
          epoch_(epoch),
          deletes_events_(deletes_events) {}
    [[nodiscard]] write_info info() const noexcept override {
      return {pid_, epoch_, deletes_events_, deletes_events_};
    }

   private:
    std::string pid_;
    ownership_epoch epoch_;
    bool deletes_events_;
  };
  return std::make_unique<body_task>(std::move(h), std::move(fn), std::move(pid), epoch,
                                     deletes_events);
}

/// Makes a read completing `h` with `fn(transaction_base&)`.
template <class T, class Handler, class Fn>
std::unique_ptr<read_task> make_read_task(Handler h, Fn fn) {
  return std::make_unique<
      group_commit::typed_task<read_task, T, Handler, Fn, escalate_connection_failures>>(
      std::move(h), std::move(fn));
}

/// Makes an append: in a run of appends it goes in with the others, alone it runs pg::append.
std::unique_ptr<write_task> make_append_task(append_request r, completion<sequence_nr> h);
/// Makes a durable-state upsert: in a run it goes in with the others, alone pg::upsert_state.
std::unique_ptr<write_task> make_upsert_task(state_write w, completion<revision_nr> h);

/// The writer: one thread, one connection, group commit.
class writer {
 public:
  /// Takes an opened session; `max_batch` bounds a group commit.
  writer(session s, std::size_t max_batch, std::size_t max_queued,
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
  bool try_group(pqxx::connection& c, batch& b, bool savepoints);
  bool run_in_runs(pqxx::transaction_base& t, batch& b);
  [[nodiscard]] bool may_change_fences(const batch& b) const;
  void load_heads(pqxx::transaction_base& t, const batch& b);

  session session_;
  pid_heads heads_;
  std::atomic<std::uint64_t> transactions_{0};
  group_commit::writer_loop<write_task> loop_;  // last: its thread uses everything above
};

/// The readers: a few threads, each with its own connection, running reads one by one.
class reader_pool {
 public:
  /// One thread per session.
  explicit reader_pool(std::vector<session> sessions);
  /// Runs the reads still queued, then joins the threads.
  ~reader_pool();
  reader_pool(const reader_pool&) = delete;
  reader_pool& operator=(const reader_pool&) = delete;

  /// Queues a read; after close it completes at once with errc::store_closed.
  void submit(std::unique_ptr<read_task> t) { queue_.submit(std::move(t)); }

 private:
  void loop(session& s);

  std::vector<session> sessions_;
  group_commit::task_queue<read_task> queue_{"PostgreSQL store"};
  std::vector<std::thread> threads_;
};

}  // namespace troupe::persistence::pg
