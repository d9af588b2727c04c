// ctest-labels: concurrency
// Actor timers (timer_scheduler via timers()): each sends a message of the actor's own type to
// itself; keys replace, cancel wins even over a queued message, stop and restart cancel all.
#include <troupe/core/actor_system.hpp>
#include <troupe/testkit/deterministic.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <variant>

namespace {

using namespace std::chrono_literals;
using troupe::testkit::test_probe;

struct start_single {
  std::string key;
  int tag;
  troupe::duration delay;
};
struct start_periodic {
  std::string key;
  int tag;
  troupe::duration interval;
};
struct cancel_timer {
  std::string key;
};
struct is_active {
  std::string key;
};
struct tick {
  int tag;
};
struct crash {};
using timed_msg = std::variant<start_single, start_periodic, cancel_timer, is_active, tick, crash>;

/// Starts and cancels timers on command; reports each tick's tag to `ticks`, and answers
/// cancel_timer and is_active with a bool.
class timed final : public troupe::actor<timed_msg> {
 public:
  explicit timed(troupe::actor_ref<int> ticks) : ticks_(std::move(ticks)) {}

 private:
  void receive(timed_msg& msg) override {
    std::visit(
        troupe::overloaded{
            [this](start_single& s) { timers().start_single(s.key, tick{s.tag}, s.delay); },
            [this](start_periodic& s) { timers().start_periodic(s.key, tick{s.tag}, s.interval); },
            [this](cancel_timer& c) { context().reply(timers().cancel(c.key)); },
            [this](is_active& q) { context().reply(timers().is_active(q.key)); },
            [this](tick& t) { ticks_.tell(t.tag); },
            [](crash&) { throw std::runtime_error("crash"); },
        },
        msg);
  }

  troupe::actor_ref<int> ticks_;
};

/// A deterministic system with one `timed` actor and probes for its ticks and answers.
struct timers_fixture {
  troupe::testkit::deterministic_system ds;
  test_probe<int> ticks{ds.system(), "ticks"};
  test_probe<bool> answers{ds.system(), "answers"};
  troupe::actor_ref<timed_msg> actor = ds.system().spawn<timed>("timed", ticks.ref());

