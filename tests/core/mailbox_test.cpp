// ctest-labels: concurrency
// Bounded mailboxes: what each overflow policy does with one message too many, and that every
// message a full mailbox refuses is counted as a dead letter.
#include <troupe/core/actor_system.hpp>
#include <troupe/core/async_actor.hpp>
#include <troupe/testkit/deterministic.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <boost/asio/awaitable.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <utility>
#include <variant>

namespace {

using namespace std::chrono_literals;
using troupe::overflow_policy;
using troupe::testkit::test_probe;

struct item {
  int n;
};
/// Keeps the consumer busy (its coroutine awaits) for a while of the system's clock.
struct hold {
  troupe::duration for_;
};
/// Keeps the consumer busy (its handler blocks a worker) until the future is ready.
struct block {
  std::shared_future<void> until;
};
using consumer_msg = std::variant<item, hold, block>;

/// Reports "got <n>" for each item; holds or blocks on command.
class consumer final : public troupe::async_actor<consumer_msg> {
 public:
  explicit consumer(troupe::actor_ref<std::string> events) : events_(std::move(events)) {}

 private:
  boost::asio::awaitable<void> receive(consumer_msg msg) override {
    if (auto* i = std::get_if<item>(&msg)) events_.tell("got " + std::to_string(i->n));
    if (auto* h = std::get_if<hold>(&msg)) co_await troupe::sleep_for(h->for_);
    if (auto* b = std::get_if<block>(&msg)) {
      events_.tell("blocked");
      b->until.wait();
    }
  }

  troupe::actor_ref<std::string> events_;
};

struct produce {
  troupe::actor_ref<consumer_msg> to;
  int from;
  int count;
};

/// Sends items with `co_await send`, reporting "sending <n>", "sent <n>" or "rejected <n>",
/// and "done".
class producer final : public troupe::async_actor<produce> {
 public:
  explicit producer(troupe::actor_ref<std::string> events) : events_(std::move(events)) {}

 private:
  boost::asio::awaitable<void> receive(produce p) override {
    for (int n = p.from; n < p.from + p.count; ++n) {
      events_.tell("sending " + std::to_string(n));
      try {
        co_await p.to.send(item{n});
        events_.tell("sent " + std::to_string(n));
      } catch (const troupe::error& e) {
        events_.tell("rejected " + std::to_string(n) + ": " + e.code().message());
      }
    }
    events_.tell("done");
  }

  troupe::actor_ref<std::string> events_;
};

troupe::spawn_options bounded(const char* name, std::size_t capacity, overflow_policy policy) {
  return troupe::spawn_options(name).with_mailbox(
      troupe::mailbox_config::bounded(capacity, policy));
}

/// A deterministic system: nothing runs until the test says so, so tells fill a mailbox.
struct mailbox_fixture {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> got{ds.system(), "got"};
  test_probe<troupe::dead_letter> dead{ds.system(), "dead"};

  mailbox_fixture() { ds.system().dead_letters().subscribe(dead.ref()); }

  troupe::actor_ref<consumer_msg> spawn_consumer(std::size_t capacity, overflow_policy policy) {
    return ds.system().spawn<consumer>(bounded("consumer", capacity, policy), got.ref());
  }
  [[nodiscard]] std::uint64_t dead_count() { return ds.system().dead_letters().count(); }

