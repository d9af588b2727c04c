// Messages that arrive while an entity, or a whole shard, is on its way out wait for the next
// incarnation and reach it in order, in every routing mode: straight along a shard's route (a
// region ref, or a ref to one entity), through the region with max-entities set, and through
// the region for a custom shard id beyond the shard count. Deterministic: manual scheduling and
// a manual clock. An entity is held in its stopping state by passivating with a custom stop
// message that it answers only when the test releases it; a shard is caught stopping by a relay
// actor that sends at each step of the shard's stop, in the scheduler's FIFO order.
#include <troupe/core/actor_system.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/testkit/deterministic.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::sharding::cluster_sharding;
using troupe::sharding::sharding_options;
using troupe::testkit::test_probe;

enum class kind { add, hold, stop, release, leave, view };

struct step {
  std::string id;
  kind what = kind::add;
  int n = 0;
};

/// Keeps the numbers it is told. `hold` passivates it with a custom stop message, on which it
/// hands the test its own ref and waits for `release`; `leave` passivates it with a poison pill.
class keeper final : public troupe::actor<step> {
 public:
  keeper(troupe::actor_ref<std::string> events, std::shared_ptr<troupe::untyped_ref> held)
      : events_(std::move(events)), held_(std::move(held)) {}

 private:
  void receive(step& s) override {
    switch (s.what) {
      case kind::add:
        items_ += " " + std::to_string(s.n);
        break;
      case kind::hold:
        troupe::sharding::request_passivation<step>(context(), step{s.id, kind::stop, 0});
        break;
      case kind::stop:
        *held_ = context().self_ref();  // stopping, until the test releases it
        break;
      case kind::release:
        context().stop(context().self_ref());
        break;
      case kind::leave:
        troupe::sharding::request_passivation<step>(context());
        break;
      case kind::view:
        context().reply(items_);
        break;
    }
  }
  void post_stop() override { events_.tell("stop " + entity_id() + ":" + items_); }

  troupe::actor_ref<std::string> events_;
  std::shared_ptr<troupe::untyped_ref> held_;
  std::string items_;
};

enum class mode { region_ref, entity_ref, max_entities, custom_shard };

std::string name_of(mode m) {
  switch (m) {
    case mode::region_ref:
      return "RegionRef";
    case mode::entity_ref:
      return "EntityRef";
    case mode::max_entities:
      return "MaxEntities";
    case mode::custom_shard:
      return "CustomShardId";
  }
  return "?";
}

