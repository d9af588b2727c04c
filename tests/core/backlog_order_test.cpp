// ctest-labels: concurrency
// Where a worker queues an actor that had a backlog a moment ago: ahead of the fresh wake-ups,
// not behind them. A hot key's serial chain waited 0.2-0.5 s behind ~10,000 queued entities in
// the seed benchmark each time it lost its place (docs/hot-keys.md). One worker, so that the
// order of turns is the order of the worker's queue.
#include <troupe/core/actor_system.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::testkit::test_probe;

/// The order in which actors ran, written on the worker, read after the probe said done.
struct turn_log {
  std::mutex mutex;
  std::vector<std::string> names;
  void add(std::string name) {
    const std::lock_guard lock(mutex);
    names.push_back(std::move(name));
  }
  [[nodiscard]] std::size_t index_of(const std::string& name) {
    const std::lock_guard lock(mutex);
    return static_cast<std::size_t>(std::find(names.begin(), names.end(), name) - names.begin());
  }
};

/// Logs its name for each message and tells `done`.
class filler final : public troupe::actor<int> {
 public:
  filler(turn_log* log, std::string name, troupe::actor_ref<bool> done)
      : log_(log), name_(std::move(name)), done_(std::move(done)) {}

 private:
  void receive(int& /*unused*/) override {
    log_->add(name_);
    done_.tell(true);
  }
  turn_log* log_;
  std::string name_;
  troupe::actor_ref<bool> done_;
};

/// A hot key: batches of at most 2; logs "hot" for each batch; its first batch starts phase 2,
/// its second tells `done`.
class hot_key final : public troupe::batch_actor<int> {
 public:
  hot_key(turn_log* log, troupe::actor_ref<int> feeder, troupe::actor_ref<bool> done)
      : log_(log), feeder_(std::move(feeder)), done_(std::move(done)) {}

 private:
  [[nodiscard]] std::size_t max_batch() const noexcept override { return 2; }
  void receive_batch(std::span<troupe::batch_item<int>> batch) override {
    log_->add("hot");
    if (batch.front().message == 1) {
      feeder_.tell(2);
    } else {
      done_.tell(true);
    }
  }
  turn_log* log_;
  troupe::actor_ref<int> feeder_;
  troupe::actor_ref<bool> done_;
};

/// Waits for `n` messages on `done`.
bool all_done(test_probe<bool>& done, int n) {
  for (int i = 0; i < n; ++i) {
    if (!done.expect_message(troupe::testkit::dilated(10s))) return false;
  }
  return true;
}

/// Phase 1: fills the hot key's mailbox (a full batch: it had a backlog). Phase 2: wakes 50
/// fillers, then the hot key again, then one more filler; on one worker each wake-up takes the
/// next slot and pushes the previous one into the queue.
class feeder final : public troupe::actor<int> {
 public:
  feeder(std::vector<troupe::actor_ref<int>>* fillers, troupe::actor_ref<int>* hot)
      : fillers_(fillers), hot_(hot) {}

 private:
  void receive(int& phase) override {
    if (phase == 1) {
      hot_->tell(1);
      hot_->tell(1);
      return;
    }
    for (std::size_t i = 0; i + 1 < fillers_->size(); ++i) (*fillers_)[i].tell(0);
    hot_->tell(3);
    fillers_->back().tell(0);
  }
  std::vector<troupe::actor_ref<int>>* fillers_;
  troupe::actor_ref<int>* hot_;
};

TEST(BacklogOrder, AHotKeyWokenAgainAfterAFullBatchRunsAheadOfQueuedWakeUps) {
  troupe::actor_system system(troupe::system_config{}.with_workers(1));
  test_probe<bool> done(system, "done");
  turn_log log;
  std::vector<troupe::actor_ref<int>> fillers;
  for (int i = 0; i < 50; ++i) {
    const std::string name = "filler-" + std::to_string(i);
    fillers.push_back(system.spawn<filler>(name, &log, name, done.ref()));
  }
  fillers.push_back(system.spawn<filler>("filler-last", &log, "filler-last", done.ref()));
  troupe::actor_ref<int> hot;
  auto feed = system.spawn<feeder>("feeder", &fillers, &hot);
  hot = system.spawn<hot_key>("hot", &log, feed, done.ref());
  feed.tell(1);
  ASSERT_TRUE(all_done(done, 52));  // 51 fillers and the hot key's second batch
  // The hot key's second batch ran once the last filler left the next slot, before the 50
  // fillers that queued before it (now and then the queue's oldest goes first: allow two).
  const std::lock_guard lock(log.mutex);
  const auto first_hot = std::find(log.names.begin(), log.names.end(), "hot");
  ASSERT_NE(first_hot, log.names.end());
  const auto second_hot = std::find(first_hot + 1, log.names.end(), "hot");
  ASSERT_NE(second_hot, log.names.end());
  const auto fillers_before = std::count_if(first_hot, second_hot, [](const std::string& n) {
    return n.rfind("filler-", 0) == 0 && n != "filler-last";
  });
  EXPECT_LE(fillers_before, 2) << "the hot key waited behind the queued wake-ups";
}

/// Handles `total` messages, logging "busy-done" at the last; with a small turn budget, each of
/// its turns ends with a backlog.
class busy final : public troupe::actor<int> {
 public:
  busy(turn_log* log, int total, troupe::actor_ref<bool> done)
      : log_(log), total_(total), done_(std::move(done)) {}

 private:
  void receive(int& n) override {
    if (n + 1 == total_) {
      log_->add("busy-done");
      done_.tell(true);
    }
  }
  turn_log* log_;
  int total_;
  troupe::actor_ref<bool> done_;
};

/// Wakes 50 fillers, then fills the busy actor's mailbox, in one turn.
class busy_feeder final : public troupe::actor<int> {
 public:
  busy_feeder(std::vector<troupe::actor_ref<int>>* fillers, troupe::actor_ref<int> target,
              int total)
      : fillers_(fillers), target_(std::move(target)), total_(total) {}

 private:
  void receive(int& /*unused*/) override {
    for (auto& f : *fillers_) f.tell(0);
    for (int i = 0; i < total_; ++i) target_.tell(i);
  }
  std::vector<troupe::actor_ref<int>>* fillers_;
  troupe::actor_ref<int> target_;
  int total_;
};

TEST(BacklogOrder, AnActorWhoseTurnsEndAtTheirBudgetKeepsItsPlaceAheadOfFreshWakeUps) {
  // Budget 2, 200 messages: 100 turns in a row that each end with a backlog. They used to run
  // from the next slot until its streak limit (32) and then go to the back, behind the fillers.
  troupe::actor_system system(troupe::system_config{}.with_workers(1).with_throughput(2));
  test_probe<bool> done(system, "done");
  turn_log log;
  constexpr int total = 200;
  std::vector<troupe::actor_ref<int>> fillers;
  for (int i = 0; i < 50; ++i) {
    const std::string name = "filler-" + std::to_string(i);
    fillers.push_back(system.spawn<filler>(name, &log, name, done.ref()));
  }
  auto target = system.spawn<busy>("busy", &log, total, done.ref());
  auto feed = system.spawn<busy_feeder>("feeder", &fillers, target, total);
  feed.tell(0);
  ASSERT_TRUE(all_done(done, 51));  // 50 fillers and the busy actor's last message
  const std::size_t at = log.index_of("busy-done");
  ASSERT_LT(at, 51U);
  // Now and then the queue's oldest goes first (one pop in 32 while actors wait in front).
  EXPECT_LE(at, 8U) << "the busy actor waited behind the queued wake-ups";
}

}  // namespace
