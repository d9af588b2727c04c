// ctest-labels: concurrency
// What the SQLite and PostgreSQL writers share (src/persistence/group_commit/): a task keeps its
// outcome until it is completed and tells a refusal from a failure, the queue hands out groups in
// order and refuses tasks once closed, and the completer completes batches in order, all of them
// before it is gone.
#include <troupe/persistence/errc.hpp>

#include "persistence/group_commit/completer.hpp"
#include "persistence/group_commit/task.hpp"
#include "persistence/group_commit/task_queue.hpp"
#include "persistence/group_commit/writer_loop.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

namespace tp = troupe::persistence;
namespace gc = troupe::persistence::group_commit;

/// What a test task runs on: the values it may return or the failure it throws.
struct context {
  int value = 0;
  std::exception_ptr failure;
};

using test_task = gc::task<context>;

/// Where the tasks' callers write down how they were completed.
struct outcomes {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> seen;
  void add(std::string s) {
    {
      std::scoped_lock lock(mutex);
      seen.push_back(std::move(s));
    }
    changed.notify_all();
  }
  /// Waits (10 s at most) until `n` callers were completed; false if they were not.
  bool wait_for(std::size_t n) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(10), [&] { return seen.size() >= n; });
  }
  std::vector<std::string> snapshot() {
    std::scoped_lock lock(mutex);
    return seen;
  }
};

std::string describe(const std::exception_ptr& e, int value) {
  if (!e) return std::to_string(value);
  try {
    std::rethrow_exception(e);
  } catch (const tp::persistence_error& x) {
    return "error " + std::to_string(static_cast<int>(x.value()));
  }
}

/// A task named `name` whose caller (a plain callback: completed inline) reports to `out`.
std::unique_ptr<test_task> make(outcomes& out, std::string name) {
  auto body = [](context& c) {
    if (c.failure) std::rethrow_exception(c.failure);
    return c.value;
  };
  tp::completion<int> done = [&out, name](std::exception_ptr e, int v) {
    out.add(name + ":" + describe(e, v));
  };
  return std::make_unique<gc::typed_task<test_task, int, tp::completion<int>, decltype(body)>>(
      std::move(done), body);
}

std::exception_ptr failure(tp::errc code) {
  return std::make_exception_ptr(tp::persistence_error(code, "test"));
}

TEST(GroupCommitTask, KeepsTheOutcomeOfItsLastRunUntilCompleted) {
  outcomes out;
  auto t = make(out, "a");
  context c{7, failure(tp::errc::sequence_conflict)};
  EXPECT_FALSE(t->run(c));
  EXPECT_TRUE(t->refused_cleanly());
  c.failure = nullptr;
  EXPECT_TRUE(t->run(c));  // a group redone: the new run replaces the outcome
  EXPECT_TRUE(out.seen.empty());
  t->complete();
  EXPECT_EQ(out.seen, (std::vector<std::string>{"a:7"}));
}

TEST(GroupCommitTask, TellsARefusalFromAFailureAndCanBeFailedAfterwards) {
  outcomes out;
  auto refused = make(out, "refused");
  auto failed = make(out, "failed");
  context conflict{0, failure(tp::errc::revision_conflict)};
  context broken{0, failure(tp::errc::store_failure)};
  EXPECT_FALSE(refused->run(conflict));
  EXPECT_FALSE(failed->run(broken));
  EXPECT_TRUE(refused->refused_cleanly());
  EXPECT_FALSE(failed->refused_cleanly());
  // The transaction did not commit: both callers learn why, whatever their own outcome was.
  refused->fail(failure(tp::errc::store_closed));
  refused->complete();
  failed->complete();
  EXPECT_EQ(out.seen,
            (std::vector<std::string>{
                "refused:error " + std::to_string(static_cast<int>(tp::errc::store_closed)),
                "failed:error " + std::to_string(static_cast<int>(tp::errc::store_failure))}));
}

TEST(GroupCommitQueue, HandsOutGroupsInOrderAndDrainsAfterClosing) {
  outcomes out;
  gc::task_queue<test_task> queue("test store");
  for (int i = 0; i < 5; ++i) queue.submit(make(out, std::to_string(i)));
  std::deque<std::unique_ptr<test_task>> group;
  ASSERT_TRUE(queue.take(group, 3));
  EXPECT_EQ(group.size(), 3U);
  queue.close();
  queue.submit(make(out, "late"));  // completed at once, refused
  EXPECT_EQ(out.seen, (std::vector<std::string>{"late:error " + std::to_string(static_cast<int>(
                                                                    tp::errc::store_closed))}));
  group.clear();
  ASSERT_TRUE(queue.take(group, 10));  // what was queued before closing is still handed out
  EXPECT_EQ(group.size(), 2U);
  group.clear();
  EXPECT_FALSE(queue.take(group, 10));
}

