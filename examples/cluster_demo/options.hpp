#pragma once
// The demo's command line: the run's shape, and which of its three modes the program runs in
// (nodes in this process, the driver of one process per node, or one such node).

#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>

namespace cluster_demo {

struct options {
  double seconds_per_phase = 4;
  std::size_t carts = 2000;
  bool quiet = false;
  bool help = false;
  /// The driver of a run with one process per node (--processes).
  bool processes = false;
  /// etcd's client endpoints, "127.0.0.1:2379,..." (--etcd; default TROUPE_ETCD_ENDPOINTS).
  std::string etcd;
  // A node process, as the driver starts it (--node NAME and the rest).
  std::string node;
  std::string journal;
  std::string activation_log;
  std::string cluster;
  long parent = 0;
};

void print_usage(std::FILE* to);

/// The options, or nullopt with `error` saying what is wrong.
std::optional<options> parse_options(int argc, char** argv, std::string& error);

}  // namespace cluster_demo
