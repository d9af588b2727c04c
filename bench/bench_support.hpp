// The driver shared by the benchmark programs (troupe_bench_core, troupe_bench_sharding): run
// helpers for the cases (countdown, checks, shutdown, memory measurement) and run_benchmarks(),
// which parses the common flags, runs the selected cases, prints one JSON line per case and a
// table.
//
//   troupe_bench_<name> [--case NAME[,NAME...]]... [--runs N] [--workers N] [--json-only]
//                       [--list] [--benchmark_filter=REGEX] [<extra flags>]
//
// Exit codes: 0 all cases passed, 1 a case failed its checks, 2 bad arguments, 3 a run hung.

#pragma once

#include <troupe/core/actor_system.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace troupe::bench {

using steady = std::chrono::steady_clock;

/// How long a run may wait for its actors before it counts as hung.
inline constexpr auto wait_limit = std::chrono::seconds(120);

// -- helpers for the cases ----------------------------------------------------------------------

/// A run produced a wrong result.
class bench_failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws bench_failure(what) unless ok.
void check(bool ok, const std::string& what);

/// Seconds from `from` to `to`.
double seconds_between(steady::time_point from, steady::time_point to);

/// Counts down from n; the thread that reaches zero notes the time and wakes the waiter.
class countdown {
 public:
  explicit countdown(std::int64_t n) : left_(n) {}

  void count_down(std::int64_t k = 1) noexcept {
    if (left_.fetch_sub(k, std::memory_order_acq_rel) != k) return;
    const auto now = steady::now();
    std::lock_guard lock(mutex_);
    done_at_ = now;
    done_ = true;
    cv_.notify_all();  // under the lock: the waiter may destroy us as soon as it sees done_
  }

  /// Waits for zero; returns when it was reached. Throws bench_failure after wait_limit.
  steady::time_point wait(const std::string& what) {
    std::unique_lock lock(mutex_);
    if (!cv_.wait_for(lock, wait_limit, [&] { return done_; })) {
      throw bench_failure("timed out waiting for " + what + " (" + std::to_string(left()) +
                          " outstanding)");
    }
    return done_at_;
  }

  [[nodiscard]] std::int64_t left() const noexcept { return left_.load(std::memory_order_acquire); }

 private:
  std::atomic<std::int64_t> left_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  steady::time_point done_at_{};
};

/// The configuration of every run's actor system: `workers` workers, shutdown within wait_limit.
troupe::system_config bench_config(std::size_t workers);

/// Checks that no message was lost, then stops every actor; returns the seconds it took.
double shut_down(troupe::actor_system& system);

/// Resident set size of this process, from /proc/self/statm.
std::int64_t resident_bytes();

/// Hands freed memory back to the kernel, so that RSS counts live memory only.
void release_free_memory();

/// Bytes the allocator has handed out (jemalloc's stats.allocated), or -1 when unknown.
std::int64_t allocated_bytes();

/// Live small allocations per allocator size class, as (size, count) (jemalloc's per-bin
/// curregs, all arenas); empty when unknown. Two readings subtracted show where bytes go.
std::vector<std::pair<std::size_t, std::int64_t>> small_allocations_by_size();

/// Memory in use, as resident_bytes() and allocated_bytes().
struct memory_use {
  /// After the purge (release_free_memory): live memory only.
  std::int64_t resident = 0;
  std::int64_t allocated = -1;
  /// Before the purge: what the process holds in its steady state, freed pages the allocator
  /// keeps for reuse included (jemalloc returns them only after its decay time, 10 s).
  std::int64_t unpurged_resident = 0;
};

/// Sleeps 10 ms (the workers settle: spin, then park), reads RSS, releases free memory, then
/// measures again.
memory_use settled_memory();

/// The value at fraction p (0..1) of a sorted, non-empty vector.
double percentile(const std::vector<double>& sorted, double p);

/// What one run measured: the case's value and extra measurements, which are reported in params
/// as the median over the runs.
struct run_result {
  double value = 0;
  std::vector<std::pair<std::string, double>> extras;
};

/// `s` as a JSON string literal, quotes included.
std::string json_string(const std::string& s);

/// std::to_string, short for case parameters.
std::string str(std::int64_t v);

// -- the driver ---------------------------------------------------------------------------------

struct bench_case {
  std::string name;
  std::string unit;
  /// Target for the table, e.g. ">= 6.08 M"; empty when the case has none.
  std::string target;
  /// Whether a median meets the target (empty when there is none).
  std::function<bool(double)> meets;
  /// Sizes and notes, as (key, JSON value).
  std::vector<std::pair<std::string, std::string>> params;
  std::function<run_result(std::size_t workers)> run;
};

/// bench_case::meets for a target of at least / at most t.
std::function<bool(double)> at_least(double t);
std::function<bool(double)> at_most(double t);

/// A program's own integer flag, e.g. {"--shrink", "K", 1, 10000}: a positive number.
struct extra_flag {
  std::string name;
  /// Shown in the usage line: [--shrink K].
  std::string metavar;
  std::int64_t default_value = 1;
  /// Largest value accepted; 0: no limit.
  std::int64_t max_value = 0;
};

/// What distinguishes one benchmark program from another.
struct bench_options {
  /// "core": the JSON "bench" field; the program is troupe_bench_<name>.
  std::string name;
  std::vector<extra_flag> flags;
  /// Builds the cases from the values of `flags`, in their order (their defaults for --list).
  std::function<std::vector<bench_case>(const std::vector<std::int64_t>& flag_values)> cases;
  /// Widths of the table's unit and target columns.
  int unit_width = 9;
  int target_width = 11;
};

/// Parses the flags, runs the selected cases and prints their results; returns the exit code
/// (exits by itself on bad arguments, --help and hung runs).
int run_benchmarks(int argc, char** argv, const bench_options& options);

}  // namespace troupe::bench
