// Core benchmarks of the actor runtime: message passing, fan-in, spawning, memory per idle actor,
// skynet and 1 ms coroutine timers.
//
//   troupe_bench_core [--case NAME[,NAME...]]... [--runs N] [--workers N] [--json-only] [--list]
//
// Prints one JSON line per case on stdout,
//   {"bench":"core","case":"ping_pong_1","value":6.1e6,"unit":"msgs/s","runs":[...],"params":{...}}
// (value is the median of the runs), then a table of all cases unless --json-only. Every run
// uses a fresh actor_system, checks its own result (counts, sums, per-sender order, no dead
// letters, a clean shutdown) and the program exits non-zero when any check fails.
// `--benchmark_filter=REGEX` is accepted as well and selects cases by name.

#include <troupe/core/actor_system.hpp>
#include <troupe/core/async_actor.hpp>

#include <dlfcn.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

namespace {

using steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

/// How long a run may wait for its actors before it counts as hung.
constexpr auto wait_limit = std::chrono::seconds(120);

// -- helpers ------------------------------------------------------------------------------------

/// A run produced a wrong result.
class bench_failure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void check(bool ok, const std::string& what) {
  if (!ok) throw bench_failure(what);
}

double seconds_between(steady::time_point from, steady::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

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

troupe::system_config bench_config(std::size_t workers) {
  return troupe::system_config{}.with_name("bench").with_workers(workers).with_shutdown_timeout(
      std::chrono::duration_cast<std::chrono::milliseconds>(wait_limit));
}

/// Checks that no message was lost, then stops every actor; returns the seconds it took.
double shut_down(troupe::actor_system& system) {
  const auto dead = system.dead_letters().count();
  check(dead == 0, std::to_string(dead) + " dead letters during the run");
  const auto t0 = steady::now();
  system.terminate();
  check(system.await_termination_for(wait_limit), "the actor system did not terminate");
  return seconds_between(t0, steady::now());
}

/// Resident set size of this process, from /proc/self/statm.
std::int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size = 0;
  std::int64_t resident = 0;
  statm >> size >> resident;
  check(static_cast<bool>(statm), "cannot read /proc/self/statm");
  return resident * static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE));
}

/// jemalloc's mallctl when jemalloc is the allocator (looked up at run time, so the program
/// also builds with TROUPE_BENCH_ALLOCATOR=system).
using mallctl_fn = int (*)(const char*, void*, std::size_t*, void*, std::size_t);
mallctl_fn jemalloc_ctl() {
  static const auto fn = reinterpret_cast<mallctl_fn>(::dlsym(RTLD_DEFAULT, "mallctl"));
  return fn;
}

/// Hands freed memory back to the kernel, so that RSS counts live memory only.
void release_free_memory() {
  if (auto* ctl = jemalloc_ctl()) {
    ctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0);
    ctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);  // 4096: MALLCTL_ARENAS_ALL
  } else {
    ::malloc_trim(0);
  }
}

/// Bytes the allocator has handed out (jemalloc's stats.allocated), or -1 when unknown.
std::int64_t allocated_bytes() {
  auto* ctl = jemalloc_ctl();
  if (ctl == nullptr) return -1;
  std::uint64_t epoch = 1;
  std::size_t len = sizeof(epoch);
  ctl("epoch", &epoch, &len, &epoch, len);
  std::size_t allocated = 0;
  len = sizeof(allocated);
  if (ctl("stats.allocated", &allocated, &len, nullptr, 0) != 0) return -1;
  return static_cast<std::int64_t>(allocated);
}

/// Extra per-run measurements, reported in params as the median over the runs.
struct run_result {
  double value = 0;
  std::vector<std::pair<std::string, double>> extras;
};

// -- ping_pong_1, ping_pong_1000 ----------------------------------------------------------------

namespace pingpong {

struct ball {
  std::int64_t remaining;  // messages still to go, this one included
};
struct meet {
  troupe::untyped_ref partner;
};
using message = std::variant<meet, ball>;

/// One counter per player, on its own cache line.
struct alignas(64) tally {
  std::int64_t handled = 0;
};

class player final : public troupe::actor<message> {
 public:
  player(tally* t, countdown* met, countdown* finished)
      : tally_(t), met_(met), finished_(finished) {}

