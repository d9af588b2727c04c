// Sharding benchmarks on one node: tells through a region to active entities, activating
// entities, memory per idle entity, and activation/passivation churn under an LRU cap.
//
//   troupe_bench_sharding [--case NAME[,NAME...]]... [--runs N] [--workers N] [--json-only]
//   [--list]
//
// Prints one JSON line per case on stdout,
//   {"bench":"sharding","case":"local_tell","value":3.1e6,"unit":"msgs/s","runs":[...],"params":{...}}
// (value is the median of the runs), then a table of all cases unless --json-only. Every run
// uses a fresh actor_system, checks its own result (messages per entity id, activations, no dead
// letters, a clean shutdown) and the program exits non-zero when any check fails.
// `--benchmark_filter=REGEX` is accepted as well and selects cases by name. `--shrink K` divides
// every size by K, for profiling (e.g. `valgrind --tool=callgrind ... --shrink 50 --runs 1`).

#include <troupe/core/actor_system.hpp>
#include <troupe/sharding/cluster_sharding.hpp>

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

// -- the sharded type ---------------------------------------------------------------------------

/// One message for one entity; the extractor reads `id`.
struct hit {
  std::string id;
};

std::string id_of(const hit& h) { return h.id; }

/// "e" + n for n in [0, count).
std::vector<std::string> make_ids(char prefix, std::int64_t count) {
  std::vector<std::string> ids;
  ids.reserve(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) ids.push_back(prefix + std::to_string(i));
  return ids;
}

/// The index n of an id "<letter><n>".
std::size_t index_of(const std::string& id) {
  return static_cast<std::size_t>(std::stoull(id.substr(1)));
}

/// What the entities of one run report to.
struct tallies {
  explicit tallies(std::size_t entities) : handled(entities) {}
  /// Messages handled per entity id (summed over incarnations).
  std::vector<std::atomic<std::int64_t>> handled;
  /// Incarnations started.
  std::atomic<std::int64_t> activations{0};
  /// Counted down once per handled message (when set).
  countdown* each_message = nullptr;
  /// An entity whose own count reaches first_at counts `first` down; at last_at, `last`.
  std::int64_t first_at = 0;
  countdown* first = nullptr;
  std::int64_t last_at = 0;
  countdown* last = nullptr;
};

