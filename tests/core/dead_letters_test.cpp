// ctest-labels: concurrency
// Dead letters: what a subscriber learns about an undelivered message, the count, and replies
// that have nobody to go to.
#include <troupe/core/actor_system.hpp>
#include <troupe/testkit/log_capture.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <variant>

namespace {

using troupe::actor_ref;
using troupe::actor_system;
using troupe::dead_letter;
using troupe::system_config;
using troupe::untyped_ref;
using troupe::testkit::log_capture;
using troupe::testkit::test_probe;

system_config small_config() { return system_config{}.with_name("dead-letters").with_workers(2); }

struct order {
  int id;
};

/// Reports orders to a probe.
class shop final : public troupe::actor<order> {
 public:
  explicit shop(actor_ref<int> out) : out_(std::move(out)) {}

 private:
  void receive(order& o) override { out_.tell(o.id); }
  actor_ref<int> out_;
};

/// Spawns a shop, stops it and waits until it has terminated.
actor_ref<order> stopped_shop(actor_system& system, test_probe<int>& probe, const char* name) {
  auto s = system.spawn<shop>(name, probe.ref());
  probe.watch(s);
  system.stop(s);
  probe.expect_terminated(s);
  return s;
}

TEST(DeadLetters, ATellToAStoppedActorIsPublishedWithRecipientReasonAndMessage) {
  actor_system system(small_config());
  test_probe<int> probe(system);
  test_probe<int> sender(system, "sender");
  test_probe<dead_letter> dead(system, "dead");
  system.dead_letters().subscribe(dead.ref());
  auto s = stopped_shop(system, probe, "shop");
  const auto before = system.dead_letters().count();

  s.tell(order{42}, sender.untyped());
  const auto letter = dead.expect_message();
  EXPECT_EQ(letter.recipient, "/user/shop");
  EXPECT_EQ(letter.reason, "recipient terminated");
  EXPECT_EQ(letter.code, troupe::errc::recipient_terminated);
  EXPECT_EQ(letter.sender, sender.untyped());
  EXPECT_NE(letter.message_type.find("order"), std::string::npos) << letter.message_type;
  ASSERT_NE(letter.message_as<order>(), nullptr);
  EXPECT_EQ(letter.message_as<order>()->id, 42);
  EXPECT_EQ(letter.message_as<int>(), nullptr);
  EXPECT_EQ(system.dead_letters().count(), before + 1);
}

TEST(DeadLetters, CountsEveryUndeliveredMessage) {
  actor_system system(small_config());
  test_probe<int> probe(system);
  test_probe<dead_letter> dead(system, "dead");
  system.dead_letters().subscribe(dead.ref());
  auto s = stopped_shop(system, probe, "shop");
  const auto before = system.dead_letters().count();

  for (int i = 0; i < 25; ++i) s.tell(order{i});
  for (int i = 0; i < 25; ++i) EXPECT_EQ(dead.expect_message().message_as<order>()->id, i);
  EXPECT_EQ(system.dead_letters().count(), before + 25);
}

TEST(DeadLetters, CountsEachReasonApartAndTheReasonsAddUpToTheTotal) {
  actor_system system(small_config());
  test_probe<int> probe(system);
  test_probe<dead_letter> dead(system, "dead");
  system.dead_letters().subscribe(dead.ref());
  auto s = stopped_shop(system, probe, "shop");
  const auto terminated_before = [&] {
    for (const auto& [code, n] : system.dead_letters().count_by_code()) {
      if (code == troupe::errc::recipient_terminated) return n;
    }
    return std::uint64_t{0};
  }();

  for (int i = 0; i < 3; ++i) s.tell(order{i});
  for (int i = 0; i < 3; ++i) (void)dead.expect_message();
  std::uint64_t sum = 0;
  std::uint64_t terminated = 0;
  for (const auto& [code, n] : system.dead_letters().count_by_code()) {
    sum += n;
    if (code == troupe::errc::recipient_terminated) terminated = n;
  }
  EXPECT_EQ(terminated, terminated_before + 3);
  EXPECT_EQ(sum, system.dead_letters().count());
  EXPECT_STREQ(troupe::to_string(troupe::errc::recipient_terminated), "recipient_terminated");
}

TEST(DeadLetters, EverySubscriberGetsEachLetterAndUnsubscribedOnesNoMore) {
  actor_system system(small_config());
  test_probe<int> probe(system);
  test_probe<dead_letter> first(system, "first");
  test_probe<dead_letter> second(system, "second");
  system.dead_letters().subscribe(first.ref());
  system.dead_letters().subscribe(second.ref());
  auto s = stopped_shop(system, probe, "shop");

  s.tell(order{1});
  EXPECT_EQ(first.expect_message().message_as<order>()->id, 1);
  EXPECT_EQ(second.expect_message().message_as<order>()->id, 1);

  system.dead_letters().unsubscribe(first.ref());
  s.tell(order{2});
  EXPECT_EQ(second.expect_message().message_as<order>()->id, 2);
  first.expect_no_message(std::chrono::milliseconds(20));
}

struct add {
  int n;
};
struct sub {
  int n;
};
using calc_msg = std::variant<add, sub>;
class calculator final : public troupe::actor<calc_msg> {
  void receive(calc_msg& /*unused*/) override {}
};

TEST(DeadLetters, AVariantMessageKeepsItsVariantType) {
  actor_system system(small_config());
  test_probe<int> probe(system);
  test_probe<dead_letter> dead(system, "dead");
  system.dead_letters().subscribe(dead.ref());
  auto c = system.spawn<calculator>("calc");
  probe.watch(c);
  system.stop(c);
  probe.expect_terminated(c);

  c.tell(sub{3});
  const auto letter = dead.expect_message();
  ASSERT_NE(letter.message_as<calc_msg>(), nullptr);
  EXPECT_EQ(std::get<sub>(*letter.message_as<calc_msg>()).n, 3);
  EXPECT_EQ(letter.message_as<sub>(), nullptr);
}

/// An actor subscriber: counts the letters it gets and reports each recipient.
class letter_counter final : public troupe::actor<dead_letter> {
 public:
  explicit letter_counter(actor_ref<std::string> out) : out_(std::move(out)) {}

