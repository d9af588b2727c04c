// ctest-labels: concurrency
// A region whose ref takes another type than its entities (sharding_options<M, In>): entities
// get the inner M, each sender's messages keep their order, a bad envelope becomes a dead
// letter with its reason, and entity refs stay typed on M.
#include <troupe/core/actor_system.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::actor_ref;
using troupe::errc;
using troupe::sharding::cluster_sharding;
using troupe::sharding::sharding_envelope;
using troupe::sharding::sharding_options;
using troupe::testkit::dilated;
using troupe::testkit::test_probe;

// The entity's commands carry no id: the envelope does.
struct add {
  int value = 0;
};
struct read {};
using counter_command = std::variant<add, read>;

/// Records what it was told; replies to read with "<id>:" and the values.
class counter final : public troupe::actor<counter_command> {
 private:
  void receive(counter_command& c) override {
    std::visit(troupe::overloaded{
                   [this](add& a) { values_.push_back(a.value); },
                   [this](read&) { context().reply(values_); },
               },
               c);
  }
  std::vector<int> values_;
};

using envelope = sharding_envelope<counter_command>;

actor_ref<envelope> start_counters(troupe::actor_system& system) {
  return cluster_sharding::get(system).start(sharding_options<counter_command, envelope>::create()
                                                 .with_type_name("counter")
                                                 .with_entity<counter>());
}

std::vector<int> read_of(actor_ref<envelope> region, const std::string& id) {
  return region.ask<std::vector<int>>(envelope{id, read{}}, dilated(3s), troupe::use_future).get();
}

TEST(ShardingEnvelope, EntitiesGetTheInnerMessage) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  auto counters = start_counters(system);
  counters.tell(envelope{"a", add{1}});
  counters.tell(envelope{"b", add{10}});
  counters.tell(envelope{"a", add{2}});
  EXPECT_EQ(read_of(counters, "a"), (std::vector<int>{1, 2}));
  EXPECT_EQ(read_of(counters, "b"), (std::vector<int>{10}));
  // Entity refs and the region ref by type stay typed on what they take.
  auto& sharding = cluster_sharding::get(system);
  actor_ref<counter_command> a = sharding.entity_ref_for<counter_command>("counter", "a");
  a.tell(add{3});
  EXPECT_EQ(a.ask<std::vector<int>>(read{}, dilated(3s), troupe::use_future).get(),
            (std::vector<int>{1, 2, 3}));
  actor_ref<envelope> again = sharding.region_for<envelope>("counter");
  EXPECT_EQ(read_of(again, "b"), (std::vector<int>{10}));
}

TEST(ShardingEnvelope, EachSendersOrderHoldsAcrossEntities) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  auto counters = start_counters(system);
  constexpr int senders = 3;
  constexpr int per_sender = 2'000;
  std::vector<std::thread> threads;
  for (int s = 0; s < senders; ++s) {
    threads.emplace_back([&, s] {
      // Each sender spreads over four ids, two of them shared with the other senders.
      for (int i = 0; i < per_sender; ++i) {
        const std::string id = (i % 2 == 0)
                                   ? "shared-" + std::to_string(i % 4)
                                   : "own-" + std::to_string(s) + "-" + std::to_string(i % 4);
        counters.tell(envelope{id, add{s * 1'000'000 + i}});
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<std::vector<int>> seen(senders);
  std::size_t total = 0;
  std::vector<std::string> ids = {"shared-0", "shared-2"};
  for (int s = 0; s < senders; ++s) {
    ids.push_back("own-" + std::to_string(s) + "-1");
    ids.push_back("own-" + std::to_string(s) + "-3");
  }
  for (const auto& id : ids) {
    std::vector<int> last(senders, -1);
    for (int v : read_of(counters, id)) {
      const int s = v / 1'000'000;
      const int i = v % 1'000'000;
      EXPECT_GT(i, last[s]) << id << ": sender " << s << " out of order";
      last[s] = i;
      ++total;
    }
  }
  EXPECT_EQ(total, static_cast<std::size_t>(senders * per_sender));  // nothing lost
}

TEST(ShardingEnvelope, AnEnvelopeWithAnEmptyIdIsADeadLetterWithItsReason) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  test_probe<troupe::dead_letter> dead(system, "dead");
  system.dead_letters().subscribe(dead.ref());
  auto counters = start_counters(system);
  auto f = counters.ask<std::vector<int>>(envelope{"", read{}}, 1h, troupe::use_future);
  ASSERT_EQ(f.wait_for(dilated(3s)), std::future_status::ready);  // at once, not at the timeout
  try {
    (void)f.get();
    FAIL() << "expected an error";
  } catch (const troupe::error& e) {
    EXPECT_EQ(e.value(), errc::invalid_entity_id);
  }
  const auto d = dead.expect_message();
  EXPECT_NE(d.reason.find("empty entity id"), std::string::npos) << d.reason;
  EXPECT_EQ(d.code, make_error_code(errc::invalid_entity_id));
  EXPECT_NE(d.message_as<envelope>(), nullptr) << d.message_type;  // the envelope, intact
  // The region keeps serving everybody else.
  counters.tell(envelope{"ok", add{7}});
  EXPECT_EQ(read_of(counters, "ok"), (std::vector<int>{7}));
}

/// A wire format of its own: the user's id and an amount, turned into the entity's command.
struct deposit {
  std::string user;
  int cents = 0;
};

TEST(ShardingEnvelope, AnyInputTypeWithBothExtractorsChangesTheType) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  test_probe<troupe::dead_letter> dead(system, "dead");
  system.dead_letters().subscribe(dead.ref());
  auto& sharding = cluster_sharding::get(system);
  actor_ref<deposit> deposits =
      sharding.start(sharding_options<counter_command, deposit>::create()
                         .with_type_name("deposits")
                         .with_entity<counter>()
                         .with_extract_entity_id([](const deposit& d) { return d.user; })
                         .with_extract_entity_message([](deposit d) -> counter_command {
                           if (d.cents < 0) throw std::invalid_argument("negative deposit");
                           return add{d.cents};
                         }));
  deposits.tell(deposit{"u1", 5});
  deposits.tell(deposit{"u1", -1});
  deposits.tell(deposit{"u1", 6});
  // The deposits pass the region actor; the entity ref goes straight to the shard: another
  // sender's path, so its read may overtake them. Wait for both.
  auto u1 = sharding.entity_ref_for<counter_command>("deposits", "u1");
  std::vector<int> seen;
  troupe::testkit::await_condition([&] {
    seen = u1.ask<std::vector<int>>(read{}, dilated(3s), troupe::use_future).get();
    return seen.size() >= 2;
  });
  EXPECT_EQ(seen, (std::vector<int>{5, 6}));
  const auto d = dead.expect_message();
  EXPECT_NE(d.reason.find("the entity-message extractor threw: negative deposit"),
            std::string::npos)
      << d.reason;
}

TEST(ShardingEnvelope, ATypeTakingAnotherTypeNeedsAMessageExtractor) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  try {
    (void)cluster_sharding::get(system).start(
        sharding_options<counter_command, deposit>::create()
            .with_type_name("deposits")
            .with_entity<counter>()
            .with_extract_entity_id([](const deposit& d) { return d.user; }));
    FAIL() << "expected an error";
  } catch (const troupe::error& e) {
    EXPECT_EQ(e.value(), errc::invalid_config);
  }
}

}  // namespace
