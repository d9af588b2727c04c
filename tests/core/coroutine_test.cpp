// ctest-labels: concurrency
// Coroutine handlers (async_actor): turn-based across co_await, every other actor keeps running,
// replies and asks work after an await, Asio I/O objects run on the actor's executor, and
// stopping cancels the wait.
#include <troupe/core/actor_system.hpp>
#include <troupe/core/async_actor.hpp>
#include <troupe/testkit/deterministic.hpp>
#include <troupe/testkit/test_probe.hpp>

#include "core/scheduler_test_actors.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::testkit::test_probe;

using events = troupe::actor_ref<std::string>;

struct job {
  int n;
  troupe::duration wait;
};

/// Reports "start <n>", awaits sleep_for(wait), reports "end <n>"; on a cancelled wait reports
/// "cancelled <n>"; reports "post_stop".
class sleeper final : public troupe::async_actor<job> {
 public:
  explicit sleeper(events ev) : events_(std::move(ev)) {}

 private:
  void post_stop() override { events_.tell("post_stop"); }
  boost::asio::awaitable<void> receive(job j) override {
    events_.tell("start " + std::to_string(j.n));
    try {
      co_await troupe::sleep_for(j.wait);
    } catch (const boost::system::system_error& e) {
      events_.tell(std::string(e.code() == boost::asio::error::operation_aborted ? "cancelled "
                                                                                 : "failed ") +
                   std::to_string(j.n));
      throw;
    }
    events_.tell("end " + std::to_string(j.n));
  }

  events events_;
};

/// Answers n with n + 1, at once.
class echo final : public troupe::actor<int> {
  void receive(int& n) override { context().reply(n + 1); }
};

/// Answers n with 2n after awaiting `wait` (twice, to cross two suspensions).
class slow_doubler final : public troupe::async_actor<int> {
 public:
  explicit slow_doubler(troupe::duration wait) : wait_(wait) {}

 private:
  boost::asio::awaitable<void> receive(int n) override {
    co_await troupe::sleep_for(wait_);
    co_await troupe::sleep_for(wait_);
    context().reply(2 * n);
  }

  troupe::duration wait_;
};

// -- one message at a time ------------------------------------------------------------------------

TEST(CoroutineActor, HandlesOneMessageAtATimeAcrossCoAwait) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> ev(ds.system(), "events");
  auto s = ds.system().spawn<sleeper>("sleeper", ev.ref());
  s.tell(job{1, 100ms});
  s.tell(job{2, 100ms});

  EXPECT_EQ(ev.expect_message(), "start 1");
  ev.expect_no_message(1ms);  // job 2 waits although job 1 is suspended
  ds.advance(100ms);
  EXPECT_EQ(ev.expect_message(), "end 1");
  EXPECT_EQ(ev.expect_message(), "start 2");
  ev.expect_no_message(1ms);
  ds.advance(100ms);
  EXPECT_EQ(ev.expect_message(), "end 2");
}

TEST(CoroutineActor, HandlesOneMessageAtATimeOnWorkerThreads) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  test_probe<std::string> ev(system, "events");
  auto s = system.spawn<sleeper>("sleeper", ev.ref());
  for (int n = 1; n <= 5; ++n) s.tell(job{n, 1ms});

  for (int n = 1; n <= 5; ++n) {
    EXPECT_EQ(ev.expect_message(), "start " + std::to_string(n));
    EXPECT_EQ(ev.expect_message(), "end " + std::to_string(n));
  }
}

