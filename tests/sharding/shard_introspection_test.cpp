// ctest-labels: concurrency
// One shard seen from outside: shard_ref_for answers for the shard across its passivation, and
// each running shard reports its own figures (messages, mailbox depth, queue wait, batches).
#include <troupe/core/actor_system.hpp>
#include <troupe/core/errc.hpp>
#include <troupe/core/metrics.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/sharding/shard_id.hpp>
#include <troupe/testkit/deterministic.hpp>
#include <troupe/testkit/metric_values.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::sharding::cluster_sharding;
using troupe::sharding::get_entity_ids;
using troupe::sharding::get_shard_stats;
using troupe::sharding::shard_stats;
using troupe::sharding::sharding_options;

struct note {
  std::string id;
};
std::string id_of(const note& n) { return n.id; }

class noter final : public troupe::actor<note> {
  void receive(note& /*unused*/) override {}
};

/// Starts "noter" with every id in shard 0.
troupe::actor_ref<note> start_noters(troupe::actor_system& system, troupe::duration idle = 10s) {
  return cluster_sharding::get(system).start(sharding_options<note>::create()
                                                 .with_type_name("noter")
                                                 .with_entity<noter>()
                                                 .with_extract_entity_id(id_of)
                                                 .with_num_shards(1)
                                                 .with_passivation_idle(idle)
                                                 .with_shard_passivation_idle(2 * idle));
}

