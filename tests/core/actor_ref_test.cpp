// ctest-labels: concurrency
// Refs: tell from any thread, ordering per sender, value semantics (copy, compare, hash, print),
// the empty ref, untyped refs and the poison pill.
#include <troupe/core/actor_system.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <variant>
#include <vector>

namespace {

using troupe::actor_ref;
using troupe::actor_system;
using troupe::system_config;
using troupe::untyped_ref;
using troupe::testkit::test_probe;

system_config small_config() { return system_config{}.with_name("refs").with_workers(2); }

/// Forwards every number it gets to a probe.
class forwarder final : public troupe::actor<int> {
 public:
  explicit forwarder(actor_ref<int> to) : to_(std::move(to)) {}

 private:
  void receive(int& n) override { to_.tell(n); }
  actor_ref<int> to_;
};

/// Answers `identify` with its own typed ref, so tests can compare it with the spawned one.
struct identify {};
class self_reporter final : public troupe::actor<identify> {
  void receive(identify& /*unused*/) override { context().reply(self()); }
};

// -- ordering ---------------------------------------------------------------------------------

struct numbered {
  int sender;
  int seq;
};
struct report {};
struct order_report {
  int received = 0;
  int out_of_order = 0;
};
using order_msg = std::variant<numbered, report>;

/// Checks that each sender's numbers arrive in the order they were sent.
class order_checker final : public troupe::actor<order_msg> {
  void receive(order_msg& msg) override {
    std::visit(troupe::overloaded{[this](numbered& n) {
                                    auto [it, fresh] = next_.try_emplace(n.sender, 0);
                                    if (n.seq != it->second) ++result_.out_of_order;
                                    it->second = n.seq + 1;
                                    ++result_.received;
                                  },
                                  [this](report&) { context().reply(result_); }},
               msg);
  }
  std::map<int, int> next_;
  order_report result_;
};

TEST(ActorRef, TellsFromManyPlainThreadsArriveInOrderPerSender) {
  actor_system system(small_config());
  test_probe<order_report> probe(system);
  auto checker = system.spawn<order_checker>("checker");

  constexpr int senders = 4;
  constexpr int per_sender = 2000;
  std::vector<std::thread> threads;
  for (int s = 0; s < senders; ++s) {
    threads.emplace_back([checker, s] {
      for (int i = 0; i < per_sender; ++i) checker.tell(numbered{s, i});
    });
  }
  for (auto& t : threads) t.join();

  // Sent after every join, so it is handled after every number.
  checker.tell(report{}, probe.untyped());
  const auto result = probe.expect_message();
  EXPECT_EQ(result.received, senders * per_sender);
  EXPECT_EQ(result.out_of_order, 0);
}

TEST(ActorRef, TellsFromInsideAnActorReachTheRecipient) {
  actor_system system(small_config());
  test_probe<int> probe(system);
  auto first = system.spawn<forwarder>("first", probe.ref());
  auto second = system.spawn<forwarder>("second", first);

  for (int i = 0; i < 3; ++i) second.tell(i);
  EXPECT_EQ(probe.expect_message(), 0);
  EXPECT_EQ(probe.expect_message(), 1);
  EXPECT_EQ(probe.expect_message(), 2);
}

// -- value semantics --------------------------------------------------------------------------

static_assert(sizeof(actor_ref<int>) == sizeof(void*), "a ref is one pointer");
static_assert(sizeof(untyped_ref) == sizeof(void*), "an untyped ref is one pointer");
static_assert(std::is_nothrow_copy_constructible_v<actor_ref<int>>);
static_assert(std::is_nothrow_move_constructible_v<actor_ref<int>>);
static_assert(std::is_nothrow_copy_assignable_v<actor_ref<int>>);

TEST(ActorRef, CopiesAreEqualAndRefsOfDifferentActorsAreNot) {
  actor_system system(small_config());
  test_probe<int> probe(system);
  auto a = system.spawn<forwarder>("a", probe.ref());
  auto b = system.spawn<forwarder>("b", probe.ref());

  const auto copy = a;
  EXPECT_EQ(copy, a);
  EXPECT_FALSE(copy == b);
  EXPECT_EQ(untyped_ref(a), a);
  EXPECT_EQ(actor_ref<int>(), actor_ref<int>());
  EXPECT_FALSE(a == actor_ref<int>());
}

TEST(ActorRef, SelfInsideTheActorEqualsTheRefReturnedBySpawn) {
  actor_system system(small_config());
  test_probe<actor_ref<identify>> probe(system);
  auto actor = system.spawn<self_reporter>("self-reporter");

  actor.tell(identify{}, probe.untyped());
  const auto self = probe.expect_message();
  EXPECT_EQ(self, actor);
  EXPECT_EQ(std::hash<actor_ref<identify>>{}(self), std::hash<actor_ref<identify>>{}(actor));
}

TEST(ActorRef, RefsAreHashableAndDeduplicateInAnUnorderedSet) {
  actor_system system(small_config());
  test_probe<int> probe(system);
  auto a = system.spawn<forwarder>("a", probe.ref());
  auto b = system.spawn<forwarder>("b", probe.ref());

  std::unordered_set<actor_ref<int>> typed{a, b, a, actor_ref<int>(a)};
  EXPECT_EQ(typed.size(), 2U);
  EXPECT_TRUE(typed.contains(a));

  std::unordered_set<untyped_ref> untyped{a, b, probe.untyped(), untyped_ref(b)};
  EXPECT_EQ(untyped.size(), 3U);
  EXPECT_TRUE(untyped.contains(probe.untyped()));
}

TEST(ActorRef, PrintsAsItsPathThroughOstreamAndFmt) {
  actor_system system(small_config());
  test_probe<int> probe(system);
  auto account = system.spawn<forwarder>("account-7", probe.ref());

  EXPECT_EQ(account.path(), "/user/account-7");
  std::ostringstream os;
  os << account;
  EXPECT_EQ(os.str(), "/user/account-7");
  EXPECT_EQ(fmt::format("{}", account), "/user/account-7");
  EXPECT_EQ(fmt::format("{}", untyped_ref(account)), "/user/account-7");
  EXPECT_EQ(fmt::format("[{:>16}]", account), "[ /user/account-7]");
}

// -- the empty ref ----------------------------------------------------------------------------

TEST(ActorRef, AnEmptyRefIsFalsyTerminatedAndPrintsAsEmpty) {
  const actor_ref<int> empty;
  EXPECT_FALSE(empty);
  EXPECT_TRUE(empty.is_terminated());
  EXPECT_EQ(empty.path(), "<empty>");
  EXPECT_EQ(fmt::format("{}", empty), "<empty>");
  std::ostringstream os;
  os << empty;
  EXPECT_EQ(os.str(), "<empty>");
}

TEST(ActorRef, TellThroughAnEmptyRefThrowsRecipientTerminated) {
  const actor_ref<int> empty;
  try {
    empty.tell(1);
    FAIL() << "tell through an empty ref did not throw";
  } catch (const troupe::error& e) {
    EXPECT_EQ(e.value(), troupe::errc::recipient_terminated);
  }
  EXPECT_EQ(empty.try_tell(1), troupe::errc::recipient_terminated);
  EXPECT_THROW(untyped_ref().tell_any(1), troupe::error);
  EXPECT_THROW(untyped_ref().tell(troupe::poison_pill{}), troupe::error);
}

TEST(ActorRef, TryTellToAStoppedActorReportsRecipientTerminated) {
  actor_system system(small_config());
  test_probe<int> probe(system);
  auto actor = system.spawn<forwarder>("short-lived", probe.ref());
  probe.watch(actor);
  system.stop(actor);
  probe.expect_terminated(actor);

  EXPECT_TRUE(actor.is_terminated());
  EXPECT_EQ(actor.try_tell(1), troupe::errc::recipient_terminated);
  EXPECT_NO_THROW(actor.tell(2));  // tell never reports: the message becomes a dead letter
}

// -- untyped refs -----------------------------------------------------------------------------

struct deposit {
  int amount;
};
struct withdraw {
  int amount;
};
using account_msg = std::variant<deposit, withdraw>;

/// Reports each command to the probe as a signed amount.
class account final : public troupe::actor<account_msg> {
 public:
  explicit account(actor_ref<int> to) : to_(std::move(to)) {}

