// Measures one configuration of troupe_bench_seed over several runs and reports it: one JSON line
// (the fields issue 4 names, then the tracked unit's batch sizes and queue wait) and, for people,
// the hottest unit and the per-shard profile.

#pragma once

#include "seed_run.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace troupe::bench::seed {

struct measurement {
  workload_spec spec;
  run_config config;
  std::vector<double> runs;
  /// The runs asked for; fewer ran when the repeat budget (the table's 10 s rule) ran out.
  int runs_asked = 0;
  double repeat_budget_s = 0;
  double msgs_per_s = 0;  // median of runs
  double worst = 0;       // the slowest run: what a user running it once may see
  bool order_ok = true;
  std::string error;  // the first failure (order or runtime), if any
  std::uint32_t workload_crc = 0;
  double hottest_key_share = 0;
  double busiest_shard_share = 0;
  double bound_msgs_per_s = 0;
  /// The tracked unit: the hottest key (entities) or the busiest shard actor (shard-actors).
  std::string hot_unit;
  std::int64_t hot_unit_messages = 0;
  /// From the last run.
  run_result last;
  std::vector<std::int64_t> workload_shard_counts;
};

/// Runs the configuration `runs` times (each in a fresh actor system), but stops repeating once
/// the runs so far took `repeat_budget_s` seconds (0: no budget); never throws for a failed run,
/// which is reported in `error`.
measurement measure(const workload_spec& spec, const run_config& config, int runs,
                    double repeat_budget_s = 0);

/// Whether the 10 s rule cut the runs short (fewer runs than asked, none failed).
bool cut_short(const measurement& m);

/// The JSON line of a measurement (without a newline).
std::string json_line(const measurement& m);

/// The hottest unit's batches and queue wait, and in entities mode the per-shard counts and
/// hottest ids from Troupe's introspection, as indented lines for people.
void print_details(const measurement& m);

const char* mode_name(mode m);
const char* dist_name(distribution d);

}  // namespace troupe::bench::seed
