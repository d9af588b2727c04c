// Runs the control-plane simulator, or with --whole-nodes the whole-node one, over a range of
// seeds (scripts/simulate.sh): prints each failing seed with the command that replays it, then
// what the faults and the runs added up to.
//
//     troupe_simulate --seeds 100000 --from 1 [--plant-no-self-fence] [--plant-skip-shard-fence]
//     troupe_simulate --whole-nodes --seeds 1000 --from 1 [--moves] [--no-faults] [--asks-only]
//                     [--hot-keys] [--tcp-partitions]
//                     [--plant-skip-flush] [--plant-bounced-out-of-order]
#include <troupe/core/actor.hpp>

#include "cluster/support/control_plane_world.hpp"
#include "cluster/support/whole_cluster_sim.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

namespace {

int usage() {
  std::cerr << "usage: troupe_simulate [--seeds N] [--from S] [--plant-no-self-fence] "
               "[--plant-skip-shard-fence] [--trace]\n"
               "       troupe_simulate --whole-nodes [--seeds N] [--from S] [--moves] "
               "[--nodes 2-9] [--no-faults] [--asks-only] [--hot-keys] [--plant-skip-flush]\n"
               "                       [--plant-bounced-out-of-order] [--tcp-partitions]\n";
  return 2;
}

/// The whole-node simulation (whole_cluster_sim.hpp) over seeds [from, from + seeds).
int run_whole_nodes(std::uint64_t from, std::uint64_t seeds,
                    const troupe::cluster::tally_test::sim_options& opt, const std::string& flags) {
  using troupe::cluster::tally_test::outcome;
  const auto started = std::chrono::steady_clock::now();
  outcome total;
  std::uint64_t failed = 0;
  for (std::uint64_t seed = from; seed < from + seeds; ++seed) {
    outcome o = troupe::cluster::tally_test::simulate(seed, opt);
    for (auto& v : o.violations) o.problems.push_back("left the simulation: " + v);
    if (!o.problems.empty()) {
      ++failed;
      std::cout << "seed " << seed << " FAILED:" << troupe::cluster::tally_test::joined(o.problems)
                << "\n  replay: troupe_simulate --whole-nodes --from " << seed << " --seeds 1"
                << flags << "\n";
    } else if (seeds == 1) {
      std::cout << "seed " << seed << " passed, trace hash " << std::hex << o.trace_hash << std::dec
                << "\n";
    }
    total += o;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << seeds << " seeds from " << from << " (whole nodes" << flags << "): " << failed
            << " failed, " << seconds << " s\n"
            << total.counts() << "\n";
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seeds = 1000;
  std::uint64_t from = 1;
  bool plant = false;
  bool plant_fence = false;
  bool print_trace = false;
  bool whole_nodes = false;
  troupe::cluster::tally_test::sim_options whole;
  std::string whole_flags;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if ((a == "--seeds" || a == "--from") && i + 1 < argc) {
      char* end = nullptr;
      const auto v = std::strtoull(argv[++i], &end, 10);
      if (end == nullptr || *end != '\0') return usage();
      (a == "--seeds" ? seeds : from) = v;
    } else if (a == "--nodes" && i + 1 < argc) {
      char* end = nullptr;
      const auto v = std::strtoull(argv[++i], &end, 10);
      if (end == nullptr || *end != '\0' || v < 2 || v > 9) return usage();
      whole.nodes = static_cast<int>(v);
      whole_flags += " --nodes " + std::to_string(v);
    } else if (a == "--plant-no-self-fence") {
      plant = true;
    } else if (a == "--trace") {
      print_trace = true;
    } else if (a == "--plant-skip-shard-fence") {
      plant_fence = true;
    } else if (a == "--whole-nodes") {
      whole_nodes = true;
    } else if (a == "--moves" || a == "--no-faults" || a == "--asks-only" || a == "--hot-keys" ||
               a == "--plant-skip-flush" || a == "--plant-bounced-out-of-order" ||
               a == "--tcp-partitions") {
      // --no-faults, --asks-only and --hot-keys turn a default off; the others turn a switch on.
      const bool off = a == "--no-faults" || a == "--asks-only" || a == "--hot-keys";
      (a == "--moves"              ? whole.moves_often
       : a == "--no-faults"        ? whole.faults
       : a == "--asks-only"        ? whole.tells
       : a == "--hot-keys"         ? whole.zipf
       : a == "--plant-skip-flush" ? whole.plant_skip_flush
       : a == "--tcp-partitions"   ? whole.tcp_partitions
                                   : whole.plant_bounced_out_of_order) = !off;
      whole_flags += " " + std::string(a);
    } else {
      return usage();
    }
  }
  // One seed replayed shows what went wrong on the way; a campaign prints only its failures.
  // TROUPE_SIM_VERBOSE (the world's story) also shows the runtime's warnings.
  troupe::logger()->set_level(std::getenv("TROUPE_SIM_VERBOSE") != nullptr ? spdlog::level::warn
                              : seeds == 1                                 ? spdlog::level::err
                                           : spdlog::level::critical);
  if (whole_nodes) return run_whole_nodes(from, seeds, whole, whole_flags);
  if (!whole_flags.empty()) return usage();
  using troupe::cluster::sim::control_plane_world;
  using troupe::cluster::sim::world_options;
  using troupe::cluster::sim::world_result;
  const auto started = std::chrono::steady_clock::now();
  world_result total;
  std::uint64_t failed = 0;
  for (std::uint64_t seed = from; seed < from + seeds; ++seed) {
    world_options o;
    o.seed = seed;
    o.plant_no_self_fence = plant;
    o.plant_skip_shard_fence = plant_fence;
    o.print_trace = print_trace;
    const world_result r = control_plane_world(o).run();
    if (!r.failure.empty()) {
      ++failed;
      std::cout << "seed " << seed << " FAILED: " << r.failure
                << "\n  replay: troupe_simulate --from " << seed << " --seeds 1"
                << (plant ? " --plant-no-self-fence" : "")
                << (plant_fence ? " --plant-skip-shard-fence" : "") << "\n";
    } else if (seeds == 1) {
      std::cout << "seed " << seed << " passed, trace hash " << std::hex << r.trace_hash << std::dec
                << "\n";
    }
    total += r;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << seeds << " seeds from " << from << ": " << failed << " failed, " << seconds
            << " s\nfaults: " << total.crashes << " crashes, " << total.pauses << " pauses, "
            << total.cuts << " cuts from etcd, " << total.deafs << " one-way cuts, "
            << total.partitions << " partitions, " << total.leaves << " graceful leaves, "
            << total.rebalances << " rebalance requests, " << total.lost_requests
            << " home requests lost\nreached: " << total.activations << " activations, "
            << total.writes << " writes acknowledged\n";
  return failed == 0 ? 0 : 1;
}
