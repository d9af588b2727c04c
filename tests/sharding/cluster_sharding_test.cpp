// ctest-labels: concurrency
// Sharding on one node, through the actor system: starting a type in each shape, routing by
// entity id, entity identity and paths, refs to entities, passivation (manual, idle, limit) with
// nothing lost, bad input contained, introspection.
#include <troupe/core/actor_system.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/testkit/deterministic.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::actor_ref;
using troupe::errc;
using troupe::sharding::cluster_sharding;
using troupe::sharding::sharding_options;
using troupe::testkit::test_probe;

struct add {
  std::string cart;
  std::string sku;
};
struct view {
  std::string cart;
};
struct checkout {
  std::string cart;
};
using cart_command = std::variant<add, view, checkout>;

std::string cart_of(const cart_command& c) {
  return std::visit([](const auto& m) { return m.cart; }, c);
}

/// A cart: keeps items, replies to view with "<id>@<shard>: item,item", passivates on checkout.
class cart final : public troupe::actor<cart_command> {
 public:
  static inline const auto shard = troupe::sharding::shard_key<cart_command>::of("cart", cart_of);

  explicit cart(actor_ref<std::string> events = {}) : events_(std::move(events)) {}

 private:
  void pre_start() override {
    if (events_)
      events_.tell("start " + entity_id() + " in shard " + std::to_string(entity().shard_id));
  }
  void post_stop() override {
    std::string out = "stop " + entity_id() + ":";
    for (const auto& i : items_) out += " " + i;
    if (events_) events_.tell(out);
  }
  void receive(cart_command& c) override {
    std::visit(
        troupe::overloaded{
            [this](add& a) { items_.push_back(a.sku); },
            [this](view&) {
              std::string out = entity_id() + "@" + std::to_string(entity().shard_id) + ":";
              for (const auto& i : items_) out += " " + i;
              context().reply(out);
            },
            [this](checkout&) { troupe::sharding::request_passivation<cart_command>(context()); },
        },
        c);
  }
  actor_ref<std::string> events_;
  std::vector<std::string> items_;
};

troupe::system_config two_workers() { return troupe::system_config{}.with_workers(2); }

std::string view_of(actor_ref<cart_command> region, const std::string& id) {
  return region.ask<std::string>(view{id}, troupe::testkit::dilated(3s), troupe::use_future).get();
}

TEST(ClusterSharding, IsOneMemoisedInstancePerSystem) {
  troupe::actor_system system(two_workers());
  EXPECT_EQ(&cluster_sharding::get(system), &cluster_sharding::get(system));
}

TEST(ClusterSharding, StartsFromTheEntitysOwnShardKeyAndRoutesById) {
  troupe::actor_system system(two_workers());
  auto carts = cluster_sharding::get(system).start<cart>();
  carts.tell(add{"user-42", "book-1"});
  carts.tell(add{"user-7", "pen"});
  carts.tell(add{"user-42", "book-2"});
  // crc32("user-42") % 64 decides the shard; the entity reads its own id and shard.
  const auto shard = troupe::sharding::shard_of("user-42", 64);
  EXPECT_EQ(view_of(carts, "user-42"), "user-42@" + std::to_string(shard) + ": book-1 book-2");
  EXPECT_EQ(view_of(carts, "user-7").substr(0, 7), "user-7@");
}

TEST(ClusterSharding, StartsWithTheFullBuilder) {
  troupe::actor_system system(two_workers());
  auto carts = cluster_sharding::get(system).start(sharding_options<cart_command>::create()
                                                       .with_type_name("cart")
                                                       .with_entity<cart>()
                                                       .with_extract_entity_id(cart_of)
                                                       .with_num_shards(16)
                                                       .with_role("cart-host")
                                                       .with_passivation_idle(2min));
  carts.tell(add{"user:42", "x"});
  EXPECT_EQ(view_of(carts, "user:42"), "user:42@6: x");  // crc32("user:42") % 16 == 6
}

TEST(ClusterSharding, StartsWithTypeNameEntityClassAndConstructorArguments) {
  troupe::actor_system system(two_workers());
  test_probe<std::string> events(system, "events");
  auto carts = cluster_sharding::get(system).start<cart>(
      "cart", sharding_options<cart_command>::create().with_extract_entity_id(cart_of),
      events.ref());
  carts.tell(add{"a", "x"});
  EXPECT_EQ(events.expect_message(),
            "start a in shard " + std::to_string(troupe::sharding::shard_of("a", 64)));
}