TEST(CoroutineActor, OtherActorsKeepRunningWhileSomeAwait) {
  auto clock = std::make_shared<troupe::manual_clock>();
  troupe::actor_system system(troupe::system_config{}.with_workers(2).with_clock(clock));
  test_probe<std::string> ev(system, "events");
  test_probe<int> replies(system, "replies");
  // More awaiting actors than workers: an await holds no thread.
  std::vector<troupe::actor_ref<job>> sleepers;
  for (int n = 0; n < 4; ++n) {
    sleepers.push_back(system.spawn<sleeper>("sleeper-" + std::to_string(n), ev.ref()));
    sleepers.back().tell(job{n, 1h});
  }
  for (int n = 0; n < 4; ++n) (void)ev.expect_message();  // every one has started
  auto e = system.spawn<echo>("echo");

  for (int n = 0; n < 10; ++n) {
    e.tell(n, replies.untyped());
    EXPECT_EQ(replies.expect_message(), n + 1);
  }

  // A sleeper tells "start" just before it arms its timer: wait until all four are armed.
  troupe::testkit::await_condition([&] { return clock->pending() == 4; }, 3s, "four armed timers");
  clock->advance(1h);
  for (int n = 0; n < 4; ++n) EXPECT_EQ(ev.expect_message().substr(0, 4), "end ");
}

// -- replies and asks after co_await --------------------------------------------------------------

TEST(CoroutineActor, ReplyAfterCoAwaitGoesToTheSenderOfTheMessageBeingHandled) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  test_probe<int> alice(system, "alice");
  test_probe<int> bob(system, "bob");
  auto d = system.spawn<slow_doubler>("doubler", troupe::duration(1ms));

  d.tell(1, alice.untyped());
  d.tell(2, bob.untyped());  // queued while the first handler awaits

  EXPECT_EQ(alice.expect_message(), 2);
  EXPECT_EQ(bob.expect_message(), 4);
  alice.expect_no_message(5ms);
}

TEST(CoroutineActor, AnAskFromAPlainThreadIsAnsweredAfterCoAwait) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  auto d = system.spawn<slow_doubler>("doubler", troupe::duration(1ms));

  auto answer = d.ask<int>(21, troupe::testkit::dilated(3s), troupe::use_future);

  ASSERT_EQ(answer.wait_for(troupe::testkit::dilated(3s)), std::future_status::ready);
  EXPECT_EQ(answer.get(), 42);
}

struct ask_echo {
  troupe::actor_ref<int> to;
  int n;
};

/// Asks `to` from inside its coroutine handler and reports the answer, or the error.
class asker final : public troupe::async_actor<ask_echo> {
 public:
  explicit asker(events ev) : events_(std::move(ev)) {}

 private:
  boost::asio::awaitable<void> receive(ask_echo q) override {
    try {
      const int answer = co_await q.to.ask<int>(q.n, 3s);
      events_.tell("answer " + std::to_string(answer));
    } catch (const troupe::error& e) {
      events_.tell(std::string("error ") + (e.value() == troupe::errc::recipient_terminated
                                                ? "recipient_terminated"
                                                : e.what()));
    }
  }

  events events_;
};

TEST(CoroutineActor, AsksAnotherActorFromInsideTheHandler) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  test_probe<std::string> ev(system, "events");
  auto e = system.spawn<echo>("echo");
  auto a = system.spawn<asker>("asker", ev.ref());

  a.tell(ask_echo{e, 41});
  a.tell(ask_echo{e, 1});

  EXPECT_EQ(ev.expect_message(), "answer 42");
  EXPECT_EQ(ev.expect_message(), "answer 2");
}

TEST(CoroutineActor, AnAskToAStoppedActorFailsInsideTheHandler) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  test_probe<std::string> ev(system, "events");
  auto e = system.spawn<echo>("echo");
  ev.watch(e);
  system.stop(e);
  ev.expect_terminated(e);
  auto a = system.spawn<asker>("asker", ev.ref());

  a.tell(ask_echo{e, 1});

  EXPECT_EQ(ev.expect_message(), "error recipient_terminated");
}

// -- Asio inside the handler ----------------------------------------------------------------------

struct timer_question {};

