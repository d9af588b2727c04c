// ctest-labels: concurrency
// Ask: request-reply with a one-shot reply target, from coroutines (awaitable) and plain threads
// (std::future); timeouts on a manual clock; failing at once when the question cannot be answered.
#include <troupe/core/actor_system.hpp>
#include <troupe/core/async_actor.hpp>
#include <troupe/core/metrics.hpp>
#include <troupe/testkit/metric_values.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <boost/asio/awaitable.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::actor_ref;
using troupe::actor_system;
using troupe::errc;
using troupe::system_config;
using troupe::untyped_ref;
using troupe::testkit::dilated;
using troupe::testkit::test_probe;

system_config small_config() { return system_config{}.with_name("ask").with_workers(2); }

/// Exceptions the test has seen, kept until the workers are joined: a worker drops its copy of
/// a failed ask's exception_ptr after completing the future, and ThreadSanitizer cannot see the
/// (uninstrumented) libstdc++ reference count that orders our reads before that thread's free.
struct kept_errors {
  std::vector<std::exception_ptr> errors;
};

/// A system whose asks can only time out when the test advances its clock.
struct manual_time : kept_errors {
  std::shared_ptr<troupe::manual_clock> clock = std::make_shared<troupe::manual_clock>();
  actor_system system{small_config().with_clock(clock)};
};

/// Waits (with a deadline, never forever) for a future and returns the errc it failed with;
/// fails the test when it completed with a value or did not complete in time.
template <class T>
std::optional<errc> failure_of(std::future<T>& f, kept_errors& keep) {
  if (f.wait_for(dilated(3s)) != std::future_status::ready) {
    ADD_FAILURE() << "the ask did not complete within the deadline";
    return std::nullopt;
  }
  try {
    (void)f.get();
    ADD_FAILURE() << "the ask succeeded but was expected to fail";
  } catch (const troupe::error& e) {
    keep.errors.push_back(std::current_exception());
    return e.value();
  }
  return std::nullopt;
}

// -- the actors asked ----------------------------------------------------------------------------

struct question {
  int n;
};

/// Answers a question with twice its number.
class doubler final : public troupe::actor<question> {
  void receive(question& q) override { context().reply(q.n * 2); }
};

/// Never answers.
class mute final : public troupe::actor<question> {
  void receive(question& /*unused*/) override {}
};

/// Hears every question (telling `heard` its number) and answers none.
class silent final : public troupe::actor<question> {
 public:
  explicit silent(actor_ref<int> heard) : heard_(std::move(heard)) {}

 private:
  void receive(question& q) override { heard_.tell(q.n); }
  actor_ref<int> heard_;
};

/// Answers with a string where an int is expected.
class wrong_type final : public troupe::actor<question> {
  void receive(question& q) override { context().reply(std::to_string(q.n)); }
};

/// Akka-typed protocol: the message carries its reply ref.
struct get_balance {
  std::string account;
  actor_ref<int> reply_to;
};
class bank final : public troupe::actor<get_balance> {
  void receive(get_balance& g) override { g.reply_to.tell(static_cast<int>(g.account.size())); }
};

/// Blocks inside its first message until the test opens the gate; tells the probe it started.
struct gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  void release() {
    {
      std::lock_guard lock(mutex);
      open = true;
    }
    cv.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex);
    cv.wait_for(lock, dilated(5s), [this] { return open; });
  }
};
struct block {};
using blocker_msg = std::variant<block, question>;
class blocker final : public troupe::actor<blocker_msg> {
 public:
  blocker(std::shared_ptr<gate> g, actor_ref<std::string> started)
      : gate_(std::move(g)), started_(std::move(started)) {}

 private:
  void receive(blocker_msg& msg) override {
    if (std::holds_alternative<block>(msg)) {
      started_.tell("blocked");
      gate_->wait();
    } else {
      context().reply(std::get<question>(msg).n);
    }
  }
  std::shared_ptr<gate> gate_;
  actor_ref<std::string> started_;
};

// -- asking from a plain thread -------------------------------------------------------------------

TEST(Ask, WithUseFutureFromAPlainThreadCompletesWithTheReply) {
  actor_system system(small_config());
  auto d = system.spawn<doubler>("doubler");

  auto reply = d.ask<int>(question{21}, dilated(3s), troupe::use_future);
  ASSERT_EQ(reply.wait_for(dilated(3s)), std::future_status::ready);
  EXPECT_EQ(reply.get(), 42);
}