TEST(ClusterSharding, EntityRefForReachesOneEntityWithoutAnExtractorAtTheCallSite) {
  troupe::actor_system system(two_workers());
  auto& sharding = cluster_sharding::get(system);
  (void)sharding.start<cart>();
  auto ref = sharding.entity_ref_for<cart>("user-9");
  ref.tell(add{"ignored-by-entity-ref", "mug"});  // the ref's id wins over the message
  auto reply = ref.ask<std::string>(view{"also-ignored"}, 3s, troupe::use_future).get();
  EXPECT_EQ(reply.substr(0, 7), "user-9@");
  EXPECT_NE(reply.find("mug"), std::string::npos);
}

TEST(ClusterSharding, EntitiesHaveEscapedPathsUnderTheirShard) {
  troupe::actor_system system(two_workers());
  auto& sharding = cluster_sharding::get(system);
  auto carts = sharding.start<cart>();
  carts.tell(add{"user/42", "x"});
  (void)view_of(carts, "user/42");
  const auto shard = troupe::sharding::shard_of("user/42", 64);
  EXPECT_EQ(sharding.entity_ids("cart", shard), std::vector<std::string>{"user/42"});
  EXPECT_EQ(troupe::sharding::entity_child_name("user/42"), "entity-user~002F42");
}

TEST(ClusterSharding, ManualPassivationLosesAndReordersNothingAcrossIncarnations) {
  troupe::actor_system system(two_workers());
  test_probe<std::string> events(system, "events");
  auto carts = cluster_sharding::get(system).start<cart>(
      "cart", sharding_options<cart_command>::create().with_extract_entity_id(cart_of),
      events.ref());
  carts.tell(add{"c1", "a"});
  EXPECT_EQ(events.expect_message().substr(0, 8), "start c1");
  carts.tell(checkout{"c1"});
  for (int i = 0; i < 200; ++i) carts.tell(add{"c1", std::to_string(i)});
  // Some adds reach the old incarnation before the shard hears of the passivation; the rest
  // wait in the shard's buffer for the next one. Together: every item, once, in order.
  const std::string stopped = events.expect_message();
  ASSERT_EQ(stopped.substr(0, 8), "stop c1:");
  std::string expected = " a";
  for (int i = 0; i < 200; ++i) expected += " " + std::to_string(i);
  const std::string after = view_of(carts, "c1");
  const std::string prefix = "c1@" + std::to_string(troupe::sharding::shard_of("c1", 64)) + ":";
  ASSERT_EQ(after.substr(0, prefix.size()), prefix);
  EXPECT_EQ(stopped.substr(8) + after.substr(prefix.size()), expected);
}

TEST(ClusterSharding, IdleEntitiesArePassivatedOnTheSystemClock) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> events(ds.system(), "events");
  auto carts = cluster_sharding::get(ds.system())
                   .start<cart>("cart",
                                sharding_options<cart_command>::create()
                                    .with_extract_entity_id(cart_of)
                                    .with_passivation_idle(10s),
                                events.ref());
  carts.tell(add{"idle", "x"});
  EXPECT_EQ(events.expect_message().substr(0, 10), "start idle");
  ds.advance(5s);
  events.expect_no_message(1ms);
  ds.advance(10s);  // idle for 15 s > 10 s, checked every 5 s
  EXPECT_EQ(events.expect_message(), "stop idle: x");
}

// The shard keeps each entity's idle stamp in one byte of its cell: ticks count modulo 256. A
// busy entity is never passivated and an idle one always is, on either side of the wrap.
TEST(ClusterSharding, IdleStampsHoldAcrossTheWrapOfTheTickCounter) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> events(ds.system(), "events");
  auto carts = cluster_sharding::get(ds.system())
                   .start<cart>("cart",
                                sharding_options<cart_command>::create()
                                    .with_extract_entity_id(cart_of)
                                    .with_num_shards(1)           // one shard, one tick counter
                                    .with_passivation_idle(10s),  // a tick every 5 s
                                events.ref());
  // "busy" is touched on every tick: it keeps the shard (and its counter) alive throughout.
  int touches = 0;
  auto tick = [&] {
    carts.tell(add{"busy", std::to_string(++touches)});
    ds.advance(5s);
  };
  tick();
  EXPECT_EQ(events.expect_message().substr(0, 10), "start busy");
  for (int i = 0; i < 600; ++i) tick();  // more than two wraps
  events.expect_no_message(1ms);
  // An entity idle from every stamp value: each round ends with it passivated.
  for (int round = 0; round < 300; ++round) {
    carts.tell(add{"idle", "x"});
    ASSERT_EQ(events.expect_message().substr(0, 10), "start idle") << "round " << round;
    for (int t = 0; t < (round % 7 == 0 ? 5 : 4); ++t) tick();  // stamps take every value
    ASSERT_EQ(events.expect_message(), "stop idle: x") << "round " << round;
  }
  events.expect_no_message(1ms);  // "busy" never stopped
}