 private:
  void receive(account_msg& msg) override {
    std::visit(troupe::overloaded{[this](deposit& d) { to_.tell(d.amount); },
                                  [this](withdraw& w) { to_.tell(-w.amount); }},
               msg);
  }
  actor_ref<int> to_;
};

TEST(UntypedRef, TellAnyDeliversAMessageOfAVariantAlternative) {
  actor_system system(small_config());
  test_probe<int> probe(system);
  const untyped_ref any = system.spawn<account>("account", probe.ref());

  any.tell_any(deposit{5});
  any.tell_any(withdraw{3});
  any.tell_any(account_msg{deposit{1}});
  EXPECT_EQ(probe.expect_message(), 5);
  EXPECT_EQ(probe.expect_message(), -3);
  EXPECT_EQ(probe.expect_message(), 1);
}

TEST(UntypedRef, TellAnyWithATypeTheActorDoesNotAcceptBecomesADeadLetter) {
  actor_system system(small_config());
  test_probe<int> probe(system);
  test_probe<troupe::dead_letter> dead(system, "dead");
  system.dead_letters().subscribe(dead.ref());
  const untyped_ref any = system.spawn<account>("account", probe.ref());

  any.tell_any(std::string("not a command"));
  const auto letter = dead.expect_message();
  EXPECT_EQ(letter.recipient, "/user/account");
  EXPECT_EQ(letter.code, troupe::errc::bad_reply_type);
  ASSERT_NE(letter.message_as<std::string>(), nullptr);
  EXPECT_EQ(*letter.message_as<std::string>(), "not a command");

  any.tell_any(deposit{2});  // the actor is unharmed
  EXPECT_EQ(probe.expect_message(), 2);
}

TEST(UntypedRef, KeepsThePathAndIdentityOfTheTypedRef) {
  actor_system system(small_config());
  test_probe<int> probe(system);
  auto typed = system.spawn<account>("account", probe.ref());
  const untyped_ref any = typed;

  EXPECT_EQ(any.path(), "/user/account");
  EXPECT_EQ(any, typed);
  EXPECT_EQ(std::hash<untyped_ref>{}(any), std::hash<actor_ref<account_msg>>{}(typed));
  EXPECT_TRUE(any);
  EXPECT_FALSE(any.is_terminated());
}

// -- poison pill ------------------------------------------------------------------------------

TEST(PoisonPill, ThroughAnUntypedRefStopsTheActor) {
  actor_system system(small_config());
  test_probe<int> probe(system);
  const untyped_ref any = system.spawn<forwarder>("victim", probe.ref());
  probe.watch(any);

  any.tell(troupe::poison_pill{});
  probe.expect_terminated(any);
  EXPECT_TRUE(any.is_terminated());
}

TEST(PoisonPill, ThroughATypedRefStopsTheActorAfterQueuedMessages) {
  actor_system system(small_config());
  test_probe<int> probe(system);
  auto actor = system.spawn<forwarder>("victim", probe.ref());
  probe.watch(actor);

  actor.tell(1);
  actor.tell(troupe::poison_pill{});
  EXPECT_EQ(probe.expect_message(), 1);
  probe.expect_terminated(actor);
}

}  // namespace