/// One sharded type in one routing mode, on a deterministic system.
struct fixture {
  explicit fixture(mode how) : m(how), events(ds.system(), "events") {
    auto options = sharding_options<step>::create()
                       .with_type_name("keeper")
                       .with_entity<keeper>(events.ref(), held)
                       .with_extract_entity_id([](const step& s) { return s.id; })
                       .with_num_shards(4)
                       .with_passivation_idle(0s)
                       .with_shard_passivation_idle(10s);
    if (how == mode::max_entities) options.with_max_entities(100);
    if (how == mode::custom_shard) {
      options.with_extract_shard_id(
          [](const std::string&) -> troupe::sharding::shard_id { return 1'000; });
    }
    region = cluster_sharding::get(ds.system()).start(std::move(options));
  }

  fixture(const fixture&) = delete;
  fixture& operator=(const fixture&) = delete;
  // The held ref points into the system, which the entities' constructor arguments (and with
  // them `held`) live in: let go of it, or the system would keep itself alive.
  ~fixture() { *held = {}; }

  /// The ref this mode sends through for entity `id`.
  troupe::actor_ref<step> to(const std::string& id) {
    return m == mode::entity_ref
               ? cluster_sharding::get(ds.system()).entity_ref_for<step>("keeper", id)
               : region;
  }

  std::string view(const std::string& id) {
    auto f = to(id).ask<std::string>(step{id, kind::view, 0}, 1h, troupe::use_future);
    ds.run();
    return f.wait_for(0s) == std::future_status::ready ? f.get() : "no reply";
  }

  /// The one shard's deliveries: over all its incarnations, and the current one's.
  std::pair<std::uint64_t, std::uint64_t> deliveries() {
    const auto shards = cluster_sharding::get(ds.system()).shards("keeper");
    if (shards.size() != 1) return {0, 0};
    return {shards.front().messages_processed, shards.front().stats.messages_processed};
  }

  mode m;
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> events;
  std::shared_ptr<troupe::untyped_ref> held = std::make_shared<troupe::untyped_ref>();
  troupe::actor_ref<step> region;
};

class WhileAnEntityStops : public ::testing::TestWithParam<mode> {};

TEST_P(WhileAnEntityStops, MessagesWaitForTheNextIncarnationAndArriveInOrder) {
  fixture f(GetParam());
  f.to("a").tell(step{"a", kind::add, 0});
  f.to("a").tell(step{"a", kind::add, 1});
  f.to("a").tell(step{"a", kind::hold, 0});
  f.ds.run();
  ASSERT_TRUE(*f.held) << "the entity did not get its stop message";
  // The shard counts the entity as stopping: these wait in its buffer.
  for (int i = 2; i < 7; ++i) f.to("a").tell(step{"a", kind::add, i});
  f.ds.run();
  f.events.expect_no_message(1ms);  // still held: nothing stopped yet
  f.held->tell_any(step{"a", kind::release, 0});
  f.ds.run();
  EXPECT_EQ(f.events.expect_message(), "stop a: 0 1");  // the old incarnation got only its own
  EXPECT_EQ(f.view("a"), " 2 3 4 5 6");                 // the next one got the rest, in order
}

INSTANTIATE_TEST_SUITE_P(EachRoutingMode, WhileAnEntityStops,
                         ::testing::Values(mode::region_ref, mode::entity_ref, mode::max_entities,
                                           mode::custom_shard),
                         [](const auto& p) { return name_of(p.param); });

/// Answers each number to its sender: the relay's next hop waits for this actor's turn.
class echo final : public troupe::actor<int> {
  void receive(int& hop) override { context().reply(hop); }
};

/// Sends two numbered adds for "a" at each of its hops from `first` to `last`. Between hops it
/// bounces the next hop number off an echo, so each hop is a turn of its own that runs after
/// whatever the previous one set off: the sends fall into every step of a shard's stop and
/// restart.
class relay final : public troupe::actor<int> {
 public:
  relay(troupe::actor_ref<step> to, int first, int last, int* next)
      : to_(std::move(to)), first_(first), last_(last), next_(next) {}

 private:
  void pre_start() override { echo_ = context().spawn<echo>("echo"); }
  void receive(int& hop) override {
    if (hop >= first_) {
      for (int i = 0; i < 2; ++i) to_.tell(step{"a", kind::add, (*next_)++});
    }
    if (hop < last_) echo_.tell(hop + 1, self());
  }
  troupe::actor_ref<step> to_;
  int first_;
  int last_;
  int* next_;
  troupe::actor_ref<int> echo_;
};

class WhileAShardStops : public ::testing::TestWithParam<mode> {};

/// What one run of the shard-stop scenario saw.
struct shard_stop_run {
  bool restarted = false;  // the shard actor stopped and a new one took the messages
  std::string items;       // what the entity's new incarnation got
  std::string expected;    // what the relay sent, in order
};

/// Empties the one shard, lets its idle check fall due (it asks the region to stop it), and has
/// the relay send from its turn `first` on.
shard_stop_run stop_the_shard_and_send(mode how, int first) {
  fixture f(how);
  f.to("a").tell(step{"a", kind::add, 0});
  f.to("a").tell(step{"a", kind::leave, 0});
  f.ds.run();
  EXPECT_EQ(f.events.expect_message(), "stop a: 0");  // the shard stands empty now
  const auto before = f.deliveries();
  f.ds.clock().advance(10s);  // its idle check falls due; nothing runs yet
  int next = 1;
  auto r = f.ds.system().spawn<relay>("relay", f.to("a"), first, first + 5, &next);
  r.tell(0);
  f.ds.run();
  shard_stop_run out;
  for (int i = 1; i < next; ++i) out.expected += " " + std::to_string(i);
  out.items = f.view("a");
  // The shard actor that counts these is not the one that counted `before`.
  const auto after = f.deliveries();
  out.restarted = after.second + before.first <= after.first;
  return out;
}

TEST_P(WhileAShardStops, MessagesWaitForTheNextShardActorAndArriveInOrder) {
  // Sent before the region has agreed to stop the shard, a message keeps the shard alive (the
  // region sees a delivery still on its way). The first turn whose sends let the shard stop is
  // the earliest one after that agreement: its messages arrive while the shard stops.
  for (int first = 0; first < 6; ++first) {
    const auto run = stop_the_shard_and_send(GetParam(), first);
    if (!run.restarted) continue;
    EXPECT_EQ(run.items, run.expected) << "relay sending from its turn " << first;
    return;
  }
  FAIL() << "the shard never stopped";
}

INSTANTIATE_TEST_SUITE_P(EachRoutingMode, WhileAShardStops,
                         ::testing::Values(mode::region_ref, mode::entity_ref, mode::max_entities,
                                           mode::custom_shard),
                         [](const auto& p) { return name_of(p.param); });

}  // namespace