TEST(ClusterSharding, MaxEntitiesPassivatesTheLeastRecentlyUsed) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> events(ds.system(), "events");
  auto carts = cluster_sharding::get(ds.system())
                   .start<cart>("cart",
                                sharding_options<cart_command>::create()
                                    .with_extract_entity_id(cart_of)
                                    .with_passivation_idle(0s)
                                    .with_max_entities(2),
                                events.ref());
  carts.tell(add{"a", "1"});
  carts.tell(add{"b", "1"});
  carts.tell(add{"a", "2"});  // a is now more recent than b
  carts.tell(add{"c", "1"});  // over the limit: b goes
  std::vector<std::string> seen;
  for (int i = 0; i < 4; ++i) seen.push_back(events.expect_message());
  std::string all;
  for (const auto& e : seen) all += e + "|";
  // b handles what was already in its mailbox before it stops: nothing is lost.
  EXPECT_NE(std::find(seen.begin(), seen.end(), "stop b: 1"), seen.end()) << all;
  EXPECT_EQ(std::find(seen.begin(), seen.end(), "stop a: 1 2"), seen.end()) << all;
}

TEST(ClusterSharding, AnEmptyIdIsRejectedToDeadLettersAndTheAskerHearsAtOnce) {
  troupe::actor_system system(two_workers());
  test_probe<troupe::dead_letter> dead(system, "dead");
  system.dead_letters().subscribe(dead.ref());
  auto carts = cluster_sharding::get(system).start<cart>();
  auto f = carts.ask<std::string>(view{""}, 1h, troupe::use_future);
  ASSERT_EQ(f.wait_for(troupe::testkit::dilated(3s)), std::future_status::ready);
  try {
    (void)f.get();
    FAIL() << "expected an error";
  } catch (const troupe::error& e) {
    EXPECT_EQ(e.value(), errc::invalid_entity_id);
  }
  const auto d = dead.expect_message();
  EXPECT_NE(d.reason.find("empty entity id"), std::string::npos) << d.reason;
  // The region keeps working for everybody else.
  carts.tell(add{"ok", "x"});
  EXPECT_EQ(view_of(carts, "ok").substr(0, 3), "ok@");
}

TEST(ClusterSharding, AThrowingExtractorIsContained) {
  troupe::actor_system system(two_workers());
  test_probe<troupe::dead_letter> dead(system, "dead");
  system.dead_letters().subscribe(dead.ref());
  auto carts = cluster_sharding::get(system).start(
      sharding_options<cart_command>::create()
          .with_type_name("picky")
          .with_entity<cart>()
          .with_extract_entity_id([](const cart_command& c) -> std::string {
            if (std::holds_alternative<checkout>(c)) throw std::runtime_error("no checkouts here");
            return cart_of(c);
          }));
  carts.tell(add{"x", "before"});
  carts.tell(checkout{"x"});
  // The message became a dead letter that says why, with the message itself.
  const auto d = dead.expect_message();
  EXPECT_EQ(d.code, troupe::make_error_code(errc::invalid_entity_id));
  EXPECT_NE(d.reason.find("the entity-id extractor threw: no checkouts here"), std::string::npos)
      << d.reason;
  ASSERT_NE(d.message_as<cart_command>(), nullptr);
  EXPECT_TRUE(std::holds_alternative<checkout>(*d.message_as<cart_command>()));
  // An ask with such a message fails at once, with the same code.
  auto f = carts.ask<std::string>(checkout{"x"}, 1h, troupe::use_future);
  ASSERT_EQ(f.wait_for(troupe::testkit::dilated(3s)), std::future_status::ready);
  try {
    (void)f.get();
    FAIL() << "expected an error";
  } catch (const troupe::error& e) {
    EXPECT_EQ(e.value(), errc::invalid_entity_id);
  }
  // The region still works, and the entity kept what it had (nothing restarted).
  carts.tell(add{"x", "still works"});
  const std::string v = view_of(carts, "x");
  EXPECT_EQ(v.substr(v.find(':')), ": before still works");
}

