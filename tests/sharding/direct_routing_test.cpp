// ctest-labels: concurrency
// Senders hand messages straight to entities through the entity directory. Several threads send
// to the same ids while the entities keep passivating and starting again: every message arrives
// once, in the order its sender sent it, across incarnations.
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

}  // namespace
