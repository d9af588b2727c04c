// The public sharding API where it had no test: a live entity's full path, an entity's child
// without identity, manual passivation with a custom stop message (old and typed forms), an
// options extractor overriding the key's, settings read from a HOCON file, and the typed shard
// handle.
#include <troupe/core/actor_system.hpp>
#include <troupe/core/config.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/testkit/deterministic.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::actor_ref;
using troupe::errc;
using troupe::sharding::cluster_sharding;
using troupe::sharding::sharding_options;
using troupe::testkit::test_probe;

struct put {
  std::string id;
  std::string item;
};
struct get {
  std::string id;
};
struct leave {
  std::string id;
};
struct stop_now {
  std::string id;
};
struct finish {
  std::string id;
};
struct path_of {
  std::string id;
};
struct quit {
  std::string id;
};
using command = std::variant<put, get, leave, stop_now, finish, path_of, quit>;

std::string id_of(const command& c) {
  return std::visit([](const auto& m) { return m.id; }, c);
}

/// Reports whether it is an entity (spawned by a box in its pre_start).
class helper final : public troupe::actor<int> {
 public:
  explicit helper(actor_ref<std::string> out) : out_(std::move(out)) {}

 private:
  void pre_start() override {
    std::string what = context().entity() ? "child is an entity" : "child has no entity";
    try {
      (void)entity_id();
    } catch (const troupe::error& e) {
      if (e.value() == errc::not_an_entity) what += ", entity_id throws not_an_entity";
    }
    out_.tell(what);
  }
  void receive(int& /*unused*/) override {}
  actor_ref<std::string> out_;
};

/// Keeps items; on `leave` asks to be passivated with the custom stop message `stop_now`, on
/// which it finishes (a timer of 1 s) before it stops itself; `quit` passivates with a pill.
class box final : public troupe::actor<command> {
 public:
  static inline const auto shard = troupe::sharding::shard_key<command>::of("box", id_of);

  explicit box(actor_ref<std::string> events = {}, bool old_form = false, bool child = false)
      : events_(std::move(events)), old_form_(old_form), child_(child) {}

 private:
  void pre_start() override {
    say("start " + entity_id());
    if (child_) (void)context().spawn<helper>("helper", events_);
  }
  void post_stop() override {
    std::string out = "stop " + entity_id() + ":";
    for (const auto& i : items_) out += " " + i;
    say(out);
  }
  void receive(command& c) override {
    std::visit(troupe::overloaded{
                   [this](put& p) { items_.push_back(p.item); },
                   [this](get&) {
                     std::string out;
                     for (const auto& i : items_) out += (out.empty() ? "" : " ") + i;
                     context().reply(entity_id() + ":" + out);
                   },
                   [this](leave&) {
                     if (old_form_) {
                       troupe::sharding::request_passivation<command>(
                           context(), command{stop_now{entity_id()}});
                     } else {
                       troupe::sharding::request_passivation(self(), stop_now{entity_id()});
                     }
                   },
                   [this](stop_now&) {
                     say("stop message for " + entity_id());
                     // The entity decides when it is done: here, a second later.
                     timers().start_single("finish", finish{entity_id()}, 1s);
                   },
                   [this](finish&) { context().stop(); },
                   [this](path_of&) { context().reply(context().path()); },
                   [this](quit&) { troupe::sharding::request_passivation(self()); },
               },
               c);
  }
  void say(const std::string& s) {
    if (events_) events_.tell(s);
  }

  actor_ref<std::string> events_;
  bool old_form_;
  bool child_;
  std::vector<std::string> items_;
};

std::string ask_get(actor_ref<command> region, const std::string& id) {
  return region.ask<std::string>(get{id}, troupe::testkit::dilated(3s), troupe::use_future).get();
}

