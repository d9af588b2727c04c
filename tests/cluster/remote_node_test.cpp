// ctest-labels: concurrency
// Actor refs across nodes, over the in-memory network and over real TCP on 127.0.0.1: tell,
// ask, refs inside messages and replies, death watch, node loss and restart, bad input.
#include <troupe/core/actor.hpp>
#include <troupe/testkit/log_capture.hpp>
#include <troupe/testkit/test_probe.hpp>

#include "support/two_nodes.hpp"

#include <boost/describe/class.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <string>
#include <variant>

namespace {

using namespace std::chrono_literals;
using namespace troupe::cluster;
using test::net_kind;
using test::node;
using troupe::actor_ref;
using troupe::untyped_ref;
using troupe::testkit::await_condition;
using troupe::testkit::dilated;
using troupe::testkit::test_probe;

/// The code a failed ask's future holds, caught as troupe::error like every layer's failures.
template <class T>
std::error_code failure_of(std::future<T>& f) {
  try {
    (void)f.get();
    ADD_FAILURE() << "the ask succeeded";
  } catch (const troupe::error& e) {
    return e.code();
  }
  return {};
}

struct reply_text {
  std::string text;
};
BOOST_DESCRIBE_STRUCT(reply_text, (), (text))

struct greeting {
  std::string text;
};
BOOST_DESCRIBE_STRUCT(greeting, (), (text))

struct echo_request {
  std::string text;
  actor_ref<reply_text> reply_to;
};
BOOST_DESCRIBE_STRUCT(echo_request, (), (text, reply_to))

struct numbered {
  std::uint64_t n = 0;
};
BOOST_DESCRIBE_STRUCT(numbered, (), (n))

using echo_msg = std::variant<greeting, echo_request, numbered>;

/// Replies to greetings (to the sender) and echo requests (to the ref inside).
class echo_actor final : public troupe::actor<echo_msg> {
  void receive(echo_msg& m) override {
    std::visit(
        [this](auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, greeting>) {
            context().reply(reply_text{"echo " + v.text});
          } else if constexpr (std::is_same_v<T, echo_request>) {
            v.reply_to.tell(reply_text{"echo " + v.text});
          }
        },
        m);
  }
};

/// The next message of an echo_msg probe, as alternative T.
template <class T>
T next(test_probe<echo_msg>& probe) {
  auto m = probe.expect_message();
  if (!std::holds_alternative<T>(m)) throw std::runtime_error("unexpected alternative");
  return std::get<T>(m);
}

/// Hands every message to a probe and never replies (a probe itself cannot be watched).
class silent_actor final : public troupe::actor<echo_msg> {
 public:
  explicit silent_actor(actor_ref<echo_msg> probe) : probe_(std::move(probe)) {}

 private:
  void receive(echo_msg& m) override { probe_.tell(m); }
  actor_ref<echo_msg> probe_;
};

/// A message whose codec refuses to encode it: with a std::exception, or with something else.
struct poison {
  bool std_exception = true;
};

/// A message that encodes but whose decoder throws something not derived from std::exception.
struct cursed {
  std::uint64_t n = 0;
};

}  // namespace

template <>
struct troupe::persistence::codec<poison> {
  static void encode(byte_writer& /*w*/, const poison& p) {
    if (p.std_exception) throw std::runtime_error("poison cannot be encoded");
    throw 42;  // NOLINT(hicpp-exception-baseclass): a user codec may throw anything
  }
  static poison decode(byte_reader& r) { r.fail("poison cannot be decoded"); }
};

template <>
struct troupe::persistence::codec<cursed> {
  static void encode(byte_writer& w, const cursed& c) { w.write_varint(c.n); }
  static cursed decode(byte_reader& /*r*/) {
    throw 7;  // NOLINT(hicpp-exception-baseclass): a user codec may throw anything
  }
};

