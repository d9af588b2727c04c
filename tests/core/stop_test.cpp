// ctest-labels: concurrency
// Stopping actors: from the system and from a context, children before parents, poison pills,
// what happens to later messages, and death watch.
#include <troupe/core/actor_system.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <variant>
#include <vector>

namespace {

using troupe::actor_ref;
using troupe::actor_system;
using troupe::system_config;
using troupe::untyped_ref;
using troupe::testkit::test_probe;

system_config small_config() { return system_config{}.with_name("stop").with_workers(2); }

/// Reports its messages and its post_stop (with its name) to a probe.
class reporter final : public troupe::actor<int> {
 public:
  explicit reporter(actor_ref<std::string> out) : out_(std::move(out)) {}

 private:
  void receive(int& n) override { out_.tell(context().name() + " got " + std::to_string(n)); }
  void post_stop() override { out_.tell(context().name() + " stopped"); }
  actor_ref<std::string> out_;
};

/// Spawns a chain of `depth` descendants (each a tree node) and reports post_stop.
class tree_node final : public troupe::actor<int> {
 public:
  tree_node(actor_ref<std::string> out, int depth, int width)
      : out_(std::move(out)), depth_(depth), width_(width) {}

 private:
  void pre_start() override {
    if (depth_ == 0) return;
    for (int i = 0; i < width_; ++i) {
      (void)context().spawn<tree_node>(context().name() + std::to_string(i), out_, depth_ - 1,
                                       width_);
    }
  }
  void receive(int& /*unused*/) override {}
  void post_stop() override { out_.tell(context().path()); }

  actor_ref<std::string> out_;
  int depth_;
  int width_;
};

TEST(Stop, FromTheSystemRunsPostStopAndTerminatesTheActor) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto r = system.spawn<reporter>("r", probe.ref());
  probe.watch(r);

  system.stop(r);
  EXPECT_EQ(probe.expect_message(), "r stopped");
  probe.expect_terminated(r);
  EXPECT_TRUE(r.is_terminated());
}

TEST(Stop, StoppingAnEmptyRefOrAStoppedActorIsHarmless) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto r = system.spawn<reporter>("r", probe.ref());
  probe.watch(r);
  system.stop(r);
  probe.expect_terminated(r);
  EXPECT_EQ(probe.expect_message(), "r stopped");

  system.stop(r);
  system.stop(untyped_ref());
  probe.expect_no_message(std::chrono::milliseconds(20));
}

struct stop_it {
  untyped_ref who;
};
struct stop_myself {};
using controller_msg = std::variant<stop_it, stop_myself, int>;

/// Stops actors from inside its own turns.
class controller final : public troupe::actor<controller_msg> {
 public:
  explicit controller(actor_ref<std::string> out) : out_(std::move(out)) {}

 private:
  void pre_start() override { child_ = context().spawn<reporter>("child", out_); }
  void receive(controller_msg& msg) override {
    std::visit(troupe::overloaded{
                   [this](stop_it& s) { context().stop(s.who ? s.who : untyped_ref(child_)); },
                   [this](stop_myself&) {
                     context().stop();
                     out_.tell("still running after stop()");
                   },
                   [this](int& n) { out_.tell("controller got " + std::to_string(n)); }},
               msg);
  }
  void post_stop() override { out_.tell("controller stopped"); }

  actor_ref<std::string> out_;
  actor_ref<int> child_;
};

TEST(Stop, FromAContextStopsAChild) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto c = system.spawn<controller>("controller", probe.ref());

  c.tell(stop_it{});
  EXPECT_EQ(probe.expect_message(), "child stopped");
  c.tell(1);
  EXPECT_EQ(probe.expect_message(), "controller got 1");  // the parent lives on
}

TEST(Stop, FromAContextStopsAnyActor) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto c = system.spawn<controller>("controller", probe.ref());
  auto other = system.spawn<reporter>("other", probe.ref());
  probe.watch(other);

  c.tell(stop_it{other});
  EXPECT_EQ(probe.expect_message(), "other stopped");
  probe.expect_terminated(other);
}

TEST(Stop, SelfStopTakesEffectAfterTheCurrentMessage) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto c = system.spawn<controller>("controller", probe.ref());
  probe.watch(c);

  c.tell(stop_myself{});
  c.tell(2);  // queued behind the stop: never handled
  EXPECT_EQ(probe.expect_message(), "still running after stop()");
  EXPECT_EQ(probe.expect_message(), "child stopped");
  EXPECT_EQ(probe.expect_message(), "controller stopped");
  probe.expect_terminated(c);
  probe.expect_no_message(std::chrono::milliseconds(20));
}

