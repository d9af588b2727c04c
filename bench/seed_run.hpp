// One run of troupe_bench_seed: a fresh actor system, one producer sending the whole workload,
// the clock stopped when every message has been processed, then the per-key order check.

#pragma once

#include "seed_workload.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace troupe::bench::seed {

enum class mode { shard_actors, entities };

/// One configuration (besides its workload).
struct run_config {
  mode how = mode::entities;
  std::uint32_t shards = 64;
  /// Most messages one awaited write covers; 0: one write per message.
  std::int64_t batch = 0;
  /// Most units inside their I/O at once; 0: no limit (applied in shard-actors mode only).
  std::int64_t max_concurrent = 0;
  double io_ms = 1;
  /// The I/O stand-in: troupe::sleep_for (false) or an asio steady_timer on the actor's executor.
  bool asio_timer = false;
  /// Entities mode: start every entity (one no-op message each) before the clock starts.
  bool warm = false;
  std::size_t workers = 2;
};

/// A workload generated once per configuration and replayed by every run.
struct prepared_workload {
  workload_spec spec;
  std::vector<std::uint32_t> keys;
  std::vector<std::string> names;
  std::vector<std::int64_t> key_counts;
};

prepared_workload prepare(const workload_spec& spec);

/// What the tracked unit (the hottest entity, or the busiest shard actor) saw.
struct hot_unit_stats {
  std::int64_t batches = 0;
  std::int64_t messages = 0;
  std::int64_t max_batch = 0;
  /// Queue wait per message: handler start minus send time.
  std::vector<double> waits_us;
  /// From one handler start to the next: the I/O plus what the runtime adds to each serial step.
  std::vector<double> steps_us;
  /// How late the awaited timer resumed the handler (resume - handler start - io).
  std::vector<double> lateness_us;
};

/// One shard as Troupe's introspection reports it after a run (entities mode).
struct shard_load {
  std::uint32_t shard = 0;
  std::uint64_t messages = 0;
  std::size_t entities = 0;
};

struct run_result {
  double msgs_per_s = 0;
  /// How long the producer took to send everything, and the whole run took (seconds).
  double send_s = 0;
  double total_s = 0;
  /// Empty when every key's state equals the sequence sent to it.
  std::string order_error;
  hot_unit_stats hot;
  /// Entities mode: cluster_sharding::shards() and region_state::hottest after the run.
  std::vector<shard_load> shard_loads;
  std::vector<std::pair<std::string, std::uint64_t>> hottest_ids;
};

/// The guide's design: `shards` async actors, each owning a map key -> state, picked by
/// crc32(key) % shards. Tracks the actor of `tracked_shard`.
run_result run_shard_actors(const prepared_workload& w, const run_config& c,
                            std::uint32_t tracked_shard);

/// One sharded entity per key through Troupe's sharding. Tracks the entity of `tracked_key`.
run_result run_entities(const prepared_workload& w, const run_config& c, std::uint32_t tracked_key);

}  // namespace troupe::bench::seed