  bool ask_active(const std::string& key) {
    actor.tell(is_active{key}, answers.untyped());
    return answers.expect_message();
  }
  bool cancel(const std::string& key) {
    actor.tell(cancel_timer{key}, answers.untyped());
    return answers.expect_message();
  }
  /// Moves the clock by `d` without running a turn, and checks that `fired` timers fired there:
  /// their callbacks, which queue the ticks, ran (no turn ran that could have cancelled them).
  /// A test that then sees no tick arrive has seen a queued tick discarded, not one never sent.
  void queue_ticks(troupe::duration d, std::size_t fired) {
    const std::size_t armed = ds.clock().pending();
    ASSERT_GE(armed, fired) << "fewer timers armed than should fire";
    ds.clock().advance(d);
    ASSERT_EQ(armed - ds.clock().pending(), fired) << "a timer did not fire: no tick was queued";
  }
};

/// Takes every message already received; returns how many there were.
int drain(test_probe<int>& probe) {
  int n = 0;
  try {
    for (;;) {
      probe.expect_message(0ms);
      ++n;
    }
  } catch (const troupe::testkit::expectation_failed&) {
  }
  return n;
}

TEST(Timers, SingleTimerFiresOnceAfterItsDelay) {
  timers_fixture f;
  f.actor.tell(start_single{"t", 1, 100ms});
  f.ds.run();

  f.ds.advance(99ms);
  f.ticks.expect_no_message(1ms);
  f.ds.advance(1ms);
  EXPECT_EQ(f.ticks.expect_message(), 1);
  f.ds.advance(1h);
  f.ticks.expect_no_message(1ms);
  EXPECT_EQ(f.ds.clock().pending(), 0u);
}

TEST(Timers, PeriodicTimerFiresOncePerIntervalUntilCancelled) {
  timers_fixture f;
  f.actor.tell(start_periodic{"p", 7, 10ms});
  f.ds.run();

  for (int i = 0; i < 5; ++i) {
    f.ds.advance(9ms);
    f.ticks.expect_no_message(1ms);
    f.ds.advance(1ms);
    EXPECT_EQ(f.ticks.expect_message(), 7) << "interval " << i;
  }
  EXPECT_TRUE(f.cancel("p"));
  f.ds.advance(1h);
  f.ticks.expect_no_message(1ms);
}

TEST(Timers, PeriodicTimerDoesNotCatchUpOnMissedIntervals) {
  timers_fixture f;
  f.actor.tell(start_periodic{"p", 7, 10ms});
  f.ds.run();

  // The next interval starts when a tick is handled, so a jump the actor sleeps through (time
  // moves, the actor runs only afterwards) yields one tick.
  f.ds.clock().advance(35ms);
  f.ds.run();
  EXPECT_EQ(f.ticks.expect_message(), 7);
  f.ticks.expect_no_message(1ms);
  f.ds.advance(10ms);
  EXPECT_EQ(f.ticks.expect_message(), 7);
}

TEST(Timers, CancelledTimerNeverFiresEvenWhenItsMessageIsAlreadyQueued) {
  timers_fixture f;
  f.actor.tell(start_single{"single", 1, 10ms});
  f.actor.tell(start_periodic{"periodic", 2, 10ms});
  f.ds.run();

  // Queue the cancels first, then let both timers put their ticks behind them.
  f.actor.tell(cancel_timer{"single"}, f.answers.untyped());
  f.actor.tell(cancel_timer{"periodic"}, f.answers.untyped());
  f.queue_ticks(10ms, 2);
  f.ds.run();

  EXPECT_TRUE(f.answers.expect_message());
  EXPECT_TRUE(f.answers.expect_message());
  f.ticks.expect_no_message(1ms);
  f.ds.advance(1h);
  f.ticks.expect_no_message(1ms);
  EXPECT_EQ(f.ds.clock().pending(), 0u);
}

TEST(Timers, CancelOfAnUnknownOrFiredTimerReturnsFalse) {
  timers_fixture f;
  EXPECT_FALSE(f.cancel("never started"));
  f.actor.tell(start_single{"t", 1, 10ms});
  f.ds.run();
  f.ds.advance(10ms);
  EXPECT_EQ(f.ticks.expect_message(), 1);
  EXPECT_FALSE(f.cancel("t"));
}

TEST(Timers, StartingAKeyAgainReplacesTheOldTimer) {
  timers_fixture f;
  f.actor.tell(start_single{"t", 1, 10ms});
  f.actor.tell(start_single{"t", 2, 30ms});
  f.ds.run();

  f.ds.advance(10ms);
  f.ticks.expect_no_message(1ms);
  f.ds.advance(20ms);
  EXPECT_EQ(f.ticks.expect_message(), 2);
  f.ds.advance(1h);
  f.ticks.expect_no_message(1ms);
}

TEST(Timers, StartingAKeyAgainDropsTheOldTimersQueuedMessage) {
  timers_fixture f;
  f.actor.tell(start_periodic{"t", 1, 10ms});
  f.ds.run();

  f.actor.tell(start_single{"t", 2, 30ms});
  f.queue_ticks(10ms, 1);  // tick 1 is queued behind the replacement
  f.ds.run();
  f.ticks.expect_no_message(1ms);

  f.ds.advance(30ms);
  EXPECT_EQ(f.ticks.expect_message(), 2);
  f.ds.advance(1h);
  f.ticks.expect_no_message(1ms);
}

TEST(Timers, IsActiveUntilASingleTimerHasFiredAndWhileAPeriodicOneRuns) {
  timers_fixture f;
  EXPECT_FALSE(f.ask_active("single"));
  f.actor.tell(start_single{"single", 1, 10ms});
  f.actor.tell(start_periodic{"periodic", 2, 10ms});
  EXPECT_TRUE(f.ask_active("single"));
  EXPECT_TRUE(f.ask_active("periodic"));

  f.ds.advance(10ms);
  EXPECT_EQ(f.ticks.expect_message(), 1);
  EXPECT_EQ(f.ticks.expect_message(), 2);
  EXPECT_FALSE(f.ask_active("single"));
  EXPECT_TRUE(f.ask_active("periodic"));

  EXPECT_TRUE(f.cancel("periodic"));
  EXPECT_FALSE(f.ask_active("periodic"));
}

TEST(Timers, StoppingTheActorCancelsItsTimers) {
  timers_fixture f;
  f.actor.tell(start_single{"single", 1, 10ms});
  f.actor.tell(start_periodic{"periodic", 2, 10ms});
  f.ds.run();
  ASSERT_EQ(f.ds.clock().pending(), 2u);
  f.ticks.watch(f.actor);

  f.ds.system().stop(f.actor);

  f.ticks.expect_terminated(f.actor);
  EXPECT_EQ(f.ds.clock().pending(), 0u);
  f.ds.advance(1h);
  f.ticks.expect_no_message(1ms);
}

TEST(Timers, RestartingTheActorCancelsItsTimers) {
  timers_fixture f;
  f.actor.tell(start_single{"single", 1, 10ms});
  f.actor.tell(start_periodic{"periodic", 2, 10ms});
  f.ds.run();
  ASSERT_EQ(f.ds.clock().pending(), 2u);

  f.actor.tell(crash{});  // the /user guardian restarts it
  f.ds.run();

  EXPECT_EQ(f.ds.clock().pending(), 0u);
  EXPECT_FALSE(f.ask_active("periodic"));
  f.ds.advance(1h);
  f.ticks.expect_no_message(1ms);
}

TEST(Timers, RestartingTheActorDropsATickAlreadyQueued) {
  timers_fixture f;
  f.actor.tell(start_single{"t", 1, 10ms});
  f.ds.run();

  f.actor.tell(crash{});
  f.queue_ticks(10ms, 1);  // the tick waits behind the crash
  f.ds.run();

  f.ticks.expect_no_message(1ms);
  EXPECT_EQ(f.ds.clock().pending(), 0u);
  f.ds.advance(1h);
  f.ticks.expect_no_message(1ms);
}

TEST(Timers, PeriodicTimerFiresOnWorkerThreadsWithTheRealClock) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  test_probe<int> ticks(system, "ticks");
  test_probe<bool> answers(system, "answers");
  auto actor = system.spawn<timed>("timed", ticks.ref());

  actor.tell(start_periodic{"p", 3, 1ms});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(ticks.expect_message(), 3);
  actor.tell(cancel_timer{"p"}, answers.untyped());
  EXPECT_TRUE(answers.expect_message());
  actor.tell(is_active{"p"}, answers.untyped());
  EXPECT_FALSE(answers.expect_message());
  // Ticks handled before the cancel have reached the probe by now; none comes afterwards.
  drain(ticks);
  ticks.expect_no_message(10ms);
}

}  // namespace