TEST(Stop, ChildrenStopBeforeTheirParent) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto root = system.spawn<tree_node>("a", probe.ref(), 2, 1);
  probe.watch(root);

  system.stop(root);
  EXPECT_EQ(probe.expect_message(), "/user/a/a0/a00");
  EXPECT_EQ(probe.expect_message(), "/user/a/a0");
  EXPECT_EQ(probe.expect_message(), "/user/a");
  probe.expect_terminated(root);
}

TEST(Stop, EveryDescendantOfAWideTreeStopsBeforeItsAncestors) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto root = system.spawn<tree_node>("t", probe.ref(), 3, 3);  // 1 + 3 + 9 + 27 actors
  probe.watch(root);

  system.stop(root);
  std::vector<std::string> order;
  for (int i = 0; i < 40; ++i) order.push_back(probe.expect_message());
  probe.expect_terminated(root);
  EXPECT_EQ(order.back(), "/user/t");
  for (std::size_t i = 0; i < order.size(); ++i) {
    for (std::size_t j = i + 1; j < order.size(); ++j) {
      // No actor stops after one of its ancestors.
      EXPECT_NE(order[j].rfind(order[i] + "/", 0), 0U)
          << order[j] << " stopped after its ancestor " << order[i];
    }
  }
}

// -- poison pill --------------------------------------------------------------------------------

TEST(Stop, PoisonPillIsProcessedAfterEarlierMessages) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto r = system.spawn<reporter>("r", probe.ref());
  probe.watch(r);

  for (int i = 0; i < 100; ++i) r.tell(i);
  r.tell(troupe::poison_pill{});
  r.tell(100);  // after the pill: a dead letter
  for (int i = 0; i < 100; ++i) EXPECT_EQ(probe.expect_message(), "r got " + std::to_string(i));
  EXPECT_EQ(probe.expect_message(), "r stopped");
  probe.expect_terminated(r);
  probe.expect_no_message(std::chrono::milliseconds(20));
}

TEST(Stop, MessagesAfterStopGoToDeadLetters) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  test_probe<troupe::dead_letter> dead(system, "dead");
  system.dead_letters().subscribe(dead.ref());
  auto r = system.spawn<reporter>("r", probe.ref());
  probe.watch(r);
  system.stop(r);
  probe.expect_terminated(r);

  r.tell(7);
  const auto letter = dead.expect_message();
  EXPECT_EQ(letter.recipient, "/user/r");
  ASSERT_NE(letter.message_as<int>(), nullptr);
  EXPECT_EQ(*letter.message_as<int>(), 7);
  EXPECT_EQ(letter.code, troupe::errc::recipient_terminated);
}

// -- death watch --------------------------------------------------------------------------------

struct watch_it {
  untyped_ref who;
};
struct unwatch_it {
  untyped_ref who;
};
struct ping {};
using watcher_msg = std::variant<watch_it, unwatch_it, ping>;

/// Watches on request, reports on_terminated and answers pings (to flush its mailbox).
class watcher final : public troupe::actor<watcher_msg> {
 public:
  explicit watcher(actor_ref<std::string> out) : out_(std::move(out)) {}

 private:
  void receive(watcher_msg& msg) override {
    std::visit(troupe::overloaded{[this](watch_it& w) {
                                    context().watch(w.who);
                                    out_.tell("watching " + w.who.path());
                                  },
                                  [this](unwatch_it& u) {
                                    context().unwatch(u.who);
                                    out_.tell("unwatched " + u.who.path());
                                  },
                                  [this](ping&) { out_.tell("pong"); }},
               msg);
  }
  void on_terminated(const untyped_ref& who) override { out_.tell("terminated " + who.path()); }

  actor_ref<std::string> out_;
};

TEST(DeathWatch, OnTerminatedRunsWhenAWatchedActorStops) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto target = system.spawn<reporter>("target", probe.ref());
  auto w = system.spawn<watcher>("watcher", probe.ref());

  w.tell(watch_it{target});
  EXPECT_EQ(probe.expect_message(), "watching /user/target");
  system.stop(target);
  EXPECT_EQ(probe.expect_message(), "target stopped");
  EXPECT_EQ(probe.expect_message(), "terminated /user/target");
}

