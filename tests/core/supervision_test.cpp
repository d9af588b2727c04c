// ctest-labels: concurrency
// Supervision: a failure is caught at the failing actor's boundary, logged with its path, and
// handed to the parent's strategy; nothing else is affected.
#include <troupe/core/actor_system.hpp>
#include <troupe/core/async_actor.hpp>
#include <troupe/core/supervision.hpp>
#include <troupe/testkit/deterministic.hpp>
#include <troupe/testkit/log_capture.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <boost/asio/awaitable.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace {

using namespace std::chrono_literals;
using testing::HasSubstr;
using troupe::testkit::log_capture;
using troupe::testkit::test_probe;

// -- actors -------------------------------------------------------------------------------------

struct increment {};
struct get_count {};
struct fail_now {
  std::string why;
  bool after_await = false;  // coroutine actors only: fail after a co_await
};
using counter_msg = std::variant<increment, get_count, fail_now>;

using events = troupe::actor_ref<std::string>;

/// Tells `to` about a step, when there is anyone to tell.
void note(const events& to, std::string what) {
  if (to) to.tell(std::move(what));
}

std::string what_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "?";
  }
}

/// Counts increments; reports its lifecycle hooks to `hooks`.
class counter final : public troupe::actor<counter_msg> {
 public:
  explicit counter(events hooks = {}) : hooks_(std::move(hooks)) {}

 private:
  void pre_start() override { note(hooks_, "pre_start"); }
  void post_stop() override { note(hooks_, "post_stop"); }
  void pre_restart(const std::exception_ptr& reason) override {
    note(hooks_, "pre_restart: " + what_of(reason));
    actor_base::pre_restart(reason);
  }
  void post_restart(const std::exception_ptr& reason) override {
    note(hooks_, "post_restart: " + what_of(reason));
    actor_base::post_restart(reason);
  }
  void receive(counter_msg& msg) override {
    std::visit(troupe::overloaded{
                   [this](increment&) { ++count_; },
                   [this](get_count&) { context().reply(count_); },
                   [](fail_now& f) { throw std::runtime_error(f.why); },
               },
               msg);
  }

  events hooks_;
  int count_ = 0;
};

/// The same counter with a coroutine handler.
class async_counter final : public troupe::async_actor<counter_msg> {
 private:
  boost::asio::awaitable<void> receive(counter_msg msg) override {
    if (auto* f = std::get_if<fail_now>(&msg)) {
      if (f->after_await) co_await troupe::sleep_for(1ms);
      throw std::runtime_error(f->why);
    }
    if (std::holds_alternative<increment>(msg)) ++count_;
    if (std::holds_alternative<get_count>(msg)) context().reply(count_);
    co_return;
  }

  int count_ = 0;
};

struct watch_and_wait {
  troupe::untyped_ref target;
};

/// Watches `target` and awaits for an hour; fails in on_terminated, outside its handler.
class watching_waiter final : public troupe::async_actor<watch_and_wait> {
 public:
  explicit watching_waiter(events hooks) : hooks_(std::move(hooks)) {}

 private:
  void pre_start() override { note(hooks_, "pre_start"); }
  void pre_restart(const std::exception_ptr& reason) override {
    note(hooks_, "pre_restart: " + what_of(reason));
    actor_base::pre_restart(reason);
  }
  void on_terminated(const troupe::untyped_ref& /*who*/) override {
    throw std::runtime_error("watched actor died");
  }
  boost::asio::awaitable<void> receive(watch_and_wait msg) override {
    context().watch(msg.target);
    note(hooks_, "awaiting");
    try {
      co_await troupe::sleep_for(1h);
    } catch (const boost::system::system_error&) {
      note(hooks_, "cancelled");
      throw;
    }
    note(hooks_, "resumed");
  }

  events hooks_;
};

enum class fault { in_constructor, in_pre_start };

/// Fails in its constructor or pre_start the first time it is built; replies to get_count with
/// the number of instances built so far.
class fragile final : public troupe::actor<counter_msg> {
 public:
  fragile(fault where, std::shared_ptr<std::atomic<int>> builds)
      : where_(where), builds_(std::move(builds)), first_(builds_->fetch_add(1) == 0) {
    if (first_ && where_ == fault::in_constructor) throw std::runtime_error("constructor failed");
  }

