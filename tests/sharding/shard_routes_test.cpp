// Shard routes: senders hold messages in a shard's route while its actor starts or stops, and
// deliver straight to it once it runs. Manual scheduling shows each step: nothing runs until the
// test says so.
#include <troupe/core/actor_system.hpp>
#include <troupe/core/config.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>

namespace {

using namespace std::chrono_literals;
using troupe::sharding::cluster_sharding;
using troupe::sharding::sharding_options;
using troupe::testkit::test_probe;

struct note {
  std::string id;
  int n = 0;
};

/// Tells `out` each number it gets.
class noter final : public troupe::actor<note> {
 public:
  explicit noter(troupe::actor_ref<int> out) : out_(std::move(out)) {}

 private:
  void receive(note& n) override { out_.tell(n.n); }
  troupe::actor_ref<int> out_;
};

troupe::system_config manual(const std::string& hocon = "") {
  return troupe::system_config{}.with_manual_scheduling().with_config(
      troupe::config::parse_string(hocon, "node.conf"));
}

troupe::actor_ref<note> start_noters(troupe::actor_system& system, troupe::actor_ref<int> out) {
  return cluster_sharding::get(system).start(
      sharding_options<note>::create()
          .with_type_name("noter")
          .with_entity<noter>(std::move(out))
          .with_extract_entity_id([](const note& n) { return n.id; })
          .with_num_shards(1));
}

TEST(ShardRoutes, MessagesHeldWhileTheShardStartsArriveInOrderAndLaterOnesGoStraightToIt) {
  troupe::actor_system system(manual());
  test_probe<int> out(system, "out");
  auto noters = start_noters(system, out.ref());
  for (int i = 0; i < 5; ++i) noters.tell(note{"a", i});  // held: the shard has not started
  system.run_until_idle();
  for (int i = 5; i < 10; ++i) noters.tell(note{"a", i});  // the route is open now
  system.run_until_idle();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(out.expect_message(), i);
  const auto shards = cluster_sharding::get(system).shards("noter");
  ASSERT_EQ(shards.size(), 1U);
  EXPECT_EQ(shards.front().messages_processed, 10U);
  EXPECT_EQ(shards.front().stats.messages_processed, 10U);
}

TEST(ShardRoutes, HoldAtMostBufferSizeWhileTheShardStartsAndRejectTheRestWithAReason) {
  troupe::actor_system system(manual("troupe.sharding.buffer-size = 3"));
  test_probe<int> out(system, "out");
  test_probe<troupe::dead_letter> dead(system, "dead");
  system.dead_letters().subscribe(dead.ref());
  auto noters = start_noters(system, out.ref());
  for (int i = 0; i < 5; ++i) noters.tell(note{"a", i});
  system.run_until_idle();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out.expect_message(), i);
  for (int i = 0; i < 2; ++i) {
    const auto d = dead.expect_message();
    EXPECT_EQ(d.code, troupe::make_error_code(troupe::errc::mailbox_full));
    EXPECT_NE(d.message_type.find("note"), std::string::npos) << d.message_type;
    EXPECT_NE(d.reason.find("buffer-size"), std::string::npos) << d.reason;
  }
  // The shard keeps serving.
  noters.tell(note{"a", 7});
  system.run_until_idle();
  EXPECT_EQ(out.expect_message(), 7);
}

/// A runtime signal that fails the actor it reaches: user input no longer can fail a region (a
/// throwing extractor only dead-letters its message), so the test fails it this way.
struct fail_now final : troupe::detail::system_message {
  void apply(troupe::detail::actor_cell& /*cell*/) override {
    throw std::runtime_error("failed on purpose");
  }
};

TEST(ShardRoutes, KeepDeliveringInOrderAfterTheRegionRestarts) {
  troupe::actor_system system(manual());
  test_probe<int> out(system, "out");
  auto noters = start_noters(system, out.ref());
  noters.tell(note{"a", 1});
  system.run_until_idle();
  EXPECT_EQ(out.expect_message(), 1);
  noters.target()->send_system(new fail_now);  // restarts the region, which stops its shards
  system.run_until_idle();
  for (int i = 3; i < 6; ++i) noters.tell(note{"a", i});
  system.run_until_idle();
  for (int i = 3; i < 6; ++i) EXPECT_EQ(out.expect_message(), i);
  EXPECT_EQ(cluster_sharding::get(system).shards("noter").size(), 1U);
}

}  // namespace
