// ctest-labels: concurrency
// Senders hand messages straight to running shard actors along the shards' routes, or through
// the region while a route is shut. Several threads send to the same ids while entities and
// shards keep stopping and starting again: every message arrives once, in the order its sender
// sent it, whichever way each one went.
#include <troupe/core/actor_system.hpp>
#include <troupe/sharding/cluster_sharding.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::sharding::cluster_sharding;
using troupe::sharding::sharding_options;

struct numbered {
  std::string id;
  int sender = 0;
  int seq = 0;
};

/// What every incarnation of every entity saw, kept outside the entities (they come and go).
struct ledger {
  std::mutex mutex;
  std::map<std::pair<std::string, int>, int> last;  // (id, sender) -> last seq seen
  int out_of_order = 0;
  int total = 0;

  void record(const numbered& n) {
    const std::lock_guard lock(mutex);
    int& last_seq = last.try_emplace({n.id, n.sender}, -1).first->second;
    if (n.seq != last_seq + 1) ++out_of_order;
    last_seq = n.seq;
    ++total;
  }
  int seen() {
    const std::lock_guard lock(mutex);
    return total;
  }
};

/// Asks to be passivated after every few messages, so incarnations turn over all the time.
class restless final : public troupe::actor<numbered> {
 public:
  explicit restless(ledger* l) : ledger_(l) {}

 private:
  void receive(numbered& n) override {
    ledger_->record(n);
    if (++handled_ % 5 == 0) troupe::sharding::request_passivation<numbered>(context());
  }

  ledger* ledger_;
  int handled_ = 0;
};

TEST(DirectRouting, SendersOnManyThreadsKeepTheirOrderAcrossIncarnations) {
  constexpr int senders = 4;
  constexpr int per_sender = 5'000;
  constexpr int ids = 40;
  ledger book;
  {
    troupe::actor_system system(troupe::system_config{}.with_workers(2));
    auto region = cluster_sharding::get(system).start(
        sharding_options<numbered>::create()
            .with_type_name("restless")
            .with_entity<restless>(&book)
            .with_extract_entity_id([](const numbered& n) { return n.id; })
            .with_num_shards(8));
    std::vector<std::thread> threads;
    for (int s = 0; s < senders; ++s) {
      threads.emplace_back([&region, s] {
        for (int i = 0; i < per_sender; ++i) {
          // Each sender numbers its messages per id.
          region.tell(numbered{"e" + std::to_string(i % ids), s, i / ids});
        }
      });
    }
    for (auto& t : threads) t.join();
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (book.seen() < senders * per_sender && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
  }
  EXPECT_EQ(book.seen(), senders * per_sender);
  EXPECT_EQ(book.out_of_order, 0);
}

/// Waits (with a deadline) until `book` has seen `count` messages.
void await_seen(ledger& book, int count) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (book.seen() < count && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
}

// Shards stand empty for 1 ms before they stop: between bursts their routes shut, messages wait
// in the region for the next shard actor, and the routes open again. Each sender alternates
// between the region ref (its envelope goes on as it is) and entity refs (a delivery carrying
// the id): one order per sender across both.
TEST(DirectRouting, OrderHoldsWhileShardsStopAndStartBetweenBursts) {
  constexpr int senders = 3;
  constexpr int bursts = 30;
  constexpr int per_burst = 200;
  constexpr int ids = 20;
  ledger book;
  {
    troupe::actor_system system(troupe::system_config{}.with_workers(2));
    auto& sharding = cluster_sharding::get(system);
    auto region = sharding.start(sharding_options<numbered>::create()
                                     .with_type_name("restless")
                                     .with_entity<restless>(&book)
                                     .with_extract_entity_id([](const numbered& n) { return n.id; })
                                     .with_num_shards(4)
                                     .with_passivation_idle(1ms)
                                     .with_shard_passivation_idle(1ms));
    std::vector<troupe::actor_ref<numbered>> entities;
    for (int i = 0; i < ids; ++i) {
      entities.push_back(sharding.entity_ref_for<numbered>("restless", "e" + std::to_string(i)));
    }
    // Waits (with a deadline) until every shard has stopped; false if one never does.
    auto all_shards_stop = [&] {
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (std::chrono::steady_clock::now() < deadline) {
        bool resident = false;
        for (const auto& info : sharding.shards("restless")) resident = resident || info.resident;
        if (!resident) return true;
        std::this_thread::sleep_for(1ms);
      }
      return false;
    };
    std::vector<int> sent(senders, 0);
    for (int b = 0; b < bursts; ++b) {
      std::vector<std::thread> threads;
      for (int s = 0; s < senders; ++s) {
        threads.emplace_back([&, s] {
          for (int i = 0; i < per_burst; ++i, ++sent[s]) {
            const int id = sent[s] % ids;
            numbered n{"e" + std::to_string(id), s, sent[s] / ids};
            if ((sent[s] / ids) % 2 == 0) {
              region.tell(std::move(n));
            } else {
              entities[static_cast<std::size_t>(id)].tell(std::move(n));
            }
          }
        });
      }
      for (auto& t : threads) t.join();
      await_seen(book, senders * (b + 1) * per_burst);
      // Idle entities and then their shards stop between bursts: the next burst finds every
      // route shut and goes through the restart path.
      ASSERT_TRUE(all_shards_stop()) << "after burst " << b;
    }
  }
  EXPECT_EQ(book.seen(), senders * bursts * per_burst);
  EXPECT_EQ(book.out_of_order, 0);
}

// Custom shard ids, one of them beyond number-of-shards: such a shard has no route, and its
// messages keep going through the region, in order.
TEST(DirectRouting, CustomShardIdsBeyondTheShardCountGoThroughTheRegion) {
  constexpr int per_id = 2'000;
  ledger book;
  {
    troupe::actor_system system(troupe::system_config{}.with_workers(2));
    auto& sharding = cluster_sharding::get(system);
    auto region = sharding.start(
        sharding_options<numbered>::create()
            .with_type_name("restless")
            .with_entity<restless>(&book)
            .with_extract_entity_id([](const numbered& n) { return n.id; })
            .with_num_shards(4)
            .with_extract_shard_id([](const std::string& id) -> troupe::sharding::shard_id {
              return id == "far" ? 1'000 : 2;
            }));
    std::thread other([&region] {
      for (int i = 0; i < per_id; ++i) region.tell(numbered{"near", 1, i});
    });
    for (int i = 0; i < per_id; ++i) region.tell(numbered{"far", 0, i});
    other.join();
    await_seen(book, 2 * per_id);
    std::vector<troupe::sharding::shard_id> started;
    for (const auto& info : sharding.shards("restless")) {
      started.push_back(info.id);
      EXPECT_EQ(info.messages_processed, static_cast<std::uint64_t>(per_id));
    }
    EXPECT_EQ(started, (std::vector<troupe::sharding::shard_id>{2, 1'000}));
  }
  EXPECT_EQ(book.seen(), 2 * per_id);
  EXPECT_EQ(book.out_of_order, 0);
}

}  // namespace
