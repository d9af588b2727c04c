// ctest-labels: concurrency
// metrics: counters, gauges and histograms record exactly, families create, cap and remove
// their children, names are checked, and collect() reads exact totals while writers run.
#include <troupe/core/metrics.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using troupe::counter;
using troupe::gauge;
using troupe::histogram;
using troupe::metric_type;
using troupe::metrics_registry;
using troupe::metrics_snapshot;

const troupe::metric_family_snapshot* find_family(const metrics_snapshot& snapshot,
                                                  std::string_view name) {
  for (const auto& family : snapshot.families) {
    if (family.name == name) return &family;
  }
  return nullptr;
}

// -- counter -------------------------------------------------------------------

TEST(Counter, StartsAtZeroAndAddsWholeAndFractionalAmounts) {
  counter c;
  EXPECT_EQ(c.value(), 0.0);
  c.inc();
  c.add(4);
  c.add(std::uint64_t{5});
  c.add(0.5);
  EXPECT_DOUBLE_EQ(c.value(), 10.5);
}

TEST(Counter, IgnoresNegativeAndNanAmounts) {
  counter c;
  c.add(3);
  c.add(-2);
  c.add(-1.5);
  c.add(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(c.value(), 3.0);
}

// -- gauge ---------------------------------------------------------------------

TEST(Gauge, GoesUpAndDownAndCanBeSet) {
  gauge g;
  g.inc();
  g.inc();
  g.dec();
  g.add(2.5);
  g.sub(4);
  EXPECT_DOUBLE_EQ(g.value(), -0.5);
  g.set(42);
  EXPECT_EQ(g.value(), 42.0);
}

// -- histogram -----------------------------------------------------------------

TEST(Histogram, PutsAValueEqualToABoundInThatBucket) {
  histogram h({1, 2, 5});
  h.observe(1);     // le=1
  h.observe(0.5);   // le=1
  h.observe(2);     // le=2
  h.observe(2.01);  // le=5
  h.observe(5);     // le=5
  h.observe(7);     // +Inf only
  const auto data = h.read();
  EXPECT_EQ(data.upper_bounds, (std::vector<double>{1, 2, 5}));
  EXPECT_EQ(data.cumulative_counts, (std::vector<std::uint64_t>{2, 3, 5, 6}));
  EXPECT_EQ(data.count, 6U);
  EXPECT_DOUBLE_EQ(data.sum, 17.51);
}

TEST(Histogram, CountsNanOnlyInTheInfBucketAndNegativeValuesInTheFirst) {
  histogram h({0, 10});
  h.observe(std::numeric_limits<double>::quiet_NaN());
  h.observe(-3);
  h.observe(-std::numeric_limits<double>::infinity());
  h.observe(std::numeric_limits<double>::infinity());
  const auto data = h.read();
  EXPECT_EQ(data.cumulative_counts, (std::vector<std::uint64_t>{2, 2, 4}));
  EXPECT_TRUE(std::isnan(data.sum));
}

TEST(Histogram, DropsATrailingInfBoundAndRejectsBadBounds) {
  EXPECT_EQ(histogram({1, std::numeric_limits<double>::infinity()}).upper_bounds(),
            (std::vector<double>{1}));
  EXPECT_TRUE(histogram({}).upper_bounds().empty());
  EXPECT_THROW(histogram({2, 1}), std::invalid_argument);
  EXPECT_THROW(histogram({1, 1}), std::invalid_argument);
  EXPECT_THROW(histogram({std::numeric_limits<double>::quiet_NaN()}), std::invalid_argument);
  EXPECT_THROW(histogram({std::numeric_limits<double>::infinity(), 1}), std::invalid_argument);
}

TEST(Histogram, BuildsLinearAndExponentialBuckets) {
  EXPECT_EQ(troupe::linear_buckets(1, 2, 3), (std::vector<double>{1, 3, 5}));
  EXPECT_EQ(troupe::exponential_buckets(0.001, 10, 3).size(), 3U);
  EXPECT_DOUBLE_EQ(troupe::exponential_buckets(0.001, 10, 3)[2], 0.1);
  EXPECT_THROW((void)troupe::linear_buckets(0, 0, 3), std::invalid_argument);
  EXPECT_THROW((void)troupe::exponential_buckets(0, 2, 3), std::invalid_argument);
  EXPECT_THROW((void)troupe::exponential_buckets(1, 1, 3), std::invalid_argument);
}

// -- names ---------------------------------------------------------------------

TEST(MetricNames, FollowPrometheusRules) {
  EXPECT_TRUE(troupe::is_valid_metric_name("troupe_entity_messages_total"));
  EXPECT_TRUE(troupe::is_valid_metric_name("job:rate5m"));
  EXPECT_TRUE(troupe::is_valid_metric_name("_x"));
  EXPECT_FALSE(troupe::is_valid_metric_name(""));
  EXPECT_FALSE(troupe::is_valid_metric_name("1abc"));
  EXPECT_FALSE(troupe::is_valid_metric_name("a-b"));
  EXPECT_FALSE(troupe::is_valid_metric_name("a b"));
  EXPECT_FALSE(troupe::is_valid_metric_name("caf\xC3\xA9"));

  EXPECT_TRUE(troupe::is_valid_label_name("shard"));
  EXPECT_TRUE(troupe::is_valid_label_name("_x9"));
  EXPECT_FALSE(troupe::is_valid_label_name("__name__"));
  EXPECT_FALSE(troupe::is_valid_label_name("__x"));
  EXPECT_FALSE(troupe::is_valid_label_name("a:b"));
  EXPECT_FALSE(troupe::is_valid_label_name("9a"));
  EXPECT_FALSE(troupe::is_valid_label_name(""));
}

TEST(MetricsRegistry, RejectsInvalidNamesWithAClearMessage) {
  metrics_registry registry;
  try {
    (void)registry.gauge_family("bad-name", "help");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'bad-name'"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)registry.gauge_family("ok", "help", {"__reserved"}), std::invalid_argument);
  EXPECT_THROW((void)registry.gauge_family("ok", "help", {"a-b"}), std::invalid_argument);
  EXPECT_THROW((void)registry.gauge_family("ok", "help", {"a", "a"}), std::invalid_argument);
  EXPECT_THROW((void)registry.counter_family("requests", "no _total suffix"),
               std::invalid_argument);
  EXPECT_THROW((void)registry.histogram_family("latency_seconds", "help", {"le"}, {1}),
               std::invalid_argument);
  EXPECT_THROW((void)registry.histogram_family("latency_seconds", "help", {}, {2, 1}),
               std::invalid_argument);
  // Nothing half-registered after the failures.
  EXPECT_TRUE(registry.collect().families.empty());
}

TEST(MetricsRegistry, ReturnsTheSameFamilyForTheSameDefinitionAndRejectsAnother) {
  metrics_registry registry;
  auto& a = registry.counter_family("x_total", "help", {"type"});
  auto& b = registry.counter_family("x_total", "help", {"type"});
  EXPECT_EQ(&a, &b);
  EXPECT_THROW((void)registry.gauge_family("x_total", "help", {"type"}), std::invalid_argument);
  EXPECT_THROW((void)registry.counter_family("x_total", "other help", {"type"}),
               std::invalid_argument);
  EXPECT_THROW((void)registry.counter_family("x_total", "help", {"shard"}), std::invalid_argument);
  EXPECT_THROW((void)registry.counter_family("x_total", "help", {"type"}, 10),
               std::invalid_argument);
}

TEST(MetricsRegistry, KeepsHistogramSampleNamesFreeOfOtherFamilies) {
  metrics_registry registry;
  (void)registry.histogram_family("wait_seconds", "help", {}, {1});
  EXPECT_THROW((void)registry.gauge_family("wait_seconds_count", "help"), std::invalid_argument);
  EXPECT_THROW((void)registry.gauge_family("wait_seconds_bucket", "help"), std::invalid_argument);
  (void)registry.gauge_family("depth_sum", "help");
  EXPECT_THROW((void)registry.histogram_family("depth", "help", {}, {1}), std::invalid_argument);
}

// -- families ------------------------------------------------------------------

TEST(MetricsRegistry, GivesOneStableChildPerLabelValues) {
  metrics_registry registry;
  auto& messages = registry.counter_family("troupe_entity_messages_total",
                                           "Messages handled by entities", {"type", "shard"});
  counter& cart_17 = messages.with({"cart", "17"});
  counter& cart_3 = messages.with({"cart", "3"});
  EXPECT_NE(&cart_17, &cart_3);
  EXPECT_EQ(&messages.with({"cart", "17"}), &cart_17);
  const std::vector<std::string> labels{"cart", "17"};
  EXPECT_EQ(&messages.with(labels), &cart_17);
  EXPECT_THROW((void)messages.with({"cart"}), std::invalid_argument);

  cart_17.add(2);
  cart_3.inc();
  const auto snapshot = registry.collect();
  ASSERT_EQ(snapshot.families.size(), 1U);
  const auto& family = snapshot.families[0];
  EXPECT_EQ(family.name, "troupe_entity_messages_total");
  EXPECT_EQ(family.help, "Messages handled by entities");
  EXPECT_EQ(family.type, metric_type::counter);
  EXPECT_EQ(family.label_names, (std::vector<std::string>{"type", "shard"}));
  ASSERT_EQ(family.children.size(), 2U);
  // Ordered by label values.
  EXPECT_EQ(family.children[0].label_values, (std::vector<std::string>{"cart", "17"}));
  EXPECT_EQ(family.children[0].value, 2.0);
  EXPECT_EQ(family.children[1].label_values, (std::vector<std::string>{"cart", "3"}));
  EXPECT_EQ(family.children[1].value, 1.0);
}

TEST(MetricsRegistry, ExportsAnUnlabelledMetricFromTheStart) {
  metrics_registry registry;
  auto& alive = registry.gauge_family("troupe_entities_alive", "Entities alive");
  auto snapshot = registry.collect();
  ASSERT_EQ(snapshot.families.size(), 1U);
  ASSERT_EQ(snapshot.families[0].children.size(), 1U);
  EXPECT_EQ(snapshot.families[0].children[0].value, 0.0);
  alive.with({}).set(7);
  snapshot = registry.collect();
  EXPECT_EQ(snapshot.families[0].children[0].value, 7.0);
  EXPECT_TRUE(snapshot.families[0].children[0].label_values.empty());
}

TEST(MetricsRegistry, CollectsFamiliesSortedByNameWithHistogramData) {
  metrics_registry registry;
  auto& wait = registry.histogram_family("b_wait_seconds", "Mailbox wait", {"type"}, {0.1, 1});
  (void)registry.gauge_family("c_depth", "Depth");
  (void)registry.counter_family("a_total", "A");
  wait.with({"cart"}).observe(0.1);
  wait.with({"cart"}).observe(3);
  const auto snapshot = registry.collect();
  ASSERT_EQ(snapshot.families.size(), 3U);
  EXPECT_EQ(snapshot.families[0].name, "a_total");
  EXPECT_EQ(snapshot.families[1].name, "b_wait_seconds");
  EXPECT_EQ(snapshot.families[2].name, "c_depth");
  const auto& h = snapshot.families[1].children.at(0).histogram;
  EXPECT_EQ(h.upper_bounds, (std::vector<double>{0.1, 1}));
  EXPECT_EQ(h.cumulative_counts, (std::vector<std::uint64_t>{1, 1, 2}));
  EXPECT_EQ(h.count, 2U);
  EXPECT_DOUBLE_EQ(h.sum, 3.1);
}

TEST(MetricsRegistry, SendsLabelsBeyondTheCapToOneOverflowChildAndCountsRefusals) {
  metrics_registry registry;
  auto& hot = registry.gauge_family("troupe_hot_key_rate", "Hot keys", {"type", "key"}, 2);
  gauge& a = hot.with({"cart", "a"});
  gauge& b = hot.with({"cart", "b"});
  gauge& c = hot.with({"cart", "c"});
  gauge& d = hot.with({"cart", "d"});
  EXPECT_NE(&a, &b);
  EXPECT_EQ(&c, &d);  // both the overflow child
  EXPECT_NE(&c, &a);
  EXPECT_EQ(&hot.with({"cart", "a"}), &a);  // existing children are still found
  EXPECT_EQ(hot.size(), 2U);
  EXPECT_EQ(hot.refused(), 2U);
  c.set(5);

  const auto snapshot = registry.collect();
  const auto* family = find_family(snapshot, "troupe_hot_key_rate");
  ASSERT_NE(family, nullptr);
  ASSERT_EQ(family->children.size(), 3U);
  EXPECT_EQ(family->children[2].label_values,
            (std::vector<std::string>{"__overflow__", "__overflow__"}));
  EXPECT_EQ(family->children[2].value, 5.0);

  const auto* refused = find_family(snapshot, troupe::metrics_refused_children_name);
  ASSERT_NE(refused, nullptr);
  EXPECT_EQ(refused->label_names, (std::vector<std::string>{"family"}));
  ASSERT_EQ(refused->children.size(), 1U);
  EXPECT_EQ(refused->children[0].label_values, (std::vector<std::string>{"troupe_hot_key_rate"}));
  EXPECT_EQ(refused->children[0].value, 2.0);
}

TEST(MetricsRegistry, RemovesAChildWhoseReferenceStaysValidAndComesBackWithItsValue) {
  metrics_registry registry;
  auto& messages = registry.counter_family("m_total", "help", {"shard"}, 2);
  counter& s1 = messages.with({"1"});
  counter& s2 = messages.with({"2"});
  s1.add(10);
  s2.add(20);
  EXPECT_TRUE(messages.remove({"1"}));
  EXPECT_FALSE(messages.remove({"1"}));
  EXPECT_FALSE(messages.remove({"9"}));
  EXPECT_EQ(messages.size(), 1U);
  s1.inc();  // a late writer still holding the reference is harmless

  auto snapshot = registry.collect();
  auto family = *find_family(snapshot, "m_total");
  ASSERT_EQ(family.children.size(), 1U);
  EXPECT_EQ(family.children[0].label_values, (std::vector<std::string>{"2"}));

  // The freed slot takes a new label set under the cap...
  counter& s3 = messages.with({"3"});
  EXPECT_EQ(messages.refused(), 0U);
  // ...and the removed one, asked for again while the family is full, overflows.
  EXPECT_NE(&messages.with({"1"}), &s1);
  EXPECT_EQ(messages.refused(), 1U);
  EXPECT_TRUE(messages.remove({"3"}));
  (void)s3;

  // With room again, the removed child comes back, value kept.
  EXPECT_EQ(&messages.with({"1"}), &s1);
  snapshot = registry.collect();
  family = *find_family(snapshot, "m_total");
  ASSERT_EQ(family.children.size(), 3U);  // 1, 2 and the overflow child
  EXPECT_EQ(family.children[0].label_values, (std::vector<std::string>{"1"}));
  EXPECT_EQ(family.children[0].value, 11.0);
}

// -- concurrency ---------------------------------------------------------------

TEST(MetricsRegistry, CollectsExactTotalsWhileThreadsRecordAndCreateChildren) {
  constexpr int writers = 4;
  constexpr int rounds = 20000;
  metrics_registry registry;
  auto& messages = registry.counter_family("c_total", "help", {"shard"});
  auto& depth = registry.gauge_family("g", "help", {"shard"});
  auto& wait = registry.histogram_family("h_seconds", "help", {"shard"}, {1, 10, 100});

  std::atomic<bool> done{false};
  std::atomic<int> collects{0};
  std::thread reader([&] {
    // Every snapshot taken mid-run must be internally consistent. EXPECT, not ASSERT: the
    // writers wait for this loop, which must not stop early.
    while (!done.load()) {
      const auto snapshot = registry.collect();
      for (const auto& family : snapshot.families) {
        if (family.type != metric_type::histogram) continue;
        for (const auto& child : family.children) {
          const auto& counts = child.histogram.cumulative_counts;
          EXPECT_EQ(counts.size(), 4U);
          EXPECT_TRUE(std::is_sorted(counts.begin(), counts.end()));
          if (!counts.empty()) {
            EXPECT_EQ(counts.back(), child.histogram.count);
          }
        }
      }
      collects.fetch_add(1);
    }
  });

  std::vector<std::thread> threads;
  threads.reserve(writers);
  for (int t = 0; t < writers; ++t) {
    threads.emplace_back([&, t] {
      // A shared child every thread writes, and one of its own created mid-run.
      counter& shared = messages.with({"shared"});
      counter& own = messages.with({std::to_string(t)});
      gauge& shared_depth = depth.with({"shared"});
      histogram& shared_wait = wait.with({"shared"});
      const int collected_before = collects.load();
      for (int i = 0; i < rounds; ++i) {
        // Halfway, wait for two more collects, so that at least one ran whole mid-write.
        if (i == rounds / 2) {
          while (collects.load() < collected_before + 2) std::this_thread::yield();
        }
        shared.inc();
        own.add(2);
        shared_depth.inc();
        shared_depth.dec();
        shared_depth.add(1);
        shared_wait.observe(i % 200);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  done.store(true);
  reader.join();
  EXPECT_GE(collects.load(), 2);

  const auto snapshot = registry.collect();
  const auto* c = find_family(snapshot, "c_total");
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->children.size(), writers + 1U);
  for (const auto& child : c->children) {
    const double expected = child.label_values[0] == "shared" ? writers * rounds : 2.0 * rounds;
    EXPECT_EQ(child.value, expected) << child.label_values[0];
  }
  const auto* g = find_family(snapshot, "g");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->children.at(0).value, static_cast<double>(writers * rounds));
  const auto* h = find_family(snapshot, "h_seconds");
  ASSERT_NE(h, nullptr);
  const auto& data = h->children.at(0).histogram;
  EXPECT_EQ(data.count, static_cast<std::uint64_t>(writers) * rounds);
  // Per thread, i % 200 over 20000 rounds: 100 rounds of 0..199.
  const std::uint64_t cycles = static_cast<std::uint64_t>(writers) * rounds / 200;
  EXPECT_EQ(data.cumulative_counts,
            (std::vector<std::uint64_t>{2 * cycles, 11 * cycles, 101 * cycles, 200 * cycles}));
  EXPECT_EQ(data.sum, static_cast<double>(cycles) * (199.0 * 200.0 / 2.0));
}

}  // namespace

namespace {

TEST(MetricsRegistryHooks, RunBeforeEachCollectAndStopOnceRemoved) {
  troupe::metrics_registry registry;
  auto& g = registry.gauge_family("hooked_value", "set by a hook");
  int runs = 0;
  const auto handle = registry.add_collect_hook([&] { g.with({}).set(++runs); });
  auto first = registry.collect();
  EXPECT_EQ(runs, 1);
  auto second = registry.collect();
  EXPECT_EQ(runs, 2);
  registry.remove_collect_hook(handle);
  (void)registry.collect();
  EXPECT_EQ(runs, 2);
  ASSERT_EQ(second.families.size(), 1U);
  EXPECT_EQ(second.families[0].children.at(0).value, 2.0);
  EXPECT_THROW(registry.add_collect_hook({}), std::invalid_argument);
}

TEST(MetricsRegistryHooks, ForgetFreesAChurningChildAndRemoveKeepsIt) {
  troupe::metrics_registry registry;
  auto& keys = registry.gauge_family("hot_keys", "hottest keys", {"key"}, 2);
  keys.with({"a"}).set(5);
  keys.with({"b"}).set(3);
  const std::string_view a[] = {"a"};
  EXPECT_TRUE(keys.forget(a));
  EXPECT_FALSE(keys.forget(a));
  // Room again under the cap, and "a" comes back from zero.
  keys.with({"c"}).set(1);
  EXPECT_EQ(keys.with({"a"}).value(), 0.0);  // over the cap: the overflow child
  const std::string_view b[] = {"b"};
  EXPECT_TRUE(keys.remove(b));
  EXPECT_EQ(keys.with({"b"}).value(), 3.0);  // removed, not forgotten: its value kept
}

}  // namespace
