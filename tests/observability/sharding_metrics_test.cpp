// ctest-labels: concurrency
// sharding_metrics: a node's sharding figures copied into a registry on each collect, as a
// scrape of /metrics reads them.
#include <troupe/core/actor_system.hpp>
#include <troupe/core/config.hpp>
#include <troupe/core/metrics.hpp>
#include <troupe/observability/prometheus_text.hpp>
#include <troupe/observability/sharding_metrics.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/testkit/deterministic.hpp>
#include <troupe/testkit/metric_values.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::metric_family_snapshot;
using troupe::metrics_registry;
using troupe::metrics_snapshot;
using troupe::observability::sharding_metrics;
using troupe::sharding::cluster_sharding;
using troupe::sharding::sharding_options;

struct visit {
  std::string id;
};

/// Replies 1 to each visit.
class page final : public troupe::actor<visit> {
 public:
  static inline const auto shard =
      troupe::sharding::shard_key<visit>::of("page", [](const visit& v) { return v.id; });

 private:
  void receive(visit& /*unused*/) override { context().reply(1); }
};

struct knock {
  std::string id;
  bool leave = false;  // the entity asks to be passivated
};
std::string door_of(const knock& k) { return k.id; }

/// Asks its shard to passivate it when a knock says so.
class door final : public troupe::actor<knock> {
  void receive(knock& k) override {
    if (k.leave) troupe::sharding::request_passivation(self());
  }
};

/// "door", all in shard 0, with `configure` applied.
template <class F>
troupe::actor_ref<knock> start_doors(troupe::actor_system& system, F configure) {
  auto options = sharding_options<knock>::create()
                     .with_type_name("door")
                     .with_entity<door>()
                     .with_extract_entity_id(door_of)
                     .with_num_shards(1);
  configure(options);
  return cluster_sharding::get(system).start(std::move(options));
}

/// Ignores what it gets; stopped to make dead letters.
class sink final : public troupe::actor<int> {
  void receive(int& /*unused*/) override {}
};

troupe::system_config config() { return troupe::system_config{}.with_workers(2); }

/// The value of the child of `name` with these labels; nullopt when it is not exported.
std::optional<double> value(const metrics_snapshot& s, const std::string& name,
                            const std::vector<std::string>& labels) {
  return troupe::testkit::metric_value(s, name, labels);
}

void visit_n(troupe::actor_ref<visit> region, const std::string& id, int n) {
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(region.ask<int>(visit{id}, troupe::testkit::dilated(3s), troupe::use_future).get(),
              1);
  }
}

std::string shard_label(const std::string& id) {
  return std::to_string(troupe::sharding::shard_of(id, 8));
}

TEST(ShardingMetrics, EachCollectCarriesTheShardsMessagesAndEntities) {
  troupe::actor_system system(config());
  auto& sharding = cluster_sharding::get(system);
  auto region = sharding.start<page>(sharding_options<visit>::create().with_num_shards(8));
  metrics_registry registry;
  sharding_metrics metrics(registry, sharding, system);

  visit_n(region, "home", 5);
  visit_n(region, "about", 2);
  const auto s = registry.collect();
  const std::string home = shard_label("home");
  const std::string about = shard_label("about");
  if (home == about) {
    EXPECT_EQ(value(s, "troupe_shard_messages_total", {"page", home}), 7.0);
    EXPECT_EQ(value(s, "troupe_shard_entities", {"page", home}), 2.0);
  } else {
    EXPECT_EQ(value(s, "troupe_shard_messages_total", {"page", home}), 5.0);
    EXPECT_EQ(value(s, "troupe_shard_messages_total", {"page", about}), 2.0);
    EXPECT_EQ(value(s, "troupe_shard_entities", {"page", home}), 1.0);
  }
  EXPECT_EQ(value(s, "troupe_region_buffered_messages", {"page"}), 0.0);

  // A counter goes on from where it was: the next collect adds only what came since.
  visit_n(region, "home", 3);
  const auto later = registry.collect();
  const double expected = home == about ? 10.0 : 8.0;
  EXPECT_EQ(value(later, "troupe_shard_messages_total", {"page", home}), expected);
}

TEST(ShardingMetrics, CountsDeadLetters) {
  troupe::actor_system system(config());
  auto& sharding = cluster_sharding::get(system);
  metrics_registry registry;
  sharding_metrics metrics(registry, sharding, system);
  const std::vector<std::string> terminated{"recipient_terminated"};
  const double before =
      value(registry.collect(), "troupe_dead_letters_total", terminated).value_or(0);

  troupe::testkit::test_probe<int> probe(system);
  auto s = system.spawn<sink>("sink");
  probe.watch(s);
  system.stop(s);
  probe.expect_terminated(s);
  s.tell(1);
  s.tell(2);
  troupe::testkit::await_condition([&] { return system.dead_letters().count() >= 2; }, 3s);
  // The counters hold the system's counts by reason: their sum is the system's count, and the
  // two since came to a stopped actor.
  const auto after = registry.collect();
  const auto* family = troupe::testkit::find_family(after, "troupe_dead_letters_total");
  ASSERT_NE(family, nullptr);
  ASSERT_EQ(family->label_names, std::vector<std::string>{"reason"});
  double sum = 0;
  for (const auto& child : family->children) sum += child.value;
  EXPECT_EQ(sum, static_cast<double>(system.dead_letters().count()));
  EXPECT_GE(value(after, "troupe_dead_letters_total", terminated).value_or(0), before + 2);
  const std::string text = troupe::observability::to_prometheus_text(after);
  EXPECT_NE(text.find("troupe_dead_letters_total{reason=\"recipient_terminated\"}"),
            std::string::npos)
      << text;
}