/// Awaits an asio::steady_timer made on the coroutine's own executor, then replies whether that
/// executor's context is the system's io_context.
class asio_user final : public troupe::async_actor<timer_question> {
  boost::asio::awaitable<void> receive(timer_question /*unused*/) override {
    auto ex = co_await boost::asio::this_coro::executor;
    boost::asio::steady_timer timer(ex, 1ms);
    co_await timer.async_wait(boost::asio::use_awaitable);
    auto& ctx = boost::asio::query(ex, boost::asio::execution::context);
    const bool same =
        &ctx == static_cast<boost::asio::execution_context*>(&context().system().io_context());
    // Still inside the actor's turn: the runtime's in-turn services work.
    co_await troupe::sleep_for(1ms);
    context().reply(std::string(same ? "system io_context" : "another context"));
  }
};

TEST(CoroutineActor, AsioSteadyTimerOnTheCoroutinesExecutorWorks) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  test_probe<std::string> replies(system, "replies");
  auto a = system.spawn<asio_user>("asio");

  a.tell(timer_question{}, replies.untyped());

  EXPECT_EQ(replies.expect_message(), "system io_context");
}

// -- handlers started inside the turn -------------------------------------------------------------

/// Replies n + 1; awaits sleep_for(0) first only for odd n, so the messages alternate between
/// handlers that end at once and handlers that end in a later turn.
class sometimes_waiting final : public troupe::async_actor<int> {
 private:
  boost::asio::awaitable<void> receive(int n) override {
    if (n % 2 != 0) co_await troupe::sleep_for(troupe::duration::zero());
    context().reply(n + 1);
  }
};

TEST(CoroutineActor, HandlersThatNeverAwaitKeepOrderAndRepliesWithThoseThatDo) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  test_probe<int> replies(system, "replies");
  auto a = system.spawn<sometimes_waiting>("sometimes");
  for (int n = 0; n < 200; ++n) a.tell(n, replies.untyped());

  for (int n = 0; n < 200; ++n) EXPECT_EQ(replies.expect_message(), n + 1);
}

/// Appends each message to a log after a wait on the system clock, then tells the log's length.
class ordered_log final : public troupe::async_actor<int> {
 public:
  explicit ordered_log(troupe::actor_ref<std::string> out) : out_(std::move(out)) {}

 private:
  boost::asio::awaitable<void> receive(int n) override {
    co_await troupe::sleep_for(std::chrono::microseconds(n % 3 == 0 ? 0 : 200));
    log_ += std::to_string(n) + ",";
    if (n == 99) out_.tell(log_);
  }

  troupe::actor_ref<std::string> out_;
  std::string log_;
};

TEST(CoroutineActor, MessagesKeepTheirOrderAcrossAwaitsOnTheRealClock) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  test_probe<std::string> out(system, "out");
  auto a = system.spawn<ordered_log>("log", out.ref());
  std::string expected;
  for (int n = 0; n < 100; ++n) {
    a.tell(n);
    expected += std::to_string(n) + ",";
  }

  EXPECT_EQ(out.expect_message(), expected);
}

/// A plain actor that waits with a callback token: the callback runs inside its own turn.
class callback_sleeper final : public troupe::actor<int> {
 public:
  explicit callback_sleeper(events ev) : events_(std::move(ev)) {}

 private:
  void receive(int& n) override {
    troupe::sleep_for(std::chrono::milliseconds(n), [this, n](boost::system::error_code ec) {
      const bool inside = troupe::detail::current_cell() == &context().cell();
      events_.tell("woke " + std::to_string(n) + (ec ? " with error" : "") +
                   (inside ? " inside the turn" : " elsewhere"));
    });
  }

  events events_;
};

TEST(CoroutineActor, SleepForWithACallbackCompletesInsideTheActorsTurn) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> ev(ds.system(), "events");
  auto a = ds.system().spawn<callback_sleeper>("sleeper", ev.ref());
  a.tell(20);
  a.tell(10);
  ds.run();
  ASSERT_EQ(ds.clock().pending(), 2u);

  ds.advance(15ms);
  EXPECT_EQ(ev.expect_message(), "woke 10 inside the turn");
  ds.advance(10ms);
  EXPECT_EQ(ev.expect_message(), "woke 20 inside the turn");
}

// -- stopping while awaiting ----------------------------------------------------------------------

