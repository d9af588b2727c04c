// ctest-labels: concurrency
// Remember entities on one node (no cluster): the ids a type started are written to its
// plugin's store, a restarted process starts them again without a message, user passivation
// forgets an id, and a type that asks for it without a store is refused with a clear error.
#include <troupe/core/actor_system.hpp>
#include <troupe/persistence/memory_plugin.hpp>
#include <troupe/persistence/remembered_in_store.hpp>
#include <troupe/persistence/sqlite_plugin.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/testkit/deterministic.hpp>

#include "persistence/entity_support.hpp"

#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <variant>

namespace {

using namespace std::chrono_literals;
using entity_test::temp_dir;
using troupe::sharding::cluster_sharding;
using troupe::sharding::sharding_options;
using troupe::testkit::await_condition;

struct ping {
  std::string id;
};
struct sleep {  // the device asks to be passivated
  std::string id;
};
using device_command = std::variant<ping, sleep>;

/// Which devices started, by the system generation they started in.
struct starts {
  std::mutex mutex;
  std::set<std::pair<int, std::string>> seen;
  void record(int generation, const std::string& id) {
    std::lock_guard lock(mutex);
    seen.insert({generation, id});
  }
  std::set<std::string> of(int generation) {
    std::lock_guard lock(mutex);
    std::set<std::string> ids;
    for (const auto& [g, id] : seen) {
      if (g == generation) ids.insert(id);
    }
    return ids;
  }
};

class device final : public troupe::actor<device_command> {
 public:
  device(int generation, starts* log) : generation_(generation), log_(log) {}

 private:
  void pre_start() override { log_->record(generation_, entity_id()); }
  void receive(device_command& c) override {
    if (std::holds_alternative<sleep>(c)) {
      troupe::sharding::request_passivation<device_command>(context());
    }
  }
  int generation_;
  starts* log_;
};

auto device_type(int generation, starts* log) {
  return sharding_options<device_command>::create()
      .with_type_name("device")
      .with_entity<device>(generation, log)
      .with_extract_entity_id(
          [](const device_command& c) { return std::visit([](const auto& m) { return m.id; }, c); })
      .with_num_shards(16)
      .with_remember_entities();
}

std::set<std::string> remembered(troupe::persistence::plugin& store) {
  auto& r = store.remember_entities();
  std::set<std::string> ids;
  for (auto shard : r.async_list_shards("device", boost::asio::use_future).get()) {
    for (auto& id : r.async_list({"device", shard}, boost::asio::use_future).get()) {
      ids.insert(std::move(id));
    }
  }
  return ids;
}

TEST(RememberEntities, ARestartedNodeStartsWhatItRememberedAndForgetsWhatWasPassivated) {
  temp_dir dir;
  starts log;
  const std::set<std::string> devices{"d-1", "d-2", "d-3", "d-4", "d-5"};
  {
    troupe::actor_system system;
    std::shared_ptr<troupe::persistence::plugin> store =
        troupe::persistence::open_sqlite_plugin({.file = dir.file()});
    troupe::persistence::get(system).set_default_plugin(store);
    troupe::persistence::remember_entities_in_plugins(system);
    auto region = cluster_sharding::get(system).start(device_type(1, &log));
    for (const auto& id : devices) region.tell(ping{id});
    await_condition([&] { return remembered(*store) == devices; }, 10s, "every device remembered");
    region.tell(sleep{"d-3"});  // passivated by the user: forgotten
    await_condition([&] { return !remembered(*store).contains("d-3"); }, 10s, "d-3 forgotten");
  }  // the node stops: stopping its shards forgets nothing

  troupe::actor_system system;
  std::shared_ptr<troupe::persistence::plugin> store =
      troupe::persistence::open_sqlite_plugin({.file = dir.file()});
  troupe::persistence::get(system).set_default_plugin(store);
  troupe::persistence::remember_entities_in_plugins(system);
  (void)cluster_sharding::get(system).start(device_type(2, &log));
  auto expected = devices;
  expected.erase("d-3");
  // No message: the region lists the remembered shards and each starts its devices.
  await_condition([&] { return log.of(2) == expected; }, 10s, "the remembered devices started");
  EXPECT_EQ(remembered(*store), expected);
}

TEST(RememberEntities, StartsEveryRememberedEntityAtABoundedRate) {
  troupe::actor_system system(troupe::system_config{}.with_config(
      troupe::config::parse_string("troupe.sharding.remember-entities-start-rate = 50")));
  auto storage = troupe::persistence::make_memory_storage();
  auto store = troupe::persistence::make_memory_plugin(storage);
  std::set<std::string> devices;
  for (int i = 0; i < 40; ++i) {
    const std::string id = "d-" + std::to_string(i);
    const auto shard = troupe::sharding::shard_of(id, 16);
    store->remember_entities()
        .async_update({"device", shard, {id}, {}, 0, std::nullopt}, boost::asio::use_future)
        .get();
    devices.insert(id);
  }
  troupe::persistence::get(system).set_default_plugin(
      troupe::persistence::make_memory_plugin(storage));
  troupe::persistence::remember_entities_in_plugins(system);
  starts log;
  (void)cluster_sharding::get(system).start(device_type(1, &log));
  // 40 at 50 per second, 5 at once: they all start, over most of a second (the budget itself is
  // unit-tested in tests/sharding/start_budget_test.cpp).
  await_condition([&] { return log.of(1) == devices; }, 10s, "every remembered device started");
}

TEST(RememberEntities, IsRefusedWithoutAStoreForTheIds) {
  troupe::actor_system system;
  starts log;
  try {
    (void)cluster_sharding::get(system).start(device_type(1, &log));
    FAIL() << "a type that remembers its entities started with nowhere to keep them";
  } catch (const troupe::error& e) {
    EXPECT_EQ(e.code(), troupe::errc::invalid_config);
    EXPECT_NE(std::string(e.what()).find("remember_entities_in_plugins"), std::string::npos)
        << e.what();
  }
}

}  // namespace