 private:
  void pre_start() override {
    if (first_ && where_ == fault::in_pre_start) throw std::runtime_error("pre_start failed");
  }
  void receive(counter_msg& msg) override {
    if (std::holds_alternative<get_count>(msg)) context().reply(builds_->load());
  }

  fault where_;
  std::shared_ptr<std::atomic<int>> builds_;
  bool first_;
};

struct get_child {};
using child_factory = std::function<troupe::untyped_ref(troupe::actor_context&)>;

/// Spawns one child in pre_start and supervises it with `strategy`; answers get_child with it.
class supervisor final : public troupe::actor<get_child> {
 public:
  supervisor(troupe::supervisor_strategy strategy, child_factory make, events hooks = {})
      : strategy_(std::move(strategy)), make_(std::move(make)), hooks_(std::move(hooks)) {}

 private:
  void pre_start() override {
    note(hooks_, "supervisor pre_start");
    child_ = make_(context());
  }
  void post_stop() override { note(hooks_, "supervisor post_stop"); }
  void receive(get_child& /*unused*/) override { context().reply(child_); }
  [[nodiscard]] troupe::supervisor_strategy child_supervision() const override { return strategy_; }

  troupe::supervisor_strategy strategy_;
  child_factory make_;
  events hooks_;
  troupe::untyped_ref child_;
};

template <class A, class... Args>
child_factory child(std::string name, Args... args) {
  return [name = std::move(name), args...](troupe::actor_context& c) {
    return troupe::untyped_ref(c.spawn<A>(name, args...));
  };
}

/// `strategy`, with its decider also reporting each exception's message to `seen`.
troupe::supervisor_strategy recording(troupe::supervisor_strategy strategy, events seen) {
  strategy.decider = [decide = strategy.decider, seen](const std::exception_ptr& e) {
    note(seen, what_of(e));
    return decide(e);
  };
  return strategy;
}

/// The child of a supervisor, asked through `probe`.
troupe::actor_ref<counter_msg> child_of(const troupe::actor_ref<get_child>& sup,
                                        test_probe<troupe::untyped_ref>& probe) {
  sup.tell(get_child{}, probe.untyped());
  return troupe::actor_ref<counter_msg>(probe.expect_message().target_ptr());
}

/// The count a counter reports.
int count_of(const troupe::actor_ref<counter_msg>& c, test_probe<int>& replies) {
  c.tell(get_count{}, replies.untyped());
  return replies.expect_message();
}

troupe::system_config two_workers() { return troupe::system_config{}.with_workers(2); }

// -- where failures come from -------------------------------------------------------------------

TEST(Supervision, PlainHandlerExceptionIsLoggedWithPathAndMessageTypeAndReachesTheParent) {
  log_capture log;
  troupe::actor_system system(two_workers());
  test_probe<std::string> decisions(system, "decisions");
  test_probe<troupe::untyped_ref> refs(system, "refs");
  test_probe<int> replies(system, "replies");
  auto sup = system.spawn<supervisor>(
      "sup", recording(troupe::supervisor_strategy::resuming(), decisions.ref()),
      child<counter>("child"));
  auto c = child_of(sup, refs);

  c.tell(increment{});
  c.tell(fail_now{"boom in handler"});

  EXPECT_EQ(decisions.expect_message(), "boom in handler");
  const std::string line = log.wait_for_line({"/user/sup/child", "boom in handler"});
  EXPECT_THAT(line, HasSubstr("fail_now"));
  EXPECT_EQ(count_of(c, replies), 1);
}

TEST(Supervision, CoroutineExceptionBeforeTheFirstAwaitIsHandledLikeAPlainOne) {
  log_capture log;
  troupe::actor_system system(two_workers());
  test_probe<std::string> decisions(system, "decisions");
  test_probe<troupe::untyped_ref> refs(system, "refs");
  test_probe<int> replies(system, "replies");
  auto sup = system.spawn<supervisor>(
      "sup", recording(troupe::supervisor_strategy::resuming(), decisions.ref()),
      child<async_counter>("child"));
  auto c = child_of(sup, refs);

  c.tell(increment{});
  c.tell(fail_now{"boom before await"});

  EXPECT_EQ(decisions.expect_message(), "boom before await");
  const std::string line = log.wait_for_line({"/user/sup/child", "boom before await"});
  EXPECT_THAT(line, HasSubstr("fail_now"));
  EXPECT_EQ(count_of(c, replies), 1);
}