namespace {

std::shared_ptr<message_registry> registry() {
  auto r = std::make_shared<message_registry>();
  r->add<echo_msg>("test.echo_msg").add<reply_text>("test.reply_text");
  return r;
}

class remote_node_test : public ::testing::TestWithParam<net_kind> {
 protected:
  test::network net{GetParam()};
};

TEST_P(remote_node_test, tells_an_exposed_actor_on_another_node_in_order) {
  node a(net, registry());
  node b(net, registry());
  test_probe<echo_msg> probe(a.system);
  a.remote->expose(probe.untyped());
  auto far = b.remote->ref_to<echo_msg>(a.address(), probe.untyped().path());
  for (std::uint64_t i = 0; i < 2000; ++i) far.tell(numbered{i});
  for (std::uint64_t i = 0; i < 2000; ++i) {
    ASSERT_EQ(next<numbered>(probe).n, i);
  }
  EXPECT_EQ(b.remote->stats().messages_sent, 2000U);
  EXPECT_EQ(a.remote->stats().messages_received, 2000U);
}

TEST_P(remote_node_test, asks_across_nodes_and_the_reply_comes_back) {
  node a(net, registry());
  node b(net, registry());
  auto echo = a.system.spawn<echo_actor>("echo");
  a.remote->expose(echo);
  auto far = b.remote->ref_to<echo_msg>(a.address(), "/user/echo");
  auto answer = far.ask<reply_text>(greeting{"hi"}, dilated(5s), troupe::use_future);
  ASSERT_EQ(answer.wait_for(dilated(5s)), std::future_status::ready);
  EXPECT_EQ(answer.get().text, "echo hi");
  // Many asks at once, each with its own reply target.
  std::vector<std::future<reply_text>> many;
  for (int i = 0; i < 200; ++i) {
    many.push_back(
        far.ask<reply_text>(greeting{std::to_string(i)}, dilated(5s), troupe::use_future));
  }
  for (int i = 0; i < 200; ++i)
    EXPECT_EQ(many[static_cast<std::size_t>(i)].get().text, "echo " + std::to_string(i));
}

TEST_P(remote_node_test, a_ref_inside_a_message_reaches_its_actor_and_comes_home_equal) {
  node a(net, registry());
  node b(net, registry());
  auto echo = a.system.spawn<echo_actor>("echo");
  a.remote->expose(echo);
  test_probe<reply_text> replies(b.system, "replies");
  auto far = b.remote->ref_to<echo_msg>(a.address(), "/user/echo");
  far.tell(echo_request{"there", replies.ref()});
  EXPECT_EQ(replies.expect_message().text, "echo there");
  // The echo's reply carries no sender; ask the probe's own ref back through node a.
  test_probe<echo_msg> bounce(a.system, "bounce");
  a.remote->expose(bounce.untyped());
  b.remote->ref_to<echo_msg>(a.address(), bounce.untyped().path())
      .tell(echo_request{"x", replies.ref()});
  auto got = next<echo_request>(bounce);
  // Sent back to node b, the ref resolves to the very local target it started as.
  got.reply_to.tell(reply_text{"home"});
  EXPECT_EQ(replies.expect_message().text, "home");
  EXPECT_NE(got.reply_to.path().find("troupe://"), std::string::npos);
}

TEST_P(remote_node_test, death_watch_across_nodes_reports_a_stopped_actor) {
  node a(net, registry());
  node b(net, registry());
  auto echo = a.system.spawn<echo_actor>("echo");
  a.remote->expose(echo);
  auto far = b.remote->ref_to<echo_msg>(a.address(), "/user/echo");
  test_probe<reply_text> watcher(b.system, "watcher");
  // Make sure the connection is up and the watch placed before stopping the actor.
  far.tell(echo_request{"up", watcher.ref()});
  watcher.expect_message();
  watcher.watch(far);
  // Whether the watch reaches node a before or after the stop, the watcher hears: a watch of
  // an actor that is gone is answered with terminated at once.
  a.system.stop(echo);
  watcher.expect_terminated(far, 5s);
  EXPECT_TRUE(far.is_terminated());
}

TEST_P(remote_node_test, watching_an_unknown_remote_actor_terminates_at_once) {
  node a(net, registry());
  node b(net, registry());
  auto nobody = b.remote->ref_to<echo_msg>(a.address(), "/user/nobody");
  test_probe<reply_text> watcher(b.system, "watcher");
  watcher.watch(nobody);
  watcher.expect_terminated(nobody, 5s);
}

TEST_P(remote_node_test, a_message_to_an_unknown_actor_fails_the_ask_at_once) {
  node a(net, registry());
  node b(net, registry());
  auto nobody = b.remote->ref_to<echo_msg>(a.address(), "/user/nobody");
  auto answer = nobody.ask<reply_text>(greeting{"?"}, 30s, troupe::use_future);
  ASSERT_EQ(answer.wait_for(dilated(5s)), std::future_status::ready) << "should not wait 30 s";
  EXPECT_EQ(failure_of(answer), troupe::errc::recipient_terminated);
  await_condition([&] { return a.system.dead_letters().count() >= 1; }, 3s);
}

TEST_P(remote_node_test, a_lost_node_terminates_watches_and_fails_pending_asks) {
  node b(net, registry());
  auto a = std::make_unique<node>(net, registry());
  test_probe<echo_msg> silent(a->system, "silent");
  a->remote->expose(a->system.spawn<silent_actor>("silent", silent.ref()));
  auto far = b.remote->ref_to<echo_msg>(a->address(), "/user/silent");
  test_probe<reply_text> watcher(b.system, "watcher");
  far.tell(numbered{1});
  next<numbered>(silent);
  watcher.watch(far);
  auto answer = far.ask<reply_text>(greeting{"?"}, 60s, troupe::use_future);
  next<greeting>(silent);
  a.reset();  // the node goes away
  watcher.expect_terminated(far, 10s);
  ASSERT_EQ(answer.wait_for(dilated(10s)), std::future_status::ready) << "should not wait 60 s";
  const std::error_code lost = failure_of(answer);  // a remote failure, caught as troupe::error
  EXPECT_TRUE(lost == errc::node_unreachable || lost == errc::node_restarted) << lost.message();
  EXPECT_THROW(b.remote->expose(untyped_ref{}), troupe::error);  // a thrown cluster_error too
}

TEST_P(remote_node_test, a_remote_ask_pending_when_the_system_terminates_fails_at_once) {
  node a(net, registry());
  node b(net, registry());
  test_probe<echo_msg> silent(a.system, "silent");
  a.remote->expose(a.system.spawn<silent_actor>("silent", silent.ref()));
  auto far = b.remote->ref_to<echo_msg>(a.address(), "/user/silent");
  auto answer = far.ask<reply_text>(greeting{"?"}, 60s, troupe::use_future);
  next<greeting>(silent);  // the question arrived and will never be answered
  b.system.terminate();
  ASSERT_EQ(answer.wait_for(dilated(5s)), std::future_status::ready) << "should not wait 60 s";
  EXPECT_EQ(failure_of(answer), troupe::errc::system_terminated);
}

TEST_P(remote_node_test, an_unregistered_type_goes_to_dead_letters_and_the_connection_stays_up) {
  auto partial = std::make_shared<message_registry>();
  partial->add<reply_text>("test.reply_text");  // no echo_msg here
  node a(net, partial);
  node b(net, registry());
  test_probe<echo_msg> probe(a.system);
  a.remote->expose(probe.untyped());
  auto far = b.remote->ref_to<echo_msg>(a.address(), probe.untyped().path());
  far.tell(numbered{1});
  test_probe<troupe::dead_letter> letters(a.system, "letters");
  a.system.dead_letters().subscribe(letters.ref());
  far.tell(numbered{2});
  auto letter = letters.expect_message(5s);
  EXPECT_NE(letter.reason.find("no message type registered for manifest 'test.echo_msg' v1"),
            std::string::npos)
      << letter.reason;
  ASSERT_NE(letter.message_as<undecodable_message>(), nullptr);
  EXPECT_EQ(letter.message_as<undecodable_message>()->from, b.remote->self());
  await_condition([&] { return a.remote->stats().undecodable == 2; }, 5s);
  // Still connected: a registered type goes through.
  test_probe<reply_text> texts(a.system, "texts");
  a.remote->expose(texts.untyped());
  b.remote->ref_to<reply_text>(a.address(), texts.untyped().path()).tell(reply_text{"ok"});
  EXPECT_EQ(texts.expect_message().text, "ok");
  // And a type the sender cannot serialize is a dead letter on the sender.
  b.remote->ref_to<int>(a.address(), texts.untyped().path()).tell(7);
  await_condition([&] { return b.system.dead_letters().count() >= 1; }, 3s);
}

/// Each refused message is the first of its recipient and of its type on the connection: had it
/// taken a slot, every later message to that recipient or of that type, and every new recipient
/// and type after it, would reach the receiver as an undecodable message. Sent before the
/// connection is up, the messages wait and are encoded ahead of it; sent on an idle connection,
/// they are encoded straight into their frames.
void refused_messages_change_no_connection_state(test::network& net, bool connect_first) {
  auto types = registry();
  types->add<poison>("test.poison").add<numbered>("test.numbered");
  const auto small_frames = remote_options{}.with_max_frame_size(64 * 1024);
  node a(net, types, small_frames, "a");
  node b(net, types, small_frames, "b");
  if (connect_first) {
    test_probe<numbered> warm(a.system, "warm");
    a.remote->expose(warm.untyped());
    b.remote->ref_to<numbered>(a.address(), warm.untyped().path()).tell(numbered{0});
    EXPECT_EQ(warm.expect_message().n, 0U);
  }
  test_probe<echo_msg> first(a.system, "first");
  test_probe<echo_msg> second(a.system, "second");
  test_probe<echo_msg> third(a.system, "third");
  test_probe<reply_text> texts(a.system, "texts");
  for (const auto& p : {first.untyped(), second.untyped(), third.untyped(), texts.untyped()})
    a.remote->expose(p);
  test_probe<troupe::dead_letter> letters(b.system, "letters");
  b.system.dead_letters().subscribe(letters.ref());
  auto far = [&](const auto& probe) {
    return b.remote->ref_to<echo_msg>(a.address(), probe.untyped().path());
  };
  far(first).tell(greeting{std::string(100 * 1024, 'x')});  // over the frame size
  b.remote->ref_to<poison>(a.address(), second.untyped().path()).tell(poison{true});
  b.remote->ref_to<poison>(a.address(), third.untyped().path()).tell(poison{false});
  for (std::uint64_t i = 0; i < 20; ++i) {
    far(first).tell(numbered{i});
    far(second).tell(numbered{i});
    far(third).tell(numbered{i});
    b.remote->ref_to<reply_text>(a.address(), texts.untyped().path())
        .tell(reply_text{std::to_string(i)});
  }
  for (std::uint64_t i = 0; i < 20; ++i) {
    ASSERT_EQ(next<numbered>(first).n, i);
    ASSERT_EQ(next<numbered>(second).n, i);
    ASSERT_EQ(next<numbered>(third).n, i);
    ASSERT_EQ(texts.expect_message().text, std::to_string(i));
  }
  EXPECT_EQ(a.remote->stats().undecodable, 0U);
  // The refused messages are dead letters on the sending node, each with its reason.
  std::vector<std::string> reasons;
  for (int i = 0; i < 3; ++i) reasons.push_back(letters.expect_message(5s).reason);
  auto has = [&](const std::string& what) {
    return std::ranges::any_of(reasons,
                               [&](const auto& r) { return r.find(what) != std::string::npos; });
  };
  EXPECT_TRUE(has("exceeds the maximum of 65536")) << testing::PrintToString(reasons);
  EXPECT_TRUE(has("poison cannot be encoded")) << testing::PrintToString(reasons);
  EXPECT_TRUE(has("not derived from std::exception")) << testing::PrintToString(reasons);
  EXPECT_EQ(b.remote->stats().messages_sent, connect_first ? 81U : 80U);
}

TEST_P(remote_node_test, a_refused_message_changes_no_connection_state) {
  refused_messages_change_no_connection_state(net, false);
}

TEST_P(remote_node_test, a_refused_message_on_an_idle_connection_changes_no_connection_state) {
  refused_messages_change_no_connection_state(net, true);
}

TEST_P(remote_node_test, a_decoder_that_throws_anything_makes_a_dead_letter_on_the_receiver) {
  auto types = registry();
  types->add<cursed>("test.cursed");
  node a(net, types);
  node b(net, types);
  test_probe<echo_msg> probe(a.system);
  a.remote->expose(probe.untyped());
  test_probe<troupe::dead_letter> letters(a.system, "letters");
  a.system.dead_letters().subscribe(letters.ref());
  b.remote->ref_to<cursed>(a.address(), probe.untyped().path()).tell(cursed{1});
  b.remote->ref_to<echo_msg>(a.address(), probe.untyped().path()).tell(numbered{2});
  EXPECT_EQ(next<numbered>(probe).n, 2U);  // the I/O thread survived
  const auto letter = letters.expect_message(5s);
  EXPECT_NE(letter.reason.find("not derived from std::exception"), std::string::npos)
      << letter.reason;
  EXPECT_NE(letter.message_as<undecodable_message>(), nullptr);
}

TEST_P(remote_node_test, a_different_cluster_name_is_refused_with_a_log_line) {
  troupe::testkit::log_capture logs;
  node a(net, registry(), remote_options{}.with_cluster_name("alpha"));
  node b(net, registry(), remote_options{}.with_cluster_name("beta"));
  test_probe<echo_msg> probe(a.system);
  a.remote->expose(probe.untyped());
  b.remote->ref_to<echo_msg>(a.address(), probe.untyped().path()).tell(numbered{1});
  EXPECT_FALSE(logs.wait_for_line({"refusing", "cluster name 'beta'"}, 5s).empty());
  EXPECT_FALSE(logs.wait_for_line({"refused our handshake"}, 5s).empty());
  probe.expect_no_message(200ms);
}

TEST_P(remote_node_test, messages_for_an_unreachable_node_are_bounded) {
  node b(net, registry(), remote_options{}.with_max_queued_unconnected(100));
  node_address nowhere =
      net.kind() == net_kind::memory ? node_address{"nowhere", 1} : node_address{"127.0.0.1", 1};
  auto far = b.remote->ref_to<echo_msg>(nowhere, "/user/x");
  for (int i = 0; i < 300; ++i) far.tell(numbered{1});
  await_condition([&] { return b.remote->stats().queue_overflows >= 200; }, 5s);
  EXPECT_GE(b.system.dead_letters().count(), 200U);
}

TEST(remote_options_test, invalid_options_are_refused_with_the_reason) {
  troupe::actor_system system(troupe::system_config{}.with_workers(1));
  test::network net(net_kind::memory);
  auto valid = [&] {
    return remote_options{}.with_registry(registry()).with_transport(net.factory());
  };
  auto refused = [&](remote_options o, const std::string& why) {
    try {
      remote_node n(system, std::move(o));
      ADD_FAILURE() << "accepted options that should fail: " << why;
    } catch (const troupe::error& e) {
      EXPECT_EQ(e.value(), troupe::errc::invalid_config);
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused(remote_options{}.with_transport(net.factory()), "registry");
  refused(remote_options{}.with_registry(registry()), "transport");
  refused(valid().with_heartbeat(1s, 1s), "unreachable_after");
  refused(valid().with_max_frame_size(10), "max_frame_size");
  refused(valid().with_reconnect_backoff(100ms, 10ms), "backoff");
  remote_node ok(system, valid());  // and the defaults are fine
}

INSTANTIATE_TEST_SUITE_P(networks, remote_node_test,
                         ::testing::Values(net_kind::memory, net_kind::tcp, net_kind::tls),
                         [](const auto& p) { return test::name_of(p.param); });

}  // namespace