 private:
  void receive(message& m) override {
    if (auto* b = std::get_if<ball>(&m)) {
      ++tally_->handled;
      if (b->remaining > 1) {
        partner_.tell(ball{b->remaining - 1});
      } else {
        finished_->count_down();
      }
      return;
    }
    partner_ = troupe::actor_ref<message>(std::get<meet>(m).partner.target_ptr());
    met_->count_down();
  }

  tally* tally_;
  countdown* met_;
  countdown* finished_;
  troupe::actor_ref<message> partner_;
};

run_result run(std::size_t workers, std::int64_t pairs, std::int64_t per_pair) {
  troupe::actor_system system(bench_config(workers));
  std::vector<tally> tallies(static_cast<std::size_t>(2 * pairs));
  countdown met(2 * pairs);
  countdown finished(pairs);
  std::vector<troupe::actor_ref<message>> servers;
  servers.reserve(static_cast<std::size_t>(pairs));
  for (std::int64_t i = 0; i < pairs; ++i) {
    auto a = system.spawn<player>({}, &tallies[2 * i], &met, &finished);
    auto b = system.spawn<player>({}, &tallies[2 * i + 1], &met, &finished);
    a.tell(meet{b});
    b.tell(meet{a});
    servers.push_back(std::move(a));
  }
  met.wait("the players to meet");

  const auto start = steady::now();
  for (const auto& a : servers) a.tell(ball{per_pair});
  const auto end = finished.wait("the balls to stop");

  for (std::int64_t i = 0; i < pairs; ++i) {
    const auto got = tallies[2 * i].handled + tallies[2 * i + 1].handled;
    if (got != per_pair) {
      throw bench_failure("pair " + std::to_string(i) + " handled " + std::to_string(got) +
                          " messages, expected " + std::to_string(per_pair));
    }
  }
  servers.clear();
  const double teardown = shut_down(system);
  check(finished.left() == 0 && met.left() == 0, "a player counted more than once");
  return {static_cast<double>(pairs * per_pair) / seconds_between(start, end),
          {{"teardown_s", teardown}}};
}

}  // namespace pingpong

// -- fan_in_4 -----------------------------------------------------------------------------------

namespace fanin {

struct item {
  std::uint32_t sender;
  std::uint32_t seq;  // per sender, from 0: the receiver checks per-sender order
};
struct produce {};

struct shared {
  explicit shared(std::int64_t total) : done(1), total(total) {}
  countdown done;
  const std::int64_t total;
  std::int64_t received = 0;  // written by the receiver, read after shutdown
  bool in_order = true;
};

class receiver final : public troupe::actor<item> {
 public:
  receiver(shared* s, std::uint32_t senders) : shared_(s), next_(senders, 0) {}

 private:
  void receive(item& it) override {
    if (it.sender >= next_.size() || it.seq != next_[it.sender]) shared_->in_order = false;
    if (it.sender < next_.size()) next_[it.sender] = it.seq + 1;
    shared_->received = ++count_;
    if (count_ == shared_->total) shared_->done.count_down();
  }

  shared* shared_;
  std::vector<std::uint32_t> next_;
  std::int64_t count_ = 0;
};

/// Sends `chunk` items per turn, then tells itself to continue, so that it never holds a
/// worker for long.
class sender final : public troupe::actor<produce> {
 public:
  sender(troupe::actor_ref<item> to, std::uint32_t index, std::uint32_t quota, std::uint32_t chunk)
      : to_(std::move(to)), index_(index), quota_(quota), chunk_(chunk) {}

 private:
  void receive(produce& /*unused*/) override {
    const std::uint32_t end = std::min(quota_, sent_ + chunk_);
    for (; sent_ < end; ++sent_) to_.tell(item{index_, sent_});
    if (sent_ < quota_) self().tell(produce{});
  }