/// Fails in its constructor for the id "bad".
class fragile final : public troupe::actor<cart_command> {
 public:
  fragile() {
    if (entity_id() == "bad") throw std::runtime_error("cannot build bad");
  }

 private:
  void receive(cart_command& c) override {
    if (std::holds_alternative<view>(c)) context().reply(entity_id());
  }
};

TEST(ClusterSharding, AnEntityFailingInItsConstructorFailsAloneAndItsAskerHears) {
  troupe::actor_system system(two_workers());
  test_probe<troupe::dead_letter> dead(system, "dead");
  system.dead_letters().subscribe(dead.ref());
  auto shards = cluster_sharding::get(system).start(sharding_options<cart_command>::create()
                                                        .with_type_name("fragile")
                                                        .with_entity<fragile>()
                                                        .with_extract_entity_id(cart_of)
                                                        .with_num_shards(1));  // same shard
  auto bad = shards.ask<std::string>(view{"bad"}, 1h, troupe::use_future);
  ASSERT_EQ(bad.wait_for(troupe::testkit::dilated(3s)), std::future_status::ready);
  try {
    (void)bad.get();
    FAIL() << "expected an error";
  } catch (const troupe::error& e) {
    EXPECT_EQ(e.value(), errc::entity_start_failed);
  }
  const auto d = dead.expect_message();
  EXPECT_EQ(d.code, troupe::make_error_code(errc::entity_start_failed));
  EXPECT_NE(d.reason.find("entity 'bad' could not be started"), std::string::npos) << d.reason;
  EXPECT_EQ(view_of(shards, "good"), "good");  // a sibling in the same shard is fine
}

TEST(ClusterSharding, IntrospectionListsShardsWithCountsAndTheHottestIds) {
  troupe::actor_system system(two_workers());
  auto& sharding = cluster_sharding::get(system);
  auto carts = sharding.start<cart>();
  // The region samples 1 message in 16 for its hot-key table: send enough to be seen.
  for (int i = 0; i < 320; ++i) carts.tell(add{i % 10 == 9 ? "cold" : "hot", std::to_string(i)});
  (void)view_of(carts, "hot");
  (void)view_of(carts, "cold");
  const auto state = sharding.state("cart");
  EXPECT_EQ(state.num_shards, 64U);
  std::size_t entities = 0;
  std::uint64_t messages = 0;
  for (const auto& s : state.shards) {
    entities += s.entity_count;
    messages += s.messages_processed;
    EXPECT_TRUE(s.resident);
  }
  EXPECT_EQ(entities, 2U);
  EXPECT_EQ(messages, 322U);
  ASSERT_FALSE(state.hottest.empty());
  EXPECT_EQ(state.hottest.front().first, "hot");
}

TEST(ClusterSharding, StartingATypeTwiceOrAskingForAnUnknownTypeIsAClearError) {
  troupe::actor_system system(two_workers());
  auto& sharding = cluster_sharding::get(system);
  (void)sharding.start<cart>();
  EXPECT_THROW((void)sharding.start<cart>(), troupe::error);
  EXPECT_THROW((void)sharding.entity_ref_for<cart_command>("nope", "x"), troupe::error);
  EXPECT_THROW((void)sharding.entity_ref_for<int>("cart", "x"), troupe::error);
}

TEST(EntityIdentity, IsReadableOnAnEntitySpawnedWithoutSharding) {
  troupe::actor_system system(two_workers());
  auto e = system.spawn<cart>(troupe::spawn_options("cart-under-test")
                                  .with_entity(troupe::entity_identity{"user-42", "cart", 3}));
  EXPECT_EQ(e.ask<std::string>(view{"x"}, 3s, troupe::use_future).get(), "user-42@3:");
}

/// Reports whether it is an entity, and what entity_id() says when it is not.
class plain final : public troupe::actor<int> {
 public:
  explicit plain(actor_ref<std::string> out) : out_(std::move(out)) {}

