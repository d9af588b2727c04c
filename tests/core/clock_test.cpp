// ctest-labels: concurrency
// Clocks: the manual clock runs due callbacks in deadline order (ties in insertion order) on
// advance; the steady clock runs them on its own thread. Both sit on the timer queue, which the
// randomized test drives through many inserts and cancels.
#include <troupe/core/boottime_clock.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/testkit/manual_clock.hpp>
#include <troupe/testkit/test_probe.hpp>
#include <troupe/testkit/test_seed.hpp>

#include <gtest/gtest.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::testkit::dilated;

// -- manual clock -------------------------------------------------------------------------------

TEST(ManualClock, AdvanceRunsCallbacksInDeadlineOrder) {
  troupe::testkit::manual_clock clock;
  std::vector<int> fired;
  clock.schedule_after(30ms, [&] { fired.push_back(30); });
  clock.schedule_after(10ms, [&] { fired.push_back(10); });
  clock.schedule_after(20ms, [&] { fired.push_back(20); });

  clock.advance(30ms);

  EXPECT_EQ(fired, (std::vector<int>{10, 20, 30}));
}

TEST(ManualClock, CallbacksWithTheSameDeadlineRunInInsertionOrder) {
  troupe::testkit::manual_clock clock;
  std::vector<int> fired;
  for (int i = 0; i < 5; ++i) clock.schedule_after(10ms, [&fired, i] { fired.push_back(i); });
  clock.schedule_after(5ms, [&] { fired.push_back(-1); });
  for (int i = 5; i < 8; ++i) clock.schedule_after(10ms, [&fired, i] { fired.push_back(i); });

  clock.advance(10ms);

  EXPECT_EQ(fired, (std::vector<int>{-1, 0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(ManualClock, AdvanceRunsOnlyWhatIsDueAndTimeStandsAtEachDeadline) {
  troupe::testkit::manual_clock clock;
  const troupe::time_point start = clock.now();
  std::vector<troupe::duration> seen_at;
  clock.schedule_after(10ms, [&] { seen_at.push_back(clock.now() - start); });
  clock.schedule_after(20ms, [&] { seen_at.push_back(clock.now() - start); });

  clock.advance(15ms);
  EXPECT_EQ(seen_at, (std::vector<troupe::duration>{10ms}));
  EXPECT_EQ(clock.now() - start, 15ms);
  EXPECT_EQ(clock.pending(), 1u);

  clock.advance(5ms);
  EXPECT_EQ(seen_at, (std::vector<troupe::duration>{10ms, 20ms}));
  EXPECT_EQ(clock.pending(), 0u);
}

TEST(ManualClock, ACallbackScheduledDuringAdvanceRunsInTheSameAdvanceWhenDue) {
  troupe::testkit::manual_clock clock;
  std::vector<int> fired;
  clock.schedule_after(10ms, [&] {
    fired.push_back(10);
    clock.schedule_after(5ms, [&] { fired.push_back(15); });   // due within this advance
    clock.schedule_after(50ms, [&] { fired.push_back(60); });  // not yet
  });

  clock.advance(20ms);

  EXPECT_EQ(fired, (std::vector<int>{10, 15}));
  EXPECT_EQ(clock.pending(), 1u);
}

TEST(ManualClock, CancelStopsAPendingCallbackAndReturnsFalseForFiredOrUnknownIds) {
  troupe::testkit::manual_clock clock;
  int fired = 0;
  const auto a = clock.schedule_after(10ms, [&] { ++fired; });
  const auto b = clock.schedule_after(10ms, [&] { fired += 10; });
  EXPECT_NE(a, 0u);
  EXPECT_NE(b, 0u);
  EXPECT_NE(a, b);
  EXPECT_EQ(clock.pending(), 2u);

  EXPECT_TRUE(clock.cancel(a));
  EXPECT_FALSE(clock.cancel(a));  // already cancelled
  EXPECT_EQ(clock.pending(), 1u);
  clock.advance(10ms);

  EXPECT_EQ(fired, 10);
  EXPECT_FALSE(clock.cancel(b));  // already fired
  EXPECT_FALSE(clock.cancel(0));
  EXPECT_FALSE(clock.cancel(0xdead'beef'0000'0001ULL));
  EXPECT_EQ(clock.pending(), 0u);
}

TEST(ManualClock, AStaleIdDoesNotCancelTheCallbackThatReusedItsSlot) {
  troupe::testkit::manual_clock clock;
  bool fired = false;
  const auto stale = clock.schedule_after(10ms, [] {});
  ASSERT_TRUE(clock.cancel(stale));
  const auto fresh = clock.schedule_after(10ms, [&] { fired = true; });

  EXPECT_FALSE(clock.cancel(stale));
  clock.advance(10ms);

  EXPECT_NE(fresh, stale);
  EXPECT_TRUE(fired);
}

TEST(ManualClock, ManyTimersInsertedAndCancelledInRandomOrderFireExactlyTheRestInOrder) {
  const std::uint64_t seed = troupe::testkit::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto chance = [&](int percent) {
    return std::uniform_int_distribution<int>(0, 99)(rng) < percent;
  };

  troupe::testkit::manual_clock clock;
  struct timer {
    troupe::time_point at;
    std::uint64_t seq;
    troupe::timer_id id;
  };
  std::map<int, timer> live;           // by index: scheduled, neither fired nor cancelled
  std::vector<troupe::timer_id> gone;  // fired or cancelled ids: cancel must say false
  std::vector<int> fired;
  std::uint64_t seq = 0;
  int next_index = 0;

  for (int round = 0; round < 40; ++round) {
    for (int op = 0; op < 250; ++op) {
      if (live.empty() || chance(65)) {
        // Deadlines on a coarse grid, so ties are common; some already in the past.
        const auto offset = std::uniform_int_distribution<int>(-5, 200)(rng) * 1ms;
        const int index = next_index++;
        const troupe::time_point at = clock.now() + offset;
        const auto id = clock.schedule_at(at, [&fired, index] { fired.push_back(index); });
        live.emplace(index, timer{at, seq++, id});
      } else if (!gone.empty() && chance(20)) {
        const auto id = gone[std::uniform_int_distribution<std::size_t>(0, gone.size() - 1)(rng)];
        EXPECT_FALSE(clock.cancel(id));
      } else {
        auto it = std::next(live.begin(), std::uniform_int_distribution<long>(
                                              0, static_cast<long>(live.size()) - 1)(rng));
        EXPECT_TRUE(clock.cancel(it->second.id));
        gone.push_back(it->second.id);
        live.erase(it);
      }
    }
    ASSERT_EQ(clock.pending(), live.size());

    // Advance: exactly the live timers due by then fire, by deadline, then insertion.
    const auto step = std::uniform_int_distribution<int>(0, 120)(rng) * 1ms;
    const troupe::time_point target = clock.now() + step;
    std::vector<std::tuple<troupe::time_point, std::uint64_t, int>> due;
    for (const auto& [index, t] : live) {
      if (t.at <= target) due.emplace_back(t.at, t.seq, index);
    }
    std::sort(due.begin(), due.end());
    fired.clear();
    clock.advance(step);
    std::vector<int> expected;
    for (const auto& d : due) {
      expected.push_back(std::get<2>(d));
      gone.push_back(live.at(std::get<2>(d)).id);
      live.erase(std::get<2>(d));
    }
    ASSERT_EQ(fired, expected) << "round " << round;
    ASSERT_EQ(clock.pending(), live.size());
  }
}

TEST(ManualClock, EqualDelaysInterleavedWithEarlierDeadlinesFireByDeadlineThenInsertion) {
  troupe::testkit::manual_clock clock;
  std::vector<std::string> fired;
  auto at = [&](int ms, std::string name) {
    return clock.schedule_after(ms * 1ms, [&fired, name] { fired.push_back(name); });
  };
  at(10, "a10");
  at(10, "b10");
  at(20, "c20");
  at(10, "d10");  // earlier than the last deadline armed: no longer in arming order
  const auto cancelled = at(20, "e20");
  at(5, "f5");
  at(20, "g20");
  at(30, "h30");
  ASSERT_TRUE(clock.cancel(cancelled));
  ASSERT_EQ(clock.pending(), 7u);

  clock.advance(20ms);
  at(0, "i20");  // due now: after everything that was due at 20 ms

  clock.advance(10ms);
  EXPECT_EQ(fired,
            (std::vector<std::string>{"f5", "a10", "b10", "d10", "c20", "g20", "i20", "h30"}));
  EXPECT_EQ(clock.pending(), 0u);
}

TEST(ManualClock, MostlyEqualDelaysWithCancelsFireExactlyTheRestInOrder) {
  const std::uint64_t seed = troupe::testkit::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };

  troupe::testkit::manual_clock clock;
  struct timer {
    troupe::time_point at;
    std::uint64_t seq;
    troupe::timer_id id;
  };
  std::map<int, timer> live;
  std::vector<int> fired;
  std::uint64_t seq = 0;
  for (int round = 0; round < 200; ++round) {
    for (int op = 0; op < 50; ++op) {
      if (live.empty() || pick(100) < 80) {
        // Mostly the same delay (as a busy entity region's 1 ms awaits), sometimes shorter.
        const auto delay = pick(10) == 0 ? pick(1000) * 1us : 1ms;
        const int index = static_cast<int>(seq);
        const troupe::time_point at = clock.now() + delay;
        const auto id = clock.schedule_at(at, [&fired, index] { fired.push_back(index); });
        live.emplace(index, timer{at, seq++, id});
      } else {
        auto it = std::next(live.begin(), pick(static_cast<int>(live.size())));
        ASSERT_TRUE(clock.cancel(it->second.id));
        ASSERT_FALSE(clock.cancel(it->second.id));
        live.erase(it);
      }
    }
    ASSERT_EQ(clock.pending(), live.size());
    const auto step = pick(400) * 1us;
    std::vector<std::tuple<troupe::time_point, std::uint64_t, int>> due;
    for (const auto& [index, t] : live) {
      if (t.at <= clock.now() + step) due.emplace_back(t.at, t.seq, index);
    }
    std::sort(due.begin(), due.end());
    fired.clear();
    clock.advance(step);
    std::vector<int> expected;
    for (const auto& d : due) {
      expected.push_back(std::get<2>(d));
      live.erase(std::get<2>(d));
    }
    ASSERT_EQ(fired, expected) << "round " << round;
  }
}

// -- steady clock -------------------------------------------------------------------------------

/// Collects values from callbacks on the clock's thread; the test waits with a deadline.
class recorder {
 public:
  void add(int v) {
    {
      std::lock_guard lock(mutex_);
      values_.push_back(v);
    }
    cv_.notify_all();
  }
  /// The values once there are `n` of them, or what there is after the deadline.
  std::vector<int> wait_for(std::size_t n, troupe::duration timeout = 3s) {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, dilated(timeout), [&] { return values_.size() >= n; });
    return values_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<int> values_;
};

TEST(SteadyClock, FiresACallbackAfterItsDelay) {
  auto clock = troupe::make_steady_clock();
  auto seen = std::make_shared<recorder>();
  const auto start = clock->now();
  auto fired_at = std::make_shared<troupe::time_point>();

  clock->schedule_after(2ms, [seen, fired_at, &clock = *clock] {
    *fired_at = clock.now();
    seen->add(1);
  });

  EXPECT_EQ(seen->wait_for(1), (std::vector<int>{1}));
  EXPECT_GE(*fired_at - start, 2ms);
}

// The boottime clock reads CLOCK_BOOTTIME (it counts suspended time, for lease deadlines) and
// schedules on that time line.
TEST(BoottimeClock, ReadsBoottimeAndFiresCallbacksInDeadlineOrder) {
  auto clock = troupe::make_boottime_clock();
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  const auto boot = std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
  const auto now = clock->now().time_since_epoch();
  EXPECT_GE(now, boot);
  EXPECT_LT(now - boot, dilated(1s));

  auto seen = std::make_shared<recorder>();
  const auto at = clock->now() + 5ms;
  clock->schedule_at(at + 2ms, [seen] { seen->add(3); });
  clock->schedule_at(at, [seen, at, &c = *clock] { seen->add(c.now() >= at ? 1 : -1); });
  clock->schedule_at(at + 1ms, [seen] { seen->add(2); });
  EXPECT_EQ(seen->wait_for(3), (std::vector<int>{1, 2, 3}));
}

TEST(SteadyClock, RunsCallbacksInDeadlineOrder) {
  auto clock = troupe::make_steady_clock();
  auto seen = std::make_shared<recorder>();
  const auto at = clock->now() + 5ms;
  clock->schedule_at(at + 2ms, [seen] { seen->add(3); });
  clock->schedule_at(at, [seen] { seen->add(1); });
  clock->schedule_at(at + 1ms, [seen] { seen->add(2); });

  EXPECT_EQ(seen->wait_for(3), (std::vector<int>{1, 2, 3}));
}

TEST(SteadyClock, CancelledCallbackNeverRuns) {
  auto clock = troupe::make_steady_clock();
  auto seen = std::make_shared<recorder>();
  // Far enough ahead that the cancel below surely comes first, even on a loaded machine.
  const auto at = clock->now() + dilated(100ms);
  const auto cancelled = clock->schedule_at(at, [seen] { seen->add(-1); });
  clock->schedule_at(at + 1ms, [seen] { seen->add(1); });  // runs after it would have

  EXPECT_TRUE(clock->cancel(cancelled));

  EXPECT_EQ(seen->wait_for(1), (std::vector<int>{1}));
  EXPECT_FALSE(clock->cancel(cancelled));
}

TEST(SteadyClock, CallsTheWakeHintBeforeADeadlineUntilItIsCleared) {
  auto clock = troupe::make_steady_clock();
  auto seen = std::make_shared<recorder>();
  // The hint (0) comes only when the clock's thread wakes before the deadline, which a loaded
  // machine may prevent once in a while: try deadlines one after the other until one has it.
  clock->set_wake_hint([seen] { seen->add(0); });
  std::size_t callbacks = 0;
  bool hinted = false;
  for (int attempt = 0; attempt < 200 && !hinted; ++attempt) {
    clock->schedule_after(1ms, [seen] { seen->add(1); });
    ++callbacks;
    const auto values = seen->wait_for(callbacks + 1, 10ms);
    hinted = std::count(values.begin(), values.end(), 0) > 0;
  }
  EXPECT_TRUE(hinted);
  std::vector<int> values;
  troupe::testkit::await_condition(
      [&] {
        values = seen->wait_for(0);
        return static_cast<std::size_t>(std::count(values.begin(), values.end(), 1)) == callbacks;
      },
      3s, "every callback");
  // A hint announces a callback still to come.
  const auto hint = std::find(values.begin(), values.end(), 0);
  EXPECT_NE(std::find(hint, values.end(), 1), values.end());

  clock->set_wake_hint(nullptr);
  const std::size_t before = values.size();
  clock->schedule_after(5ms, [seen] { seen->add(2); });
  const auto after = seen->wait_for(before + 1);
  EXPECT_EQ(after.size(), before + 1);  // no hint any more: only the callback
  EXPECT_EQ(after.back(), 2);
}

TEST(SteadyClock, MayBeDestroyedByItsOwnCallback) {
  auto clock = troupe::make_steady_clock();
  std::weak_ptr<troupe::clock> weak = clock;
  auto seen = std::make_shared<recorder>();
  // The callback holds the last reference; the clock goes away on its own thread.
  clock->schedule_after(1ms, [seen, keep = clock] { seen->add(1); });
  clock.reset();

  EXPECT_EQ(seen->wait_for(1), (std::vector<int>{1}));
  const auto deadline = std::chrono::steady_clock::now() + dilated(3s);
  while (!weak.expired() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_TRUE(weak.expired());
}

}  // namespace