TEST(CoroutineActor, StoppingWhileTheHandlerAwaitsCancelsTheWaitAndTerminates) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> ev(ds.system(), "events");
  auto s = ds.system().spawn<sleeper>("sleeper", ev.ref());
  s.tell(job{1, 1h});
  s.tell(job{2, 1h});
  EXPECT_EQ(ev.expect_message(), "start 1");
  ev.watch(s);

  ds.system().stop(s);

  EXPECT_EQ(ev.expect_message(), "cancelled 1");
  EXPECT_EQ(ev.expect_message(), "post_stop");
  ev.expect_terminated(s);
  EXPECT_EQ(ds.clock().pending(), 0u);  // the sleep's timer is gone too
  ev.expect_no_message(1ms);            // job 2 never started
}

TEST(CoroutineActor, StoppingWhileTheHandlerAwaitsOnWorkerThreadsTerminatesAtOnce) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  test_probe<std::string> ev(system, "events");
  auto s = system.spawn<sleeper>("sleeper", ev.ref());
  s.tell(job{1, 1h});  // the real clock: only a cancel ends this wait in time
  EXPECT_EQ(ev.expect_message(), "start 1");
  ev.watch(s);

  system.stop(s);

  EXPECT_EQ(ev.expect_message(), "cancelled 1");
  EXPECT_EQ(ev.expect_message(), "post_stop");
  ev.expect_terminated(s);
}

/// Sleeps `wait` per message and reports how long the sleep really took, in microseconds.
class timed_sleeper final : public troupe::async_actor<troupe::duration> {
 public:
  explicit timed_sleeper(troupe::actor_ref<std::int64_t> out) : out_(std::move(out)) {}

 private:
  boost::asio::awaitable<void> receive(troupe::duration wait) override {
    const auto start = std::chrono::steady_clock::now();
    co_await troupe::sleep_for(wait);
    out_.tell(std::chrono::duration_cast<std::chrono::microseconds>(
                  std::chrono::steady_clock::now() - start)
                  .count());
  }

  troupe::actor_ref<std::int64_t> out_;
};

/// Keeps its worker busy for `busy` per message (no await).
class hog final : public troupe::actor<troupe::duration> {
  void receive(troupe::duration& busy) override {
    const auto until = std::chrono::steady_clock::now() + busy;
    while (std::chrono::steady_clock::now() < until) {
    }
  }
};