/// Counts what it receives, per id, in the shared tallies.
class counter_entity final : public troupe::actor<hit> {
 public:
  explicit counter_entity(tallies* t) : tallies_(t), index_(index_of(entity_id())) {
    tallies_->activations.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  void receive(hit& /*unused*/) override {
    const auto n = tallies_->handled[index_].fetch_add(1, std::memory_order_relaxed) + 1;
    if (tallies_->each_message != nullptr) tallies_->each_message->count_down();
    if (n == tallies_->first_at && tallies_->first != nullptr) tallies_->first->count_down();
    if (n == tallies_->last_at && tallies_->last != nullptr) tallies_->last->count_down();
  }

  tallies* tallies_;
  std::size_t index_;
};

/// Checks that every entity handled exactly `expected` messages.
void check_counts(const tallies& t, std::int64_t expected) {
  for (std::size_t i = 0; i < t.handled.size(); ++i) {
    const auto got = t.handled[i].load(std::memory_order_relaxed);
    if (got != expected) {
      throw bench_failure("entity " + std::to_string(i) + " handled " + std::to_string(got) +
                          " messages, expected " + std::to_string(expected));
    }
  }
}

/// Waits until the region of `type` counts `expected` active entities (it hears of starts and
/// stops from its shards asynchronously), so that no report is in flight when the run measures
/// memory or shuts down. Throws bench_failure when the count does not settle.
void settle(troupe::actor_system& system, const std::string& type, std::size_t expected) {
  auto& sharding = troupe::sharding::cluster_sharding::get(system);
  const auto deadline = steady::now() + wait_limit;
  std::size_t active = 0;
  while (true) {
    active = 0;
    for (const auto& s : sharding.shards(type, wait_limit)) active += s.entity_count;
    if (active == expected) return;
    if (steady::now() > deadline) break;
    std::this_thread::sleep_for(1ms);
  }
  throw bench_failure("the region counts " + std::to_string(active) +
                      " active entities, expected " + std::to_string(expected));
}

/// The number of active entities the region of `type` counts once that number stops changing
/// (unchanged over 50 ms).
std::size_t settled_count(troupe::actor_system& system, const std::string& type) {
  auto& sharding = troupe::sharding::cluster_sharding::get(system);
  auto count = [&] {
    std::size_t active = 0;
    for (const auto& s : sharding.shards(type, wait_limit)) active += s.entity_count;
    return active;
  };
  std::size_t last = count();
  for (const auto deadline = steady::now() + wait_limit; steady::now() < deadline;) {
    std::this_thread::sleep_for(50ms);
    const std::size_t now = count();
    if (now == last) return now;
    last = now;
  }
  throw bench_failure("the region's count of active entities never settled");
}

// -- local_tell ---------------------------------------------------------------------------------

namespace local_tell {

run_result run(std::size_t workers, std::int64_t entities, std::int64_t messages) {
  check(messages % entities == 0, "messages must be a multiple of entities");
  troupe::actor_system system(bench_config(workers));
  const auto ids = make_ids('e', entities);
  tallies t(static_cast<std::size_t>(entities));
  countdown warm(entities);
  countdown done(entities);
  t.first_at = 1;
  t.first = &warm;
  t.last_at = 1 + messages / entities;
  t.last = &done;
  auto region = troupe::sharding::cluster_sharding::get(system).start(
      troupe::sharding::sharding_options<hit>::create()
          .with_type_name("counter")
          .with_entity<counter_entity>(&t)
          .with_extract_entity_id(id_of)
          .with_passivation_idle(0s));

  // Warm-up: activate every entity before the clock starts.
  for (const auto& id : ids) region.tell(hit{id});
  warm.wait("every entity to activate");

  const auto start = steady::now();
  for (std::int64_t i = 0; i < messages; ++i) {
    region.tell(hit{ids[static_cast<std::size_t>(i % entities)]});
  }
  const auto end = done.wait("every entity to count its messages");
  const double seconds = seconds_between(start, end);
  settle(system, "counter", static_cast<std::size_t>(entities));

  region = {};
  const double teardown = shut_down(system);
  check_counts(t, 1 + messages / entities);
  check(t.activations.load() == entities, "entities were activated " +
                                              std::to_string(t.activations.load()) +
                                              " times, expected " + std::to_string(entities));
  return {static_cast<double>(messages) / seconds, {{"teardown_s", teardown}}};
}

}  // namespace local_tell

// -- activation, bytes_per_idle_entity ----------------------------------------------------------

namespace activation {

/// Sends one message to each of `entities` new ids (default options: 64 shards, passivation
/// after 5 minutes idle, so the policy tracks every entity) and waits until all have handled it.
run_result run(std::size_t workers, std::int64_t entities, bool measure_memory) {
  troupe::actor_system system(bench_config(workers));
  const auto ids = make_ids('a', entities);
  tallies t(static_cast<std::size_t>(entities));
  countdown done(entities);
  t.first_at = 1;
  t.first = &done;
  auto region = troupe::sharding::cluster_sharding::get(system).start(
      troupe::sharding::sharding_options<hit>::create()
          .with_type_name("counter")
          .with_entity<counter_entity>(&t)
          .with_extract_entity_id(id_of));

  std::this_thread::sleep_for(10ms);  // let the workers settle (spin, then park)
  release_free_memory();
  const std::int64_t rss_before = resident_bytes();
  const std::int64_t allocated_before = allocated_bytes();

  const auto start = steady::now();
  for (const auto& id : ids) region.tell(hit{id});
  const auto end = done.wait("every entity to handle its first message");
  const double seconds = seconds_between(start, end);
  settle(system, "counter", static_cast<std::size_t>(entities));

  std::this_thread::sleep_for(10ms);  // the last turns end
  release_free_memory();
  const std::int64_t rss_after = resident_bytes();
  const std::int64_t allocated_after = allocated_bytes();

  region = {};
  const double teardown = shut_down(system);
  check_counts(t, 1);
  check(t.activations.load() == entities, "entities were activated " +
                                              std::to_string(t.activations.load()) +
                                              " times, expected " + std::to_string(entities));
  const auto n = static_cast<double>(entities);
  run_result out;
  if (measure_memory) {
    out.value = static_cast<double>(rss_after - rss_before) / n;
    check(out.value > 0, "RSS did not grow while activating");
    if (allocated_before >= 0 && allocated_after >= 0) {
      out.extras.emplace_back("allocated_bytes_per_entity",
                              static_cast<double>(allocated_after - allocated_before) / n);
    }
  } else {
    out.value = n / seconds;
  }
  out.extras.emplace_back("teardown_s", teardown);
  return out;
}

}  // namespace activation

// -- passivation_churn --------------------------------------------------------------------------

namespace churn {

/// Message i goes to id "p<i % window>"; at most `max_entities` are active, so (with a window far
/// larger than the cap) every message activates an entity and the LRU cap passivates another.
run_result run(std::size_t workers, std::int64_t window, std::int64_t messages,
               std::size_t max_entities) {
  check(messages % window == 0, "messages must be a multiple of the window");
  troupe::actor_system system(bench_config(workers));
  const auto ids = make_ids('p', window);
  tallies t(static_cast<std::size_t>(window));
  countdown done(messages);
  t.each_message = &done;
  auto region = troupe::sharding::cluster_sharding::get(system).start(
      troupe::sharding::sharding_options<hit>::create()
          .with_type_name("churn")
          .with_entity<counter_entity>(&t)
          .with_extract_entity_id(id_of)
          .with_passivation_idle(0s)
          .with_max_entities(max_entities));

  const auto start = steady::now();
  for (std::int64_t i = 0; i < messages; ++i) {
    region.tell(hit{ids[static_cast<std::size_t>(i % window)]});
  }
  const auto end = done.wait("every message to be handled");
  const double seconds = seconds_between(start, end);
  const auto activations = t.activations.load();
  // The LRU cap should leave max_entities active. Reported, not checked: when a message for a
  // passivating entity reaches the region before that entity's stop report, the policy forgets
  // the entity's next incarnation, which then stays active beyond the cap (see docs/sharding.md).
  const std::size_t active_after = settled_count(system, "churn");

  region = {};
  const double teardown = shut_down(system);
  check_counts(t, messages / window);  // every message handled exactly once
  check(activations == messages, std::to_string(activations) + " activations for " +
                                     std::to_string(messages) +
                                     " messages: some message found its entity still active");
  return {static_cast<double>(activations) / seconds,
          {{"activations", static_cast<double>(activations)},
           {"active_after_run", static_cast<double>(active_after)},
           {"teardown_s", teardown}}};
}

}  // namespace churn

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

/// The cases; every size is divided by `shrink` (--shrink, for profiling under valgrind).
std::vector<bench_case> all_cases(std::int64_t shrink) {
  const std::int64_t million = 1'000'000 / shrink;
  const std::int64_t entities = 10'000 / shrink;
  const std::int64_t window = 100'000 / shrink;
  const std::int64_t churn_messages = 2 * window;
  const auto cap = static_cast<std::size_t>(std::max<std::int64_t>(1, 1000 / shrink));
  std::vector<bench_case> cases;
  auto at_least = [](double t) { return [t](double v) { return v >= t; }; };
  auto at_most = [](double t) { return [t](double v) { return v <= t; }; };

  cases.push_back({"local_tell",
                   "msgs/s",
                   ">= 3 M",
                   at_least(3e6),
                   {{"entities", str(entities)},
                    {"messages", str(million)},
                    {"order", json_string("round-robin over e0, e1, ...")},
                    {"passivation", json_string("off")},
                    {"sent_by", json_string("one non-actor thread, through the region ref")},
                    {"timed", json_string("after every entity is active, until all counted")}},
                   [=](std::size_t w) { return local_tell::run(w, entities, million); }});
  cases.push_back(
      {"activation",
       "activations/s",
       ">= 1 M",
       at_least(1e6),
       {{"entities", str(million)},
        {"shards", "64"},
        {"passivation", json_string("default: 5 min idle")},
        {"timed", json_string("from the first tell until every entity handled its message")}},
       [=](std::size_t w) { return activation::run(w, million, false); }});
  cases.push_back({"bytes_per_idle_entity",
                   "bytes",
                   "<= 300",
                   at_most(300),
                   {{"entities", str(million)},
                    {"shards", "64"},
                    {"passivation", json_string("default: 5 min idle")},
                    {"measure", json_string("RSS growth (/proc/self/statm) / entities, sharding "
                                            "bookkeeping included")}},
                   [=](std::size_t w) { return activation::run(w, million, true); }});
  cases.push_back({"passivation_churn",
                   "activations/s",
                   "",
                   nullptr,
                   {{"window", str(window)},
                    {"messages", str(churn_messages)},
                    {"max_entities", str(static_cast<std::int64_t>(cap))},
                    {"passivation", json_string("LRU cap only (idle off)")},
                    {"timed", json_string("from the first tell until every message handled")}},
                   [=](std::size_t w) { return churn::run(w, window, churn_messages, cap); }});
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
        std::fprintf(stderr, "troupe_bench_sharding: %s hangs; giving up\n", what_.c_str());
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
  std::fprintf(
      stderr,
      "%s%susage: troupe_bench_sharding [--case NAME[,NAME...]]... [--runs N] [--workers N] "
      "[--json-only] [--list] [--shrink K]\n",
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
  std::int64_t shrink = 1;
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
    } else if (arg == "--shrink") {
      shrink = positive(arg, next());
      if (shrink > 10'000) usage("--shrink: at most 10000");
    } else if (arg == "--json-only") {
      json_only = true;
    } else if (arg == "--benchmark_filter") {
      try {
        filter.emplace(next());
      } catch (const std::regex_error&) {
        usage("--benchmark_filter: not a regular expression");
      }
    } else if (arg == "--list") {
      for (const auto& c : all_cases(1)) std::printf("%s\n", c.name.c_str());
      return 0;
    } else if (arg == "--help" || arg == "-h") {
      usage("");
    } else {
      usage("unknown argument '" + args[i] + "'");
    }
  }
  const std::vector<bench_case> cases = all_cases(shrink);
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
      std::fprintf(stderr, "troupe_bench_sharding: %s FAILED: %s\n", c->name.c_str(),
                   out.error.c_str());
      outcomes.push_back(std::move(out));
      continue;
    }
    out.value = median(out.runs);

