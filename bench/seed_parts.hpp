// Pieces shared by the two modes of troupe_bench_seed: the message, the completion latch, the
// tracked unit's recorder, the I/O stand-in and the order check.

#pragma once

#include <troupe/core/async_actor.hpp>

#include "seed_run.hpp"

#include <boost/asio/post.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

namespace troupe::bench::seed {

using steady = std::chrono::steady_clock;

/// One write for one key: the guide's (key, value), value = the key's sequence number.
struct keyed_write {
  std::string key;
  std::uint32_t seq = 0;
  /// Send time, set only for messages of the tracked unit (reading the clock costs ~20 ns).
  steady::time_point sent{};
};

/// Counts processed messages; the thread that brings it to zero notes the time and wakes the
/// waiting producer (no polling sleep distorts the end of the run).
class completion {
 public:
  explicit completion(std::int64_t n) : left_(n) {}
  void count_down(std::int64_t k) noexcept;
  /// Waits for zero and returns when it was reached; throws bench_failure after `limit`.
  steady::time_point wait(std::chrono::seconds limit);
  [[nodiscard]] std::int64_t left() const noexcept { return left_.load(); }

 private:
  std::atomic<std::int64_t> left_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  steady::time_point done_at_{};
};

/// Written only by the tracked unit, one turn at a time; read after the run.
struct hot_recorder {
  hot_unit_stats stats;
  steady::time_point last_start{};
  void on_batch(steady::time_point start, std::int64_t size);
  void on_message(steady::time_point start, steady::time_point sent);
  /// The handler resumed after its I/O at `now`.
  void on_resumed(steady::time_point now, troupe::duration io);
};

/// Caps how many handlers are inside their I/O at once; waiters resume in arrival order on
/// their own actor's executor.
class io_limiter {
 public:
  explicit io_limiter(std::int64_t cap) : cap_(cap) {}
  bool try_acquire();
  /// Resumes once a releasing handler hands its slot over.
  boost::asio::awaitable<void> wait();
  void release();

 private:
  std::mutex mutex_;
  std::int64_t cap_;
  std::int64_t in_use_ = 0;
  std::deque<std::function<void()>> waiters_;
};

/// State shared by the actors of one run.
struct run_shared {
  run_shared(std::int64_t messages, const run_config& c)
      : done(messages),
        io(std::chrono::duration_cast<troupe::duration>(
            std::chrono::duration<double, std::milli>(c.io_ms))),
        batch(c.batch),
        asio_timer(c.asio_timer) {}
  /// No limiter and the runtime's own timer: the handler awaits sleep_for directly (a nested
  /// coroutine would add a frame per message).
  [[nodiscard]] bool plain_io() const noexcept { return !limiter && !asio_timer; }
  completion done;
  troupe::duration io;
  std::int64_t batch;
  bool asio_timer;
  hot_recorder hot;
  std::unique_ptr<io_limiter> limiter;
};

/// The I/O stand-in: one awaited timer of `s->io` (sleep_for or an asio steady_timer), inside
/// the limiter when there is one.
boost::asio::awaitable<void> await_io(run_shared* s);

/// How long a run may take before it counts as hung: three times its bound, plus a minute.
std::chrono::seconds wait_limit_for(const run_config& c, std::int64_t busiest_count);

/// Checks one key's state against the sequence sent to it; returns an error or "".
std::string check_key(const std::string& key, const std::vector<std::uint32_t>& values,
                      std::int64_t expected);

}  // namespace troupe::bench::seed
