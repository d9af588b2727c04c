// ctest-labels: concurrency
// The max-entities cap holds under churn: whatever order tells, asks, passivations and the
// shards' stop and start reports take, once the traffic is over at most max-entities entities
// run (as introspection counts them), and no message is lost or reordered. Random traffic from
// a printed seed (TROUPE_TEST_SEED reruns one), on manual scheduling (the seed fixes the whole
// interleaving) and on worker threads.
#include <troupe/core/actor_system.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/testkit/test_seed.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <random>
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
  int seq = 0;  // per (sender, id), from 0
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

/// Records every message; replies to each with its seq (an ask gets it, a tell drops it).
class recorder final : public troupe::actor<numbered> {
 public:
  explicit recorder(ledger* l) : ledger_(l) {}

 private:
  void receive(numbered& n) override {
    ledger_->record(n);
    context().reply(n.seq);
  }
  ledger* ledger_;
};

constexpr std::size_t cap = 5;

troupe::actor_ref<numbered> start_recorders(troupe::actor_system& system, ledger& book,
                                            std::uint32_t shards) {
  return cluster_sharding::get(system).start(
      sharding_options<numbered>::create()
          .with_type_name("recorder")
          .with_entity<recorder>(&book)
          .with_extract_entity_id([](const numbered& n) { return n.id; })
          .with_num_shards(shards)
          .with_passivation_idle(0s)
          .with_max_entities(cap));
}

/// Entities running, summed over the shards as introspection reports them.
std::size_t running(troupe::actor_system& system) {
  std::size_t n = 0;
  for (const auto& s : cluster_sharding::get(system).shards("recorder")) n += s.entity_count;
  return n;
}

/// On worker threads reports still travel after the last message is handled: waits (with a
/// deadline) until at most `cap` entities run, and returns how many do.
std::size_t running_once_settled(troupe::actor_system& system) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  std::size_t n = running(system);
  while (n > cap && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
    n = running(system);
  }
  return n;
}

// The case: one sender, 2,000 tells round robin over 10 ids, max-entities 5.
TEST(MaxEntities, HoldsAfterRoundRobinChurnAndEvictsForTheNextEntity) {
  ledger book;
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  auto region = start_recorders(system, book, 4);
  std::map<std::string, int> next;
  for (int i = 0; i < 2'000; ++i) {
    const std::string id = "e" + std::to_string(i % 10);
    region.tell(numbered{id, 0, next[id]++});
  }
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (book.seen() < 2'000 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(book.seen(), 2'000);
  EXPECT_EQ(book.out_of_order, 0);
  EXPECT_LE(running_once_settled(system), cap);
  // One more entity: the cap passivates another for it.
  EXPECT_EQ(region.ask<int>(numbered{"fresh", 0, 0}, 3s, troupe::use_future).get(), 0);
  EXPECT_LE(running_once_settled(system), cap);
}

// Several senders on their own threads, tells and asks at random over more ids than the cap.
TEST(MaxEntities, HoldsUnderRandomTellsAndAsksFromSeveralThreads) {
  const auto seed = troupe::testkit::test_seed();
  constexpr int senders = 4;
  constexpr int per_sender = 1'500;
  constexpr int ids = 13;
  ledger book;
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  auto region = start_recorders(system, book, 3);
  std::vector<std::thread> threads;
  std::atomic<int> failed_asks{0};
  for (int s = 0; s < senders; ++s) {
    threads.emplace_back([&, s] {
      std::mt19937_64 random(seed + static_cast<std::uint64_t>(s));
      std::map<int, int> next;
      for (int i = 0; i < per_sender; ++i) {
        const int id = static_cast<int>(random() % ids);
        numbered n{"e" + std::to_string(id), s, next[id]++};
        if (random() % 8 == 0) {
          const int seq = n.seq;
          if (region.ask<int>(std::move(n), 10s, troupe::use_future).get() != seq) ++failed_asks;
        } else {
          region.tell(std::move(n));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (book.seen() < senders * per_sender && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(book.seen(), senders * per_sender);
  EXPECT_EQ(book.out_of_order, 0);
  EXPECT_EQ(failed_asks.load(), 0);
  EXPECT_LE(running_once_settled(system), cap) << "seed " << seed;
}

// Manual scheduling: the seed decides each step (which sender sends what, and when the actors
// run), so a failing seed replays exactly.
TEST(MaxEntities, HoldsUnderRandomInterleavingsOnManualScheduling) {
  const auto seed = troupe::testkit::test_seed();
  constexpr int senders = 3;
  constexpr int ids = 12;
  for (int round = 0; round < 20; ++round) {
    std::mt19937_64 random(seed + static_cast<std::uint64_t>(round));
    ledger book;
    troupe::actor_system system(troupe::system_config{}.with_manual_scheduling());
    auto region = start_recorders(system, book, 1 + static_cast<std::uint32_t>(random() % 4));
    std::map<std::pair<int, int>, int> next;  // (sender, id) -> seq
    std::vector<std::pair<std::future<int>, int>> asks;
    int sent = 0;
    for (int step = 0; step < 600; ++step) {
      if (random() % 6 == 0) {
        system.run_until_idle();
        continue;
      }
      const int s = static_cast<int>(random() % senders);
      const int id = static_cast<int>(random() % ids);
      numbered n{"e" + std::to_string(id), s, next[{s, id}]++};
      ++sent;
      if (random() % 5 == 0) {
        const int seq = n.seq;
        asks.emplace_back(region.ask<int>(std::move(n), 1h, troupe::use_future), seq);
      } else {
        region.tell(std::move(n));
      }
    }
    system.run_until_idle();
    EXPECT_EQ(book.seen(), sent) << "seed " << seed << " round " << round;
    EXPECT_EQ(book.out_of_order, 0) << "seed " << seed << " round " << round;
    for (auto& [f, seq] : asks) {
      ASSERT_EQ(f.wait_for(0s), std::future_status::ready);
      EXPECT_EQ(f.get(), seq);
    }
    EXPECT_LE(running(system), cap) << "seed " << seed << " round " << round;
  }
}

}  // namespace