TEST(Ask, ManyConcurrentAsksEachGetTheirOwnReply) {
  actor_system system(small_config());
  auto d = system.spawn<doubler>("doubler");

  std::vector<std::future<int>> replies;
  for (int i = 0; i < 100; ++i) {
    replies.push_back(d.ask<int>(question{i}, dilated(3s), troupe::use_future));
  }
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(replies[i].wait_for(dilated(3s)), std::future_status::ready);
    EXPECT_EQ(replies[i].get(), 2 * i);
  }
}

TEST(Ask, TheAkkaTypedFormBuildsTheMessageFromTheReplyRef) {
  actor_system system(small_config());
  auto b = system.spawn<bank>("bank");

  auto reply = b.ask<int>(
      [](actor_ref<int> reply_to) {
        return get_balance{.account = "account-7", .reply_to = std::move(reply_to)};
      },
      dilated(3s), troupe::use_future);
  ASSERT_EQ(reply.wait_for(dilated(3s)), std::future_status::ready);
  EXPECT_EQ(reply.get(), 9);
}

TEST(Ask, AProbeAnswersWithReply) {
  actor_system system(small_config());
  test_probe<question> probe(system);

  auto reply = probe.ref().ask<int>(question{1}, dilated(3s), troupe::use_future);
  EXPECT_EQ(probe.expect_message().n, 1);
  EXPECT_EQ(probe.last_sender().path(), "/temp/ask(/temp/probe)");
  probe.reply(7);
  ASSERT_EQ(reply.wait_for(dilated(3s)), std::future_status::ready);
  EXPECT_EQ(reply.get(), 7);
}

// -- asking from a coroutine ----------------------------------------------------------------------

struct ask_doubler {
  actor_ref<question> target;
  int n;
};
struct ask_mute {
  actor_ref<question> target;
  troupe::duration timeout = std::chrono::seconds(10);
};
using asker_msg = std::variant<ask_doubler, ask_mute>;

/// Asks with the default token (an awaitable) and reports the reply or the error to a probe.
class asker final : public troupe::async_actor<asker_msg> {
 public:
  explicit asker(actor_ref<std::string> out) : out_(std::move(out)) {}

 private:
  boost::asio::awaitable<void> receive(asker_msg msg) override {
    if (auto* a = std::get_if<ask_doubler>(&msg)) {
      const int reply = co_await a->target.ask<int>(question{a->n}, dilated(3s));
      out_.tell("reply " + std::to_string(reply));
    } else {
      try {
        const auto& m = std::get<ask_mute>(msg);
        (void)co_await m.target.ask<int>(question{0}, m.timeout);
        out_.tell("unexpected reply");
      } catch (const troupe::error& e) {
        out_.tell(std::string("error ") + (e.value() == errc::ask_timeout ? "ask_timeout"
                                           : e.value() == errc::system_terminated
                                               ? "system_terminated"
                                               : "?"));
      }
    }
  }
  actor_ref<std::string> out_;
};

TEST(Ask, WithTheDefaultAwaitableInsideAnAsyncActorResumesWithTheReply) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto d = system.spawn<doubler>("doubler");
  auto a = system.spawn<asker>("asker", probe.ref());

  a.tell(ask_doubler{d, 4});
  a.tell(ask_doubler{d, 5});
  EXPECT_EQ(probe.expect_message(), "reply 8");
  EXPECT_EQ(probe.expect_message(), "reply 10");
}

TEST(Ask, TimeoutInsideAnAsyncActorThrowsAskTimeout) {
  manual_time t;
  test_probe<std::string> probe(t.system);
  auto m = t.system.spawn<mute>("mute");
  auto a = t.system.spawn<asker>("asker", probe.ref());

  a.tell(ask_mute{m});
  // The ask is armed once the question reached the mute actor; wait for that without sleeping.
  troupe::testkit::await_condition([&] { return t.clock->pending() == 1; }, 3s, "an armed ask");
  probe.expect_no_message(10ms);
  t.clock->advance(10s);
  EXPECT_EQ(probe.expect_message(), "error ask_timeout");
}

// -- timeouts -------------------------------------------------------------------------------------