 private:
  void pre_start() override {
    out_.tell(context().entity() ? "entity" : "no entity");
    try {
      (void)entity_id();
    } catch (const troupe::error& e) {
      out_.tell(e.value() == errc::not_an_entity ? "throws not_an_entity" : "other");
    }
  }
  void receive(int& /*unused*/) override {}
  actor_ref<std::string> out_;
};

TEST(EntityIdentity, IsEmptyForOrdinaryActorsAndTheGettersThrow) {
  troupe::actor_system system(two_workers());
  test_probe<std::string> out(system, "out");
  (void)system.spawn<plain>("plain", out.ref());
  EXPECT_EQ(out.expect_message(), "no entity");
  EXPECT_EQ(out.expect_message(), "throws not_an_entity");
}

TEST(ShardPassivation, AShardEmptyForItsWindowStopsAndComesBackWithTheNextMessage) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> events(ds.system(), "events");
  auto& sharding = cluster_sharding::get(ds.system());
  auto carts = sharding.start<cart>("cart",
                                    sharding_options<cart_command>::create()
                                        .with_extract_entity_id(cart_of)
                                        .with_passivation_idle(10s)
                                        .with_shard_passivation_idle(20s),
                                    events.ref());
  carts.tell(add{"s", "1"});
  EXPECT_EQ(events.expect_message().substr(0, 7), "start s");
  ds.advance(15s);
  EXPECT_EQ(events.expect_message(), "stop s: 1");  // the entity passivates first
  auto resident = [&] {
    for (const auto& info : sharding.shards("cart")) {
      if (info.id == troupe::sharding::shard_of("s", 64)) return info.resident;
    }
    return false;
  };
  ds.run();
  EXPECT_TRUE(resident());  // empty, but within its window
  ds.advance(25s);
  EXPECT_FALSE(resident());  // stopped; the region still owns the shard id
  carts.tell(add{"s", "2"});
  EXPECT_EQ(events.expect_message().substr(0, 7), "start s");
  EXPECT_TRUE(resident());
}

TEST(ShardPassivation, ZeroKeepsEmptyShardsResident) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> events(ds.system(), "events");
  auto& sharding = cluster_sharding::get(ds.system());
  auto carts = sharding.start<cart>("cart",
                                    sharding_options<cart_command>::create()
                                        .with_extract_entity_id(cart_of)
                                        .with_passivation_idle(10s)
                                        .with_shard_passivation_idle(0s),
                                    events.ref());
  carts.tell(add{"s", "1"});
  (void)events.expect_message();
  ds.advance(15s);
  EXPECT_EQ(events.expect_message(), "stop s: 1");
  ds.advance(1h);
  const auto shards = sharding.shards("cart");
  ASSERT_EQ(shards.size(), 1U);
  EXPECT_TRUE(shards.front().resident);
}

TEST(ShardPassivation, MessagesArrivingWhileTheShardStopsAreReplayedInOrder) {
  troupe::actor_system system(two_workers());
  auto& sharding = cluster_sharding::get(system);
  // Tiny windows on the real clock: shards stop and come back all the time.
  auto carts = sharding.start<cart>(sharding_options<cart_command>::create()
                                        .with_extract_entity_id(cart_of)
                                        .with_passivation_idle(2ms)
                                        .with_shard_passivation_idle(1ms));
  std::string expected;
  std::string got;      // the items of every incarnation that ended, in order
  std::string current;  // the items of the incarnation the last view saw
  for (int round = 0; round < 30; ++round) {
    const std::string item = " " + std::to_string(round);
    carts.tell(add{"r", std::to_string(round)});
    // A view follows its add: it sees the current incarnation's items, which end with this
    // round's. Either the incarnation the last view saw goes on, or a new one began, and then
    // with this very item (nothing lost while the entity or its shard stopped).
    const std::string v = view_of(carts, "r");
    const std::string items = v.substr(v.find(':') + 1);
    if (items != current + item) {
      EXPECT_EQ(items, item) << "round " << round;
      got += current;
    }
    current = items;
    expected += item;
  }
  got += current;
  EXPECT_EQ(got, expected);  // every item once, in order, across the incarnations
  EXPECT_EQ(sharding.state("cart").buffered, 0U);
}

}  // namespace
