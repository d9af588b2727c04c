#include "bench_support.hpp"

#include <dlfcn.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

namespace troupe::bench {

using namespace std::chrono_literals;

// -- helpers for the cases ----------------------------------------------------------------------

void check(bool ok, const std::string& what) {
  if (!ok) throw bench_failure(what);
}

double seconds_between(steady::time_point from, steady::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

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

namespace {

/// jemalloc's mallctl when jemalloc is the allocator (looked up at run time, so the programs
/// also build with TROUPE_BENCH_ALLOCATOR=system).
using mallctl_fn = int (*)(const char*, void*, std::size_t*, void*, std::size_t);
mallctl_fn jemalloc_ctl() {
  static const auto fn = reinterpret_cast<mallctl_fn>(::dlsym(RTLD_DEFAULT, "mallctl"));
  return fn;
}

}  // namespace

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

std::vector<std::pair<std::size_t, std::int64_t>> small_allocations_by_size() {
  std::vector<std::pair<std::size_t, std::int64_t>> out;
  auto* ctl = jemalloc_ctl();
  if (ctl == nullptr) return out;
  std::uint64_t epoch = 1;
  std::size_t len = sizeof(epoch);
  ctl("epoch", &epoch, &len, &epoch, len);
  unsigned bins = 0;
  len = sizeof(bins);
  if (ctl("arenas.nbins", &bins, &len, nullptr, 0) != 0) return out;
  for (unsigned j = 0; j < bins; ++j) {
    std::size_t size = 0;
    std::size_t regs = 0;
    const std::string bin = std::to_string(j);
    len = sizeof(size);
    if (ctl(("arenas.bin." + bin + ".size").c_str(), &size, &len, nullptr, 0) != 0) return {};
    len = sizeof(regs);
    // 4096: MALLCTL_ARENAS_ALL (the arenas' stats merged)
    if (ctl(("stats.arenas.4096.bins." + bin + ".curregs").c_str(), &regs, &len, nullptr, 0) != 0) {
      return {};
    }
    out.emplace_back(size, static_cast<std::int64_t>(regs));
  }
  return out;
}

memory_use settled_memory() {
  std::this_thread::sleep_for(10ms);
  const std::int64_t unpurged = resident_bytes();
  release_free_memory();
  memory_use out;
  out.resident = resident_bytes();
  out.allocated = allocated_bytes();
  out.unpurged_resident = unpurged;
  return out;
}

double percentile(const std::vector<double>& sorted, double p) {
  const auto i = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

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

std::string str(std::int64_t v) { return std::to_string(v); }

std::function<bool(double)> at_least(double t) {
  return [t](double v) { return v >= t; };
}

std::function<bool(double)> at_most(double t) {
  return [t](double v) { return v <= t; };
}

// -- the driver ---------------------------------------------------------------------------------

namespace {

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
/// A case's name in the table: cases that share a name and differ in TLS get a suffix.
std::string table_name(const bench_case& c) {
  for (const auto& [key, value] : c.params) {
    if (key == "tls" && value == "true") return c.name + " (tls)";
  }
  return c.name;
}

std::string micros(double us) {
  char buf[64];
  if (us >= 1000) {
    std::snprintf(buf, sizeof buf, "%.2f ms", us / 1000);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f us", us);
  }
  return buf;
}

/// Kills the process when one run hangs past every per-wait limit (a wedged runtime would
/// otherwise also wedge the system's destructor).
class watchdog {
 public:
  explicit watchdog(std::string program)
      : program_(std::move(program)), thread_([this] { loop(); }) {}
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
        std::fprintf(stderr, "%s: %s hangs; giving up\n", program_.c_str(), what_.c_str());
        std::fflush(stdout);
        std::_Exit(3);
      }
    }
  }
  const std::string program_;
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

/// Parses the command line and, with the helpers below, runs the cases of one program.
class driver {
 public:
  explicit driver(const bench_options& options)
      : options_(options), program_("troupe_bench_" + options.name) {
    for (const auto& f : options_.flags) flag_values_.push_back(f.default_value);
  }

  /// Parses the arguments; returns false when the program is done (--list).
  bool parse(int argc, char** argv);
  /// Runs the selected cases, printing one JSON line each; returns whether all passed.
  bool run();
  void print_table() const;
  [[nodiscard]] bool json_only() const { return json_only_; }

 private:
  [[noreturn]] void usage(const std::string& problem) const;
  std::int64_t positive(const std::string& flag, const std::string& text) const;
  outcome run_case(const bench_case& c, watchdog& dog);
  void print_json(const bench_case& c, outcome& out, const std::vector<std::string>& extra_names,
                  const std::vector<std::vector<double>>& extras) const;

  const bench_options& options_;
  const std::string program_;
  std::vector<std::int64_t> flag_values_;
  std::vector<bench_case> cases_;
  std::vector<const bench_case*> selected_;
  std::int64_t runs_ = 3;
  std::size_t workers_ = std::max(1u, std::thread::hardware_concurrency());
  bool json_only_ = false;
  std::vector<outcome> outcomes_;
};

void driver::usage(const std::string& problem) const {
  std::string line = "usage: " + program_ +
                     " [--case NAME[,NAME...]]... [--runs N] [--workers N] [--json-only] [--list]";
  for (const auto& f : options_.flags) line += " [" + f.name + " " + f.metavar + "]";
  std::fprintf(stderr, "%s%s%s\n", problem.c_str(), problem.empty() ? "" : "\n", line.c_str());
  std::exit(problem.empty() ? 0 : 2);
}

std::int64_t driver::positive(const std::string& flag, const std::string& text) const {
  try {
    std::size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used == text.size() && v > 0) return v;
  } catch (const std::exception&) {
  }
  usage(flag + " needs a positive number, got '" + text + "'");
}

bool driver::parse(int argc, char** argv) {
  std::vector<std::string> wanted;
  std::optional<std::regex> filter;
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
    const auto own = std::find_if(options_.flags.begin(), options_.flags.end(),
                                  [&](const extra_flag& f) { return f.name == arg; });
    if (arg == "--case") {
      std::stringstream list(next());
      for (std::string name; std::getline(list, name, ',');) {
        if (!name.empty()) wanted.push_back(name);
      }
    } else if (arg == "--runs") {
      runs_ = positive(arg, next());
    } else if (arg == "--workers") {
      workers_ = static_cast<std::size_t>(positive(arg, next()));
    } else if (own != options_.flags.end()) {
      const std::int64_t v = positive(arg, next());
      if (own->max_value > 0 && v > own->max_value) {
        usage(arg + ": at most " + std::to_string(own->max_value));
      }
      flag_values_[static_cast<std::size_t>(own - options_.flags.begin())] = v;
    } else if (arg == "--json-only") {
      json_only_ = true;
    } else if (arg == "--benchmark_filter") {
      try {
        filter.emplace(next());
      } catch (const std::regex_error&) {
        usage("--benchmark_filter: not a regular expression");
      }
    } else if (arg == "--list") {
      std::vector<std::int64_t> defaults;
      for (const auto& f : options_.flags) defaults.push_back(f.default_value);
      for (const auto& c : options_.cases(defaults)) std::printf("%s\n", c.name.c_str());
      return false;
    } else if (arg == "--help" || arg == "-h") {
      usage("");
    } else {
      usage("unknown argument '" + args[i] + "'");
    }
  }
  cases_ = options_.cases(flag_values_);
  for (const auto& name : wanted) {
    if (std::none_of(cases_.begin(), cases_.end(), [&](const auto& c) { return c.name == name; })) {
      std::string known;
      for (const auto& c : cases_) known += " " + c.name;
      usage("unknown case '" + name + "'; cases:" + known);
    }
  }
  for (const auto& c : cases_) {
    const bool named =
        wanted.empty() || std::find(wanted.begin(), wanted.end(), c.name) != wanted.end();
    const bool matches = !filter || std::regex_search(c.name, *filter);
    if (named && matches) selected_.push_back(&c);
  }
  if (selected_.empty()) usage("no case selected");
  return true;
}

