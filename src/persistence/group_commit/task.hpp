#pragma once
// What the SQLite and PostgreSQL plugins share about their queued operations: a task runs on a
// backend's context (a connection, a transaction), keeps its outcome, and completes its caller on
// the caller's executor once the worker says so (after the commit, for a write).

#include <troupe/persistence/detail/completion.hpp>
#include <troupe/persistence/errc.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace troupe::persistence::group_commit {

/// Whether a failure is a refusal by a check (sequence, revision or epoch). A write refuses only
/// before it changes anything, so a refusal never needs a rollback.
inline bool is_refusal(const std::exception_ptr& e) noexcept {
  if (!e) return false;
  try {
    std::rethrow_exception(e);
  } catch (const persistence_error& x) {
    return x.value() == errc::sequence_conflict || x.value() == errc::epoch_fenced ||
           x.value() == errc::revision_conflict;
  } catch (...) {
    return false;
  }
}

/// One queued store operation, run on a `Context`.
template <class Context>
class task {
 public:
  using context_type = Context;

  virtual ~task() = default;
  /// Runs the operation (again, if its group is redone); false when it failed (the failure is
  /// kept for complete()). A backend's Capture policy may let some failures escape instead.
  virtual bool run(Context& c) = 0;
  /// After a failed run: true when the write refused before changing anything.
  [[nodiscard]] virtual bool refused_cleanly() const noexcept = 0;
  /// Replaces the outcome with `failure` (the transaction holding the task did not commit).
  virtual void fail(std::exception_ptr failure) noexcept = 0;
  /// Completes the caller with the outcome, on the caller's executor. noexcept on purpose: a
  /// handler without an executor runs right here, and if it throws, ending the process beats
  /// leaving the rest of its group commit uncompleted.
  virtual void complete() noexcept = 0;

  /// When the task was submitted, stamped only when its writer records metrics.
  std::chrono::steady_clock::time_point submitted_at{};
};

/// The outcome of a write done in one go with others of its kind: its result (a sequence number,
/// a revision) or its refusal.
struct run_outcome {
  std::uint64_t result = 0;
  std::exception_ptr refusal;
};

/// The body of a write done alone: `Run(context, request)`, keeping the request readable for a
/// worker that does such writes in runs.
template <class Context, class Request, class T, T (*Run)(Context&, const Request&)>
struct run_alone {
  Request request;
  T operator()(Context& c) const { return Run(c, request); }
};

/// Keeps every failure of a task body as its outcome.
struct keep_failures {
  static std::exception_ptr kept(std::exception_ptr e) { return e; }
};

/// A task of type `Base` (a task<Context> or a backend's extension of it) whose body
/// `fn(Context&)` returns T (or void) and completes `Handler`. `Capture::kept(e)` turns a failure
/// of the body into the outcome to keep, or throws what must escape run().
template <class Base, class T, class Handler, class Fn, class Capture = keep_failures>
class typed_task : public Base {
  using result_type = std::conditional_t<std::is_void_v<T>, char, T>;

 public:
  using context_type = typename Base::context_type;

  typed_task(Handler h, Fn fn) : done_(std::move(h)), fn_(std::move(fn)) {}

  bool run(context_type& c) override {
    failure_ = nullptr;
    try {
      if constexpr (std::is_void_v<T>) {
        fn_(c);
      } else {
        result_.emplace(fn_(c));
      }
      return true;
    } catch (...) {
      failure_ = Capture::kept(std::current_exception());
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
  /// Sets the outcome of a task done in one go with others, without run().
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

}  // namespace troupe::persistence::group_commit
