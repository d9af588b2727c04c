// Receive timeout: an actor is told when it got no message for a while, again and again while it
// stays idle; every other message postpones it.
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

struct set_timeout {
  troupe::duration after;
};
struct cancel_timeout {};
struct ping {};
struct timed_out {};
using idler_msg = std::variant<set_timeout, cancel_timeout, ping, timed_out>;

/// Reports "ping" and "timeout" to `events`.
class idler final : public troupe::actor<idler_msg> {
 public:
  explicit idler(troupe::actor_ref<std::string> events) : events_(std::move(events)) {}

 private:
  void receive(idler_msg& msg) override {
    std::visit(troupe::overloaded{
                   [this](set_timeout& s) { set_receive_timeout(s.after, timed_out{}); },
                   [this](cancel_timeout&) { cancel_receive_timeout(); },
                   [this](ping&) { events_.tell("ping"); },
                   [this](timed_out&) { events_.tell("timeout"); },
               },
               msg);
  }

  troupe::actor_ref<std::string> events_;
};

/// A deterministic system with one idler and a probe for what it reports.
struct idle_fixture {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> events{ds.system(), "events"};
  troupe::actor_ref<idler_msg> actor = ds.system().spawn<idler>("idler", events.ref());

  /// Sends and handles `msg` now, before time moves.
  void send_now(idler_msg msg) {
    actor.tell(std::move(msg));
    ds.run();
  }
};

TEST(ReceiveTimeout, FiresAfterTheIdleTime) {
  idle_fixture f;
  f.send_now(set_timeout{100ms});

  f.ds.advance(99ms);
  f.events.expect_no_message(1ms);
  f.ds.advance(1ms);
  EXPECT_EQ(f.events.expect_message(), "timeout");
}

TEST(ReceiveTimeout, IsPostponedByEveryMessage) {
  idle_fixture f;
  f.send_now(set_timeout{100ms});

  f.ds.advance(60ms);
  f.send_now(ping{});
  EXPECT_EQ(f.events.expect_message(), "ping");
  f.ds.advance(60ms);  // 120 ms after the start, 60 ms after the ping
  f.events.expect_no_message(1ms);
  f.ds.advance(39ms);
  f.events.expect_no_message(1ms);
  f.ds.advance(1ms);  // 100 ms after the ping
  EXPECT_EQ(f.events.expect_message(), "timeout");
}

TEST(ReceiveTimeout, RepeatsWhileTheActorStaysIdle) {
  idle_fixture f;
  f.send_now(set_timeout{100ms});

  for (int i = 0; i < 3; ++i) {
    f.ds.advance(99ms);
    f.events.expect_no_message(1ms);
    f.ds.advance(1ms);
    EXPECT_EQ(f.events.expect_message(), "timeout") << "round " << i;
  }
}

TEST(ReceiveTimeout, CancelStopsIt) {
  idle_fixture f;
  f.send_now(set_timeout{100ms});
  f.ds.advance(50ms);

  f.send_now(cancel_timeout{});

  f.ds.advance(1h);
  f.events.expect_no_message(1ms);
  EXPECT_EQ(f.ds.clock().pending(), 0u);
}

TEST(ReceiveTimeout, CancelAfterItFiredStopsTheRepetition) {
  idle_fixture f;
  f.send_now(set_timeout{100ms});
  f.ds.advance(100ms);
  EXPECT_EQ(f.events.expect_message(), "timeout");

  f.send_now(cancel_timeout{});

  f.ds.advance(1h);
  f.events.expect_no_message(1ms);
  EXPECT_EQ(f.ds.clock().pending(), 0u);
}

TEST(ReceiveTimeout, SettingItAgainReplacesTheIdleTime) {
  idle_fixture f;
  f.send_now(set_timeout{100ms});
  f.send_now(set_timeout{300ms});

  f.ds.advance(299ms);
  f.events.expect_no_message(1ms);
  f.ds.advance(1ms);
  EXPECT_EQ(f.events.expect_message(), "timeout");
}

TEST(ReceiveTimeout, StoppingTheActorCancelsIt) {
  idle_fixture f;
  f.send_now(set_timeout{100ms});
  f.events.watch(f.actor);

  f.ds.system().stop(f.actor);

  f.events.expect_terminated(f.actor);
  EXPECT_EQ(f.ds.clock().pending(), 0u);
}

}  // namespace