TEST(Supervision, CoroutineExceptionAfterAnAwaitIsHandledLikeAPlainOne) {
  log_capture log;
  troupe::actor_system system(two_workers());
  test_probe<std::string> decisions(system, "decisions");
  test_probe<troupe::untyped_ref> refs(system, "refs");
  test_probe<int> replies(system, "replies");
  auto sup = system.spawn<supervisor>(
      "sup", recording(troupe::supervisor_strategy::resuming(), decisions.ref()),
      child<async_counter>("child"));
  auto c = child_of(sup, refs);

  c.tell(increment{});
  c.tell(fail_now{"boom after await", true});

  EXPECT_EQ(decisions.expect_message(), "boom after await");
  const std::string line = log.wait_for_line({"/user/sup/child", "boom after await"});
  EXPECT_THAT(line, HasSubstr("fail_now"));
  EXPECT_EQ(count_of(c, replies), 1);
}

TEST(Supervision, ConstructorExceptionIsLoggedAndTheChildIsBuiltAgain) {
  log_capture log;
  troupe::actor_system system(two_workers());
  test_probe<std::string> decisions(system, "decisions");
  test_probe<troupe::untyped_ref> refs(system, "refs");
  test_probe<int> replies(system, "replies");
  auto builds = std::make_shared<std::atomic<int>>(0);
  // Resuming needs an instance; with none, the runtime restarts instead.
  auto sup = system.spawn<supervisor>(
      "sup", recording(troupe::supervisor_strategy::resuming(), decisions.ref()),
      child<fragile>("child", fault::in_constructor, builds));
  auto c = child_of(sup, refs);

  EXPECT_EQ(decisions.expect_message(), "constructor failed");
  EXPECT_THAT(log.wait_for_line({"/user/sup/child", "constructor failed"}),
              HasSubstr("constructor"));
  EXPECT_EQ(count_of(c, replies), 2);
}

TEST(Supervision, PreStartExceptionIsLoggedAndTheChildIsRestarted) {
  log_capture log;
  troupe::actor_system system(two_workers());
  test_probe<std::string> decisions(system, "decisions");
  test_probe<troupe::untyped_ref> refs(system, "refs");
  test_probe<int> replies(system, "replies");
  auto builds = std::make_shared<std::atomic<int>>(0);
  auto sup = system.spawn<supervisor>(
      "sup", recording(troupe::supervisor_strategy::restarting(), decisions.ref()),
      child<fragile>("child", fault::in_pre_start, builds));
  auto c = child_of(sup, refs);

  EXPECT_EQ(decisions.expect_message(), "pre_start failed");
  EXPECT_THAT(log.wait_for_line({"/user/sup/child", "pre_start failed"}), HasSubstr("pre_start"));
  EXPECT_EQ(count_of(c, replies), 2);
}

TEST(Supervision, RestartCancelsAnAwaitingCoroutineHandlerAndWaitsForItToEnd) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> hooks(ds.system(), "hooks");
  auto waiter = ds.system().spawn<watching_waiter>("waiter", hooks.ref());
  auto target = ds.system().spawn<counter>("target");
  EXPECT_EQ(hooks.expect_message(), "pre_start");
  waiter.tell(watch_and_wait{target});
  EXPECT_EQ(hooks.expect_message(), "awaiting");

  ds.system().stop(target);  // on_terminated throws while the handler awaits

  // The old instance is destroyed only after its coroutine has ended.
  EXPECT_EQ(hooks.expect_message(), "cancelled");
  EXPECT_EQ(hooks.expect_message(), "pre_restart: watched actor died");
  EXPECT_EQ(hooks.expect_message(), "pre_start");
  EXPECT_EQ(ds.clock().pending(), 0u);
  waiter.tell(watch_and_wait{target});
  EXPECT_EQ(hooks.expect_message(), "awaiting");
}

// -- directives ---------------------------------------------------------------------------------

