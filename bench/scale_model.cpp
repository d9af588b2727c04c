// troupe_scale_model: issue 18's scale model. The real coordinator state machine and the etcd
// model, without entities, for N nodes × S shards (default 1,000 × 100,000), on simulated time
// in one thread (bench/scale_cluster.hpp):
//
// - bootstrap: the first wave of nodes joins, the coordinator is elected, and one region asks
//   for every shard while the coordinator reads; then rebalance rounds until one moves nothing;
// - join waves: the other waves join one at a time (default 10 waves of N/10);
// - leave: 10 % of the nodes announce a graceful leave at once; their shards are handed off
//   (begin, stop, commit), each leaves when it owns none, then rounds until quiet;
// - rolling update: each node in turn is replaced: a node of the next version joins, then the
//   old one leaves gracefully (--rolling K replaces only the first K).
//
// Every event (a wave, the leave, one replacement) runs until a rebalance round moves nothing.
// Per phase it prints one JSON line, then a table: rebalance rounds per event that moved shards,
// the coordinator's CPU time per round (steady clock around its handle() calls only: the plan
// is the tick's call, the round is every call until the round's hand-offs committed), shards
// moved, etcd transactions and bytes written per moved shard, and what one node's watch of P/
// receives. It checks after every event that each shard is owned by a live node, that the
// counts are within least-shards' bounds (max − min ≤ 2) once one version runs, and that the
// moves stay proportional to what changed; exit 1 when a check fails.
//
//   troupe_scale_model [--nodes N] [--shards S] [--waves W] [--leave-percent P] [--rolling K]
//                      [--relative-limit R] [--absolute-limit A] [--json-only]

#include "scale_cluster.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using troupe::bench::scale::cycle;
using troupe::bench::scale::sim_cluster;
using troupe::bench::scale::store_tally;

struct options {
  std::size_t nodes = 1000;
  std::size_t shards = 100'000;
  std::size_t waves = 10;
  std::size_t leave_percent = 10;
  long rolling = -1;
  double relative = 0.3;
  std::size_t absolute = 20;
  bool json_only = false;
  std::size_t max_ticks = 100'000;
};

/// One event's figures.
struct event_result {
  std::vector<cycle> rounds;  // cycles that moved shards
  std::int64_t moved = 0;
  std::int64_t needed = 0;  // shards that had to move at least
  store_tally tally{};
  double sim_seconds = 0;
  double ticks = 0;
  std::int64_t spread = 0;
};

struct phase_result {
  std::string name;
  std::vector<event_result> events;
};