TEST(ShardingApi, ALiveEntityHasItsFullPath) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  auto boxes = cluster_sharding::get(system).start<box>();
  const std::string path =
      boxes.ask<std::string>(path_of{"user/42"}, troupe::testkit::dilated(3s), troupe::use_future)
          .get();
  EXPECT_EQ(path, "/system/cluster/sharding/region-box/shard-" +
                      std::to_string(troupe::sharding::shard_of("user/42", 64)) +
                      "/entity-user~002F42");
}

TEST(ShardingApi, AnEntitysOwnChildHasNoEntityIdentity) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  test_probe<std::string> events(system, "events");
  auto boxes = cluster_sharding::get(system).start<box>(
      "box", sharding_options<command>::create().with_extract_entity_id(id_of), events.ref(), false,
      true);
  boxes.tell(put{"e1", "x"});
  EXPECT_EQ(events.expect_message(), "start e1");
  EXPECT_EQ(events.expect_message(), "child has no entity, entity_id throws not_an_entity");
}

/// The entity receives its custom stop message and stops when it chooses; what arrives for it
/// meanwhile waits in the shard and goes, in order, to the next incarnation.
void custom_stop_message_is_received_and_later_messages_replayed(bool old_form) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> events(ds.system(), "events");
  test_probe<std::string> replies(ds.system(), "replies");
  auto boxes = cluster_sharding::get(ds.system())
                   .start<box>("box",
                               sharding_options<command>::create()
                                   .with_extract_entity_id(id_of)
                                   .with_passivation_idle(0s),
                               events.ref(), old_form);
  boxes.tell(put{"b", "1"});
  boxes.tell(leave{"b"});
  EXPECT_EQ(events.expect_message(), "start b");
  EXPECT_EQ(events.expect_message(), "stop message for b");
  // The entity has not stopped yet: these wait for its next incarnation.
  boxes.tell(put{"b", "2"});
  boxes.tell(put{"b", "3"});
  boxes.tell(get{"b"}, replies.ref());
  ds.run();
  events.expect_no_message(1ms);
  replies.expect_no_message(1ms);
  EXPECT_EQ(cluster_sharding::get(ds.system()).state("box").buffered, 0U);  // in the shard
  ds.advance(1s);  // the entity finishes and stops itself
  EXPECT_EQ(events.expect_message(), "stop b: 1");
  EXPECT_EQ(events.expect_message(), "start b");
  EXPECT_EQ(replies.expect_message(), "b:2 3");
}

TEST(ShardingApi, TheCustomStopMessageOfManualPassivationLetsTheEntityDecideWhenToStop) {
  custom_stop_message_is_received_and_later_messages_replayed(/*old_form=*/false);
}

TEST(ShardingApi, TheLongFormOfRequestPassivationStillWorks) {
  custom_stop_message_is_received_and_later_messages_replayed(/*old_form=*/true);
}

TEST(ShardingApi, TheTypedRequestPassivationWithoutStopMessageSendsAPill) {
  troupe::testkit::deterministic_system ds;
  test_probe<std::string> events(ds.system(), "events");
  auto boxes =
      cluster_sharding::get(ds.system())
          .start<box>("box", sharding_options<command>::create().with_extract_entity_id(id_of),
                      events.ref());
  boxes.tell(put{"q", "1"});
  boxes.tell(quit{"q"});
  EXPECT_EQ(events.expect_message(), "start q");
  EXPECT_EQ(events.expect_message(), "stop q: 1");
}

/// Calls the typed request_passivation on itself although it is no entity.
class not_an_entity final : public troupe::actor<command> {
 public:
  explicit not_an_entity(actor_ref<std::string> out) : out_(std::move(out)) {}

 private:
  void receive(command& /*unused*/) override {
    try {
      troupe::sharding::request_passivation(self());
      out_.tell("no error");
    } catch (const troupe::error& e) {
      out_.tell(e.value() == errc::not_an_entity ? "not_an_entity" : "other error");
    }
  }
  actor_ref<std::string> out_;
};

TEST(ShardingApi, TheTypedRequestPassivationRefusesAnActorThatIsNoEntity) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  test_probe<std::string> out(system, "out");
  auto a = system.spawn<not_an_entity>("plain", out.ref());
  a.tell(get{"x"});
  EXPECT_EQ(out.expect_message(), "not_an_entity");
}

