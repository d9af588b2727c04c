// A live cluster: three nodes serve shopping carts under load while a fourth node joins, one
// leaves gracefully and one is killed. It prints every shard move as it happens and ends with
// the checks that matter: nothing acknowledged is lost, no cart runs on two nodes at once, each
// cart's items stay in order, and a graceful move loses no message at all.
//
//   * each node is an actor system with remoting over TCP on 127.0.0.1 and a cluster_node;
//     "cart" is a persistent entity over 64 shards whose events go to one SQLite file in a
//     temporary directory (removed at the end);
//   * by default every node runs in this process, joined to the in-process model of etcd
//     (in_process_cluster.hpp, scripts/demo.sh); with --processes each node is a process of
//     its own on a real etcd, started by this one (process_cluster.hpp, node_process.hpp,
//     scripts/cluster-demo.sh);
//   * client threads add items to carts with asks through one node's region, and record every
//     outcome; then every cart is read back and compared with what was acknowledged
//     (scenario.hpp).
//
// Exits with 1 when a check that must be 0 is not, 2 on a bad command line.

#include "in_process_cluster.hpp"
#include "node_process.hpp"
#include "options.hpp"
#include "process_cluster.hpp"
#include "scenario.hpp"

#include <cstdio>
#include <exception>
#include <string>

namespace cd = cluster_demo;

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
  if (!f.node.empty()) return cd::serve_node(f);
  try {
    if (f.processes) {
      cd::process_cluster cluster(f.etcd, cd::num_shards);
      return cd::run_scenario(f, cluster, cd::load_settings{});
    }
    cd::in_process_cluster cluster(cd::num_shards);
    return cd::run_scenario(f, cluster, cd::load_settings{});
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "troupe_cluster_demo: %s\n", e.what());
    return 1;
  }
}