TEST(Supervision, ResumingKeepsTheChildsState) {
  troupe::actor_system system(two_workers());
  test_probe<troupe::untyped_ref> refs(system, "refs");
  test_probe<int> replies(system, "replies");
  test_probe<std::string> hooks(system, "hooks");
  auto sup = system.spawn<supervisor>("sup", troupe::supervisor_strategy::resuming(),
                                      child<counter>("child", hooks.ref()));
  auto c = child_of(sup, refs);
  EXPECT_EQ(hooks.expect_message(), "pre_start");

  c.tell(increment{});
  c.tell(increment{});
  c.tell(fail_now{"boom"});
  c.tell(increment{});

  EXPECT_EQ(count_of(c, replies), 3);
  hooks.expect_no_message(20ms);  // no restart hooks
}

TEST(Supervision, RestartingGivesAFreshStateRunsTheHooksAndKeepsTheMailbox) {
  troupe::actor_system system(two_workers());
  test_probe<troupe::untyped_ref> refs(system, "refs");
  test_probe<int> replies(system, "replies");
  test_probe<std::string> hooks(system, "hooks");
  auto sup = system.spawn<supervisor>("sup", troupe::supervisor_strategy::restarting(),
                                      child<counter>("child", hooks.ref()));
  auto c = child_of(sup, refs);
  EXPECT_EQ(hooks.expect_message(), "pre_start");

  c.tell(increment{});
  c.tell(increment{});
  c.tell(fail_now{"boom"});
  // Sent after the failing message: still handled, by the fresh instance.
  c.tell(increment{});
  c.tell(get_count{}, replies.untyped());

  EXPECT_EQ(replies.expect_message(), 1);
  EXPECT_EQ(hooks.expect_message(), "pre_restart: boom");
  EXPECT_EQ(hooks.expect_message(), "post_stop");  // the default pre_restart runs post_stop
  EXPECT_EQ(hooks.expect_message(), "post_restart: boom");
  EXPECT_EQ(hooks.expect_message(), "pre_start");  // the default post_restart runs pre_start
}

TEST(Supervision, StoppingTerminatesTheChildAndNotifiesItsWatchers) {
  troupe::actor_system system(two_workers());
  test_probe<troupe::untyped_ref> refs(system, "refs");
  test_probe<std::string> hooks(system, "hooks");
  test_probe<troupe::dead_letter> dead(system, "dead");
  auto sup = system.spawn<supervisor>("sup", troupe::supervisor_strategy::stopping(),
                                      child<counter>("child", hooks.ref()));
  auto c = child_of(sup, refs);
  EXPECT_EQ(hooks.expect_message(), "pre_start");
  refs.watch(c);

  c.tell(fail_now{"boom"});

  refs.expect_terminated(c);
  EXPECT_EQ(hooks.expect_message(), "post_stop");
  EXPECT_TRUE(c.is_terminated());
  system.dead_letters().subscribe(dead.ref());
  c.tell(increment{});
  EXPECT_EQ(dead.expect_message().recipient, "/user/sup/child");
}

TEST(Supervision, EscalatingFailsTheParentWhichItsOwnParentHandles) {
  log_capture log;
  troupe::actor_system system(two_workers());
  test_probe<std::string> decisions(system, "decisions");
  test_probe<std::string> parent_hooks(system, "parent-hooks");
  test_probe<troupe::untyped_ref> refs(system, "refs");
  test_probe<int> replies(system, "replies");
  // grandparent (restarts, recording) -> parent (escalates) -> child
  auto grandparent = system.spawn<supervisor>(
      "gp", recording(troupe::supervisor_strategy::restarting(), decisions.ref()),
      child<supervisor>("parent", troupe::supervisor_strategy::escalating(),
                        child<counter>("child"), parent_hooks.ref()));
  auto parent = troupe::actor_ref<get_child>(child_of(grandparent, refs).target_ptr());
  EXPECT_EQ(parent_hooks.expect_message(), "supervisor pre_start");
  auto old_child = child_of(parent, refs);
  old_child.tell(increment{});
  refs.watch(old_child);

  old_child.tell(fail_now{"boom from the grandchild"});

  // The grandparent decides on the grandchild's exception, and restarts the parent, which stops
  // its old child and spawns a new one.
  EXPECT_EQ(decisions.expect_message(), "boom from the grandchild");
  EXPECT_THAT(log.wait_for_line({"[/user/gp/parent] ", "boom from the grandchild"}),
              HasSubstr("escalated"));
  refs.expect_terminated(old_child);
  EXPECT_EQ(parent_hooks.expect_message(), "supervisor post_stop");
  EXPECT_EQ(parent_hooks.expect_message(), "supervisor pre_start");
  auto new_child = child_of(parent, refs);
  EXPECT_NE(new_child, old_child);
  EXPECT_EQ(new_child.path(), "/user/gp/parent/child");
  EXPECT_EQ(count_of(new_child, replies), 0);
}