  void expect_dead_letter_of_item(int n) {
    const auto d = dead.expect_message();
    EXPECT_EQ(d.reason, "mailbox full");
    EXPECT_EQ(d.code, troupe::errc::mailbox_full);
    EXPECT_EQ(d.recipient, "/user/consumer");
    const auto* msg = d.message_as<consumer_msg>();
    ASSERT_NE(msg, nullptr);
    ASSERT_TRUE(std::holds_alternative<item>(*msg));
    EXPECT_EQ(std::get<item>(*msg).n, n);
  }
};

// -- fail -------------------------------------------------------------------------------------

TEST(BoundedMailbox, FailPolicyTryTellReportsMailboxFull) {
  mailbox_fixture f;
  auto c = f.spawn_consumer(2, overflow_policy::fail);
  const auto before = f.dead_count();
  EXPECT_FALSE(c.try_tell(item{1}));
  EXPECT_FALSE(c.try_tell(item{2}));

  EXPECT_EQ(c.try_tell(item{3}), troupe::errc::mailbox_full);

  f.expect_dead_letter_of_item(3);
  EXPECT_EQ(f.dead_count(), before + 1);
  EXPECT_EQ(f.got.expect_message(), "got 1");
  EXPECT_EQ(f.got.expect_message(), "got 2");
  EXPECT_FALSE(c.try_tell(item{4}));  // room again
  EXPECT_EQ(f.got.expect_message(), "got 4");
}

TEST(BoundedMailbox, FailPolicyTellSendsTheMessageToDeadLetters) {
  mailbox_fixture f;
  auto c = f.spawn_consumer(2, overflow_policy::fail);
  const auto before = f.dead_count();
  c.tell(item{1});
  c.tell(item{2});

  c.tell(item{3});
  c.tell(item{4});

  f.expect_dead_letter_of_item(3);
  f.expect_dead_letter_of_item(4);
  EXPECT_EQ(f.dead_count(), before + 2);
  EXPECT_EQ(f.got.expect_message(), "got 1");
  EXPECT_EQ(f.got.expect_message(), "got 2");
  f.got.expect_no_message(1ms);
}

TEST(BoundedMailbox, FailPolicyFailsACoroutineSend) {
  mailbox_fixture f;
  test_probe<std::string> sent(f.ds.system(), "sent");
  auto c = f.spawn_consumer(1, overflow_policy::fail);
  auto p = f.ds.system().spawn<producer>("producer", sent.ref());
  const auto before = f.dead_count();

  p.tell(produce{c, 1, 2});

  EXPECT_EQ(sent.expect_message(), "sending 1");
  EXPECT_EQ(sent.expect_message(), "sent 1");
  EXPECT_EQ(sent.expect_message(), "sending 2");
  EXPECT_EQ(sent.expect_message(),
            "rejected 2: " + make_error_code(troupe::errc::mailbox_full).message());
  EXPECT_EQ(sent.expect_message(), "done");
  f.expect_dead_letter_of_item(2);
  EXPECT_EQ(f.dead_count(), before + 1);
}

// -- drop -------------------------------------------------------------------------------------

TEST(BoundedMailbox, DropPolicyTryTellReportsSuccessAndDeadLettersTheMessage) {
  mailbox_fixture f;
  auto c = f.spawn_consumer(2, overflow_policy::drop);
  const auto before = f.dead_count();
  c.tell(item{1});
  c.tell(item{2});

  EXPECT_FALSE(c.try_tell(item{3}));
  c.tell(item{4});

  f.expect_dead_letter_of_item(3);
  f.expect_dead_letter_of_item(4);
  EXPECT_EQ(f.dead_count(), before + 2);
  EXPECT_EQ(f.got.expect_message(), "got 1");
  EXPECT_EQ(f.got.expect_message(), "got 2");
  f.got.expect_no_message(1ms);
}

// -- suspend ----------------------------------------------------------------------------------

TEST(BoundedMailbox, SuspendPolicySendWaitsUntilTheConsumerMakesRoom) {
  mailbox_fixture f;
  test_probe<std::string> sent(f.ds.system(), "sent");
  auto c = f.spawn_consumer(2, overflow_policy::suspend);
  auto p = f.ds.system().spawn<producer>("producer", sent.ref());
  const auto before = f.dead_count();
  c.tell(hold{100ms});  // the consumer awaits; its mailbox fills up behind it
  f.ds.run();
  c.tell(item{1});
  c.tell(item{2});

  p.tell(produce{c, 3, 2});

  EXPECT_EQ(sent.expect_message(), "sending 3");
  sent.expect_no_message(1ms);  // nothing runs any more: the producer waits
  f.got.expect_no_message(1ms);
  EXPECT_EQ(c.try_tell(item{99}), troupe::errc::mailbox_full);  // plain sends cannot wait
  f.expect_dead_letter_of_item(99);

  f.ds.advance(100ms);  // the consumer's hold ends

  EXPECT_EQ(sent.expect_message(), "sent 3");
  EXPECT_EQ(sent.expect_message(), "sending 4");
  EXPECT_EQ(sent.expect_message(), "sent 4");
  EXPECT_EQ(sent.expect_message(), "done");
  for (int n = 1; n <= 4; ++n) EXPECT_EQ(f.got.expect_message(), "got " + std::to_string(n));
  EXPECT_EQ(f.dead_count(), before + 1);
}

TEST(BoundedMailbox, SuspendPolicyTellOnAFullMailboxSendsToDeadLetters) {
  mailbox_fixture f;
  auto c = f.spawn_consumer(1, overflow_policy::suspend);
  const auto before = f.dead_count();
  c.tell(item{1});

  c.tell(item{2});

  f.expect_dead_letter_of_item(2);
  EXPECT_EQ(f.dead_count(), before + 1);
  EXPECT_EQ(f.got.expect_message(), "got 1");
}

TEST(BoundedMailbox, SuspendedSendersAreReleasedToDeadLettersWhenTheConsumerStops) {
  mailbox_fixture f;
  test_probe<std::string> sent(f.ds.system(), "sent");
  auto c = f.spawn_consumer(1, overflow_policy::suspend);
  auto p = f.ds.system().spawn<producer>("producer", sent.ref());
  c.tell(hold{1h});
  f.ds.run();
  c.tell(item{1});
  p.tell(produce{c, 2, 1});
  EXPECT_EQ(sent.expect_message(), "sending 2");
  sent.watch(c);

  f.ds.system().stop(c);

  sent.expect_terminated(c);
  EXPECT_EQ(sent.expect_message(),
            "rejected 2: " + make_error_code(troupe::errc::recipient_terminated).message());
  EXPECT_EQ(sent.expect_message(), "done");
}

// -- on worker threads ------------------------------------------------------------------------

TEST(BoundedMailbox, SuspendPolicyCarriesEveryMessageInOrderAcrossWorkerThreads) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  test_probe<std::string> got(system, "got");
  test_probe<std::string> sent(system, "sent");
  auto c = system.spawn<consumer>(bounded("consumer", 4, overflow_policy::suspend), got.ref());
  auto p = system.spawn<producer>("producer", sent.ref());
  const auto before = system.dead_letters().count();
  std::promise<void> gate;
  c.tell(block{gate.get_future().share()});
  EXPECT_EQ(got.expect_message(), "blocked");  // a worker now waits in the consumer's handler

