// ctest-labels: concurrency
// Back-pressure through a region (with_shard_capacity): try_tell and tell are refused when a
// shard has its capacity of messages in flight, and `co_await send` waits for room; under a
// slow entity and a fast coroutine producer the count in flight never exceeds the bound,
// nothing is lost and each sender's order holds.
#include <troupe/core/actor_system.hpp>
#include <troupe/core/async_actor.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/testkit/deterministic.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <variant>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::actor_ref;
using troupe::errc;
using troupe::sharding::cluster_sharding;
using troupe::sharding::sharding_options;
using troupe::testkit::dilated;
using troupe::testkit::test_probe;

struct work {
  std::string id;
  int n = 0;
};
struct read {
  std::string id;
};
using command = std::variant<work, read>;

std::string id_of(const command& c) {
  return std::visit([](const auto& m) { return m.id; }, c);
}

/// Takes its time over each work item (spins ~20 µs) and records it.
class slow final : public troupe::actor<command> {
 public:
  static inline const auto shard = troupe::sharding::shard_key<command>::of("slow", id_of);

 private:
  void receive(command& c) override {
    if (auto* w = std::get_if<work>(&c)) {
      const auto until = std::chrono::steady_clock::now() + 20us;
      while (std::chrono::steady_clock::now() < until) {
      }
      seen_.push_back(w->n);
    } else {
      context().reply(seen_);
    }
  }
  std::vector<int> seen_;
};

TEST(BackPressure, TryTellReportsAShardWithItsCapacityInFlight) {
  troupe::testkit::deterministic_system ds;
  test_probe<troupe::dead_letter> dead(ds.system(), "dead");
  ds.system().dead_letters().subscribe(dead.ref());
  auto region = cluster_sharding::get(ds.system())
                    .start<slow>(sharding_options<command>::create().with_shard_capacity(2));
  // Nothing runs: the first two wait for their shard to start, the third finds no room.
  EXPECT_FALSE(region.try_tell(work{"a", 1}));
  EXPECT_FALSE(region.try_tell(work{"a", 2}));
  EXPECT_EQ(region.try_tell(work{"a", 3}), make_error_code(errc::mailbox_full));
  auto entity = cluster_sharding::get(ds.system()).entity_ref_for<slow>("a");
  EXPECT_EQ(entity.try_tell(work{"a", 4}), make_error_code(errc::mailbox_full));
  const auto d = dead.expect_message();
  EXPECT_EQ(d.code, make_error_code(errc::mailbox_full));
  EXPECT_NE(d.reason.find("shard-capacity"), std::string::npos) << d.reason;
  (void)dead.expect_message();  // (runs the actors: the entity handles 1 and 2)
  EXPECT_EQ(cluster_sharding::get(ds.system()).state("slow").outstanding, 0U);  // slots back
  EXPECT_FALSE(entity.try_tell(work{"a", 5}));
  auto seen = region.ask<std::vector<int>>(read{"a"}, 1h, troupe::use_future);
  ds.run();
  EXPECT_EQ(seen.get(), (std::vector<int>{1, 2, 5}));
}

struct produce {
  actor_ref<command> to;
  std::string id;
  int count = 0;
};

/// Sends `count` work items with `co_await send`, then says "done <id>".
class producer final : public troupe::async_actor<produce> {
 public:
  explicit producer(actor_ref<std::string> events) : events_(std::move(events)) {}

 private:
  boost::asio::awaitable<void> receive(produce p) override {
    for (int n = 0; n < p.count; ++n) {
      // A named message, not a temporary in the co_await expression: GCC 12 mishandles a
      // temporary with a std::string there (seen under ASan as a free inside the frame).
      command next = work{p.id, n};
      co_await p.to.send(std::move(next));
    }
    events_.tell("done " + p.id);
  }
  actor_ref<std::string> events_;
};

TEST(BackPressure, SendWaitsForRoomUnderASlowEntityAndLosesNothing) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  test_probe<std::string> events(system, "events");
  auto& sharding = cluster_sharding::get(system);
  constexpr std::size_t capacity = 8;
  constexpr int count = 2'000;
  // One shard: both producers' entities share its credit.
  auto region = sharding.start<slow>(
      sharding_options<command>::create().with_num_shards(1).with_shard_capacity(capacity));
  auto a = system.spawn<producer>("producer-a", events.ref());
  auto b = system.spawn<producer>("producer-b", events.ref());
  a.tell(produce{region, "x", count});                                    // by the region's ref
  b.tell(produce{sharding.entity_ref_for<slow>("y"), "ignored", count});  // by an entity ref
  std::vector<std::string> done = {events.expect_message(dilated(60s)),
                                   events.expect_message(dilated(60s))};
  std::sort(done.begin(), done.end());
  EXPECT_EQ(done, (std::vector<std::string>{"done ignored", "done x"}));
  // The last sends may still be in flight: an ask, like a tell, is refused while the shard's
  // credit is used up. Every slot comes back once the entities have handled everything.
  troupe::testkit::await_condition([&] { return sharding.state("slow").outstanding == 0; }, 60s);
  std::vector<int> expected(count);
  for (int n = 0; n < count; ++n) expected[n] = n;
  for (const char* id : {"x", "y"}) {
    EXPECT_EQ(region.ask<std::vector<int>>(read{id}, dilated(3s), troupe::use_future).get(),
              expected)
        << id;
  }
  const auto state = sharding.state("slow");
  EXPECT_LE(state.outstanding_peak, capacity);  // memory stayed bounded
  EXPECT_EQ(state.outstanding_peak, capacity);  // and the producers did outrun the entities
  // The reads' slots come back too (an envelope is freed just after its reply is sent).
  troupe::testkit::await_condition([&] { return sharding.state("slow").outstanding == 0; });
}

TEST(BackPressure, AShardCapacityWithMaxEntitiesIsRefused) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  EXPECT_THROW(
      (void)cluster_sharding::get(system).start<slow>(
          sharding_options<command>::create().with_shard_capacity(4).with_max_entities(10)),
      troupe::error);
}

}  // namespace
