// ctest-labels: concurrency
// concurrency_gate: at most N coroutine handlers hold a permit at once, waiters get permits in
// arrival order, and an actor that stops while it waits loses its place without losing a permit.
#include <troupe/core/actor_system.hpp>
#include <troupe/core/async_actor.hpp>
#include <troupe/core/concurrency_gate.hpp>
#include <troupe/testkit/deterministic.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <boost/asio/awaitable.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::concurrency_gate;
using troupe::testkit::test_probe;

/// On each message: waits for a permit, reports "in <n>", holds it for `hold` (1 s), reports
/// "out <n>".
class gated_worker final : public troupe::async_actor<int> {
 public:
  gated_worker(std::shared_ptr<concurrency_gate> gate, troupe::actor_ref<std::string> events,
               troupe::duration hold = 1s)
      : gate_(std::move(gate)), events_(std::move(events)), hold_(hold) {}

 private:
  boost::asio::awaitable<void> receive(int n) override {
    co_await gate_->acquire();
    const troupe::gate_permit permit(*gate_);
    events_.tell("in " + std::to_string(n));
    co_await troupe::sleep_for(hold_);
    events_.tell("out " + std::to_string(n));
  }

  std::shared_ptr<concurrency_gate> gate_;
  troupe::actor_ref<std::string> events_;
  troupe::duration hold_;
};

TEST(ConcurrencyGate, LetsAtMostItsPermitsInAndTheRestInArrivalOrder) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> events(ds.system(), "events");
  auto gate = std::make_shared<concurrency_gate>(2);
  std::vector<troupe::actor_ref<int>> workers;
  for (int n = 0; n < 5; ++n) {
    workers.push_back(ds.system().spawn<gated_worker>("w" + std::to_string(n), gate, events.ref()));
    workers.back().tell(n);
  }
  ds.run();
  EXPECT_EQ(events.expect_message(), "in 0");
  EXPECT_EQ(events.expect_message(), "in 1");
  events.expect_no_message(1ms);
  EXPECT_EQ(gate->in_use(), 2U);
  EXPECT_EQ(gate->waiting(), 3U);
  ds.advance(1s);
  EXPECT_EQ(events.expect_message(), "out 0");
  EXPECT_EQ(events.expect_message(), "out 1");
  EXPECT_EQ(events.expect_message(), "in 2");
  EXPECT_EQ(events.expect_message(), "in 3");
  ds.advance(1s);
  EXPECT_EQ(events.expect_message(), "out 2");
  EXPECT_EQ(events.expect_message(), "out 3");
  EXPECT_EQ(events.expect_message(), "in 4");
  ds.advance(1s);
  EXPECT_EQ(events.expect_message(), "out 4");
  EXPECT_EQ(gate->in_use(), 0U);
  EXPECT_EQ(gate->peak_in_use(), 2U);
}

TEST(ConcurrencyGate, AnActorStoppedWhileWaitingGivesUpItsPlaceAndNoPermitIsLost) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> events(ds.system(), "events");
  auto gate = std::make_shared<concurrency_gate>(1);
  auto first = ds.system().spawn<gated_worker>("first", gate, events.ref());
  auto quitter = ds.system().spawn<gated_worker>("quitter", gate, events.ref());
  auto last = ds.system().spawn<gated_worker>("last", gate, events.ref());
  first.tell(1);
  quitter.tell(2);
  last.tell(3);
  ds.run();
  EXPECT_EQ(events.expect_message(), "in 1");
  ds.system().stop(quitter);  // it waits for the permit "first" holds
  ds.run();
  EXPECT_EQ(gate->waiting(), 1U);
  ds.advance(1s);
  EXPECT_EQ(events.expect_message(), "out 1");
  EXPECT_EQ(events.expect_message(), "in 3");  // the permit skips the stopped waiter
  ds.advance(1s);
  EXPECT_EQ(events.expect_message(), "out 3");
  EXPECT_EQ(gate->in_use(), 0U);
}

TEST(ConcurrencyGate, HoldsUpUnderWorkerThreads) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  auto gate = std::make_shared<concurrency_gate>(3);
  test_probe<std::string> events(system, "events");
  std::vector<troupe::actor_ref<int>> workers;
  for (int n = 0; n < 8; ++n) {
    workers.push_back(
        system.spawn<gated_worker>("w" + std::to_string(n), gate, events.ref(), 20ms));
  }
  // Real clock: each holds its permit for 20 ms, so 8 workers need 3 rounds; send and wait for
  // every "out".
  for (int n = 0; n < 8; ++n) workers[static_cast<std::size_t>(n)].tell(n);
  int outs = 0;
  while (outs < 8) {
    if (events.expect_message(troupe::testkit::dilated(10s)).rfind("out", 0) == 0) ++outs;
  }
  EXPECT_EQ(gate->peak_in_use(), 3U);
  // The last permit goes back just after its "out" (when the handler's scope ends).
  troupe::testkit::await_condition([&] { return gate->in_use() == 0; });
}

}  // namespace