    std::string json = "{\"bench\":\"sharding\",\"case\":" + json_string(c->name) +
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
    std::printf("\n%-22s %12s %-13s %12s %12s  %-8s %s\n", "case", "median", "unit", "min", "max",
                "target", "");
    for (const auto& o : outcomes) {
      if (!o.error.empty()) {
        std::printf("%-22s %12s %-13s %12s %12s  %-8s %s\n", o.c->name.c_str(), "FAILED",
                    o.c->unit.c_str(), "-", "-", o.c->target.c_str(), o.error.c_str());
        continue;
      }
      const auto [lo, hi] = std::minmax_element(o.runs.begin(), o.runs.end());
      std::string note;
      if (o.c->meets) note = o.c->meets(o.value) ? "ok" : "MISSED";
      if (const double p50 = extra(o, "p50_lateness_us"); std::isfinite(p50)) {
        note = "lateness p50 " + micros(p50) + ", p99 " + micros(extra(o, "p99_lateness_us"));
      }
      std::printf("%-22s %12s %-13s %12s %12s  %-8s %s\n", o.c->name.c_str(),
                  human(o.value).c_str(), o.c->unit.c_str(), human(*lo).c_str(), human(*hi).c_str(),
                  o.c->target.empty() ? "-" : o.c->target.c_str(), note.c_str());
    }
    std::printf("(%lld run(s) per case, %zu workers, median of the runs)\n",
                static_cast<long long>(runs), workers);
  }
  return failed ? 1 : 0;
}
