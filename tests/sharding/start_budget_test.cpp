// The rate at which one type's shards start their remembered entities together: a token bucket
// holding a tenth of a second's worth, refilled continuously.
#include <troupe/sharding/remembered_entities.hpp>

#include <gtest/gtest.h>

#include <chrono>

namespace {

using namespace std::chrono_literals;
using troupe::sharding::start_budget;

const troupe::time_point t0 = troupe::time_point{} + 1h;

TEST(StartBudget, GivesATenthOfASecondsWorthAtOnceThenRefillsAtItsRate) {
  start_budget budget(100);
  EXPECT_EQ(budget.take(50, t0), 10U);
  EXPECT_EQ(budget.take(50, t0), 0U);
  EXPECT_EQ(budget.take(50, t0 + 50ms), 5U);
  EXPECT_EQ(budget.take(2, t0 + 80ms), 2U);
  EXPECT_EQ(budget.take(50, t0 + 10s), 10U) << "never more than its capacity";
}

TEST(StartBudget, IsSharedSoTwoShardsTogetherGetTheRateNotEachOfThem) {
  start_budget budget(100);
  const auto first = budget.take(8, t0);
  const auto second = budget.take(8, t0);
  EXPECT_EQ(first + second, 10U);
  std::size_t in_a_second = 0;
  for (int ms = 10; ms <= 1000; ms += 10) {
    in_a_second += budget.take(100, t0 + std::chrono::milliseconds(ms));
  }
  EXPECT_EQ(in_a_second, 100U);
}

TEST(StartBudget, AlwaysAllowsOneStartEvenAtTheSmallestRate) {
  start_budget budget(1);
  EXPECT_EQ(budget.take(5, t0), 1U);
  EXPECT_EQ(budget.take(5, t0 + 500ms), 0U);
  EXPECT_EQ(budget.take(5, t0 + 1s), 1U);
}

TEST(StartBudget, IgnoresAClockThatGoesBack) {
  start_budget budget(100);
  EXPECT_EQ(budget.take(10, t0), 10U);
  EXPECT_EQ(budget.take(10, t0 - 1s), 0U);
  EXPECT_EQ(budget.take(10, t0 + 100ms), 10U);
}

}  // namespace