TEST(ShardingMetrics, CountsActivationsAndIdleAndRequestedPassivations) {
  troupe::testkit::deterministic_system ds;
  auto doors = start_doors(
      ds.system(), [](auto& o) { o.with_passivation_idle(10s).with_shard_passivation_idle(1h); });
  metrics_registry registry;
  sharding_metrics metrics(registry, cluster_sharding::get(ds.system()), ds.system());
  doors.tell(knock{"a"});
  doors.tell(knock{"b"});
  doors.tell(knock{"a"});
  ds.run();
  auto s = registry.collect();
  EXPECT_EQ(value(s, "troupe_shard_activations_total", {"door", "0"}), 2.0);
  EXPECT_EQ(value(s, "troupe_passivations_total", {"door", "idle"}), 0.0);

  ds.advance(20s);  // both idle past passivation-idle
  s = registry.collect();
  EXPECT_EQ(value(s, "troupe_passivations_total", {"door", "idle"}), 2.0);
  EXPECT_EQ(value(s, "troupe_shard_entities", {"door", "0"}), 0.0);

  doors.tell(knock{"a", true});  // a new incarnation, which asks to go
  ds.run();
  s = registry.collect();
  EXPECT_EQ(value(s, "troupe_shard_activations_total", {"door", "0"}), 3.0);
  EXPECT_EQ(value(s, "troupe_passivations_total", {"door", "requested"}), 1.0);
  EXPECT_EQ(value(s, "troupe_passivations_total", {"door", "idle"}), 2.0);
  EXPECT_EQ(value(s, "troupe_passivations_total", {"door", "max_entities"}), 0.0);
  EXPECT_EQ(value(s, "troupe_passivations_total", {"door", "shard_stopped"}), 0.0);
}

TEST(ShardingMetrics, CountsEvictionsOverMaxEntities) {
  troupe::testkit::deterministic_system ds;
  auto doors = start_doors(ds.system(), [](auto& o) { o.with_max_entities(1); });
  metrics_registry registry;
  sharding_metrics metrics(registry, cluster_sharding::get(ds.system()), ds.system());
  for (const char* id : {"a", "b", "c"}) {
    doors.tell(knock{id});
    ds.run();
  }
  const auto s = registry.collect();
  EXPECT_EQ(value(s, "troupe_shard_activations_total", {"door", "0"}), 3.0);
  EXPECT_EQ(value(s, "troupe_passivations_total", {"door", "max_entities"}), 2.0);
  EXPECT_EQ(value(s, "troupe_passivations_total", {"door", "idle"}), 0.0);
}

TEST(ShardingMetrics, CountsMessagesRefusedOverAFullBuffer) {
  // A shard that starts holds at most buffer-size messages in its route meanwhile: with manual
  // scheduling nothing starts it until run(), so the second and third tells overflow.
  troupe::actor_system system(troupe::system_config{}.with_manual_scheduling().with_config(
      troupe::config::parse_string("troupe.sharding.buffer-size = 1", "node.conf")));
  auto doors = start_doors(system, [](auto& /*unused*/) {});
  metrics_registry registry;
  sharding_metrics metrics(registry, cluster_sharding::get(system), system);
  for (int i = 0; i < 3; ++i) doors.tell(knock{"a"});
  system.run_until_idle();
  const auto s = registry.collect();
  EXPECT_EQ(value(s, "troupe_buffer_overflows_total", {"door"}), 2.0);
  EXPECT_EQ(value(s, "troupe_dead_letters_total", {"mailbox_full"}), 2.0);
}

TEST(ShardingMetrics, NamesTheHottestKeyAndTheTextParses) {
  troupe::actor_system system(config());
  auto& sharding = cluster_sharding::get(system);
  auto region = sharding.start<page>(sharding_options<visit>::create().with_num_shards(8));
  metrics_registry registry;
  sharding_metrics metrics(registry, sharding, system);

  // Hot-key counting samples one delivery in 16: enough visits that the hot one shows.
  visit_n(region, "checkout", 400);
  visit_n(region, "faq", 1);
  const auto s = registry.collect();
  const auto hot = value(s, "troupe_hot_key_messages", {"page", "checkout"});
  ASSERT_TRUE(hot.has_value());
  EXPECT_GT(*hot, 0.0);
  const std::string text = troupe::observability::to_prometheus_text(s);
  EXPECT_NE(text.find("troupe_hot_key_messages{type=\"page\",key=\"checkout\"}"), std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE troupe_shard_messages_total counter"), std::string::npos) << text;
}

TEST(ShardingMetrics, StopsExportingWhenDestroyed) {
  troupe::actor_system system(config());
  auto& sharding = cluster_sharding::get(system);
  auto region = sharding.start<page>(sharding_options<visit>::create().with_num_shards(8));
  metrics_registry registry;
  {
    sharding_metrics metrics(registry, sharding, system);
    visit_n(region, "home", 1);
    EXPECT_EQ(
        value(registry.collect(), "troupe_shard_messages_total", {"page", shard_label("home")}),
        1.0);
  }
  visit_n(region, "home", 1);
  // The hook is gone: the counter keeps the last value it was given.
  EXPECT_EQ(value(registry.collect(), "troupe_shard_messages_total", {"page", shard_label("home")}),
            1.0);
}

}  // namespace
