#pragma once
// The threads of the PostgreSQL plugin. The writer owns one connection and groups what is queued
// into one transaction (group commit): consecutive appends become one COPY, other writes run one
// after the other, the transaction commits once, and only then are the callers completed. A write
// refused by a check (conflict, fence) changed nothing, so the others go on; an SQL error aborts a
// PostgreSQL transaction, so the writer then redoes the group with one savepoint per write and that
// failure is rolled back alone. Readers run tasks one by one, each reader on its own connection.
// A connection the server dropped is opened again, and the interrupted work is redone once when it
// cannot have committed.

#include <troupe/persistence/detail/completion.hpp>
#include <troupe/persistence/errc.hpp>

#include "persistence/postgres/pg_operations.hpp"
#include "persistence/postgres/pg_session.hpp"

#include <pqxx/except>
#include <pqxx/transaction_base>

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
#include <vector>

namespace troupe::persistence::pg {

/// The persistence_error a failure becomes (libpqxx errors turn into errc::store_failure).
std::exception_ptr as_persistence_error(const std::exception_ptr& e) noexcept;

/// Whether a failure is a refusal by a check, which happens before a write changes anything.
bool is_refusal(const std::exception_ptr& e) noexcept;

/// One queued store operation.
class task {
 public:
  virtual ~task() = default;
  /// Runs the operation (again, if the group is redone); false when it failed (the failure is
  /// kept for complete()). A lost connection is thrown, not kept: the worker handles it.
  virtual bool run(pqxx::transaction_base& t) = 0;
  /// After a failed run: true when the write refused before changing anything.
  [[nodiscard]] virtual bool refused_cleanly() const noexcept = 0;
  /// Replaces the outcome with `failure` (the transaction holding the task did not commit).
  virtual void fail(std::exception_ptr failure) noexcept = 0;
  /// Completes the caller with the outcome, on the caller's executor.
  virtual void complete() noexcept = 0;
  /// For an append: the request, so the writer can take a run of appends in one go.
  [[nodiscard]] virtual const append_request* append() const noexcept { return nullptr; }
  /// For an append taken in one go: its outcome.
  virtual void set_outcome(append_outcome /*outcome*/) noexcept {}
};

/// A task whose body `fn(transaction_base&)` returns T (or void) and completes `Handler`. A lost
/// connection and a transaction PostgreSQL rolled back (a deadlock with another writer) escape
/// run(): they concern the whole group.
template <class T, class Handler, class Fn>
class typed_task : public task {
  using result_type = std::conditional_t<std::is_void_v<T>, char, T>;

 public:
  typed_task(Handler h, Fn fn) : done_(std::move(h)), fn_(std::move(fn)) {}

  bool run(pqxx::transaction_base& t) override {
    failure_ = nullptr;
    try {
      if constexpr (std::is_void_v<T>) {
        fn_(t);
      } else {
        result_.emplace(fn_(t));
      }
      return true;
    } catch (const pqxx::broken_connection&) {
      throw;
    } catch (const pqxx::transaction_rollback&) {
      throw;  // a deadlock with another writer: the worker redoes the whole group
    } catch (...) {
      failure_ = as_persistence_error(std::current_exception());
      return false;
    }
  }

  [[nodiscard]] bool refused_cleanly() const noexcept override { return is_refusal(failure_); }

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

 protected:
  [[nodiscard]] const Fn& body() const noexcept { return fn_; }
  void set_result(result_type value) {
    failure_ = nullptr;
    result_.emplace(std::move(value));
  }

 private:
  persistence::detail::pending<Handler> done_;
  Fn fn_;
  std::optional<result_type> result_;
  std::exception_ptr failure_;
};

/// Makes a task completing `h` (a completion<T> or void_completion) with `fn(transaction_base&)`.
template <class T, class Handler, class Fn>
std::unique_ptr<task> make_task(Handler h, Fn fn) {
  return std::make_unique<typed_task<T, Handler, Fn>>(std::move(h), std::move(fn));
}

/// Makes an append task: alone it runs pg::append, in a run of appends pg::append_many.
std::unique_ptr<task> make_append_task(append_request r, completion<sequence_nr> h);

/// The queue and threads shared by the writer and the readers.
class worker_base {
 public:
  worker_base() = default;
  worker_base(const worker_base&) = delete;
  worker_base& operator=(const worker_base&) = delete;

  /// Queues a task; after close it completes at once with errc::store_closed.
  void submit(std::unique_ptr<task> t);

  /// Tasks run so far.
  [[nodiscard]] std::uint64_t tasks_run() const noexcept {
    return tasks_run_.load(std::memory_order_relaxed);
  }

 protected:
  /// Lets the threads finish what is queued, then joins them.
  void close_and_join();
  /// Takes up to `max` tasks; empty when closing and nothing is left.
  std::deque<std::unique_ptr<task>> take(std::size_t max);

  std::atomic<std::uint64_t> tasks_run_{0};
  std::vector<std::thread> threads_;

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<task>> queue_;
  bool closing_ = false;
};

/// The writer: one thread, one connection, group commit.
class writer final : public worker_base {
 public:
  /// Takes an opened session; `max_batch` bounds a group commit.
  writer(session s, std::size_t max_batch);
  ~writer();

  /// Transactions committed.
  [[nodiscard]] std::uint64_t transactions() const noexcept {
    return transactions_.load(std::memory_order_relaxed);
  }

 private:
  void loop();
  void run_group(std::deque<std::unique_ptr<task>>& batch);
  bool try_group(pqxx::connection& c, std::deque<std::unique_ptr<task>>& batch, bool savepoints);

  session session_;
  std::size_t max_batch_;
  std::atomic<std::uint64_t> transactions_{0};
};

/// The readers: a few threads, each with its own connection, running tasks one by one.
class reader_pool final : public worker_base {
 public:
  /// One thread per session.
  explicit reader_pool(std::vector<session> sessions);
  ~reader_pool();

 private:
  void loop(session& s);

  std::vector<session> sessions_;
};

}  // namespace troupe::persistence::pg