  troupe::actor_ref<item> to_;
  std::uint32_t index_;
  std::uint32_t quota_;
  std::uint32_t chunk_;
  std::uint32_t sent_ = 0;
};

run_result run(std::size_t workers, std::uint32_t senders, std::uint32_t per_sender,
               std::uint32_t chunk) {
  troupe::actor_system system(bench_config(workers));
  const std::int64_t total = static_cast<std::int64_t>(senders) * per_sender;
  shared s(total);
  auto sink = system.spawn<receiver>("receiver", &s, senders);
  std::vector<troupe::actor_ref<produce>> producers;
  for (std::uint32_t i = 0; i < senders; ++i) {
    producers.push_back(
        system.spawn<sender>("sender-" + std::to_string(i), sink, i, per_sender, chunk));
  }
  const auto start = steady::now();
  for (const auto& p : producers) p.tell(produce{});
  const auto end = s.done.wait("the receiver to get every item");
  producers.clear();
  sink = {};
  const double teardown = shut_down(system);
  check(s.received == total, "the receiver got " + std::to_string(s.received) +
                                 " items, expected " + std::to_string(total));
  check(s.in_order, "items from one sender arrived out of order");
  return {static_cast<double>(total) / seconds_between(start, end), {{"teardown_s", teardown}}};
}

}  // namespace fanin

// -- spawn, bytes_per_idle_actor ----------------------------------------------------------------

namespace spawning {

/// Waits for one message (spawn) or for nothing at all (bytes_per_idle_actor).
class idle_actor final : public troupe::actor<int> {
 public:
  explicit idle_actor(countdown* got) : got_(got) {}

 private:
  void receive(int& /*unused*/) override { got_->count_down(); }
  countdown* got_;
};

struct spawn_more {};

/// The parent: spawns `total` children via context().spawn, `chunk` per turn.
class spawner final : public troupe::actor<spawn_more> {
 public:
  spawner(std::int64_t total, std::int64_t chunk, countdown* got, countdown* spawned,
          std::vector<troupe::actor_ref<int>>* keep)
      : total_(total), chunk_(chunk), got_(got), spawned_(spawned), keep_(keep) {}

 private:
  void receive(spawn_more& /*unused*/) override {
    const std::int64_t end = std::min(total_, count_ + chunk_);
    for (; count_ < end; ++count_) {
      auto child = context().spawn<idle_actor>({}, got_);
      if (keep_ != nullptr) keep_->push_back(std::move(child));
    }
    if (count_ < total_) {
      self().tell(spawn_more{});
    } else {
      spawned_->count_down();
    }
  }

  std::int64_t total_;
  std::int64_t chunk_;
  std::int64_t count_ = 0;
  countdown* got_;
  countdown* spawned_;
  std::vector<troupe::actor_ref<int>>* keep_;
};

run_result run_spawn(std::size_t workers, std::int64_t total, std::int64_t chunk) {
  troupe::actor_system system(bench_config(workers));
  countdown spawned(1);
  countdown got(total);
  std::vector<troupe::actor_ref<int>> children;
  children.reserve(static_cast<std::size_t>(total));
  auto parent = system.spawn<spawner>("spawner", total, chunk, &got, &spawned, &children);

  const auto start = steady::now();
  parent.tell(spawn_more{});
  const auto end = spawned.wait("the spawner");
  check(
      static_cast<std::int64_t>(children.size()) == total,
      "spawned " + std::to_string(children.size()) + " actors, expected " + std::to_string(total));

  const auto deliver_start = steady::now();
  for (const auto& c : children) c.tell(1);
  const auto delivered = got.wait("every spawned actor to get its message");
  children.clear();
  children.shrink_to_fit();
  parent = {};
  const double teardown = shut_down(system);
  check(got.left() == 0, "an actor got its message twice");
  return {static_cast<double>(total) / seconds_between(start, end),
          {{"deliver_s", seconds_between(deliver_start, delivered)}, {"teardown_s", teardown}}};
}

run_result run_bytes(std::size_t workers, std::int64_t total, std::int64_t chunk) {
  troupe::actor_system system(bench_config(workers));
  countdown spawned(1);
  auto parent = system.spawn<spawner>("spawner", total, chunk, nullptr, &spawned, nullptr);
  std::this_thread::sleep_for(10ms);  // let the workers settle (spin, then park)
  release_free_memory();
  const std::int64_t rss_before = resident_bytes();
  const std::int64_t allocated_before = allocated_bytes();

  parent.tell(spawn_more{});
  spawned.wait("the spawner");
  std::this_thread::sleep_for(10ms);  // the spawner's last turn ends
  release_free_memory();
  const std::int64_t rss_after = resident_bytes();
  const std::int64_t allocated_after = allocated_bytes();

  parent = {};
  const double teardown = shut_down(system);
  const double per_actor = static_cast<double>(rss_after - rss_before) / static_cast<double>(total);
  check(per_actor > 0, "RSS did not grow while spawning");
  run_result out{per_actor, {{"teardown_s", teardown}}};
  if (allocated_before >= 0 && allocated_after >= 0) {
    out.extras.emplace_back(
        "allocated_bytes_per_actor",
        static_cast<double>(allocated_after - allocated_before) / static_cast<double>(total));
  }
  return out;
}

}  // namespace spawning

