// troupe_bench_seed: issue 4's benchmark. The guide "Sharding state across asyncio actors by key"
// (shared/spec/sharding-asyncio-actors-by-key.txt) on the same workload: messages whose handler
// awaits 1 ms of I/O, routed by key, either through N shard actors (the guide's design) or to
// one sharded entity per key (Troupe's), uniform or Zipf keys, with or without batching.
//
//   troupe_bench_seed [--messages N] [--keys K] [--io-ms X] [--dist uniform|zipf] [--zipf-s S]
//                     [--mode shard-actors|entities] [--shards N] [--batch N]
//                     [--max-concurrent N] [--runs R] [--seed S] [--workers N]
//                     [--timer sleep_for|asio] [--json] [--svg FILE]
//
// With any workload or mode flag it measures that one configuration; with none it runs the
// guide's whole table and the scaled workload (a row repeats only while its runs took under
// 10 s), prints a table beside the published figures and writes an SVG chart. One JSON line per
// configuration goes to stdout; --json prints only those. Exit codes: 0 all runs passed, 1 a run
// failed (per-key order, a hang, lost messages), 2 bad arguments.

#include "seed_measure.hpp"
#include "seed_svg.hpp"
#include "seed_table.hpp"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <thread>

namespace {

using namespace troupe::bench::seed;

/// The chart's default place: beside the program (build/release/bench/seed.svg).
std::string default_svg_path() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "seed.svg";
  return (exe.parent_path() / "seed.svg").string();
}

struct options {
  workload_spec spec;
  run_config config;
  int runs = 3;
  bool json = false;
  std::string svg;
};

int run_one(options o) {
  const measurement m = measure(o.spec, o.config, o.runs);
  std::printf("%s\n", json_line(m).c_str());
  if (!o.json) print_details(m);
  if (!m.error.empty()) std::fprintf(stderr, "troupe_bench_seed: FAILED: %s\n", m.error.c_str());
  return m.error.empty() ? 0 : 1;
}

int run_table(const options& o) {
  auto rows = default_rows(o.config.io_ms, o.spec.seed, o.config.workers);
  for (auto& r : rows) {
    r.config.asio_timer = o.config.asio_timer;
    r.config.warm = o.config.warm;
  }
  std::vector<measurement> results;
  bool failed = false;
  for (const auto& r : rows) {
    // Rows limited by long serial chains (1 shard: ~10 s a run) vary little between runs; a
    // row stops repeating after 10 s so that the whole table stays under 3 minutes.
    results.push_back(measure(r.spec, r.config, o.runs, 10.0));
    const auto& m = results.back();
    std::printf("%s\n", json_line(m).c_str());
    if (!o.json) print_details(m);
    std::fflush(stdout);
    if (!m.error.empty()) {
      std::fprintf(stderr, "troupe_bench_seed: %s FAILED: %s\n", r.label.c_str(), m.error.c_str());
      failed = true;
    }
  }
  if (!o.json) print_table(rows, results);
  const std::string svg = o.svg.empty() ? default_svg_path() : o.svg;
  if (write_svg(svg, rows, results) && !o.json) std::printf("chart: %s\n", svg.c_str());
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  o.config.workers = std::max(1u, std::thread::hardware_concurrency());
  CLI::App app{"troupe_bench_seed: sharding by key under awaited I/O (issue 4)"};
  std::uint32_t shards = 0;
  const std::map<std::string, mode> modes = {{"shard-actors", mode::shard_actors},
                                             {"entities", mode::entities}};
  const std::map<std::string, distribution> dists = {{"uniform", distribution::uniform},
                                                     {"zipf", distribution::zipf}};
  // Any of these selects one configuration instead of the whole table.
  std::vector<CLI::Option*> selecting = {
      app.add_option("--messages", o.spec.messages, "messages to send")
          ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 32)),
      app.add_option("--keys", o.spec.keys, "distinct keys k0..k{K-1}")
          ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 31)),
      app.add_option("--dist", o.spec.dist, "key distribution")
          ->transform(CLI::CheckedTransformer(dists)),
      app.add_option("--zipf-s", o.spec.zipf_s, "Zipf exponent")->check(CLI::Range(0.0, 10.0)),
      app.add_option("--mode", o.config.how, "shard actors (the guide) or one entity per key")
          ->transform(CLI::CheckedTransformer(modes)),
      app.add_option("--shards", shards,
                     "shard actors, or Troupe shards (default 256 shard-actors, 64 entities)")
          ->check(CLI::Range(1u, 1u << 20)),
      app.add_option("--batch", o.config.batch, "messages per awaited write (0: off)")
          ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 20)),
      app.add_option("--max-concurrent", o.config.max_concurrent,
                     "units inside their I/O at once (0: unlimited; entities: the region's "
                     "with_max_concurrent)")
          ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 20)),
  };
  const std::map<std::string, bool> timers = {{"sleep_for", false}, {"asio", true}};
  app.add_option("--timer", o.config.asio_timer,
                 "the I/O stand-in: troupe::sleep_for (default) or an asio steady_timer")
      ->transform(CLI::CheckedTransformer(timers));
  app.add_option("--io-ms", o.config.io_ms, "awaited I/O per write, in ms")
      ->check(CLI::Range(0.0, 1000.0));
  app.add_option("--runs", o.runs, "runs per configuration (median reported)")
      ->check(CLI::Range(1, 100));
  app.add_option("--seed", o.spec.seed, "splitmix64 seed");
  app.add_option("--workers", o.config.workers, "worker threads")
      ->check(CLI::Range(std::size_t{1}, std::size_t{256}));
  app.add_flag("--warm", o.config.warm,
               "entities: start every entity before the clock (not part of issue 4's workload)");
  app.add_flag("--json", o.json, "print only the JSON lines");
  app.add_option("--svg", o.svg, "chart of the whole table (default: beside the program)");
  CLI11_PARSE(app, argc, argv);

  const bool one = std::any_of(selecting.begin(), selecting.end(),
                               [](const CLI::Option* opt) { return opt->count() > 0; });
  if (!one) return run_table(o);
  o.config.shards = shards != 0 ? shards : (o.config.how == mode::entities ? 64 : 256);
  if (!o.svg.empty()) {
    std::fprintf(stderr, "troupe_bench_seed: --svg charts the whole table only\n");
  }
  return run_one(o);
}