  constexpr int total = 100;
  p.tell(produce{c, 0, total});

  for (int n = 0; n < 4; ++n) {
    EXPECT_EQ(sent.expect_message(), "sending " + std::to_string(n));
    EXPECT_EQ(sent.expect_message(), "sent " + std::to_string(n));
  }
  EXPECT_EQ(sent.expect_message(), "sending 4");
  EXPECT_EQ(c.try_tell(item{-1}), troupe::errc::mailbox_full);
  gate.set_value();

  for (int n = 0; n < total; ++n) EXPECT_EQ(got.expect_message(), "got " + std::to_string(n));
  EXPECT_EQ(sent.expect_message(), "sent 4");
  for (int n = 5; n < total; ++n) {
    EXPECT_EQ(sent.expect_message(), "sending " + std::to_string(n));
    EXPECT_EQ(sent.expect_message(), "sent " + std::to_string(n));
  }
  EXPECT_EQ(sent.expect_message(), "done");
  EXPECT_EQ(system.dead_letters().count(), before + 1);  // only the try_tell
}

// -- runtime signals ----------------------------------------------------------------------------

struct tick {};
using ticker_msg = std::variant<item, tick>;

/// A periodic timer feeding a bounded mailbox.
class ticker final : public troupe::actor<ticker_msg> {
 public:
  explicit ticker(troupe::actor_ref<std::string> events) : events_(std::move(events)) {}

 private:
  void pre_start() override {
    timers().start_periodic("tick", tick{}, std::chrono::milliseconds(10));
  }
  void receive(ticker_msg& msg) override {
    events_.tell(std::holds_alternative<tick>(msg)
                     ? std::string("tick")
                     : "item " + std::to_string(std::get<item>(msg).n));
  }
  troupe::actor_ref<std::string> events_;
};

TEST(BoundedMailbox, TimerMessagesBypassTheBoundSoAPeriodicTimerNeverDies) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> got(ds.system(), "got");
  auto t = ds.system().spawn<ticker>(bounded("ticker", 1, overflow_policy::fail), got.ref());
  ds.run();
  t.tell(item{1});                                    // the mailbox is now full
  ds.clock().advance(std::chrono::milliseconds(10));  // the tick arrives anyway
  EXPECT_EQ(got.expect_message(), "item 1");
  EXPECT_EQ(got.expect_message(), "tick");
  t.tell(item{2});
  ds.clock().advance(std::chrono::milliseconds(10));  // and keeps coming
  EXPECT_EQ(got.expect_message(), "item 2");
  EXPECT_EQ(got.expect_message(), "tick");
  EXPECT_EQ(ds.system().dead_letters().count(), 0u);
}

}  // namespace
