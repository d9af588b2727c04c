// A live cluster in one process: three nodes serve shopping carts under load while a fourth node
// joins, one leaves gracefully and one is killed. It prints every shard move as it happens and
// ends with the checks that matter: nothing acknowledged is lost, no cart runs on two nodes at
// once, each cart's items stay in order, and a graceful move loses no message at all.
//
//   * each node is an actor system with remoting over TCP on 127.0.0.1 and a cluster_node joined
//     to the in-process model of etcd; "cart" is a persistent entity over 64 shards whose events
//     go to one SQLite file in a temporary directory (removed at the end);
//   * client threads add items to carts with asks through node a, and record every outcome;
//   * then the checks: every cart is read back and compared with what was acknowledged.
//
// Exits with 1 when a check that must be 0 is not, 2 on a bad command line.

#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/persistence/sqlite_plugin.hpp>

#include "cart.hpp"
#include "console.hpp"
#include "load.hpp"
#include "node.hpp"
#include "options.hpp"
#include "progress.hpp"
#include "report.hpp"
#include "runtime_log.hpp"
#include "shard_watcher.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <system_error>
#include <thread>

using namespace std::chrono_literals;
namespace cd = cluster_demo;

namespace {

constexpr std::uint32_t num_shards = 64;

void print_map(cd::console& out, const std::map<std::string, std::set<std::uint32_t>>& shards) {
  bool first = true;
  for (const auto& [node, set] : shards) {
    char text[160];
    std::snprintf(text, sizeof text, "  %-11s %s %2zu %s", first ? "shard map" : "", node.c_str(),
                  set.size(), std::string(set.size(), '#').c_str());
    out.line(text);
    first = false;
  }
}

/// Waits until `done()` or `limit`; whether done() held.
template <class Done>
bool wait_until(Done done, std::chrono::milliseconds limit) {
  const auto give_up = cd::demo_clock::now() + limit;
  while (!done()) {
    if (cd::demo_clock::now() > give_up) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

void sleep_until(cd::demo_clock::time_point t) { std::this_thread::sleep_until(t); }

/// The SQLite file's directory, removed with everything in it when the demo ends.
struct temp_dir {
  temp_dir()
      : path(std::filesystem::temp_directory_path() /
             ("troupe-cluster-demo-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  std::filesystem::path path;
};

}  // namespace

int main(int argc, char** argv) {
  std::string error;
  const auto parsed = cd::parse_options(argc, argv, error);
  if (!parsed) {
    std::fprintf(stderr, "troupe_cluster_demo: %s\n", error.c_str());
    cd::print_usage(stderr);
    return 2;
  }
  const cd::options& f = *parsed;
  if (f.help) {
    cd::print_usage(stdout);
    return 0;
  }
  const auto t0 = cd::demo_clock::now();
  const auto phase_length = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(f.seconds_per_phase));
  cd::console out(!f.quiet && ::isatty(::fileno(stdout)) == 1);
  cd::route_runtime_log(out, t0);
  cd::summary result;

  std::printf(
      "Troupe cluster demo: %s shopping carts, sharded over %u shards, persisted to SQLite.\n"
      "Nodes a, b and c form a cluster in this process (TCP on 127.0.0.1, etcd modelled\n"
      "in-process). Under load, node d joins, node b leaves gracefully and node c is killed;\n"
      "then every cart is read back and checked against what was acknowledged.\n\n",
      cd::grouped(static_cast<std::int64_t>(f.carts)).c_str(), num_shards);

  // Declared in the order they must outlive each other: the nodes go first, then the journal,
  // then the directory holding it.
  temp_dir dir;
  cd::io_thread io;  // before the clock: the model's timers on the clock hold the io's strands
  auto clock = troupe::make_steady_clock();
  troupe::cluster::in_process_etcd etcd(clock);
  std::shared_ptr<troupe::persistence::plugin> journal =
      troupe::persistence::open_sqlite_plugin({.file = dir.path / "carts.db"});
  cd::activation_registry activations;
  const cd::cluster_parts parts{etcd, io, clock, journal, activations, num_shards};
  std::map<std::string, std::unique_ptr<cd::demo_node>> nodes;

  out.line("  " + cd::since(t0) + "  journal: " + (dir.path / "carts.db").string());
  for (const char* name : {"a", "b", "c"}) {
    nodes[name] = std::make_unique<cd::demo_node>(name, parts);
    out.line("  " + cd::since(t0) + "  node " + name + " joined, listening on " +
             nodes[name]->address());
  }
  // The leading coordinator must know all three regions, or the first shards would all go to
  // the nodes it heard of first.
  if (!wait_until(
          [&] {
            return std::any_of(nodes.begin(), nodes.end(), [](const auto& n) {
              return n.second->cluster().hosting_regions("cart") == 3;
            });
          },
          10s)) {
    std::printf("the coordinator never saw all three regions\n");
    return 1;
  }
  auto& a = *nodes["a"];

  cd::load load(a.carts(), cd::load_settings{.carts = f.carts});
  const std::size_t inactive = load.activate_all(20s);
  out.line("  " + cd::since(t0) + "  " +
           cd::grouped(static_cast<std::int64_t>(f.carts - inactive)) +
           " carts activated (recovered from the empty journal)");
  if (inactive > 0) {
    std::printf("%zu carts never answered\n", inactive);
    return 1;
  }
  cd::shard_watcher watcher(out, t0);
  watcher.start(a.cluster());

  load.start();
  cd::progress live(out, load, t0, f.quiet);
  auto show_map = [&] {
    watcher.catch_up();
    print_map(out, watcher.shards());
  };
  auto banner = [&](int n, const std::string& text) {
    out.line("");
    out.line("  " + cd::since(t0) + "  == " + std::to_string(n) + "/5 " + text);
  };

  // 1. Steady: three nodes.
  banner(1, "steady: nodes a, b, c serve the carts; 4 client threads ask through node a");
  show_map();
  auto phase_start = cd::demo_clock::now();
  sleep_until(phase_start + phase_length);

  // 2. d joins; the coordinator's rebalance moves shards to it from live owners.
  load.set_phase(cd::phase::join);
  banner(2, "join: node d joins; the next rebalance hands shards off to it from live owners");
  phase_start = cd::demo_clock::now();
  nodes["d"] = std::make_unique<cd::demo_node>("d", parts);
  out.line("  " + cd::since(t0) + "  node d joined, listening on " + nodes["d"]->address());
  // A fair share of the shards in use (a small --carts leaves some shards unused).
  std::size_t in_use = 0;
  for (const auto& [node, shards] : watcher.shards()) in_use += shards.size();
  result.fair_share = static_cast<int>(in_use / 4);
  if (wait_until([&] { return watcher.shards()["d"].size() + 1 >= in_use / 4; }, 30s)) {
    result.join_s = cd::seconds(phase_start);
  } else {
    result.problems.push_back("node d never got its fair share of the shards");
  }
  sleep_until(phase_start + phase_length);
  show_map();

  // 3. b leaves gracefully: its shards are handed off, then its lease is revoked.
  load.set_phase(cd::phase::leave);
  banner(3, "leave: node b leaves gracefully; it hands its shards off, then stops");
  phase_start = cd::demo_clock::now();
  {
    // Shared with the callback: it may come after this scope gave up waiting.
    auto left = std::make_shared<std::promise<std::error_code>>();
    watcher.leaving("b");
    nodes["b"]->cluster().leave([left](std::error_code ec) { left->set_value(ec); });
    auto done = left->get_future();
    if (done.wait_for(20s) == std::future_status::ready) {
      const std::error_code ec = done.get();
      result.leave_s = cd::seconds(phase_start);
      watcher.catch_up();
      out.line("  " + cd::since(t0) + "  node b left" +
               (ec ? " (the lease revoke failed: " + ec.message() + ")" : std::string()));
    } else {
      result.problems.push_back("node b's leave never completed");
    }
  }
  nodes.erase("b");
  out.line("  " + cd::since(t0) + "  node b stopped");
  sleep_until(phase_start + phase_length);
  show_map();

  // 4. c is killed: no goodbye. Its shards move once its lease runs out.
  load.set_phase(cd::phase::kill);
  banner(4, "kill: node c loses etcd and the network at once; it never says goodbye");
  phase_start = cd::demo_clock::now();
  const auto shards_of_c = watcher.shards_of_now("c");
  nodes["c"]->kill();
  load.killed("c", shards_of_c);
  out.line("  " + cd::since(t0) + "  node c is dead to the others: asks in flight to it are lost,");
  out.line("  " + cd::since(t0) + "  and its " + std::to_string(shards_of_c.size()) + " shards (" +
           cd::grouped(load.killed_carts()) + " carts) wait until its lease runs out");
  if (wait_until([&] { return load.killed_carts_waiting() == 0; }, 30s)) {
    result.kill_s = load.killed_carts_back_after();
    watcher.catch_up();
    out.line("  " + cd::since(t0) + "  every cart of c answers again from a or d");
  } else {
    result.problems.push_back(cd::grouped(load.killed_carts_waiting()) +
                              " carts of c never answered again");
  }
  sleep_until(phase_start + phase_length);
  show_map();

  // 5. Steady again, until no shard has moved for a second.
  load.set_phase(cd::phase::settle);
  banner(5, "steady again: nodes a and d serve every cart");
  phase_start = cd::demo_clock::now();
  sleep_until(phase_start + phase_length);
  wait_until([&] { return cd::seconds(watcher.last_move()) >= 1.0; }, 10s);

  out.line("");
  out.line("  " + cd::since(t0) + "  stopping the load; waiting for the last asks to end");
  load.stop();
  live.stop();
  watcher.stop();
  show_map();

  out.line("  " + cd::since(t0) + "  reading every cart back from node a");
  result.carts = load.verify(30s);
  result.asks = load.report();
  result.activations = activations.activations();
  result.duplicates = activations.duplicates();
  result.duplicate_examples = activations.examples();
  result.killed_carts = load.killed_carts();
  result.handoffs = watcher.handoffs();
  result.failovers = watcher.failovers();

  out.line("  " + cd::since(t0) + "  stopping the nodes");
  cd::silence_runtime_log();
  nodes.clear();

  const bool ok = cd::print_summary(result);
  char runtime[32];
  std::snprintf(runtime, sizeof runtime, "%.1f s", cd::seconds(t0));
  std::printf("  %-44s %10s\n", "total runtime", runtime);
  std::printf("\n  %s\n", ok ? "PASS: every check came out as it must"
                             : "FAIL: see the rows marked FAIL and the lines marked !");
  return ok ? 0 : 1;
}