// -- skynet -------------------------------------------------------------------------------------

namespace skynet {

constexpr std::int64_t fanout = 10;

struct start {};
using message = std::variant<start, std::int64_t>;

struct result {
  countdown done{1};
  std::int64_t sum = -1;
};

/// A node covering ordinals [num, num + size): a leaf (size 1) reports its ordinal as soon as
/// it exists; an inner node spawns 10 children, sums their 10 reports, reports the sum to its
/// parent and stops (which stops its children, leaves included).
class node final : public troupe::actor<message> {
 public:
  node(troupe::actor_ref<message> parent, result* sink, std::int64_t num, std::int64_t size)
      : parent_(std::move(parent)), sink_(sink), num_(num), size_(size) {}

 private:
  void pre_start() override {
    if (size_ == 1) {
      report(num_);
    } else {
      self().tell(start{});
    }
  }

  void receive(message& m) override {
    if (auto* part = std::get_if<std::int64_t>(&m)) {
      sum_ += *part;
      if (++replies_ == fanout) {
        report(sum_);
        context().stop();
      }
      return;
    }
    const std::int64_t child_size = size_ / fanout;
    for (std::int64_t i = 0; i < fanout; ++i) {
      context().spawn<node>({}, self(), nullptr, num_ + i * child_size, child_size);
    }
  }

  void report(std::int64_t value) {
    if (sink_ != nullptr) {
      sink_->sum = value;
      sink_->done.count_down();
    } else {
      parent_.tell(value);
    }
  }

  troupe::actor_ref<message> parent_;
  result* sink_;
  std::int64_t num_;
  std::int64_t size_;
  std::int64_t sum_ = 0;
  std::int64_t replies_ = 0;
};

run_result run(std::size_t workers, std::int64_t leaves) {
  troupe::actor_system system(bench_config(workers));
  result r;
  const auto start_time = steady::now();
  system.spawn<node>("skynet", troupe::actor_ref<message>{}, &r, std::int64_t{0}, leaves);
  const auto end = r.done.wait("the skynet root");
  const double teardown = shut_down(system);
  const std::int64_t expected = leaves * (leaves - 1) / 2;
  check(r.sum == expected,
        "skynet sum " + std::to_string(r.sum) + ", expected " + std::to_string(expected));
  return {seconds_between(start_time, end), {{"teardown_s", teardown}}};
}

}  // namespace skynet

// -- timer_1ms ----------------------------------------------------------------------------------

namespace timers {

struct shared {
  shared(std::size_t actors, std::size_t per_actor)
      : lateness_us(actors * per_actor, std::numeric_limits<double>::quiet_NaN()),
        per_actor(per_actor),
        done(static_cast<std::int64_t>(actors * per_actor)) {}
  std::vector<double> lateness_us;  // one slot per message, written by its actor
  std::size_t per_actor;
  countdown done;
};

/// Each message: sleep 1 ms in a coroutine handler, then note how late it woke up.
class sleeper final : public troupe::async_actor<int> {
 public:
  sleeper(shared* s, std::size_t index) : shared_(s), index_(index) {}

 private:
  boost::asio::awaitable<void> receive(int seq) override {
    const auto intended = steady::now() + 1ms;
    co_await troupe::sleep_for(1ms);
    const auto woke = steady::now();
    shared_->lateness_us[index_ * shared_->per_actor + static_cast<std::size_t>(seq)] =
        std::chrono::duration<double, std::micro>(woke - intended).count();
    shared_->done.count_down();
  }

