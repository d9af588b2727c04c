#pragma once
// The demo's closing table: what was sent and acknowledged, what was lost and why, the checks
// that must come out 0, and how long each move took.

#include "load.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace cluster_demo {

/// "1,234,567".
[[nodiscard]] std::string grouped(std::int64_t n);

struct summary {
  ask_report asks;
  cart_verdict carts;
  std::int64_t activations = 0;
  std::int64_t duplicates = 0;
  std::vector<std::string> duplicate_examples;
  /// Seconds each move took; negative: it never completed.
  double join_s = -1;
  int fair_share = 0;
  double leave_s = -1;
  double kill_s = -1;
  std::int64_t killed_carts = 0;
  int handoffs = 0;
  int failovers = 0;
  /// Anything else that went wrong (a phase that never completed...).
  std::vector<std::string> problems;
};

/// Prints the table; returns true when every check passed.
bool print_summary(const summary& s);

}  // namespace cluster_demo
