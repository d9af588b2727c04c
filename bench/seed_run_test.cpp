// The runs of troupe_bench_seed on small workloads: both modes keep per-key order (with and
// without batching), the tracked unit is recorded, and --max-concurrent caps the I/O in flight.

#include "seed_run.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace {

using namespace troupe::bench::seed;

prepared_workload small(std::int64_t messages, std::int64_t keys, distribution dist) {
  workload_spec spec;
  spec.messages = messages;
  spec.keys = keys;
  spec.dist = dist;
  return prepare(spec);
}

run_config config(mode how, std::uint32_t shards, std::int64_t batch) {
  run_config c;
  c.how = how;
  c.shards = shards;
  c.batch = batch;
  c.io_ms = 0.2;
  c.workers = 2;
  return c;
}

TEST(SeedRun, ShardActorsKeepPerKeyOrderWithAndWithoutBatching) {
  const auto w = small(3'000, 100, distribution::zipf);
  for (const std::int64_t batch : {0, 50}) {
    const auto r = run_shard_actors(w, config(mode::shard_actors, 8, batch), 0);
    EXPECT_EQ(r.order_error, "") << "batch " << batch;
    EXPECT_GT(r.msgs_per_s, 0);
  }
}

TEST(SeedRun, EntitiesKeepPerKeyOrderAndBatchTheHotKey) {
  const auto w = small(3'000, 100, distribution::zipf);
  const auto plain = run_entities(w, config(mode::entities, 16, 0), 0);
  EXPECT_EQ(plain.order_error, "");
  EXPECT_EQ(plain.hot.messages, w.key_counts[0]);
  EXPECT_EQ(plain.hot.max_batch, 1);

  const auto batched = run_entities(w, config(mode::entities, 16, 50), 0);
  EXPECT_EQ(batched.order_error, "");
  EXPECT_EQ(batched.hot.messages, w.key_counts[0]);
  EXPECT_GT(batched.hot.max_batch, 1);  // k0's burst waits behind its first write
  EXPECT_LE(batched.hot.max_batch, 50);

  // Troupe's introspection counted every message once.
  std::uint64_t total = 0;
  for (const auto& s : batched.shard_loads) total += s.messages;
  EXPECT_EQ(total, 3'000u);
}

TEST(SeedRun, MaxConcurrentCapsTheWritesInFlight) {
  // Each write holds its slot for at least io_ms, so with a cap of 2 no run can beat
  // 2 / 1 ms = 2,000 msgs/s, however many shard actors there are.
  const auto w = small(200, 64, distribution::uniform);
  auto c = config(mode::shard_actors, 32, 0);
  c.io_ms = 1;
  c.max_concurrent = 2;
  const auto r = run_shard_actors(w, c, 0);
  EXPECT_EQ(r.order_error, "");
  EXPECT_LE(r.msgs_per_s, 2'000);
}

TEST(SeedRun, MaxConcurrentCapsTheEntitiesInsideAWrite) {
  // The region's cap (sharding_options::with_max_concurrent): with 2 permits and 1 ms writes,
  // 64 keys cannot go faster than 2,000 msgs/s, and per-key order still holds.
  const auto w = small(200, 64, distribution::uniform);
  auto c = config(mode::entities, 16, 0);
  c.io_ms = 1;
  c.max_concurrent = 2;
  const auto r = run_entities(w, c, 0);
  EXPECT_EQ(r.order_error, "");
  EXPECT_LE(r.msgs_per_s, 2'000);
}

}  // namespace