template <class R>
R ask_in(troupe::testkit::deterministic_system& ds, const troupe::untyped_ref& to, auto message) {
  auto reply = to.ask_any<R>(message, 3s, troupe::use_future);
  ds.run();
  return reply.get();
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(ShardRef, AnswersForItsShardAcrossThePassivationOfTheShardActor) {
  troupe::testkit::deterministic_system ds;
  auto& sharding = cluster_sharding::get(ds.system());
  auto noters = start_noters(ds.system());
  const auto shard = sharding.shard_ref_for("noter", 0);  // taken before the shard exists
  noters.tell(note{"a"});
  noters.tell(note{"b"});
  noters.tell(note{"a"});
  ds.run();
  EXPECT_EQ(sorted(ask_in<std::vector<std::string>>(ds, shard, get_entity_ids{})),
            (std::vector<std::string>{"a", "b"}));
  const auto stats = ask_in<shard_stats>(ds, shard, get_shard_stats{});
  EXPECT_EQ(stats.messages_processed, 3U);
  EXPECT_EQ(stats.entity_count, 2U);
  EXPECT_GE(stats.batch_sizes.total(), 1U);

  ds.advance(15s);  // the entities passivate
  ds.advance(25s);  // then the empty shard
  ASSERT_FALSE(sharding.shards("noter").front().resident);
  // Asking does not bring the shard back; it answers as the empty shard it is.
  EXPECT_TRUE(ask_in<std::vector<std::string>>(ds, shard, get_entity_ids{}).empty());
  EXPECT_EQ(ask_in<shard_stats>(ds, shard, get_shard_stats{}).messages_processed, 0U);
  ASSERT_FALSE(sharding.shards("noter").front().resident);

  noters.tell(note{"c"});  // the shard comes back; the same ref reaches it
  ds.run();
  EXPECT_EQ(ask_in<std::vector<std::string>>(ds, shard, get_entity_ids{}),
            (std::vector<std::string>{"c"}));
  EXPECT_EQ(sharding.entity_ids("noter", 0), (std::vector<std::string>{"c"}));
}

TEST(ShardRef, ForAnUnknownTypeIsAClearError) {
  troupe::testkit::deterministic_system ds;
  EXPECT_THROW((void)cluster_sharding::get(ds.system()).shard_ref_for("nope", 0), troupe::error);
}

TEST(ShardStats, SampledQueueWaitsGoToTheRegistryAttachedToTheSystem) {
  troupe::testkit::deterministic_system ds;
  auto noters = start_noters(ds.system());
  for (int i = 0; i < 32; ++i) noters.tell(note{"before"});
  ds.run();
  auto registry = std::make_shared<troupe::metrics_registry>();
  EXPECT_EQ(troupe::testkit::find_family(registry->collect(), "troupe_shard_queue_wait_seconds"),
            nullptr);

  ds.system().record_metrics(registry);
  for (int i = 0; i < 64; ++i) noters.tell(note{"after"});
  ds.run();
  // 1 delivery in 16 carries its send time, counted by whoever sent it (the region, or a
  // sender on the shard's route).
  const auto sampled = troupe::testkit::observations(registry->collect(),
                                                     "troupe_shard_queue_wait_seconds", {"noter"});
  EXPECT_GE(sampled, 2U);
  EXPECT_LE(sampled, 4U);
}

TEST(ShardStats, ABurstShowsAsMailboxDepthAndBatchesLargerThanOne) {
  troupe::testkit::deterministic_system ds;
  auto noters = start_noters(ds.system());
  for (int i = 0; i < 64; ++i) noters.tell(note{"hot"});
  ds.run();
  const auto shards = cluster_sharding::get(ds.system()).shards("noter");
  ASSERT_EQ(shards.size(), 1U);
  const shard_stats& stats = shards.front().stats;
  EXPECT_EQ(stats.messages_processed, 64U);
  EXPECT_EQ(shards.front().entity_count, 1U);
  // The region forwards the burst before the shard's turn: deliveries wait behind each other.
  EXPECT_GE(stats.mailbox_depth_peak, 16U);
  EXPECT_LE(stats.mailbox_depth_peak, 64U);
  std::uint64_t in_batches_of_two_or_more = 0;
  for (std::size_t i = 1; i < stats.batch_sizes.counts.size(); ++i) {
    in_batches_of_two_or_more += stats.batch_sizes.counts[i];
  }
  EXPECT_GE(in_batches_of_two_or_more, 1U);
}

TEST(ShardStats, QueueWaitIsMeasuredOnTheSystemClock) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  auto noters = start_noters(system);
  for (int i = 0; i < 10'000; ++i) noters.tell(note{"k" + std::to_string(i % 100)});
  auto& sharding = cluster_sharding::get(system);
  // Wait (with a deadline) until the shard has handled every message.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  shard_stats stats;
  while (std::chrono::steady_clock::now() < deadline) {
    stats = sharding.shards("noter").front().stats;
    if (stats.messages_processed == 10'000U) break;
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(stats.messages_processed, 10'000U);
  EXPECT_GT(stats.max_queue_wait, troupe::duration::zero());
  EXPECT_EQ(stats.entity_count, 100U);
}

TEST(ShardFor, MapsAnIdAsItsTypesRegionDoesWithTheHashOrTheTypesOwnExtractor) {
  troupe::testkit::deterministic_system ds;
  auto& sharding = cluster_sharding::get(ds.system());
  sharding.start(sharding_options<note>::create()
                     .with_type_name("hashed")
                     .with_entity<noter>()
                     .with_extract_entity_id(id_of)
                     .with_num_shards(16));
  sharding.start(
      sharding_options<note>::create()
          .with_type_name("by-tenant")
          .with_entity<noter>()
          .with_extract_entity_id(id_of)
          .with_num_shards(4)
          .with_extract_shard_id([](const std::string& id) -> troupe::sharding::shard_id {
            if (id.rfind("tenant-", 0) != 0) throw std::invalid_argument("no tenant");
            return static_cast<troupe::sharding::shard_id>(std::stoul(id.substr(7)));
          }));
  EXPECT_EQ(sharding.shard_for("hashed", "user:42"), troupe::sharding::shard_of("user:42", 16));
  EXPECT_EQ(sharding.shard_for("by-tenant", "tenant-3"), 3U);
  // Custom shard ids name shards: they are not taken modulo num-shards.
  EXPECT_EQ(sharding.shard_for("by-tenant", "tenant-700"), 700U);
  EXPECT_THROW((void)sharding.shard_for("by-tenant", "guest"), std::invalid_argument);
  EXPECT_THROW((void)sharding.shard_for("never-started", "x"), troupe::error);
}

}  // namespace
