// ctest-labels: concurrency
// Lifecycle: construction, pre_start, post_stop, the context during construction, paths and
// names, children.
#include <troupe/core/actor_system.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace {

using troupe::actor_ref;
using troupe::actor_system;
using troupe::errc;
using troupe::system_config;
using troupe::untyped_ref;
using troupe::testkit::test_probe;

system_config small_config() { return system_config{}.with_name("lifecycle").with_workers(2); }

/// The errc of the troupe::error `f` throws; fails the test when it throws nothing.
template <class F>
std::optional<errc> error_of(F&& f) {
  try {
    f();
  } catch (const troupe::error& e) {
    return e.value();
  }
  ADD_FAILURE() << "expected a troupe::error";
  return std::nullopt;
}

/// Reports each lifecycle step to a probe as a string.
class recorder final : public troupe::actor<int> {
 public:
  explicit recorder(actor_ref<std::string> out) : out_(std::move(out)) {
    out_.tell("constructed " + context().path() + " self " + self().path() + " parent " +
              context().parent().path());
  }

 private:
  void pre_start() override {
    out_.tell("pre_start " + context().path() + " self " + self().path() + " name " +
              context().name());
  }
  void receive(int& n) override { out_.tell("message " + std::to_string(n)); }
  void post_stop() override { out_.tell("post_stop " + context().path()); }

  actor_ref<std::string> out_;
};

TEST(Lifecycle, ConstructorAndPreStartRunBeforeTheFirstMessage) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto r = system.spawn<recorder>("recorder", probe.ref());
  r.tell(1);

  EXPECT_EQ(probe.expect_message(), "constructed /user/recorder self /user/recorder parent /user");
  EXPECT_EQ(probe.expect_message(), "pre_start /user/recorder self /user/recorder name recorder");
  EXPECT_EQ(probe.expect_message(), "message 1");
}

TEST(Lifecycle, PreStartHasRunWhenSpawnReturns) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  (void)system.spawn<recorder>("recorder", probe.ref());

  // Spawn constructs and starts the actor on the calling thread; both reports are already sent.
  EXPECT_EQ(probe.expect_message(std::chrono::milliseconds(0)).rfind("constructed", 0), 0U);
  EXPECT_EQ(probe.expect_message(std::chrono::milliseconds(0)).rfind("pre_start", 0), 0U);
}

TEST(Lifecycle, PostStopRunsAfterStopAndNoMessageAfterIt) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto r = system.spawn<recorder>("recorder", probe.ref());
  (void)probe.expect_message();
  (void)probe.expect_message();
  probe.watch(r);

  r.tell(1);
  system.stop(r);
  probe.expect_terminated(r);
  // The stop signal may overtake the user message, but post_stop is the last word.
  auto last = probe.expect_message();
  if (last == "message 1") last = probe.expect_message();
  EXPECT_EQ(last, "post_stop /user/recorder");
  r.tell(2);
  probe.expect_no_message(std::chrono::milliseconds(20));
}

// -- paths and names ----------------------------------------------------------------------------

struct spawn_child {
  std::string name;
  bool unique = false;  // spawn_options::with_unique_name: the parent does not index it
};
struct list_children {};
struct stop_then_spawn {};
using parent_msg = std::variant<spawn_child, list_children, stop_then_spawn>;

/// Spawns recorders as children on request and reports what it sees of them.
class parent final : public troupe::actor<parent_msg> {
 public:
  explicit parent(actor_ref<std::string> out) : out_(std::move(out)) {}

 private:
  void receive(parent_msg& msg) override {
    std::visit(troupe::overloaded{[this](spawn_child& s) { spawn_one(s.name, s.unique); },
                                  [this](list_children&) { list(); },
                                  [this](stop_then_spawn&) { stop_then_spawn_one(); }},
               msg);
  }