TEST(Ask, FailsWithAskTimeoutOnceTheClockPassesTheTimeout) {
  manual_time t;
  auto m = t.system.spawn<mute>("mute");

  auto reply = m.ask<int>(question{1}, 5s, troupe::use_future);
  t.clock->advance(4s);
  EXPECT_EQ(reply.wait_for(0s), std::future_status::timeout) << "timed out too early";
  t.clock->advance(1s);
  EXPECT_EQ(failure_of(reply, t), errc::ask_timeout);
}

TEST(Ask, TimeoutMessageNamesTheRecipient) {
  manual_time t;
  auto m = t.system.spawn<mute>("mute");

  auto reply = m.ask<int>(question{1}, 250ms, troupe::use_future);
  t.clock->advance(250ms);
  ASSERT_EQ(reply.wait_for(dilated(3s)), std::future_status::ready);
  try {
    (void)reply.get();
    FAIL() << "expected a timeout";
  } catch (const troupe::error& e) {
    EXPECT_EQ(e.value(), errc::ask_timeout);
    EXPECT_NE(std::string(e.what()).find("/user/mute"), std::string::npos) << e.what();
  }
}

TEST(Ask, ACompletedAskCancelsItsTimeout) {
  manual_time t;
  auto d = t.system.spawn<doubler>("doubler");

  auto reply = d.ask<int>(question{2}, 5s, troupe::use_future);
  ASSERT_EQ(reply.wait_for(dilated(3s)), std::future_status::ready);
  EXPECT_EQ(reply.get(), 4);
  EXPECT_EQ(t.clock->pending(), 0U);
}

// -- metrics --------------------------------------------------------------------------------------

TEST(Ask, RecordsEachAsksDurationByOutcomeOnlyOnceARegistryIsAttached) {
  manual_time t;
  auto d = t.system.spawn<doubler>("doubler");
  auto m = t.system.spawn<mute>("mute");
  auto answer = [&](int n) {
    auto reply = d.ask<int>(question{n}, 5s, troupe::use_future);
    return reply.wait_for(dilated(3s)) == std::future_status::ready ? reply.get() : -1;
  };
  EXPECT_EQ(answer(1), 2);  // no registry yet: not recorded

  auto registry = std::make_shared<troupe::metrics_registry>();
  t.system.record_metrics(registry);
  EXPECT_EQ(t.system.recorded_metrics(), registry);
  EXPECT_EQ(answer(2), 4);
  auto timed_out = m.ask<int>(question{3}, 2s, troupe::use_future);
  t.clock->advance(2s);
  EXPECT_EQ(failure_of(timed_out, t), errc::ask_timeout);
  auto s = registry->collect();
  using troupe::testkit::observations;
  EXPECT_EQ(observations(s, "troupe_ask_duration_seconds", {"replied"}), 1U);
  EXPECT_EQ(observations(s, "troupe_ask_duration_seconds", {"timed_out"}), 1U);
  EXPECT_EQ(observations(s, "troupe_ask_duration_seconds", {"failed"}), 0U);
  // On the system's clock: the timeout took the two seconds the test moved it by.
  const auto* waited = troupe::testkit::find_child(s, "troupe_ask_duration_seconds", {"timed_out"});
  ASSERT_NE(waited, nullptr);
  EXPECT_EQ(waited->histogram.sum, 2.0);

  t.system.record_metrics(nullptr);  // detached: no more observations
  EXPECT_EQ(answer(3), 6);
  s = registry->collect();
  EXPECT_EQ(observations(s, "troupe_ask_duration_seconds", {"replied"}), 1U);
}

// -- failing at once ------------------------------------------------------------------------------

TEST(Ask, FailsAtOnceWhenTheRecipientIsStopped) {
  manual_time t;
  test_probe<int> probe(t.system);
  auto d = t.system.spawn<doubler>("doubler");
  probe.watch(d);
  t.system.stop(d);
  probe.expect_terminated(d);

  // The manual clock never moves, so only an immediate failure completes the future.
  auto reply = d.ask<int>(question{1}, 1h, troupe::use_future);
  EXPECT_EQ(failure_of(reply, t), errc::recipient_terminated);
}

TEST(Ask, FailsAtOnceThroughAnEmptyRef) {
  kept_errors t;
  const actor_ref<question> empty;
  auto reply = empty.ask<int>(question{1}, 1h, troupe::use_future);
  EXPECT_EQ(failure_of(reply, t), errc::recipient_terminated);
}