outcome driver::run_case(const bench_case& c, watchdog& dog) {
  outcome out{&c, {}, 0, {}, {}};
  std::vector<std::vector<double>> extras;  // per extra: one value per run
  std::vector<std::string> extra_names;
  for (std::int64_t r = 0; r < runs_ && out.error.empty(); ++r) {
    dog.arm(c.name + " (run " + std::to_string(r + 1) + ")", std::chrono::seconds(300));
    try {
      run_result res = c.run(workers_);
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
    std::fprintf(stderr, "%s: %s FAILED: %s\n", program_.c_str(), c.name.c_str(),
                 out.error.c_str());
    return out;
  }
  out.value = median(out.runs);
  print_json(c, out, extra_names, extras);
  return out;
}

void driver::print_json(const bench_case& c, outcome& out,
                        const std::vector<std::string>& extra_names,
                        const std::vector<std::vector<double>>& extras) const {
  std::string json = "{\"bench\":" + json_string(options_.name) +
                     ",\"case\":" + json_string(c.name) + ",\"value\":" + json_number(out.value) +
                     ",\"unit\":" + json_string(c.unit) + ",\"runs\":[";
  for (std::size_t k = 0; k < out.runs.size(); ++k) {
    json += (k ? "," : "") + json_number(out.runs[k]);
  }
  json += "],\"params\":{\"workers\":" + std::to_string(workers_);
  for (const auto& [key, v] : c.params) json += "," + json_string(key) + ":" + v;
  std::string top_level;
  for (std::size_t k = 0; k < extra_names.size(); ++k) {
    const double m = median(extras[k]);
    out.extras.emplace_back(extra_names[k], m);
    json += "," + json_string(extra_names[k]) + ":" + json_number(m);
    if (extra_names[k] == "p50_lateness_us" || extra_names[k] == "p50_us") {
      top_level += ",\"p50_us\":" + json_number(m);
    }
    if (extra_names[k] == "p99_lateness_us" || extra_names[k] == "p99_us") {
      top_level += ",\"p99_us\":" + json_number(m);
    }
  }
  json += "}" + top_level + "}";
  std::printf("%s\n", json.c_str());
  std::fflush(stdout);
}

bool driver::run() {
  watchdog dog(program_);
  bool failed = false;
  for (const bench_case* c : selected_) {
    outcomes_.push_back(run_case(*c, dog));
    if (!outcomes_.back().error.empty()) failed = true;
  }
  return !failed;
}

void driver::print_table() const {
  const int uw = options_.unit_width;
  const int tw = options_.target_width;
  const char* const row = "%-26s %12s %-*s %12s %12s  %-*s %s\n";
  std::printf("\n");
  std::printf(row, "case", "median", uw, "unit", "min", "max", tw, "target", "");
  for (const auto& o : outcomes_) {
    if (!o.error.empty()) {
      std::printf(row, table_name(*o.c).c_str(), "FAILED", uw, o.c->unit.c_str(), "-", "-", tw,
                  o.c->target.c_str(), o.error.c_str());
      continue;
    }
    const auto [lo, hi] = std::minmax_element(o.runs.begin(), o.runs.end());
    std::string note;
    if (o.c->meets) note = o.c->meets(o.value) ? "ok" : "MISSED";
    if (const double p50 = extra(o, "p50_lateness_us"); std::isfinite(p50)) {
      note = "lateness p50 " + micros(p50) + ", p99 " + micros(extra(o, "p99_lateness_us"));
    }
    if (const double p50 = extra(o, "p50_us"); std::isfinite(p50)) {
      note += (note.empty() ? "" : "; ") + std::string("p50 ") + micros(p50) + ", p99 " +
              micros(extra(o, "p99_us"));
    }
    std::printf(row, table_name(*o.c).c_str(), human(o.value).c_str(), uw, o.c->unit.c_str(),
                human(*lo).c_str(), human(*hi).c_str(), tw,
                o.c->target.empty() ? "-" : o.c->target.c_str(), note.c_str());
  }
  std::printf("(%lld run(s) per case, %zu workers, median of the runs)\n",
              static_cast<long long>(runs_), workers_);
}

}  // namespace

int run_benchmarks(int argc, char** argv, const bench_options& options) {
  driver d(options);
  if (!d.parse(argc, argv)) return 0;
  const bool passed = d.run();
  if (!d.json_only()) d.print_table();
  return passed ? 0 : 1;
}

}  // namespace troupe::bench
