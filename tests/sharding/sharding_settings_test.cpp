// ctest-labels: concurrency
// troupe.sharding.* from the node's HOCON configuration: code overrides the file, the file
// overrides the defaults, and a bad value or unknown key fails naming the key, file and line.
#include <troupe/core/actor_system.hpp>
#include <troupe/core/config.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/testkit/deterministic.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace {

using namespace std::chrono_literals;
using troupe::sharding::cluster_sharding;
using troupe::sharding::sharding_options;

struct where {
  std::string id;
};

/// Replies with its shard.
class locator final : public troupe::actor<where> {
 public:
  static inline const auto shard =
      troupe::sharding::shard_key<where>::of("locator", [](const where& w) { return w.id; });

 private:
  void receive(where& /*unused*/) override { context().reply(static_cast<int>(entity().shard_id)); }
};

troupe::system_config with_file(const std::string& hocon) {
  return troupe::system_config{}.with_workers(2).with_config(
      troupe::config::parse_string(hocon, "node.conf"));
}

int shard_of(troupe::actor_ref<where> region, const std::string& id) {
  return region.ask<int>(where{id}, troupe::testkit::dilated(3s), troupe::use_future).get();
}

TEST(ShardingSettings, TheFileSetsTheNumberOfShards) {
  troupe::actor_system system(with_file("troupe.sharding { number-of-shards = 16 }"));
  auto region = cluster_sharding::get(system).start<locator>();
  EXPECT_EQ(shard_of(region, "user:42"), 6);  // crc32("user:42") % 16
}

TEST(ShardingSettings, CodeOverridesTheFile) {
  troupe::actor_system system(with_file("troupe.sharding.number-of-shards = 16"));
  auto region = cluster_sharding::get(system).start<locator>(
      sharding_options<where>::create().with_num_shards(1));
  EXPECT_EQ(shard_of(region, "user:42"), 0);
}

TEST(ShardingSettings, DefaultsApplyWithoutAFile) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  auto region = cluster_sharding::get(system).start<locator>();
  EXPECT_EQ(shard_of(region, "user:42"),
            static_cast<int>(troupe::sharding::shard_of("user:42", 64)));
}

TEST(ShardingSettings, ABadValueFailsNamingKeyFileAndLine) {
  troupe::actor_system system(with_file("troupe.sharding {\n  number-of-shards = 0\n}"));
  try {
    (void)cluster_sharding::get(system).start<locator>();
    FAIL() << "expected a config error";
  } catch (const troupe::config_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("node.conf:2"), std::string::npos) << what;
    EXPECT_NE(what.find("troupe.sharding.number-of-shards"), std::string::npos) << what;
  }
}

TEST(ShardingSettings, ADurationOfTheWrongShapeFailsNamingTheKey) {
  troupe::actor_system system(with_file("troupe.sharding.passivation-idle = soon"));
  try {
    (void)cluster_sharding::get(system).start<locator>();
    FAIL() << "expected a config error";
  } catch (const troupe::config_error& e) {
    EXPECT_NE(std::string(e.what()).find("passivation-idle"), std::string::npos) << e.what();
  }
}

TEST(ShardingSettings, AnUnknownKeyFailsNamingIt) {
  troupe::actor_system system(with_file("troupe.sharding {\n  passivation-idel = 2 minutes\n}"));
  try {
    (void)cluster_sharding::get(system).start<locator>();
    FAIL() << "expected a config error";
  } catch (const troupe::config_error& e) {
    EXPECT_NE(std::string(e.what()).find("passivation-idel"), std::string::npos) << e.what();
  }
}

TEST(ShardingSettings, ALeaveTimeoutThatIsNotPositiveFailsNamingTheKey) {
  troupe::actor_system system(with_file("troupe.sharding.leave-timeout = 0s"));
  try {
    (void)cluster_sharding::get(system).start<locator>();
    FAIL() << "expected a config error";
  } catch (const troupe::config_error& e) {
    EXPECT_NE(std::string(e.what()).find("leave-timeout"), std::string::npos) << e.what();
  }
}

TEST(ShardingSettings, ALeaveTimeoutIsAKnownKey) {
  troupe::actor_system system(with_file("troupe.sharding.leave-timeout = 40s"));
  EXPECT_NO_THROW((void)cluster_sharding::get(system).start<locator>());
}

/// Tells the probe when it stops.
class sleepy final : public troupe::actor<where> {
 public:
  static inline const auto shard =
      troupe::sharding::shard_key<where>::of("sleepy", [](const where& w) { return w.id; });
  explicit sleepy(troupe::actor_ref<std::string> out) : out_(std::move(out)) {}

 private:
  void post_stop() override { out_.tell("stop " + entity_id()); }
  void receive(where& /*unused*/) override {}
  troupe::actor_ref<std::string> out_;
};

TEST(ShardingSettings, PassivationIdleComesFromTheFile) {
  auto clock = std::make_shared<troupe::manual_clock>();
  troupe::actor_system system(
      troupe::system_config{}.with_manual_scheduling().with_clock(clock).with_config(
          troupe::config::parse_string("troupe.sharding.passivation-idle = 2 minutes")));
  troupe::testkit::test_probe<std::string> out(system, "out");
  auto region = cluster_sharding::get(system).start<sleepy>(
      "sleepy",
      sharding_options<where>::create().with_extract_entity_id([](const where& w) { return w.id; }),
      out.ref());
  region.tell(where{"z"});
  system.run_until_idle();
  clock->advance(1min);
  system.run_until_idle();
  out.expect_no_message(1ms);
  // Checked every minute (half the window) as time passes; the entity goes within 1.5 windows.
  for (int i = 0; i < 2; ++i) {
    clock->advance(1min);
    system.run_until_idle();
  }
  EXPECT_EQ(out.expect_message(), "stop z");
}

}  // namespace