TEST(DeathWatch, OnTerminatedRunsOnceEvenWhenWatchedTwice) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto target = system.spawn<reporter>("target", probe.ref());
  auto w = system.spawn<watcher>("watcher", probe.ref());

  w.tell(watch_it{target});
  w.tell(watch_it{target});
  EXPECT_EQ(probe.expect_message(), "watching /user/target");
  EXPECT_EQ(probe.expect_message(), "watching /user/target");
  // The probe watches after the watcher, so it hears of the death after the watcher was told.
  probe.watch(target);
  system.stop(target);
  EXPECT_EQ(probe.expect_message(), "target stopped");
  probe.expect_terminated(target);
  // System messages run before user messages: a second on_terminated would precede the pong.
  w.tell(ping{});
  EXPECT_EQ(probe.expect_message(), "terminated /user/target");
  EXPECT_EQ(probe.expect_message(), "pong");
}

TEST(DeathWatch, AfterUnwatchNoNotificationArrives) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto target = system.spawn<reporter>("target", probe.ref());
  auto w = system.spawn<watcher>("watcher", probe.ref());

  w.tell(watch_it{target});
  w.tell(unwatch_it{target});
  EXPECT_EQ(probe.expect_message(), "watching /user/target");
  EXPECT_EQ(probe.expect_message(), "unwatched /user/target");
  probe.watch(target);
  system.stop(target);
  EXPECT_EQ(probe.expect_message(), "target stopped");
  probe.expect_terminated(target);
  w.tell(ping{});
  EXPECT_EQ(probe.expect_message(), "pong");
}

TEST(DeathWatch, WatchingAnAlreadyDeadActorNotifiesAtOnce) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto target = system.spawn<reporter>("target", probe.ref());
  probe.watch(target);
  system.stop(target);
  EXPECT_EQ(probe.expect_message(), "target stopped");
  probe.expect_terminated(target);

  auto w = system.spawn<watcher>("watcher", probe.ref());
  w.tell(watch_it{target});
  EXPECT_EQ(probe.expect_message(), "watching /user/target");
  EXPECT_EQ(probe.expect_message(), "terminated /user/target");
}

TEST(DeathWatch, AProbeWatchingAnAlreadyDeadActorIsNotifiedAtOnce) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  test_probe<std::string> late(system, "late");
  auto target = system.spawn<reporter>("target", probe.ref());
  probe.watch(target);
  system.stop(target);
  probe.expect_terminated(target);

  late.watch(target);
  late.expect_terminated(target);
}

TEST(DeathWatch, AWatcherHearsOfAParentAfterItsChildrenStopped) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto w = system.spawn<watcher>("watcher", probe.ref());
  auto c = system.spawn<controller>("controller", probe.ref());
  w.tell(watch_it{c});
  EXPECT_EQ(probe.expect_message(), "watching /user/controller");
  c.tell(troupe::poison_pill{});
  EXPECT_EQ(probe.expect_message(), "child stopped");
  EXPECT_EQ(probe.expect_message(), "controller stopped");
  EXPECT_EQ(probe.expect_message(), "terminated /user/controller");
}

// -- a parent hears of its children ------------------------------------------------------------

/// Spawns a child on any int and reports each child that stops, without watching it.
class parent_of_one final : public troupe::actor<int> {
 public:
  explicit parent_of_one(actor_ref<std::string> out) : out_(std::move(out)) {}

 private:
  void receive(int& n) override {
    auto child = context().spawn<reporter>("child-" + std::to_string(n), out_);
    child.tell(troupe::poison_pill{});
  }
  void on_child_terminated(const untyped_ref& child) override {
    out_.tell("child stopped: " + child.path());
  }
  actor_ref<std::string> out_;
};

TEST(Stop, AParentHearsOfAStoppedChildWithoutWatchingIt) {
  actor_system system(system_config{}.with_workers(2));
  test_probe<std::string> out(system, "out");
  auto p = system.spawn<parent_of_one>("parent", out.ref());
  p.tell(1);
  std::string line;
  do {
    line = out.expect_message();
  } while (line.rfind("child stopped: ", 0) != 0);
  EXPECT_EQ(line, "child stopped: /user/parent/child-1");
}

}  // namespace