TEST(Supervision, EscalatedFailureResumedByTheGrandparentLeavesTheChildUsable) {
  troupe::actor_system system(two_workers());
  test_probe<troupe::untyped_ref> refs(system, "refs");
  test_probe<int> replies(system, "replies");
  auto grandparent = system.spawn<supervisor>(
      "gp", troupe::supervisor_strategy::resuming(),
      child<supervisor>("parent", troupe::supervisor_strategy::escalating(),
                        child<counter>("child")));
  auto parent = troupe::actor_ref<get_child>(child_of(grandparent, refs).target_ptr());
  auto c = child_of(parent, refs);
  c.tell(increment{});

  c.tell(fail_now{"boom"});

  // The parent resumes; its child, failed and waiting for a decision, must not hang for ever.
  EXPECT_EQ(child_of(parent, refs), c);
  EXPECT_EQ(count_of(c, replies), 1);
}

TEST(Supervision, DefaultStrategyRestarts) {
  troupe::actor_system system(two_workers());
  test_probe<troupe::untyped_ref> refs(system, "refs");
  test_probe<int> replies(system, "replies");
  test_probe<std::string> hooks(system, "hooks");
  // A parent that does not override child_supervision, and the /user guardian.
  auto sup =
      system.spawn<supervisor>("sup", troupe::supervisor_strategy{}, child<counter>("child"));
  auto nested = child_of(sup, refs);
  auto top = system.spawn<counter>("top", hooks.ref());
  EXPECT_EQ(hooks.expect_message(), "pre_start");

  for (const auto& c : {nested, top}) {
    c.tell(increment{});
    c.tell(fail_now{"boom"});
    c.tell(increment{});
    EXPECT_EQ(count_of(c, replies), 1) << c.path();
  }
  EXPECT_EQ(hooks.expect_message(), "pre_restart: boom");
}

// -- bounded restarts and backoff ---------------------------------------------------------------

TEST(Supervision, ThirdFailureWithinTheWindowStopsAChildAllowedTwoRestarts) {
  log_capture log;
  troupe::actor_system system(two_workers());
  test_probe<troupe::untyped_ref> refs(system, "refs");
  test_probe<int> replies(system, "replies");
  test_probe<std::string> hooks(system, "hooks");
  troupe::supervisor_strategy strategy;
  strategy.max_restarts = 2;
  strategy.min_backoff = 1ms;
  auto sup = system.spawn<supervisor>("sup", strategy, child<counter>("child", hooks.ref()));
  auto c = child_of(sup, refs);
  refs.watch(c);

  c.tell(fail_now{"first"});
  c.tell(fail_now{"second"});
  EXPECT_EQ(count_of(c, replies), 0);  // restarted twice, still alive
  c.tell(fail_now{"third"});

  refs.expect_terminated(c);
  EXPECT_THAT(log.wait_for_line({"/user/sup/child", "stopped"}), HasSubstr("2 restarts"));
  // Two restarts, then the final stop; one child, so its hooks arrive in order.
  for (const char* expected :
       {"pre_start", "pre_restart: first", "post_stop", "post_restart: first", "pre_start",
        "pre_restart: second", "post_stop", "post_restart: second", "pre_start", "post_stop"}) {
    EXPECT_EQ(hooks.expect_message(), expected);
  }
}

