#pragma once
// The demo's command line.

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
};

void print_usage(std::FILE* to);

/// The options, or nullopt with `error` saying what is wrong.
std::optional<options> parse_options(int argc, char** argv, std::string& error);

}  // namespace cluster_demo
