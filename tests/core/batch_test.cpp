// ctest-labels: concurrency
// Batch handlers: every message queued for an actor (up to its cap) in one turn, in arrival
// order; size 1 under light load; runtime signals end a batch; coroutine batches stay turn-based.
#include <troupe/core/actor_system.hpp>
#include <troupe/core/async_actor.hpp>
#include <troupe/testkit/deterministic.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::testkit::test_probe;

/// Reports each batch as "n,n,n" and answers each sender with its number.
class collector final : public troupe::batch_actor<int> {
 public:
  explicit collector(troupe::actor_ref<std::string> out, std::size_t cap = 200)
      : out_(std::move(out)), cap_(cap) {}

 private:
  [[nodiscard]] std::size_t max_batch() const noexcept override { return cap_; }
  void receive_batch(std::span<troupe::batch_item<int>> batch) override {
    std::string line;
    for (auto& item : batch) {
      line += (line.empty() ? "" : ",") + std::to_string(item.message);
      if (item.sender) item.sender.tell_any(item.message);
    }
    out_.tell(line);
  }
  troupe::actor_ref<std::string> out_;
  std::size_t cap_;
};

TEST(BatchActor, TakesEverythingQueuedInOneTurnInArrivalOrder) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> out(ds.system(), "out");
  auto c = ds.system().spawn<collector>("c", out.ref());
  for (int i = 1; i <= 5; ++i) c.tell(i);
  EXPECT_EQ(out.expect_message(), "1,2,3,4,5");
}

TEST(BatchActor, UnderLightLoadBatchesHaveSizeOne) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> out(ds.system(), "out");
  auto c = ds.system().spawn<collector>("c", out.ref());
  c.tell(1);
  EXPECT_EQ(out.expect_message(), "1");
  c.tell(2);
  EXPECT_EQ(out.expect_message(), "2");
}

TEST(BatchActor, RespectsItsCap) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> out(ds.system(), "out");
  auto c = ds.system().spawn<collector>("c", out.ref(), std::size_t{3});
  for (int i = 1; i <= 7; ++i) c.tell(i);
  EXPECT_EQ(out.expect_message(), "1,2,3");
  EXPECT_EQ(out.expect_message(), "4,5,6");
  EXPECT_EQ(out.expect_message(), "7");
}

TEST(BatchActor, EachItemKeepsItsSender) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> out(ds.system(), "out");
  test_probe<int> a(ds.system(), "a");
  test_probe<int> b(ds.system(), "b");
  auto c = ds.system().spawn<collector>("c", out.ref());
  c.tell(1, a.untyped());
  c.tell(2, b.untyped());
  EXPECT_EQ(out.expect_message(), "1,2");
  EXPECT_EQ(a.expect_message(), 1);
  EXPECT_EQ(b.expect_message(), 2);
}

TEST(BatchActor, APoisonPillEndsTheBatchAndStopsAfterIt) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> out(ds.system(), "out");
  auto c = ds.system().spawn<collector>("c", out.ref());
  out.watch(c);
  c.tell(1);
  c.tell(2);
  c.tell(troupe::poison_pill{});
  c.tell(3);  // after the pill: a dead letter
  EXPECT_EQ(out.expect_message(), "1,2");
  out.expect_terminated(c);
}

/// Awaits one "write" per batch, then reports it.
class writer final : public troupe::async_batch_actor<int> {
 public:
  explicit writer(troupe::actor_ref<std::string> out) : out_(std::move(out)) {}

 private:
  boost::asio::awaitable<void> receive_batch(std::vector<troupe::batch_item<int>> batch) override {
    co_await troupe::sleep_for(1ms);  // one round trip for the whole batch
    std::string line;
    for (auto& item : batch) line += (line.empty() ? "" : ",") + std::to_string(item.message);
    out_.tell(line);
  }
  troupe::actor_ref<std::string> out_;
};

TEST(AsyncBatchActor, MessagesArrivingDuringAnAwaitedWriteFormTheNextBatch) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> out(ds.system(), "out");
  auto w = ds.system().spawn<writer>("w", out.ref());
  w.tell(1);
  ds.run();  // the first batch {1} is awaiting its write
  for (int i = 2; i <= 6; ++i) w.tell(i);
  ds.advance(1ms);
  EXPECT_EQ(out.expect_message(), "1");
  ds.advance(1ms);
  EXPECT_EQ(out.expect_message(), "2,3,4,5,6");
}

TEST(AsyncBatchActor, KeepsPerSenderOrderOnWorkerThreads) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  test_probe<std::string> out(system, "out");
  auto w = system.spawn<writer>("w", out.ref());
  for (int i = 0; i < 1000; ++i) w.tell(i);
  std::string all;
  int seen = 0;
  while (seen < 1000) {
    const std::string line = out.expect_message();
    all += (all.empty() ? "" : ",") + line;
    seen = static_cast<int>(std::count(all.begin(), all.end(), ',')) + 1;
  }
  std::string expected;
  for (int i = 0; i < 1000; ++i) expected += (i == 0 ? "" : ",") + std::to_string(i);
  EXPECT_EQ(all, expected);
}

}  // namespace