TEST(Ask, WhoseQuestionIsQueuedWhenTheActorStopsFailsAtOnce) {
  manual_time t;
  test_probe<std::string> probe(t.system);
  auto g = std::make_shared<gate>();
  auto b = t.system.spawn<blocker>("blocker", g, probe.ref());
  probe.watch(b);

  b.tell(block{});
  EXPECT_EQ(probe.expect_message(), "blocked");
  auto reply = b.ask<int>(question{1}, 1h, troupe::use_future);
  t.system.stop(b);
  g->release();

  EXPECT_EQ(failure_of(reply, t), errc::recipient_terminated);
  probe.expect_terminated(b);
}

TEST(Ask, WhoseQuestionIsQueuedBehindAPoisonPillFailsAtOnce) {
  manual_time t;
  test_probe<std::string> probe(t.system);
  auto g = std::make_shared<gate>();
  auto b = t.system.spawn<blocker>("blocker", g, probe.ref());

  b.tell(block{});
  EXPECT_EQ(probe.expect_message(), "blocked");
  b.tell(troupe::poison_pill{});
  auto reply = b.ask<int>(question{1}, 1h, troupe::use_future);
  g->release();

  EXPECT_EQ(failure_of(reply, t), errc::recipient_terminated);
}

TEST(Ask, WithAReplyOfTheWrongTypeFailsWithBadReplyType) {
  manual_time t;
  auto w = t.system.spawn<wrong_type>("wrong-type");

  auto reply = w.ask<int>(question{3}, 1h, troupe::use_future);
  EXPECT_EQ(failure_of(reply, t), errc::bad_reply_type);
}

TEST(Ask, OnlyTheFirstReplyCounts) {
  actor_system system(small_config());
  test_probe<question> probe(system);

  auto reply = probe.ref().ask<int>(question{1}, dilated(3s), troupe::use_future);
  (void)probe.expect_message();
  probe.reply(1);
  probe.reply(2);  // the promise is done: ignored
  ASSERT_EQ(reply.wait_for(dilated(3s)), std::future_status::ready);
  EXPECT_EQ(reply.get(), 1);
}

// -- failing handlers ----------------------------------------------------------------------------

/// Throws on every question, from a plain handler.
class thrower final : public troupe::actor<question> {
  void receive(question& /*unused*/) override { throw std::runtime_error("boom"); }
};

/// Throws on every question, from a coroutine handler.
class async_thrower final : public troupe::async_actor<question> {
  boost::asio::awaitable<void> receive(question /*unused*/) override {
    throw std::runtime_error("boom");
    co_return;
  }
};

TEST(Ask, FailsAtOnceWithActorFailedWhenThePlainHandlerThrows) {
  manual_time t;  // the clock never moves: only the failure can complete the ask
  auto a = t.system.spawn<thrower>("thrower");
  auto f = a.ask<int>(question{1}, std::chrono::hours(1), troupe::use_future);
  EXPECT_EQ(failure_of(f, t), errc::actor_failed);
}

TEST(Ask, FailsAtOnceWithActorFailedWhenTheCoroutineHandlerThrows) {
  manual_time t;
  auto a = t.system.spawn<async_thrower>("async-thrower");
  auto f = a.ask<int>(question{1}, std::chrono::hours(1), troupe::use_future);
  EXPECT_EQ(failure_of(f, t), errc::actor_failed);
}

// -- shutdown ------------------------------------------------------------------------------------
// The asked actor took the question and will never answer; the manual clock never moves, so the
// asks' 60 s timeouts never fire: only terminate() can complete them, and must, at once.

TEST(Ask, WithUseFuturePendingAtTerminateFailsAtOnceWithSystemTerminated) {
  manual_time t;
  test_probe<int> heard(t.system);
  auto s = t.system.spawn<silent>("silent", heard.ref());

  auto reply = s.ask<int>(question{1}, 60s, troupe::use_future);
  EXPECT_EQ(heard.expect_message(), 1);
  t.system.terminate();

  EXPECT_EQ(failure_of(reply, t), errc::system_terminated);  // waits 3 s at most, not 60
}