std::string overloaded(const std::string& name) {
  return name + ":error " + std::to_string(static_cast<int>(tp::errc::overloaded));
}

TEST(GroupCommitQueue, RefusesTasksBeyondItsBoundWithOverloadedAndKeepsTheRest) {
  outcomes out;
  gc::task_queue<test_task> queue("test store", 3);
  for (int i = 0; i < 5; ++i) queue.submit(make(out, std::to_string(i)));
  // The two beyond the bound are completed at once; the three queued are untouched.
  EXPECT_EQ(out.seen, (std::vector<std::string>{overloaded("3"), overloaded("4")}));
  EXPECT_EQ(queue.overloaded(), 2U);
  std::deque<std::unique_ptr<test_task>> group;
  ASSERT_TRUE(queue.take(group, 10));
  ASSERT_EQ(group.size(), 3U);
  context c{1, nullptr};
  for (auto& t : group) {
    ASSERT_TRUE(t->run(c));
    t->complete();
  }
  EXPECT_EQ(out.seen,
            (std::vector<std::string>{overloaded("3"), overloaded("4"), "0:1", "1:1", "2:1"}));
  // Drained, it takes tasks again.
  group.clear();
  queue.submit(make(out, "again"));
  ASSERT_TRUE(queue.take(group, 10));
  EXPECT_EQ(group.size(), 1U);
}

TEST(GroupCommitWriter, AFullQueueRefusesTheExcessWhileTheWriterIsHeldAndLosesNothingElse) {
  outcomes out;
  std::mutex mutex;
  std::condition_variable changed;
  bool writing = false;
  bool released = false;
  std::vector<std::size_t> group_sizes;
  {
    gc::writer_loop<test_task> loop("test store", 100, 4, [&](auto& group) {
      std::unique_lock lock(mutex);
      writing = true;
      group_sizes.push_back(group.size());
      changed.notify_all();
      // The first group holds the writer until the test lets it go.
      changed.wait(lock, [&] { return released; });
      context c{static_cast<int>(group_sizes.size()), nullptr};
      for (auto& t : group) t->run(c);
    });
    loop.submit(make(out, "held"));
    {
      std::unique_lock lock(mutex);
      ASSERT_TRUE(changed.wait_for(lock, std::chrono::seconds(10), [&] { return writing; }));
    }
    // The writer holds "held"; four more fill the queue, the next two are refused at once.
    for (int i = 0; i < 6; ++i) loop.submit(make(out, "q" + std::to_string(i)));
    EXPECT_EQ(out.snapshot(), (std::vector<std::string>{overloaded("q4"), overloaded("q5")}));
    {
      std::scoped_lock lock(mutex);
      released = true;
    }
    changed.notify_all();
    ASSERT_TRUE(out.wait_for(7));
    // Drained: the queue takes writes again.
    loop.submit(make(out, "after"));
    ASSERT_TRUE(out.wait_for(8));
  }
  EXPECT_EQ(out.snapshot(), (std::vector<std::string>{overloaded("q4"), overloaded("q5"), "held:1",
                                                      "q0:2", "q1:2", "q2:2", "q3:2", "after:3"}));
  EXPECT_EQ(group_sizes, (std::vector<std::size_t>{1, 4, 1}));
}

TEST(GroupCommitCompleter, CompletesBatchesInOrderAndAllOfThemBeforeItIsGone) {
  outcomes out;
  {
    gc::completer<test_task> completer;
    for (int b = 0; b < 20; ++b) {
      std::deque<std::unique_ptr<test_task>> batch;
      for (int i = 0; i < 50; ++i) {
        auto t = make(out, std::to_string(b * 50 + i));
        context c{b * 50 + i, nullptr};
        ASSERT_TRUE(t->run(c));
        batch.push_back(std::move(t));
      }
      completer.hand_over(std::move(batch));
    }
  }
  ASSERT_EQ(out.seen.size(), 1000U);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(out.seen[static_cast<std::size_t>(i)], std::to_string(i) + ":" + std::to_string(i));
  }
}

}  // namespace
