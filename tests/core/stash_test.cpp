// Stash: an actor keeps messages aside (with their senders) and later puts them back in front of
// its mailbox, in order; a full stash fails the actor.
#include <troupe/core/actor_system.hpp>
#include <troupe/testkit/deterministic.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace {

using troupe::testkit::test_probe;

struct work {
  int n;
};
struct open {};
struct close {};
struct flood {
  int count;
};
using gate_msg = std::variant<work, open, close, flood>;

/// While closed, stashes work; open unstashes it. Handled work is reported to `events` as its
/// number and answered to its sender with the number.
class gate final : public troupe::actor<gate_msg> {
 public:
  explicit gate(troupe::actor_ref<std::string> events) : events_(std::move(events)) {}

 private:
  void post_restart(const std::exception_ptr& reason) override {
    events_.tell("restarted");
    actor_base::post_restart(reason);
  }
  void receive(gate_msg& msg) override {
    std::visit(troupe::overloaded{
                   [this](work& w) {
                     if (!open_) {
                       stash(w);
                       return;
                     }
                     events_.tell(std::to_string(w.n));
                     if (context().sender()) context().reply(w.n);
                   },
                   [this](open&) {
                     open_ = true;
                     unstash_all();
                   },
                   [this](close&) { open_ = false; },
                   [this](flood& f) {
                     try {
                       for (int i = 0; i < f.count; ++i) stash(work{i});
                     } catch (const troupe::error& e) {
                       events_.tell(e.value() == troupe::errc::stash_overflow
                                        ? "overflow at " + std::to_string(stash_size())
                                        : "other error");
                       throw;
                     }
                     events_.tell("stashed " + std::to_string(stash_size()));
                   },
               },
               msg);
  }

  troupe::actor_ref<std::string> events_;
  bool open_ = false;
};

struct stash_fixture {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> events{ds.system(), "events"};
  troupe::actor_ref<gate_msg> actor = ds.system().spawn<gate>("gate", events.ref());

  void expect_handled(std::initializer_list<int> numbers) {
    for (int n : numbers) EXPECT_EQ(events.expect_message(), std::to_string(n));
  }
};

TEST(Stash, UnstashAllKeepsTheOrderAndGoesBeforeLaterMailboxMessages) {
  stash_fixture f;
  // All queued before anything runs: 3 waits in the mailbox while 1 and 2 are unstashed.
  f.actor.tell(work{1});
  f.actor.tell(work{2});
  f.actor.tell(open{});
  f.actor.tell(work{3});

  f.ds.run();

  f.expect_handled({1, 2, 3});
  f.events.expect_no_message(std::chrono::milliseconds(1));
}

TEST(Stash, StashingAgainAfterAnUnstashKeepsTheOrder) {
  stash_fixture f;
  f.actor.tell(work{1});
  f.actor.tell(open{});
  f.actor.tell(close{});
  f.actor.tell(work{2});
  f.actor.tell(work{3});
  f.actor.tell(open{});
  f.actor.tell(work{4});

  f.ds.run();

  f.expect_handled({1, 2, 3, 4});
}

TEST(Stash, UnstashedMessagesKeepTheirSenders) {
  stash_fixture f;
  test_probe<int> alice(f.ds.system(), "alice");
  test_probe<int> bob(f.ds.system(), "bob");
  f.actor.tell(work{1}, alice.untyped());
  f.actor.tell(work{2}, bob.untyped());
  f.actor.tell(open{}, f.events.untyped());  // a different sender for the unstashing message

  EXPECT_EQ(alice.expect_message(), 1);
  EXPECT_EQ(bob.expect_message(), 2);
  f.expect_handled({1, 2});
  f.events.expect_no_message(std::chrono::milliseconds(1));  // open itself got no reply
}

TEST(Stash, HoldsTenThousandMessages) {
  stash_fixture f;
  f.actor.tell(flood{10'000});
  EXPECT_EQ(f.events.expect_message(), "stashed 10000");
}

TEST(Stash, OverflowThrowsStashOverflowAndFailsTheActorLikeAnyException) {
  stash_fixture f;
  f.actor.tell(flood{10'001});

  EXPECT_EQ(f.events.expect_message(), "overflow at 10000");
  // The exception escaped the handler: the /user guardian restarted the actor.
  EXPECT_EQ(f.events.expect_message(), "restarted");
}

// -- restart
// ---------------------------------------------------------------------------------------

struct crash {};
using holder_msg = std::variant<work, open, crash>;

/// Stashes work until opened; reports its stash size when restarted.
class holder final : public troupe::actor<holder_msg> {
 public:
  explicit holder(troupe::actor_ref<std::string> events) : events_(std::move(events)) {}

 private:
  void post_restart(const std::exception_ptr& /*reason*/) override {
    events_.tell("restarted with stash " + std::to_string(stash_size()));
  }
  void receive(holder_msg& msg) override {
    std::visit(troupe::overloaded{
                   [this](work& w) {
                     if (open_) {
                       events_.tell(std::to_string(w.n));
                     } else {
                       stash(w);
                     }
                   },
                   [this](open&) {
                     open_ = true;
                     unstash_all();
                   },
                   [](crash&) { throw std::runtime_error("crash"); },
               },
               msg);
  }
  troupe::actor_ref<std::string> events_;
  bool open_ = false;
};

TEST(Stash, ARestartPutsStashedMessagesBackInFrontOfTheMailbox) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> events(ds.system(), "events");
  auto h = ds.system().spawn<holder>("holder", events.ref());
  h.tell(work{1});
  h.tell(work{2});
  h.tell(crash{});
  h.tell(open{});  // handled by the fresh instance, after the two returned messages
  EXPECT_EQ(events.expect_message(), "restarted with stash 0");
  // The fresh instance is closed: it stashes 1 and 2 again, then opens and handles them.
  EXPECT_EQ(events.expect_message(), "1");
  EXPECT_EQ(events.expect_message(), "2");
}

}  // namespace