  void spawn_one(const std::string& name, bool unique = false) {
    try {
      troupe::spawn_options options(name);
      if (unique) options.with_unique_name();
      auto child = context().spawn<recorder>(std::move(options), out_);
      out_.tell("spawned " + child.path());
    } catch (const troupe::error& e) {
      out_.tell("failed " + std::string(make_error_code(e.value()).message()));
    }
  }

  void list() {
    std::vector<std::string> paths;
    for (const auto& c : context().children()) paths.push_back(c.path());
    std::sort(paths.begin(), paths.end());
    std::string all = "children";
    for (const auto& p : paths) all += " " + p;
    out_.tell(all);
    out_.tell("child x " + context().child("x").path());
    out_.tell("child nope " + context().child("nope").path());
  }

  void stop_then_spawn_one() {
    stopping_ = true;
    context().stop();
  }

  void post_stop() override {
    if (!stopping_) return;
    try {
      (void)context().spawn<recorder>("late", out_);
      out_.tell("spawned late");
    } catch (const troupe::error& e) {
      out_.tell(e.value() == errc::recipient_terminated ? "refused recipient_terminated"
                                                        : "refused other");
    }
  }

  actor_ref<std::string> out_;
  bool stopping_ = false;
};

/// Skips the lifecycle reports of recorder children and returns the next other message.
std::string next_non_lifecycle(test_probe<std::string>& probe) {
  for (;;) {
    auto m = probe.expect_message();
    if (m.rfind("constructed", 0) != 0 && m.rfind("pre_start", 0) != 0 &&
        m.rfind("post_stop", 0) != 0) {
      return m;
    }
  }
}

TEST(Lifecycle, ChildPathsAreHierarchical) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto a = system.spawn<parent>("a", probe.ref());

  a.tell(spawn_child{"b"});
  EXPECT_EQ(next_non_lifecycle(probe), "spawned /user/a/b");
}

/// A parent whose child is itself a parent: /user/a/b/c.
class grandparent final : public troupe::actor<int> {
 public:
  explicit grandparent(actor_ref<std::string> out) : out_(std::move(out)) {}

 private:
  void pre_start() override {
    auto middle = context().spawn<parent>("b", out_);
    middle.tell(spawn_child{"c"});
  }
  void receive(int& /*unused*/) override {}
  actor_ref<std::string> out_;
};

TEST(Lifecycle, ChildOfAChildHasAThreeLevelPath) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  (void)system.spawn<grandparent>("a", probe.ref());
  EXPECT_EQ(next_non_lifecycle(probe), "spawned /user/a/b/c");
}

TEST(Lifecycle, AnonymousActorsGetNamesStartingWithDollar) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto one = system.spawn<recorder>("", probe.ref());
  auto two = system.spawn<recorder>(troupe::spawn_options{}, probe.ref());

  EXPECT_EQ(one.path().rfind("/user/$", 0), 0U) << one.path();
  EXPECT_EQ(two.path().rfind("/user/$", 0), 0U) << two.path();
  EXPECT_NE(one.path(), two.path());
  EXPECT_NE(one, two);
}

TEST(Lifecycle, ChildrenAndChildFindTheLiveChildren) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto a = system.spawn<parent>("a", probe.ref());

  a.tell(spawn_child{"x"});
  a.tell(spawn_child{"y"});
  EXPECT_EQ(next_non_lifecycle(probe), "spawned /user/a/x");
  EXPECT_EQ(next_non_lifecycle(probe), "spawned /user/a/y");
  a.tell(list_children{});
  EXPECT_EQ(next_non_lifecycle(probe), "children /user/a/x /user/a/y");
  EXPECT_EQ(next_non_lifecycle(probe), "child x /user/a/x");
  EXPECT_EQ(next_non_lifecycle(probe), "child nope <empty>");
}

