#include "scenario.hpp"

#include "console.hpp"
#include "load.hpp"
#include "progress.hpp"
#include "report.hpp"
#include "runtime_log.hpp"
#include "shard_watcher.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>

namespace cluster_demo {

using namespace std::chrono_literals;

namespace {

void print_map(console& out, const std::map<std::string, std::set<std::uint32_t>>& shards) {
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
  const auto give_up = demo_clock::now() + limit;
  while (!done()) {
    if (demo_clock::now() > give_up) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

void sleep_until(demo_clock::time_point t) { std::this_thread::sleep_until(t); }

}  // namespace

int run_scenario(const options& f, demo_cluster& cluster, load_settings settings) {
  settings.carts = f.carts;
  const auto t0 = demo_clock::now();
  const auto phase_length = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(f.seconds_per_phase));
  console out(!f.quiet && ::isatty(::fileno(stdout)) == 1);
  route_runtime_log(out, t0);
  // Whatever way this returns, the nodes stop while the console they log to is still there.
  struct closing {
    demo_cluster& nodes;
    ~closing() {
      silence_runtime_log();
      nodes.close();
    }
  } close_at_end{cluster};
  summary result;

  std::printf(
      "Troupe cluster demo: %s shopping carts, sharded over %u shards, persisted to SQLite.\n",
      grouped(static_cast<std::int64_t>(f.carts)).c_str(), num_shards);
  std::fputs(cluster.intro().c_str(), stdout);

  cluster.open(out, t0);
  for (const char* name : {"a", "b", "c"}) {
    const std::string at = cluster.start(name);
    out.line("  " + since(t0) + "  node " + name + " joined, listening on " + at);
  }
  // The leading coordinator must know all three regions, or the first shards would all go to
  // the nodes it heard of first.
  if (!cluster.wait_regions(3, 10s)) {
    std::printf("the coordinator never saw all three regions\n");
    return 1;
  }

  load load(cluster.front(), settings);
  const std::size_t inactive = load.activate_all(20s);
  out.line("  " + since(t0) + "  " + grouped(static_cast<std::int64_t>(f.carts - inactive)) +
           " carts activated (recovered from the empty journal)");
  if (inactive > 0) {
    std::printf("%zu carts never answered\n", inactive);
    return 1;
  }
  shard_watcher watcher(out, t0);
  watcher.start(cluster.reader());

  load.start(t0);
  progress live(out, load, t0, f.quiet);
  auto show_map = [&] {
    watcher.catch_up();
    print_map(out, watcher.shards());
  };
  auto banner = [&](int n, const std::string& text) {
    out.line("");
    out.line("  " + since(t0) + "  == " + std::to_string(n) + "/5 " + text);
  };

  // 1. Steady: three nodes.
  banner(1, "steady: nodes a, b, c serve the carts; " + std::to_string(settings.threads) +
                " client threads ask through " + cluster.front_name());
  show_map();
  auto phase_start = demo_clock::now();
  sleep_until(phase_start + phase_length);

  // 2. d joins; the coordinator's rebalance moves shards to it from live owners.
  load.set_phase(phase::join);
  banner(2, "join: node d joins; the next rebalance hands shards off to it from live owners");
  phase_start = demo_clock::now();
  const std::string d_at = cluster.start("d");
  out.line("  " + since(t0) + "  node d joined, listening on " + d_at);
  // A fair share of the shards in use (a small --carts leaves some shards unused).
  std::size_t in_use = 0;
  for (const auto& [node, shards] : watcher.shards()) in_use += shards.size();
  result.fair_share = static_cast<int>(in_use / 4);
  if (wait_until([&] { return watcher.shards()["d"].size() + 1 >= in_use / 4; }, 30s)) {
    result.join_s = seconds(phase_start);
  } else {
    result.problems.push_back("node d never got its fair share of the shards");
  }
  sleep_until(phase_start + phase_length);
  show_map();

  // 3. b leaves gracefully: its shards are handed off, then its lease is revoked.
  load.set_phase(phase::leave);
  banner(3, "leave: node b leaves gracefully; it hands its shards off, then stops");
  phase_start = demo_clock::now();
  watcher.leaving("b");
  if (const auto left = cluster.leave("b", 20s)) {
    result.leave_s = seconds(phase_start);
    watcher.catch_up();
    out.line("  " + since(t0) + "  node b left" + *left);
  } else {
    result.problems.push_back("node b's leave never completed");
  }
  const std::string stopped = cluster.stop("b");
  out.line("  " + since(t0) + "  node b stopped" + stopped);
  sleep_until(phase_start + phase_length);
  show_map();

  // 4. c is killed: no goodbye. Its shards move once its lease runs out.
  load.set_phase(phase::kill);
  banner(4, "kill: " + cluster.kill_text());
  phase_start = demo_clock::now();
  // What the join and the leave delivered is read back first: c may hold messages that were
  // handed off to it late, and the kill would lose them with it.
  if (const std::size_t unread = load.check_before_kill(10s); unread > 0) {
    result.problems.push_back(grouped(static_cast<std::int64_t>(unread)) +
                              " carts did not answer get_cart before the kill");
  }
  out.line("  " + since(t0) + "  every ask sent so far has ended, and each cart with a failed" +
           " one was read back");
  const auto shards_of_c = watcher.shards_of_now("c");
  // Taken before the signal: reaping the process takes a while, and an ask that times out
  // meanwhile may have been lost with c.
  const auto killed_at = demo_clock::now();
  cluster.kill("c");
  load.killed("c", shards_of_c, killed_at);
  out.line("  " + since(t0) + "  node c is dead to the others: asks in flight to it are lost,");
  out.line("  " + since(t0) + "  and its " + std::to_string(shards_of_c.size()) + " shards (" +
           grouped(load.killed_carts()) + " carts) wait until its lease runs out");
  if (wait_until([&] { return load.killed_carts_waiting() == 0; }, 30s)) {
    result.kill_s = load.killed_carts_back_after();
    watcher.catch_up();
    out.line("  " + since(t0) + "  every cart of c answers again from a or d");
  } else {
    result.problems.push_back(grouped(load.killed_carts_waiting()) +
                              " carts of c never answered again");
  }
  sleep_until(phase_start + phase_length);
  show_map();

  // 5. Steady again, until no shard has moved for a second.
  load.set_phase(phase::settle);
  banner(5, "steady again: nodes a and d serve every cart");
  phase_start = demo_clock::now();
  sleep_until(phase_start + phase_length);
  wait_until([&] { return seconds(watcher.last_move()) >= 1.0; }, 10s);

  out.line("");
  out.line("  " + since(t0) + "  stopping the load; waiting for the last asks to end");
  load.stop();
  live.stop();
  watcher.stop();
  show_map();

  out.line("  " + since(t0) + "  reading every cart back from " + cluster.front_name());
  result.carts = load.verify(30s);
  result.asks = load.report();
  const activation_counts activations = cluster.activations();
  result.activations = activations.activations;
  result.duplicates = activations.duplicates;
  result.duplicate_examples = activations.examples;
  result.killed_carts = load.killed_carts();
  result.handoffs = watcher.handoffs();
  result.failovers = watcher.failovers();

  out.line("  " + since(t0) + "  stopping the nodes");
  silence_runtime_log();
  cluster.close();
  for (auto& p : cluster.problems()) result.problems.push_back(std::move(p));

  const bool ok = print_summary(result);
  char runtime[32];
  std::snprintf(runtime, sizeof runtime, "%.1f s", seconds(t0));
  std::printf("  %-44s %10s\n", "total runtime", runtime);
  std::printf("\n  %s\n", ok ? "PASS: every check came out as it must"
                             : "FAIL: see the rows marked FAIL and the lines marked !");
  return ok ? 0 : 1;
}

}  // namespace cluster_demo
