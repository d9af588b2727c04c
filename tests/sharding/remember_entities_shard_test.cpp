// ctest-labels: concurrency
// Remember entities inside a shard, against a store the test holds: an entity starts only once
// its id is written (its messages wait meanwhile, in order), and a remembered entity that stops
// without being passivated starts again after `entity-restart-backoff`, while a passivated one
// does not.
#include <troupe/core/actor_system.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/sharding/remembered_entities.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::sharding::cluster_sharding;
using troupe::sharding::remembered_entities;
using troupe::sharding::shard_epoch;
using troupe::sharding::shard_id;
using troupe::sharding::sharding_options;
using troupe::testkit::await_condition;

/// Remembered ids in memory; with `hold` set, each write waits until the test releases it.
class held_memory final : public remembered_entities {
 public:
  void list_shards(shards_handler done) override {
    std::vector<shard_id> shards;
    {
      std::lock_guard lock(mutex_);
      for (const auto& [shard, ids] : ids_) shards.push_back(shard);
    }
    done({}, std::move(shards));
  }
  void list(shard_id shard, ids_handler done) override {
    std::vector<std::string> ids;
    {
      std::lock_guard lock(mutex_);
      if (auto it = ids_.find(shard); it != ids_.end()) ids = it->second;
    }
    done({}, std::move(ids));
  }
  void update(shard_id shard, shard_epoch, std::vector<std::string> added,
              std::vector<std::string> removed, done_handler done) override {
    std::unique_lock lock(mutex_);
    ++writes_;
    if (hold) {
      held_.push_back([this, shard, added = std::move(added), removed = std::move(removed),
                       done = std::move(done)]() mutable {
        apply(shard, added, removed);
        done({}, false);
      });
      return;
    }
    apply(shard, added, removed);
    lock.unlock();
    done({}, false);
  }

  /// Lands every held write, in order, on the test's thread.
  void release() {
    std::vector<std::function<void()>> writes;
    {
      std::lock_guard lock(mutex_);
      hold = false;
      writes.swap(held_);
    }
    for (auto& w : writes) w();
  }
  std::size_t writes() {
    std::lock_guard lock(mutex_);
    return writes_;
  }
  std::size_t held() {
    std::lock_guard lock(mutex_);
    return held_.size();
  }

  bool hold = false;  // set before the first write

 private:
  void apply(shard_id shard, const std::vector<std::string>& added,
             const std::vector<std::string>& removed) {
    std::lock_guard lock(ids_mutex_);
    auto& ids = ids_[shard];
    for (const auto& id : added) {
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    for (const auto& id : removed) std::erase(ids, id);
  }

  std::mutex mutex_;
  std::mutex ids_mutex_;
  std::map<shard_id, std::vector<std::string>> ids_;
  std::vector<std::function<void()>> held_;
  std::size_t writes_ = 0;
};

struct add {
  std::string id;
  int n = 0;
};
struct crash {  // the handler throws: the entity stops (the shard's default supervision)
  std::string id;
};
struct sleep {  // the entity asks to be passivated
  std::string id;
};
using command = std::variant<add, crash, sleep>;

/// What the entities did: each start, and each add in the order handled.
struct journal {
  std::mutex mutex;
  std::map<std::string, int> starts;
  std::map<std::string, std::vector<int>> adds;
  int starts_of(const std::string& id) {
    std::lock_guard lock(mutex);
    return starts[id];
  }
  std::vector<int> adds_of(const std::string& id) {
    std::lock_guard lock(mutex);
    return adds[id];
  }
};

class counter final : public troupe::actor<command> {
 public:
  explicit counter(journal* j) : journal_(j) {}

 private:
  void pre_start() override {
    std::lock_guard lock(journal_->mutex);
    ++journal_->starts[entity_id()];
  }
  void receive(command& c) override {
    if (const auto* a = std::get_if<add>(&c)) {
      std::lock_guard lock(journal_->mutex);
      journal_->adds[a->id].push_back(a->n);
    } else if (std::holds_alternative<crash>(c)) {
      throw std::runtime_error("planted failure");
    } else {
      troupe::sharding::request_passivation<command>(context());
    }
  }
  journal* journal_;
};

struct fixture {
  explicit fixture(const std::string& hocon = "")
      : system(troupe::system_config{}.with_config(troupe::config::parse_string(hocon))) {
    auto& sharding = cluster_sharding::get(system);
    sharding.set_remembered_entities_factory(
        [m = memory](const troupe::sharding::region_settings&) { return m; });
    region = sharding.start(sharding_options<command>::create()
                                .with_type_name("counter")
                                .with_entity<counter>(&log)
                                .with_extract_entity_id([](const command& c) {
                                  return std::visit([](const auto& m) { return m.id; }, c);
                                })
                                .with_num_shards(4)
                                .with_remember_entities());
  }

  std::shared_ptr<held_memory> memory = std::make_shared<held_memory>();
  journal log;
  troupe::actor_system system;
  troupe::actor_ref<command> region;
};

TEST(RememberEntitiesShard, AnEntityStartsOnlyOnceItsIdIsWrittenAndGetsWhatWaitedInOrder) {
  fixture f;
  f.memory->hold = true;
  for (int i = 0; i < 5; ++i) f.region.tell(add{"c-1", i});
  await_condition([&] { return f.memory->held() == 1; }, 10s, "c-1's id is being written");
  // A crash now would leave c-1 forgotten: so it has not run, let alone handled an add.
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(f.log.starts_of("c-1"), 0);
  EXPECT_TRUE(f.log.adds_of("c-1").empty());
  f.region.tell(add{"c-1", 5});  // waits behind the others
  f.memory->release();
  await_condition([&] { return f.log.adds_of("c-1").size() == 6; }, 10s, "every add handled");
  EXPECT_EQ(f.log.adds_of("c-1"), (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(f.log.starts_of("c-1"), 1);
  // Running, it is not written again for its next messages.
  const std::size_t writes = f.memory->writes();
  f.region.tell(add{"c-1", 6});
  await_condition([&] { return f.log.adds_of("c-1").size() == 7; }, 10s, "add 6 handled");
  EXPECT_EQ(f.memory->writes(), writes);
}

TEST(RememberEntitiesShard, AnEntityThatFailsStartsAgainAfterTheBackoffAndAPassivatedOneDoesNot) {
  fixture f("troupe.sharding.entity-restart-backoff = 100ms");
  f.region.tell(add{"c-1", 1});
  f.region.tell(add{"c-2", 1});
  await_condition(
      [&] { return f.log.adds_of("c-1").size() == 1 && f.log.adds_of("c-2").size() == 1; }, 10s,
      "both started");
  f.region.tell(crash{"c-1"});
  // No message for it: its shard starts it again by itself.
  await_condition([&] { return f.log.starts_of("c-1") == 2; }, 10s, "c-1 started again");
  f.region.tell(sleep{"c-2"});
  std::this_thread::sleep_for(400ms);  // four backoffs
  EXPECT_EQ(f.log.starts_of("c-2"), 1) << "a passivated entity was started again";
  EXPECT_EQ(f.log.starts_of("c-1"), 2);
}

TEST(RememberEntitiesShard, RefusesANegativeRestartBackoff) {
  EXPECT_THROW(fixture("troupe.sharding.entity-restart-backoff = -1s"), troupe::config_error);
}

}  // namespace