TEST(Lifecycle, ChildFindsAChildSpawnedWithAUniqueNameWithoutTheIndex) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto a = system.spawn<parent>("a", probe.ref());

  a.tell(spawn_child{"x", /*unique=*/true});
  EXPECT_EQ(next_non_lifecycle(probe), "spawned /user/a/x");
  a.tell(list_children{});
  EXPECT_EQ(next_non_lifecycle(probe), "children /user/a/x");
  EXPECT_EQ(next_non_lifecycle(probe), "child x /user/a/x");  // found by a scan
  EXPECT_EQ(next_non_lifecycle(probe), "child nope <empty>");
}

// -- name validation ------------------------------------------------------------------------------

TEST(Lifecycle, InvalidNamesThrowInvalidActorName) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  for (const char* bad :
       {"has space", "a/b", "tab\there", "ümlaut", "semi;colon", "#hash", ".", ".."}) {
    EXPECT_EQ(error_of([&] { (void)system.spawn<recorder>(bad, probe.ref()); }),
              errc::invalid_actor_name)
        << bad;
  }
  probe.expect_no_message(std::chrono::milliseconds(0));  // nothing was constructed
}

TEST(Lifecycle, DollarPrefixedNamesAreReservedForAnonymousActors) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  EXPECT_EQ(error_of([&] { (void)system.spawn<recorder>("$1", probe.ref()); }),
            errc::invalid_actor_name);
  EXPECT_EQ(error_of([&] { (void)system.spawn<recorder>("$", probe.ref()); }),
            errc::invalid_actor_name);
}

TEST(Lifecycle, NamesWithEveryAllowedCharacterAreAccepted) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto r = system.spawn<recorder>("Az09_-.@:+~", probe.ref());
  EXPECT_EQ(r.path(), "/user/Az09_-.@:+~");
  EXPECT_EQ(error_of([&] { (void)system.spawn<recorder>("a$b", probe.ref()); }),
            errc::invalid_actor_name);  // '$' is allowed nowhere in a chosen name
}

TEST(Lifecycle, ATakenSiblingNameThrowsActorNameTaken) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto first = system.spawn<recorder>("twin", probe.ref());

  EXPECT_EQ(error_of([&] { (void)system.spawn<recorder>("twin", probe.ref()); }),
            errc::actor_name_taken);
  EXPECT_FALSE(first.is_terminated());
}

TEST(Lifecycle, ATakenChildNameFailsInsideTheParent) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto a = system.spawn<parent>("a", probe.ref());

  a.tell(spawn_child{"x"});
  a.tell(spawn_child{"x"});
  EXPECT_EQ(next_non_lifecycle(probe), "spawned /user/a/x");
  EXPECT_EQ(next_non_lifecycle(probe),
            "failed " + make_error_code(errc::actor_name_taken).message());
}

TEST(Lifecycle, TheSameNameUnderDifferentParentsIsFine) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto a = system.spawn<parent>("a", probe.ref());
  auto b = system.spawn<parent>("b", probe.ref());

  a.tell(spawn_child{"x"});
  EXPECT_EQ(next_non_lifecycle(probe), "spawned /user/a/x");
  b.tell(spawn_child{"x"});
  EXPECT_EQ(next_non_lifecycle(probe), "spawned /user/b/x");
}

TEST(Lifecycle, ANameBecomesFreeAgainOnceTheChildTerminated) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  for (int round = 0; round < 20; ++round) {
    auto r = system.spawn<recorder>("reused", probe.ref());
    probe.watch(r);
    system.stop(r);
    probe.expect_terminated(r);
  }
  auto last = system.spawn<recorder>("reused", probe.ref());
  EXPECT_EQ(last.path(), "/user/reused");
}

TEST(Lifecycle, SpawningUnderAStoppingParentFails) {
  actor_system system(small_config());
  test_probe<std::string> probe(system);
  auto a = system.spawn<parent>("a", probe.ref());
  probe.watch(a);

  a.tell(stop_then_spawn{});
  EXPECT_EQ(next_non_lifecycle(probe), "refused recipient_terminated");
  probe.expect_terminated(a);
}

}  // namespace