TEST(ShardingApi, AnExtractorInTheOptionsOverridesTheKeys) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  auto boxes = cluster_sharding::get(system).start<box>(
      sharding_options<command>::create().with_extract_entity_id(
          [](const command& c) { return "fixed-" + id_of(c); }));
  boxes.tell(put{"x", "1"});
  EXPECT_EQ(ask_get(boxes, "x"), "fixed-x:1");
}

/// A HOCON file on disk, removed with the test.
class conf_file {
 public:
  explicit conf_file(const std::string& text)
      : path_(::testing::TempDir() + "troupe-sharding-api-" + std::to_string(::getpid()) + "-" +
              std::to_string(counter_++) + ".conf") {
    std::ofstream(path_) << text;
  }
  ~conf_file() { std::remove(path_.c_str()); }
  conf_file(const conf_file&) = delete;
  conf_file& operator=(const conf_file&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

TEST(ShardingApi, MaxEntitiesShardPassivationIdleAndRememberEntitiesComeFromAFile) {
  conf_file file(
      "troupe.sharding {\n"
      "  max-entities = 1\n"
      "  shard-passivation-idle = 7 minutes\n"
      "  remember-entities = on\n"
      "}\n");
  auto clock = std::make_shared<troupe::manual_clock>();
  troupe::actor_system system(
      troupe::system_config{}.with_manual_scheduling().with_clock(clock).with_config_file(
          file.path()));
  const auto s = troupe::sharding::detail::resolve_settings(
      system, "box", std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
      std::nullopt, std::nullopt);
  EXPECT_EQ(s.max_entities, 1U);
  EXPECT_EQ(s.shard_passivation_idle, std::chrono::minutes(7));
  EXPECT_EQ(s.passivation_idle, std::chrono::minutes(5));  // the default: the file left it
  EXPECT_TRUE(s.remember_entities);

  // And a region runs with them: a second entity passivates the first. (Remembering needs a
  // store for the ids, which this layer has none of: the code turns it off, over the file.)
  test_probe<std::string> events(system, "events");
  auto boxes = cluster_sharding::get(system).start<box>(
      "box",
      sharding_options<command>::create().with_extract_entity_id(id_of).with_remember_entities(
          false),
      events.ref());
  boxes.tell(put{"a", "1"});
  EXPECT_EQ(events.expect_message(), "start a");
  boxes.tell(put{"b", "1"});
  EXPECT_EQ(events.expect_message(), "start b");
  EXPECT_EQ(events.expect_message(), "stop a: 1");
}

TEST(ShardingApi, TheTypedShardHandleAnswersWithTypedReplies) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  auto& sharding = cluster_sharding::get(system);
  auto boxes = sharding.start<box>();
  boxes.tell(put{"h", "1"});
  (void)ask_get(boxes, "h");
  const auto n = troupe::sharding::shard_of("h", 64);
  troupe::sharding::shard_ref shard = sharding.shard<box>(n);
  EXPECT_EQ(shard.id(), n);
  EXPECT_EQ(shard.path(), "/system/cluster/sharding/region-box/shard-" + std::to_string(n));
  const std::vector<std::string> ids =
      shard.entity_ids(troupe::testkit::dilated(3s), troupe::use_future).get();
  EXPECT_EQ(ids, std::vector<std::string>{"h"});
  const troupe::sharding::shard_stats stats =
      sharding.shard("box", n).stats(troupe::testkit::dilated(3s), troupe::use_future).get();
  EXPECT_EQ(stats.entity_count, 1U);
  EXPECT_EQ(stats.messages_processed, 2U);
  // A shard with no actor answers as an empty one.
  EXPECT_TRUE(sharding.shard<box>(n == 0 ? 1 : 0)
                  .entity_ids(troupe::testkit::dilated(3s), troupe::use_future)
                  .get()
                  .empty());
}

}  // namespace