TEST(Ask, WithACallbackPendingAtTerminateFailsAtOnceWithSystemTerminated) {
  manual_time t;
  test_probe<int> heard(t.system);
  auto s = t.system.spawn<silent>("silent", heard.ref());

  std::promise<std::exception_ptr> outcome;
  auto done = outcome.get_future();
  s.ask<int>(question{1}, 60s,
             [&outcome](std::exception_ptr e, int /*unused*/) { outcome.set_value(std::move(e)); });
  EXPECT_EQ(heard.expect_message(), 1);
  t.system.terminate();

  ASSERT_EQ(done.wait_for(dilated(3s)), std::future_status::ready) << "the ask is still pending";
  const std::exception_ptr e = done.get();
  t.errors.push_back(e);
  ASSERT_TRUE(e) << "the ask succeeded";
  try {
    std::rethrow_exception(e);
  } catch (const troupe::error& err) {
    EXPECT_EQ(err.value(), errc::system_terminated) << err.what();
  }
}

TEST(Ask, AwaitedInACoroutinePendingAtTerminateFailsAtOnceWithSystemTerminated) {
  manual_time t;
  test_probe<std::string> out(t.system);
  test_probe<int> heard(t.system);
  auto s = t.system.spawn<silent>("silent", heard.ref());
  auto a = t.system.spawn<asker>("asker", out.ref());

  a.tell(ask_mute{.target = s, .timeout = 60s});
  EXPECT_EQ(heard.expect_message(), 0);
  t.system.terminate();

  EXPECT_EQ(out.expect_message(), "error system_terminated");
  // The asker could stop only once its handler returned, which the failed ask let it do.
  EXPECT_TRUE(t.system.await_termination_for(dilated(3s)));
}

TEST(Ask, StartedAfterTerminateFailsAtOnceWithSystemTerminated) {
  manual_time t;
  test_probe<int> heard(t.system);
  auto s = t.system.spawn<silent>("silent", heard.ref());
  t.system.terminate();

  auto reply = s.ask<int>(question{1}, 60s, troupe::use_future);
  EXPECT_EQ(failure_of(reply, t), errc::system_terminated);
}

// Replies race the shutdown: every ask completes exactly once (with its reply or with
// system_terminated), none stays pending, and none leaks (LeakSanitizer checks the last part).
TEST(Ask, RacingTerminateEachAskCompletesExactlyOnce) {
  constexpr int asks = 2000;
  std::vector<std::atomic<int>> completions(asks);
  std::vector<std::atomic<int>> outcomes(asks);  // 1: the reply, 2: system_terminated, 3: other
  {
    actor_system system(small_config());
    auto d = system.spawn<doubler>("doubler");
    std::thread asking([&] {
      for (int i = 0; i < asks; ++i) {
        d.ask<int>(question{i}, 60s, [&, i](std::exception_ptr e, int reply) {
          completions[i].fetch_add(1);
          int outcome = 3;
          if (!e) {
            outcome = reply == 2 * i ? 1 : 3;
          } else {
            try {
              std::rethrow_exception(e);
            } catch (const troupe::error& err) {
              if (err.value() == errc::system_terminated) outcome = 2;
            }
          }
          outcomes[i].store(outcome);
        });
      }
    });
    troupe::testkit::await_condition([&] { return completions[asks / 10].load() == 1; }, 3s,
                                     "the first replies");
    system.terminate();
    asking.join();
    troupe::testkit::await_condition(
        [&] {
          for (const auto& c : completions) {
            if (c.load() == 0) return false;
          }
          return true;
        },
        3s, "every ask completed");
  }
  int replied = 0;
  int terminated = 0;
  for (int i = 0; i < asks; ++i) {
    EXPECT_EQ(completions[i].load(), 1) << "ask " << i;
    EXPECT_NE(outcomes[i].load(), 3) << "ask " << i;
    replied += outcomes[i].load() == 1 ? 1 : 0;
    terminated += outcomes[i].load() == 2 ? 1 : 0;
  }
  EXPECT_GT(replied, 0);
  EXPECT_EQ(replied + terminated, asks);
}

}  // namespace

namespace {

// Every layer throws troupe::error; a code of another layer's category keeps its category, and
// value() (the core's code) says it has none.
TEST(Error, CarriesACodeOfAnyCategory) {
  const troupe::error core(errc::ask_timeout, "core");
  EXPECT_EQ(core.value(), errc::ask_timeout);
  EXPECT_EQ(core.code(), errc::ask_timeout);

  const troupe::error other(std::make_error_code(std::errc::io_error), "elsewhere");
  EXPECT_EQ(other.code(), std::errc::io_error);
  EXPECT_EQ(other.value(), errc{});
  EXPECT_STREQ(other.what(), "elsewhere");
}

}  // namespace
