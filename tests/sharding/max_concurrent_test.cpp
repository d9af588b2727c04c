// ctest-labels: concurrency
// with_max_concurrent: at most N entities of a region are inside a coroutine handler at once;
// the others wait for a permit in order, and every message is still handled, in order per id.
#include <troupe/core/actor_system.hpp>
#include <troupe/core/async_actor.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/testkit/deterministic.hpp>

#include <boost/asio/awaitable.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::sharding::cluster_sharding;
using troupe::sharding::sharding_options;

struct write {
  std::string key;
  int seq = 0;
};
std::string key_of(const write& w) { return w.key; }

/// What the entities saw: how many were inside a handler at once, and each key's sequence.
struct observed {
  std::atomic<int> inside{0};
  std::atomic<int> peak{0};
  std::atomic<int> handled{0};
  std::mutex mutex;
  std::map<std::string, std::vector<int>> seqs;
};

/// "Writes" each message with 1 s of awaited I/O.
class writer final : public troupe::async_actor<write> {
 public:
  explicit writer(observed* seen) : seen_(seen) {}

 private:
  boost::asio::awaitable<void> receive(write w) override {
    const int now = seen_->inside.fetch_add(1) + 1;
    int peak = seen_->peak.load();
    while (now > peak && !seen_->peak.compare_exchange_weak(peak, now)) {
    }
    co_await troupe::sleep_for(1s);
    seen_->inside.fetch_sub(1);
    {
      std::lock_guard lock(seen_->mutex);
      seen_->seqs[w.key].push_back(w.seq);
    }
    seen_->handled.fetch_add(1);
  }

  observed* seen_;
};

TEST(MaxConcurrent, CapsTheEntitiesInsideAHandlerAndLosesNothing) {
  troupe::testkit::deterministic_system ds;
  observed seen;
  auto writers = cluster_sharding::get(ds.system())
                     .start(sharding_options<write>::create()
                                .with_type_name("writer")
                                .with_entity<writer>(&seen)
                                .with_extract_entity_id(key_of)
                                .with_max_concurrent(3));
  // 10 keys, 2 writes each: 20 seconds of I/O, 3 at a time.
  for (int seq = 0; seq < 2; ++seq) {
    for (int k = 0; k < 10; ++k) writers.tell(write{"k" + std::to_string(k), seq});
  }
  ds.run();
  EXPECT_EQ(seen.inside.load(), 3);
  for (int second = 0; second < 20 && seen.handled.load() < 20; ++second) {
    ds.advance(1s);
    EXPECT_LE(seen.inside.load(), 3);
  }
  EXPECT_EQ(seen.handled.load(), 20);
  EXPECT_EQ(seen.peak.load(), 3);
  for (const auto& [key, seqs] : seen.seqs) EXPECT_EQ(seqs, (std::vector<int>{0, 1})) << key;
}

TEST(MaxConcurrent, ZeroMeansNoCap) {
  troupe::testkit::deterministic_system ds;
  observed seen;
  auto writers = cluster_sharding::get(ds.system())
                     .start(sharding_options<write>::create()
                                .with_type_name("writer")
                                .with_entity<writer>(&seen)
                                .with_extract_entity_id(key_of));
  for (int k = 0; k < 10; ++k) writers.tell(write{"k" + std::to_string(k), 0});
  ds.run();
  EXPECT_EQ(seen.inside.load(), 10);
  ds.advance(1s);
  EXPECT_EQ(seen.handled.load(), 10);
}

}  // namespace