  shared* shared_;
  std::size_t index_;
};

double percentile(const std::vector<double>& sorted, double p) {
  const auto i = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

run_result run(std::size_t workers, std::size_t actors, std::size_t per_actor) {
  troupe::actor_system system(bench_config(workers));
  shared s(actors, per_actor);
  std::vector<troupe::actor_ref<int>> sleepers;
  sleepers.reserve(actors);
  for (std::size_t i = 0; i < actors; ++i) sleepers.push_back(system.spawn<sleeper>({}, &s, i));

  const auto start = steady::now();
  for (std::size_t seq = 0; seq < per_actor; ++seq) {
    for (const auto& a : sleepers) a.tell(static_cast<int>(seq));
  }
  const auto end = s.done.wait("every sleeper");
  sleepers.clear();
  const double teardown = shut_down(system);

  std::vector<double> sorted = s.lateness_us;
  for (double l : sorted) {
    if (!std::isfinite(l)) throw bench_failure("a message's lateness was never recorded");
    if (l < 0) throw bench_failure("sleep_for(1ms) woke " + std::to_string(-l) + " us early");
  }
  std::sort(sorted.begin(), sorted.end());
  const auto messages = static_cast<double>(actors * per_actor);
  return {messages / seconds_between(start, end),
          {{"p50_lateness_us", percentile(sorted, 0.50)},
           {"p99_lateness_us", percentile(sorted, 0.99)},
           {"max_lateness_us", sorted.back()},
           {"teardown_s", teardown}}};
}

}  // namespace timers

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

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// 6080000 -> "6.08 M", 0.8123 -> "0.812", 287.25 -> "287.2".
std::string human(double v) {
  char buf[64];
  if (!std::isfinite(v)) return "-";
  if (std::fabs(v) >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f M", v / 1e6);
  } else if (std::fabs(v) >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1f k", v / 1e3);
  } else if (std::fabs(v) >= 10) {
    std::snprintf(buf, sizeof buf, "%.1f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f", v);
  }
  return buf;
}

/// 48.2 -> "48 us", 15044 -> "15.04 ms".
std::string micros(double us) {
  char buf[64];
  if (us >= 1000) {
    std::snprintf(buf, sizeof buf, "%.2f ms", us / 1000);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f us", us);
  }
  return buf;
}

std::string str(std::int64_t v) { return std::to_string(v); }

std::vector<bench_case> all_cases() {
  constexpr std::int64_t million = 1'000'000;
  std::vector<bench_case> cases;
  auto at_least = [](double t) { return [t](double v) { return v >= t; }; };
  auto at_most = [](double t) { return [t](double v) { return v <= t; }; };

  cases.push_back(
      {"ping_pong_1",
       "msgs/s",
       ">= 6.08 M",
       at_least(6.08e6),
       {{"pairs", "1"}, {"messages_per_pair", str(2 * million)}, {"messages", str(2 * million)}},
       [](std::size_t w) { return pingpong::run(w, 1, 2 * million); }});
  cases.push_back(
      {"ping_pong_1000",
       "msgs/s",
       ">= 5.92 M",
       at_least(5.92e6),
       {{"pairs", "1000"}, {"messages_per_pair", "2000"}, {"messages", str(2 * million)}},
       [](std::size_t w) { return pingpong::run(w, 1000, 2000); }});
  cases.push_back({"fan_in_4",
                   "msgs/s",
                   ">= 11.46 M",
                   at_least(11.46e6),
                   {{"senders", "4"},
                    {"messages_per_sender", str(2'500'000)},
                    {"messages", str(10 * million)},
                    {"chunk", "1000"}},
                   [](std::size_t w) { return fanin::run(w, 4, 2'500'000, 1000); }});
  cases.push_back({"spawn",
                   "actors/s",
                   ">= 1.5 M",
                   at_least(1.5e6),
                   {{"actors", str(million)},
                    {"chunk", "10000"},
                    {"spawned_by", json_string("one parent actor, context().spawn, 10000 a turn")},
                    {"timed", json_string("spawning only")}},
                   [](std::size_t w) { return spawning::run_spawn(w, million, 10'000); }});
  cases.push_back({"bytes_per_idle_actor",
                   "bytes",
                   "<= 256",
                   at_most(256),
                   {{"actors", str(million)},
                    {"chunk", "10000"},
                    {"spawned_by", json_string("one parent actor, context().spawn, 10000 a turn")},
                    {"measure", json_string("RSS growth (/proc/self/statm) / actors")}},
                   [](std::size_t w) { return spawning::run_bytes(w, million, 10'000); }});
  cases.push_back(
      {"skynet",
       "s",
       "<= 1 s",
       at_most(1.0),
       {{"leaves", str(million)},
        {"levels", "6"},
        {"fanout", "10"},
        {"actors", str(1'111'111)},
        {"stops", json_string("each inner node stops (with its children) once it replied")}},
       [](std::size_t w) { return skynet::run(w, million); }});
  cases.push_back({"timer_1ms",
                   "msgs/s",
                   "",
                   nullptr,
                   {{"actors", "10000"},
                    {"messages_per_actor", "10"},
                    {"messages", "100000"},
                    {"sleep_us", "1000"}},
                   [](std::size_t w) { return timers::run(w, 10'000, 10); }});
  return cases;
}

/// Kills the process when one run hangs past every per-wait limit (a wedged runtime would
/// otherwise also wedge the system's destructor).
class watchdog {
 public:
  watchdog() : thread_([this] { loop(); }) {}
  ~watchdog() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void arm(std::string what, std::chrono::seconds limit) {
    std::lock_guard lock(mutex_);
    what_ = std::move(what);
    deadline_ = steady::now() + limit;
  }
  void disarm() {
    std::lock_guard lock(mutex_);
    deadline_.reset();
  }

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      cv_.wait_for(lock, 1s);
      if (deadline_ && steady::now() > *deadline_) {
        std::fprintf(stderr, "troupe_bench_core: %s hangs; giving up\n", what_.c_str());
        std::fflush(stdout);
        std::_Exit(3);
      }
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::optional<steady::time_point> deadline_;
  std::string what_;
  std::thread thread_;
};

struct outcome {
  const bench_case* c;
  std::vector<double> runs;
  double value = 0;
  std::vector<std::pair<std::string, double>> extras;  // medians over the runs
  std::string error;                                   // non-empty: the case failed
};

double extra(const outcome& o, const std::string& name) {
  for (const auto& [key, v] : o.extras) {
    if (key == name) return v;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "%s%susage: troupe_bench_core [--case NAME[,NAME...]]... [--runs N] [--workers N] "
               "[--json-only] [--list]\n",
               problem.c_str(), problem.empty() ? "" : "\n");
  std::exit(problem.empty() ? 0 : 2);
}

std::int64_t positive(const std::string& flag, const std::string& text) {
  try {
    std::size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used == text.size() && v > 0) return v;
  } catch (const std::exception&) {
  }
  usage(flag + " needs a positive number, got '" + text + "'");
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<bench_case> cases = all_cases();
  std::vector<std::string> wanted;
  std::optional<std::regex> filter;
  std::int64_t runs = 3;
  std::size_t workers = std::max(1u, std::thread::hardware_concurrency());
  bool json_only = false;

  const std::vector<std::string> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::string value;
    bool inline_value = false;
    if (const auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      inline_value = true;
    }
    auto next = [&]() -> std::string {
      if (inline_value) return value;
      if (i + 1 >= args.size()) usage(arg + " needs a value");
      return args[++i];
    };
    if (arg == "--case") {
      std::stringstream list(next());
      for (std::string name; std::getline(list, name, ',');) {
        if (!name.empty()) wanted.push_back(name);
      }
    } else if (arg == "--runs") {
      runs = positive(arg, next());
    } else if (arg == "--workers") {
      workers = static_cast<std::size_t>(positive(arg, next()));
    } else if (arg == "--json-only") {
      json_only = true;
    } else if (arg == "--benchmark_filter") {
      try {
        filter.emplace(next());
      } catch (const std::regex_error&) {
        usage("--benchmark_filter: not a regular expression");
      }
    } else if (arg == "--list") {
      for (const auto& c : cases) std::printf("%s\n", c.name.c_str());
      return 0;
    } else if (arg == "--help" || arg == "-h") {
      usage("");
    } else {
      usage("unknown argument '" + args[i] + "'");
    }
  }
  for (const auto& name : wanted) {
    if (std::none_of(cases.begin(), cases.end(), [&](const auto& c) { return c.name == name; })) {
      std::string known;
      for (const auto& c : cases) known += " " + c.name;
      usage("unknown case '" + name + "'; cases:" + known);
    }
  }

  std::vector<const bench_case*> selected;
  for (const auto& c : cases) {
    const bool named =
        wanted.empty() || std::find(wanted.begin(), wanted.end(), c.name) != wanted.end();
    const bool matches = !filter || std::regex_search(c.name, *filter);
    if (named && matches) selected.push_back(&c);
  }
  if (selected.empty()) usage("no case selected");

  watchdog dog;
  std::vector<outcome> outcomes;
  bool failed = false;
  for (const bench_case* c : selected) {
    outcome out{c, {}, 0, {}, {}};
    std::vector<std::vector<double>> extras;  // per extra: one value per run
    std::vector<std::string> extra_names;
    for (std::int64_t r = 0; r < runs && out.error.empty(); ++r) {
      dog.arm(c->name + " (run " + std::to_string(r + 1) + ")", std::chrono::seconds(300));
      try {
        run_result res = c->run(workers);
        out.runs.push_back(res.value);
        for (auto& [name, v] : res.extras) {
          auto it = std::find(extra_names.begin(), extra_names.end(), name);
          if (it == extra_names.end()) {
            extra_names.push_back(name);
            extras.emplace_back();
            it = extra_names.end() - 1;
          }
          extras[static_cast<std::size_t>(it - extra_names.begin())].push_back(v);
        }
      } catch (const std::exception& e) {
        out.error = e.what();
      }
      dog.disarm();
      release_free_memory();
    }
    if (!out.error.empty()) {
      failed = true;
      std::fprintf(stderr, "troupe_bench_core: %s FAILED: %s\n", c->name.c_str(),
                   out.error.c_str());
      outcomes.push_back(std::move(out));
      continue;
    }
    out.value = median(out.runs);

    std::string json = "{\"bench\":\"core\",\"case\":" + json_string(c->name) +
                       ",\"value\":" + json_number(out.value) +
                       ",\"unit\":" + json_string(c->unit) + ",\"runs\":[";
    for (std::size_t k = 0; k < out.runs.size(); ++k) {
      json += (k ? "," : "") + json_number(out.runs[k]);
    }
    json += "],\"params\":{\"workers\":" + std::to_string(workers);
    for (const auto& [key, v] : c->params) json += "," + json_string(key) + ":" + v;
    std::string top_level;
    for (std::size_t k = 0; k < extra_names.size(); ++k) {
      const double m = median(extras[k]);
      out.extras.emplace_back(extra_names[k], m);
      json += "," + json_string(extra_names[k]) + ":" + json_number(m);
      if (extra_names[k] == "p50_lateness_us") top_level += ",\"p50_us\":" + json_number(m);
      if (extra_names[k] == "p99_lateness_us") top_level += ",\"p99_us\":" + json_number(m);
    }
    json += "}" + top_level + "}";
    std::printf("%s\n", json.c_str());
    std::fflush(stdout);
    outcomes.push_back(std::move(out));
  }

  if (!json_only) {
    std::printf("\n%-22s %12s %-9s %12s %12s  %-11s %s\n", "case", "median", "unit", "min", "max",
                "target", "");
    for (const auto& o : outcomes) {
      if (!o.error.empty()) {
        std::printf("%-22s %12s %-9s %12s %12s  %-11s %s\n", o.c->name.c_str(), "FAILED",
                    o.c->unit.c_str(), "-", "-", o.c->target.c_str(), o.error.c_str());
        continue;
      }
      const auto [lo, hi] = std::minmax_element(o.runs.begin(), o.runs.end());
      std::string note;
      if (o.c->meets) note = o.c->meets(o.value) ? "ok" : "MISSED";
      if (const double p50 = extra(o, "p50_lateness_us"); std::isfinite(p50)) {
        note = "lateness p50 " + micros(p50) + ", p99 " + micros(extra(o, "p99_lateness_us"));
      }
      std::printf("%-22s %12s %-9s %12s %12s  %-11s %s\n", o.c->name.c_str(),
                  human(o.value).c_str(), o.c->unit.c_str(), human(*lo).c_str(), human(*hi).c_str(),
                  o.c->target.empty() ? "-" : o.c->target.c_str(), note.c_str());
    }
    std::printf("(%lld run(s) per case, %zu workers, median of the runs)\n",
                static_cast<long long>(runs), workers);
  }
  return failed ? 1 : 0;
}
