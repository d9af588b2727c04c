// The default run of troupe_bench_seed: the guide's whole table, then the scaled workload, with
// the guide's published figures and the other runtimes measured for issue 4 beside ours.

#pragma once

#include "seed_measure.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace troupe::bench::seed {

/// One row of the default table.
struct table_row {
  std::string label;
  workload_spec spec;
  run_config config;
  /// The guide's published figure (Python 3.14), when it has one.
  std::optional<double> guide;
  /// The best figure another implementation reached on this machine kind (issue 4), and who.
  std::optional<double> best_other;
  std::string best_other_by;
  /// Issue 4's target, as text; empty when there is none.
  std::string target;
  std::function<bool(const measurement&)> meets;
};

/// The rows, with the guide's figures and issue 4's references and targets.
std::vector<table_row> default_rows(double io_ms, std::uint64_t seed, std::size_t workers);

/// The human table: ours beside the guide and the best other implementation.
void print_table(const std::vector<table_row>& rows, const std::vector<measurement>& results);

}  // namespace troupe::bench::seed