 private:
  void receive(dead_letter& d) override { out_.tell(std::to_string(++seen_) + " " + d.recipient); }
  actor_ref<std::string> out_;
  int seen_ = 0;
};

TEST(DeadLetters, AnActorCanSubscribe) {
  actor_system system(small_config());
  test_probe<int> probe(system);
  test_probe<std::string> out(system, "out");
  auto counter = system.spawn<letter_counter>("counter", out.ref());
  system.dead_letters().subscribe(counter);
  auto s = stopped_shop(system, probe, "shop");

  s.tell(order{1});
  s.tell(order{2});
  EXPECT_EQ(out.expect_message(), "1 /user/shop");
  EXPECT_EQ(out.expect_message(), "2 /user/shop");
}

// -- replies without a sender --------------------------------------------------------------------

struct request {
  int n;
};
/// Replies to every request, whether or not it has a sender.
class replier final : public troupe::actor<request> {
  void receive(request& r) override { context().reply(r.n + 1); }
};

TEST(DeadLetters, AReplyWithoutASenderIsADeadLetterAndTheActorCarriesOn) {
  actor_system system(small_config());
  test_probe<int> probe(system);
  test_probe<dead_letter> dead(system, "dead");
  system.dead_letters().subscribe(dead.ref());
  auto r = system.spawn<replier>("replier");

  r.tell(request{1});  // no sender: the reply has nowhere to go
  const auto d = dead.expect_message();
  EXPECT_EQ(d.code, troupe::errc::no_sender);
  EXPECT_EQ(d.recipient, "/user/replier (reply)");
  ASSERT_NE(d.message_as<int>(), nullptr);
  EXPECT_EQ(*d.message_as<int>(), 2);

  r.tell(request{2}, probe.untyped());
  EXPECT_EQ(probe.expect_message(), 3);
  EXPECT_FALSE(r.is_terminated());
}

TEST(DeadLetters, AreLoggedWithTypeRecipientAndReason) {
  log_capture log;
  {
    actor_system system(small_config());
    test_probe<int> probe(system);
    test_probe<dead_letter> dead(system, "dead");
    system.dead_letters().subscribe(dead.ref());
    auto s = stopped_shop(system, probe, "shop");
    s.tell(order{1});
    (void)dead.expect_message();
  }
  const std::string text = log.text();
  EXPECT_NE(text.find("to /user/shop from no sender: recipient terminated"), std::string::npos)
      << text;
}

}  // namespace