TEST(Supervision, SecondRestartWaitsForMinBackoffOnTheSystemClock) {
  troupe::testkit::deterministic_system ds;
  test_probe<troupe::untyped_ref> refs(ds.system(), "refs");
  test_probe<int> replies(ds.system(), "replies");
  troupe::supervisor_strategy strategy;
  strategy.min_backoff = 100ms;
  strategy.max_backoff = 150ms;
  auto sup = ds.system().spawn<supervisor>("sup", strategy, child<counter>("child"));
  auto c = child_of(sup, refs);

  // First restart: at once.
  c.tell(increment{});
  c.tell(fail_now{"first"});
  EXPECT_EQ(count_of(c, replies), 0);

  // Second restart: after min_backoff.
  c.tell(increment{});
  c.tell(fail_now{"second"});
  c.tell(get_count{}, replies.untyped());
  ds.run();
  replies.expect_no_message(1ms);
  ds.advance(99ms);
  replies.expect_no_message(1ms);
  ds.advance(1ms);
  EXPECT_EQ(replies.expect_message(), 0);

  // Third restart: backoff doubled (200 ms), capped at max_backoff.
  c.tell(fail_now{"third"});
  c.tell(get_count{}, replies.untyped());
  ds.run();  // fails now, so that the backoff starts now
  ds.advance(149ms);
  replies.expect_no_message(1ms);
  ds.advance(1ms);
  EXPECT_EQ(replies.expect_message(), 0);
}

TEST(Supervision, StoppingAChildThatWaitsForItsRestartCancelsTheBackoffTimer) {
  troupe::testkit::deterministic_system ds;
  test_probe<troupe::untyped_ref> refs(ds.system(), "refs");
  test_probe<int> replies(ds.system(), "replies");
  troupe::supervisor_strategy strategy;
  strategy.min_backoff = 100ms;
  auto sup = ds.system().spawn<supervisor>("sup", strategy, child<counter>("child"));
  auto c = child_of(sup, refs);
  c.tell(fail_now{"first"});
  EXPECT_EQ(count_of(c, replies), 0);
  c.tell(fail_now{"second"});
  ds.run();
  ASSERT_EQ(ds.clock().pending(), 1u);  // the delayed restart
  refs.watch(c);

  ds.system().stop(c);

  refs.expect_terminated(c);
  // A timer left behind would hold the stopped actor (and with it the runtime) until it fires.
  EXPECT_EQ(ds.clock().pending(), 0u);
}

TEST(Supervision, RestartsOutsideTheWindowDoNotCount) {
  troupe::testkit::deterministic_system ds;
  test_probe<troupe::untyped_ref> refs(ds.system(), "refs");
  test_probe<int> replies(ds.system(), "replies");
  troupe::supervisor_strategy strategy;
  strategy.max_restarts = 1;
  strategy.window = 1s;
  auto sup = ds.system().spawn<supervisor>("sup", strategy, child<counter>("child"));
  auto c = child_of(sup, refs);

  c.tell(fail_now{"first"});
  EXPECT_EQ(count_of(c, replies), 0);
  ds.advance(1001ms);
  c.tell(increment{});
  c.tell(fail_now{"second, a window later"});
  c.tell(increment{});

  // Restarted at once (a new window), not stopped.
  EXPECT_EQ(count_of(c, replies), 1);
  EXPECT_FALSE(c.is_terminated());
}

// -- containment --------------------------------------------------------------------------------

TEST(Supervision, AFailureAffectsNoOtherActor) {
  troupe::actor_system system(two_workers());
  test_probe<troupe::untyped_ref> refs(system, "refs");
  test_probe<int> replies(system, "replies");
  auto victim = system.spawn<counter>("victim");
  auto bystander = system.spawn<counter>("bystander");
  auto sup = system.spawn<supervisor>("sup", troupe::supervisor_strategy::stopping(),
                                      child<counter>("child"));
  auto stopped_child = child_of(sup, refs);
  bystander.tell(increment{});
  bystander.tell(increment{});
  refs.watch(stopped_child);

  for (int i = 0; i < 3; ++i) {
    victim.tell(fail_now{"boom"});
    bystander.tell(increment{});
  }
  stopped_child.tell(fail_now{"boom"});

  refs.expect_terminated(stopped_child);
  EXPECT_EQ(count_of(bystander, replies), 5);
  EXPECT_EQ(count_of(victim, replies), 0);
  EXPECT_EQ(child_of(sup, refs), stopped_child);  // the parent still answers
}

}  // namespace