TEST(CoroutineActor, SleepsOnWorkerTimersNeverEndEarlyAndAllEndWhileAWorkerIsBusy) {
  // Sleeps arm timers on the worker running the handler; a worker stuck in a long turn leaves
  // its due timers to the other one.
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  test_probe<std::int64_t> took(system, "took");
  auto busy = system.spawn<hog>("hog");
  std::vector<troupe::actor_ref<troupe::duration>> sleepers;
  for (int i = 0; i < 50; ++i) {
    sleepers.push_back(system.spawn<timed_sleeper>("s" + std::to_string(i), took.ref()));
  }
  for (int round = 0; round < 4; ++round) {
    busy.tell(troupe::duration(20ms));
    for (auto& s : sleepers) s.tell(troupe::duration(2ms));
  }
  for (int i = 0; i < 50 * 4; ++i) {
    EXPECT_GE(took.expect_message(troupe::testkit::dilated(5s)), 2'000);
  }
}

/// Holds its worker in one turn until `done` or the deadline; reports whether `done` came.
class turn_holder final : public troupe::actor<int> {
 public:
  turn_holder(const std::atomic<bool>* done, std::chrono::steady_clock::time_point deadline,
              troupe::actor_ref<bool> out)
      : done_(done), deadline_(deadline), out_(std::move(out)) {}

 private:
  void receive(int& /*unused*/) override {
    while (!done_->load() && std::chrono::steady_clock::now() < deadline_) {
    }
    out_.tell(done_->load());
  }
  const std::atomic<bool>* done_;
  std::chrono::steady_clock::time_point deadline_;
  troupe::actor_ref<bool> out_;
};

/// Wakes `holder` (which then runs next on this worker), sleeps 1 ms, then sets `done`.
class sleep_then_release final : public troupe::async_actor<int> {
 public:
  sleep_then_release(std::atomic<bool>* done, troupe::actor_ref<int> holder)
      : done_(done), holder_(std::move(holder)) {}

 private:
  boost::asio::awaitable<void> receive(int /*unused*/) override {
    holder_.tell(0);
    co_await troupe::sleep_for(1ms);
    done_->store(true);
  }
  std::atomic<bool>* done_;
  troupe::actor_ref<int> holder_;
};

TEST(CoroutineActor, ASleepOnAWorkerHeldByALongTurnEndsWhileTheOtherWorkerIsBusyToo) {
  // The sleep's timer is on the worker the holder then keeps; the other worker never idles (the
  // pinger's turns follow one another), so only a look at overdue timers between its turns can
  // end the sleep. Without it, the holder would keep its worker until the deadline.
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  test_probe<bool> released(system, "released");
  std::atomic<bool> done{false};
  const auto deadline = std::chrono::steady_clock::now() + troupe::testkit::dilated(10s);
  auto pinger = system.spawn<troupe::test::busy_loop>("pinger", &done, deadline);
  pinger.tell(0);
  auto holder = system.spawn<turn_holder>("holder", &done, deadline, released.ref());
  auto sleeper = system.spawn<sleep_then_release>("sleeper", &done, holder);
  sleeper.tell(0);
  EXPECT_TRUE(released.expect_message(troupe::testkit::dilated(20s)));
}

/// Awaits short sleeps one after another until `stop`: its worker fires a timer on most passes.
class ticking_sleeper final : public troupe::async_actor<int> {
 public:
  explicit ticking_sleeper(const std::atomic<bool>* stop) : stop_(stop) {}

 private:
  boost::asio::awaitable<void> receive(int /*unused*/) override {
    while (!stop_->load()) co_await troupe::sleep_for(std::chrono::microseconds(20));
  }
  const std::atomic<bool>* stop_;
};

/// Keeps a backlog of `backlog` messages to itself (every turn uses its whole budget) until
/// `stop` or the deadline; its first message wakes `other`.
class backlogged final : public troupe::actor<int> {
 public:
  backlogged(const std::atomic<bool>* stop, std::chrono::steady_clock::time_point deadline,
             troupe::actor_ref<int> other)
      : stop_(stop), deadline_(deadline), other_(std::move(other)) {}

 private:
  void receive(int& n) override {
    if (n == 0) other_.tell(0);
    if (!stop_->load() && std::chrono::steady_clock::now() < deadline_) self().tell(n + 1);
  }
  const std::atomic<bool>* stop_;
  std::chrono::steady_clock::time_point deadline_;
  troupe::actor_ref<int> other_;
};

TEST(CoroutineActor, AnActorWokenBehindOnesThatKeepTheirPlaceStillGetsATurn) {
  // One worker. Sleep completions keep pushing the backlogged actor out of the next slot, and
  // each time, mid-way, it goes to the front of the queue; the reporter, woken by it, waits
  // behind. Now and then the queue's back must go first, or the reporter waits for the deadline.
  troupe::actor_system system(troupe::system_config{}.with_workers(1));
  test_probe<bool> on_time(system, "on-time");
  std::atomic<bool> stop{false};
  const auto deadline = std::chrono::steady_clock::now() + troupe::testkit::dilated(10s);
  for (int i = 0; i < 4; ++i) {
    system.spawn<ticking_sleeper>("ticker" + std::to_string(i), &stop).tell(0);
  }
  auto reporter =
      system.spawn<troupe::test::stop_reporter>("reporter", &stop, deadline, on_time.ref());
  auto busy = system.spawn<backlogged>("backlogged", &stop, deadline, reporter);
  for (int i = 0; i < 300; ++i) busy.tell(i);
  EXPECT_TRUE(on_time.expect_message(troupe::testkit::dilated(20s)));
}

}  // namespace