store_tally minus(const store_tally& a, const store_tally& b) {
  return {a.txns - b.txns,
          a.puts - b.puts,
          a.deletes - b.deletes,
          a.revokes - b.revokes,
          a.bytes - b.bytes,
          a.watch_events - b.watch_events,
          a.watch_bytes - b.watch_bytes};
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double max_of(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

class model {
 public:
  explicit model(const options& o)
      : o_(o),
        cluster_({.shards = o.shards,
                  .limits = {.relative = o.relative, .absolute = o.absolute},
                  .rebalance_interval = std::chrono::seconds(10)}) {}

  int run() {
    const std::size_t per_wave = std::max<std::size_t>(1, o_.nodes / o_.waves);
    // Bootstrap: the first wave, then every shard asked for.
    {
      auto e = begin();
      for (std::size_t i = 0; i < per_wave; ++i) cluster_.join("1.0");
      add_cycle(e, cluster_.settle());
      add_cycle(e, cluster_.bootstrap());
      e.needed = 0;
      converge(e);
      end(e, "bootstrap");
    }
    for (std::size_t w = 1; w < o_.waves; ++w) {
      auto e = begin();
      std::vector<std::size_t> fresh;
      const std::size_t count = w + 1 == o_.waves ? o_.nodes - per_wave * w : per_wave;
      for (std::size_t i = 0; i < count; ++i) fresh.push_back(cluster_.join("1.0"));
      add_cycle(e, cluster_.settle());
      converge(e);
      for (auto n : fresh) e.needed += cluster_.owned(n);
      end(e, "join_wave");
    }
    if (o_.leave_percent > 0) {
      auto e = begin();
      const auto live = cluster_.live_nodes();
      const std::size_t count = live.size() * o_.leave_percent / 100;
      for (std::size_t i = 0; i < count; ++i) {
        const auto n = live[i * live.size() / count];
        e.needed += cluster_.owned(n);
        cluster_.leave(n);
      }
      add_cycle(e, cluster_.settle());
      converge(e);
      end(e, "leave");
    }
    auto old = cluster_.live_nodes();
    if (o_.rolling >= 0) old.resize(std::min(old.size(), static_cast<std::size_t>(o_.rolling)));
    for (std::size_t k = 0; k < old.size(); ++k) {
      const auto n = old[k];
      auto e = begin();
      cluster_.join("2.0");
      add_cycle(e, cluster_.settle());
      e.needed = cluster_.owned(n);
      cluster_.leave(n);
      add_cycle(e, cluster_.settle());
      converge(e);
      // Rebalance waits while versions are mixed: balance is checked once all run the new one.
      end(e, "rolling_update", k + 1 == old.size() && o_.rolling < 0);
    }
    print();
    return failures_ == 0 ? 0 : 1;
  }

 private:
  event_result begin() {
    before_ = cluster_.tally();
    sim_before_ = cluster_.sim_seconds();
    return {};
  }

  static void add_cycle(event_result& e, const cycle& c) {
    if (c.moved > 0) e.rounds.push_back(c);
    e.moved += c.moved;
  }

  // Rebalance rounds until one runs and moves nothing.
  void converge(event_result& e) {
    for (std::size_t t = 0; t < o_.max_ticks; ++t) {
      const auto c = cluster_.tick();
      ++e.ticks;
      add_cycle(e, c);
      if (c.round && c.moved == 0 && !cluster_.moving()) return;
    }
    fail("no convergence within " + std::to_string(o_.max_ticks) + " ticks");
  }

  void end(event_result& e, const std::string& phase, bool one_version = true) {
    e.tally = minus(cluster_.tally(), before_);
    e.sim_seconds = cluster_.sim_seconds() - sim_before_;
    const auto live = cluster_.live_nodes();
    std::int64_t lo = INT64_MAX;
    std::int64_t hi = 0;
    for (const auto n : live) {
      if (cluster_.leaving(n)) fail(phase + ": a leaving node is still there");
      lo = std::min(lo, cluster_.owned(n));
      hi = std::max(hi, cluster_.owned(n));
    }
    e.spread = hi - lo;
    if (cluster_.homeless_shards() != 0) {
      fail(phase + ": " + std::to_string(cluster_.homeless_shards()) +
           " shard(s) without a live owner");
    }
    if (one_version && e.spread > 2) {
      fail(phase + ": unbalanced, owned counts from " + std::to_string(lo) + " to " +
           std::to_string(hi));
    }
    // Moves proportional to what changed: what had to move, give or take one per node.
    const auto allowed = e.needed + e.needed / 4 + static_cast<std::int64_t>(live.size());
    if (e.moved > allowed) {
      fail(phase + ": moved " + std::to_string(e.moved) + " shards where " +
           std::to_string(e.needed) + " had to");
    }
    if (cluster_.troubles() != 0) {
      fail(phase + ": " + std::to_string(cluster_.troubles()) +
           " strategy error(s), aborted hand-off(s) or failed write(s)");
    }
    if (phases_.empty() || phases_.back().name != phase) phases_.push_back({phase, {}});
    phases_.back().events.push_back(std::move(e));
  }

  void fail(const std::string& what) {
    ++failures_;
    std::fprintf(stderr, "troupe_scale_model: check failed: %s\n", what.c_str());
  }

  void print() const {
    struct row {
      std::string name;
      std::size_t events;
      double rounds_med, rounds_max, plan_med, plan_max, round_med, round_max, call_max;
      double thread_med, thread_max;
      std::int64_t moved, moved_max;
      double txns_per_move, bytes_per_move, watch_kb_med, watch_kb_max, watch_events_max, sim_max;
      std::int64_t spread_max;
      std::int64_t txns, bytes;
    };
    std::vector<row> rows;
    for (const auto& p : phases_) {
      row r{};
      r.name = p.name;
      r.events = p.events.size();
      std::vector<double> rounds, plan, round_cpu, round_thread, watch_kb;
      for (const auto& e : p.events) {
        rounds.push_back(static_cast<double>(e.rounds.size()));
        for (const auto& c : e.rounds) {
          plan.push_back(c.plan_ms);
          round_cpu.push_back(c.cpu_ms);
          round_thread.push_back(c.thread_cpu_ms);
          r.call_max = std::max(r.call_max, c.max_call_ms);
        }
        r.moved += e.moved;
        r.moved_max = std::max(r.moved_max, e.moved);
        r.txns += e.tally.txns;
        r.bytes += e.tally.bytes;
        watch_kb.push_back(static_cast<double>(e.tally.watch_bytes) / 1024);
        r.watch_events_max =
            std::max(r.watch_events_max, static_cast<double>(e.tally.watch_events));
        r.sim_max = std::max(r.sim_max, e.sim_seconds);
        r.spread_max = std::max(r.spread_max, e.spread);
      }
      r.rounds_med = median(rounds);
      r.rounds_max = max_of(rounds);
      r.plan_med = median(plan);
      r.plan_max = max_of(plan);
      r.round_med = median(round_cpu);
      r.round_max = max_of(round_cpu);
      r.thread_med = median(round_thread);
      r.thread_max = max_of(round_thread);
      r.watch_kb_med = median(watch_kb);
      r.watch_kb_max = max_of(watch_kb);
      const double moved = static_cast<double>(std::max<std::int64_t>(r.moved, 1));
      r.txns_per_move = static_cast<double>(r.txns) / moved;
      r.bytes_per_move = static_cast<double>(r.bytes) / moved;
      rows.push_back(r);
      std::printf(
          "{\"bench\":\"scale_model\",\"phase\":\"%s\",\"nodes\":%zu,\"shards\":%zu,"
          "\"relative_limit\":%g,\"absolute_limit\":%zu,\"events\":%zu,"
          "\"rounds_per_event_median\":%g,\"rounds_per_event_max\":%g,"
          "\"plan_ms_median\":%.3f,\"plan_ms_max\":%.3f,\"round_cpu_ms_median\":%.3f,"
          "\"round_cpu_ms_max\":%.3f,\"round_thread_cpu_ms_median\":%.3f,"
          "\"round_thread_cpu_ms_max\":%.3f,\"longest_call_ms\":%.3f,\"moved\":%lld,"
          "\"moved_per_event_max\":%lld,\"txns\":%lld,\"bytes\":%lld,"
          "\"txns_per_moved_shard\":%.3f,\"bytes_per_moved_shard\":%.1f,"
          "\"watch_kib_per_node_per_event_median\":%.1f,"
          "\"watch_kib_per_node_per_event_max\":%.1f,"
          "\"watch_events_per_node_per_event_max\":%.0f,\"sim_seconds_per_event_max\":%.0f,"
          "\"spread_max\":%lld}\n",
          r.name.c_str(), o_.nodes, o_.shards, o_.relative, o_.absolute, r.events, r.rounds_med,
          r.rounds_max, r.plan_med, r.plan_max, r.round_med, r.round_max, r.thread_med,
          r.thread_max, r.call_max, static_cast<long long>(r.moved),
          static_cast<long long>(r.moved_max), static_cast<long long>(r.txns),
          static_cast<long long>(r.bytes), r.txns_per_move, r.bytes_per_move, r.watch_kb_med,
          r.watch_kb_max, r.watch_events_max, r.sim_max, static_cast<long long>(r.spread_max));
    }
    if (o_.json_only) return;
    std::printf("\n%-15s %6s %11s %15s %17s %17s %9s %9s %7s %8s %17s %8s %6s\n", "phase", "events",
                "rounds/ev", "plan ms", "round ms", "round CPU ms", "moved", "moved/ev", "txn/mv",
                "B/mv", "watch KiB/node/ev", "sim s/ev", "spread");
    std::printf("%-15s %6s %11s %15s %17s %17s %9s %9s %7s %8s %17s %8s %6s\n", "", "", "med / max",
                "med / max", "med / max", "med / max", "total", "max", "", "", "med / max", "max",
                "max");
    for (const auto& r : rows) {
      std::printf(
          "%-15s %6zu %5.0f / %3.0f %6.2f / %6.2f %7.2f / %7.2f %7.2f / %7.2f %9lld %9lld %7.2f "
          "%8.0f %7.1f / %7.1f %8.0f %6lld\n",
          r.name.c_str(), r.events, r.rounds_med, r.rounds_max, r.plan_med, r.plan_max, r.round_med,
          r.round_max, r.thread_med, r.thread_max, static_cast<long long>(r.moved),
          static_cast<long long>(r.moved_max), r.txns_per_move, r.bytes_per_move, r.watch_kb_med,
          r.watch_kb_max, r.sim_max, static_cast<long long>(r.spread_max));
    }
    std::printf(
        "(%zu nodes × %zu shards, least-shards, rebalance limit max(1, min(%g × shards, "
        "%zu)) per round, one round per 10 s of simulated time; %s)\n",
        o_.nodes, o_.shards, o_.relative, o_.absolute,
        failures_ == 0 ? "every check passed" : "CHECKS FAILED");
  }

  options o_;
  sim_cluster cluster_;
  store_tally before_{};
  double sim_before_ = 0;
  std::vector<phase_result> phases_;
  int failures_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app{"troupe_scale_model: the coordinator and the etcd model at scale (issue 18)"};
  app.add_option("--nodes", o.nodes, "nodes in all (joining in waves)")
      ->check(CLI::Range(2, 100000));
  app.add_option("--shards", o.shards, "shards of the one sharded type")
      ->check(CLI::Range(1, 10'000'000));
  app.add_option("--waves", o.waves, "join waves")->check(CLI::Range(1, 1000));
  app.add_option("--leave-percent", o.leave_percent, "share of the nodes that leave at once")
      ->check(CLI::Range(0, 90));
  app.add_option("--rolling", o.rolling, "nodes replaced by the rolling update (-1: all)");
  app.add_option("--relative-limit", o.relative, "least-shards' relative rebalance limit")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--absolute-limit", o.absolute, "least-shards' absolute rebalance limit");
  app.add_option("--max-ticks", o.max_ticks, "rebalance ticks an event may take before it fails");
  app.add_flag("--json-only", o.json_only, "print only the JSON lines");
  CLI11_PARSE(app, argc, argv);
  if (o.waves > o.nodes) o.waves = o.nodes;
  try {
    model m(o);
    return m.run();
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "troupe_scale_model: %s\n", ex.what());
    return 1;
  }
}
