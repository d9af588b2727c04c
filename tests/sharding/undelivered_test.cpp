// Messages sharding cannot deliver: each becomes a dead letter whose reason names what happened,
// its ask fails at once with a matching code, and every other entity goes on as before. The
// cases: a message whose copy or move constructor throws (in the ref a sender holds, in the
// region, in the shard), an extractor that throws something not derived from std::exception,
// and an entity whose constructor throws. Manual scheduling: each step runs when the test says.
#include <troupe/core/actor_system.hpp>
#include <troupe/core/detail/ask_promise.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::errc;
using troupe::sharding::cluster_sharding;
using troupe::sharding::sharding_options;
using troupe::testkit::test_probe;

/// When and how often a message may still be copied or moved before its constructor throws.
struct fuse {
  bool armed = false;
  int moves_left = 0;       // once armed: copies or moves that still succeed
  int arm_on_extract = -1;  // >= 0: the extractor arms it with this many moves left

  /// The state of a copy or move of `from`; throws when `from` may not be copied any more.
  static fuse next(const fuse& from, const char* what) {
    if (from.armed && from.moves_left == 0) throw std::runtime_error(what);
    fuse out = from;
    if (out.armed) --out.moves_left;
    return out;
  }
};

/// A message whose copy constructor throws once its fuse is burnt; it has no move constructor,
/// so every move is a copy.
struct copy_bomb {
  std::string id;
  int n = 0;
  bool view = false;
  mutable fuse f;

  copy_bomb(std::string i, int number, bool v = false) : id(std::move(i)), n(number), view(v) {}
  copy_bomb(const copy_bomb& o) : id(o.id), n(o.n), view(o.view), f(fuse::next(o.f, "no copies")) {}
  copy_bomb& operator=(const copy_bomb&) = default;  // sharding assigns messages in place
  ~copy_bomb() = default;
};

/// A message whose move constructor throws once its fuse is burnt (copies always succeed:
/// sharding's timers need copyable messages).
struct move_bomb {
  std::string id;
  int n = 0;
  bool view = false;
  mutable fuse f;

  move_bomb(std::string i, int number, bool v = false) : id(std::move(i)), n(number), view(v) {}
  move_bomb(const move_bomb&) = default;
  move_bomb(move_bomb&& o)  // NOLINT(performance-noexcept-move-constructor): it throws on purpose
      : n(o.n), view(o.view), f(fuse::next(o.f, "no moves")) {
    id = std::move(o.id);  // only once the fuse has let it go
  }
  move_bomb& operator=(const move_bomb&) = default;
  move_bomb& operator=(move_bomb&&) = default;  // sharding assigns messages in place
  ~move_bomb() = default;
};

template <class T>
std::string id_of(const T& m) {
  if (m.f.arm_on_extract >= 0 && !m.f.armed) {
    m.f.armed = true;
    m.f.moves_left = m.f.arm_on_extract;
  }
  return m.id;
}

/// Keeps the numbers it is told; a view replies "<incarnation>:<numbers>".
template <class T>
class keeper final : public troupe::actor<T> {
 public:
  explicit keeper(std::shared_ptr<int> incarnations) : incarnation_(++*incarnations) {}

 private:
  void receive(T& m) override {
    if (m.view) {
      this->context().reply(std::to_string(incarnation_) + ":" + seen_);
    } else {
      seen_ += " " + std::to_string(m.n);
    }
  }
  int incarnation_;
  std::string seen_;
};

troupe::system_config manual() { return troupe::system_config{}.with_manual_scheduling(); }

template <class T>
troupe::actor_ref<T> start_keepers(troupe::actor_system& system, std::size_t max_entities,
                                   std::shared_ptr<int> incarnations) {
  return cluster_sharding::get(system).start(sharding_options<T>::create()
                                                 .with_type_name("keeper")
                                                 .template with_entity<keeper<T>>(incarnations)
                                                 .with_extract_entity_id(id_of<T>)
                                                 .with_num_shards(4)
                                                 .with_max_entities(max_entities));
}

/// Asks `to` with `message` in an envelope the test builds, so that the message can be armed
/// after the sender's own moves: the runtime's first move of it is the one that throws.
template <class T>
std::future<std::string> ask_armed(const troupe::actor_ref<T>& to, T message, int moves_left) {
  auto* e = new troupe::detail::envelope<T>(std::move(message));
  e->value.f.armed = true;
  e->value.f.moves_left = moves_left;
  auto result = std::make_shared<std::promise<std::string>>();
  auto future = result->get_future();
  auto promise = troupe::detail::make_ask_promise<std::string>(
      [result](std::exception_ptr failure, std::string reply) {
        if (failure) {
          result->set_exception(failure);
        } else {
          result->set_value(std::move(reply));
        }
      },
      to.target_ptr(), 1h);
  e->sender = promise;
  to.target()->enqueue(e);
  return future;
}

/// The code an ask failed with (the future is ready), or a description of what else happened.
std::string failure_of(std::future<std::string>& f) {
  if (f.wait_for(0s) != std::future_status::ready) return "still waiting";
  try {
    return "replied " + f.get();
  } catch (const troupe::error& e) {
    return troupe::make_error_code(e.value()).message();
  }
}

std::string code_text(errc code) { return troupe::make_error_code(code).message(); }

/// The test's view of entity `id` (incarnation and numbers), through `region`.
template <class T>
std::string view(troupe::actor_system& system, const troupe::actor_ref<T>& region,
                 const std::string& id) {
  auto f = region.template ask<std::string>(T(id, 0, true), 1h, troupe::use_future);
  system.run_until_idle();
  return f.wait_for(0s) == std::future_status::ready ? f.get() : "no reply";
}

template <class T>
class Unmovable : public ::testing::Test {};
using bomb_types = ::testing::Types<copy_bomb, move_bomb>;
TYPED_TEST_SUITE(Unmovable, bomb_types);

// Through a ref to one entity: the ref moves the message into a delivery for the shard.
TYPED_TEST(Unmovable, AMessageTheEntityRefCannotMoveIsADeadLetterAndItsAskFailsAtOnce) {
  using T = TypeParam;
  troupe::actor_system system(manual());
  test_probe<troupe::dead_letter> dead(system, "dead");
  system.dead_letters().subscribe(dead.ref());
  auto incarnations = std::make_shared<int>(0);
  auto region = start_keepers<T>(system, 0, incarnations);
  region.tell(T("other", 1));
  system.run_until_idle();
  auto& sharding = cluster_sharding::get(system);
  auto ref = sharding.template entity_ref_for<T>("keeper", "target");
  auto asked = ask_armed(ref, T("target", 2), 0);
  system.run_until_idle();
  EXPECT_EQ(failure_of(asked), code_text(errc::message_copy_failed));
  const auto d = dead.expect_message();
  EXPECT_EQ(d.code, troupe::make_error_code(errc::message_copy_failed));
  EXPECT_NE(d.reason.find("copying or moving the message threw"), std::string::npos) << d.reason;
  EXPECT_NE(d.message_type.find("bomb"), std::string::npos) << d.message_type;
  ASSERT_NE(d.message_as<T>(), nullptr);
  EXPECT_EQ(d.message_as<T>()->n, 2);  // the message itself, not a moved-from shell
  EXPECT_NE(d.recipient.find("#target"), std::string::npos) << d.recipient;
  region.tell(T("other", 3));
  EXPECT_EQ(view(system, region, "other"), "1: 1 3");  // same incarnation, nothing lost
}

// With max-entities every message goes through the region, which moves it into a delivery.
TYPED_TEST(Unmovable, AMessageTheRegionCannotMoveIsADeadLetterAndItsAskFailsAtOnce) {
  using T = TypeParam;
  troupe::actor_system system(manual());
  test_probe<troupe::dead_letter> dead(system, "dead");
  system.dead_letters().subscribe(dead.ref());
  auto region = start_keepers<T>(system, 100, std::make_shared<int>(0));
  region.tell(T("other", 1));
  system.run_until_idle();
  T bomb("target", 2, true);
  bomb.f.arm_on_extract = 0;  // the region reads the id, then cannot move it
  auto asked = region.template ask<std::string>(std::move(bomb), 1h, troupe::use_future);
  system.run_until_idle();
  EXPECT_EQ(failure_of(asked), code_text(errc::message_copy_failed));
  const auto d = dead.expect_message();
  EXPECT_EQ(d.code, troupe::make_error_code(errc::message_copy_failed));
  EXPECT_NE(d.reason.find("region keeper: copying or moving the message threw"), std::string::npos)
      << d.reason;
  ASSERT_NE(d.message_as<T>(), nullptr);
  EXPECT_EQ(d.message_as<T>()->n, 2);
  region.tell(T("other", 3));
  EXPECT_EQ(view(system, region, "other"), "1: 1 3");
}

// The region moves it into a delivery; the shard cannot move it on into the entity's mailbox.
TYPED_TEST(Unmovable, AMessageTheShardCannotMoveIsADeadLetterAndItsAskFailsAtOnce) {
  using T = TypeParam;
  troupe::actor_system system(manual());
  test_probe<troupe::dead_letter> dead(system, "dead");
  system.dead_letters().subscribe(dead.ref());
  auto region = start_keepers<T>(system, 100, std::make_shared<int>(0));
  region.tell(T("other", 1));
  region.tell(T("target", 1));
  system.run_until_idle();
  T bomb("target", 2, true);
  bomb.f.arm_on_extract = 1;
  auto asked = region.template ask<std::string>(std::move(bomb), 1h, troupe::use_future);
  system.run_until_idle();
  EXPECT_EQ(failure_of(asked), code_text(errc::message_copy_failed));
  const auto d = dead.expect_message();
  EXPECT_EQ(d.code, troupe::make_error_code(errc::message_copy_failed));
  EXPECT_NE(d.reason.find("copying or moving the message threw"), std::string::npos) << d.reason;
  EXPECT_NE(d.recipient.find("/shard-"), std::string::npos) << d.recipient;
  ASSERT_NE(d.message_as<T>(), nullptr);
  EXPECT_EQ(d.message_as<T>()->n, 2);
  region.tell(T("other", 3));
  region.tell(T("target", 3));
  EXPECT_EQ(view(system, region, "other"), "1: 1 3");
  EXPECT_EQ(view(system, region, "target"), "2: 1 3");  // the shard kept its entity running
}

// A region ref without a limit passes the sender's envelope on as it is: nothing needs to move.
TYPED_TEST(Unmovable, AMessageThatNeedsNoMoveIsDelivered) {
  using T = TypeParam;
  troupe::actor_system system(manual());
  auto region = start_keepers<T>(system, 0, std::make_shared<int>(0));
  region.tell(T("target", 1));
  system.run_until_idle();  // the route is open
  auto asked = ask_armed(region, T("target", 0, true), 0);
  system.run_until_idle();
  EXPECT_EQ(failure_of(asked), "replied 1: 1");
}

/// Throws an int (no std::exception) for the id "boom".
template <class T>
std::string picky_id(const T& m) {
  if (m.id == "boom") throw 42;
  return m.id;
}

class NonStdExtractor : public ::testing::TestWithParam<std::size_t> {};

// The region dead-letters that one message and goes on: its shards and entities keep running.
TEST_P(NonStdExtractor, ThrowingANonStdExceptionDeadLettersOneMessageAndTheAskFailsAtOnce) {
  troupe::actor_system system(manual());
  test_probe<troupe::dead_letter> dead(system, "dead");
  system.dead_letters().subscribe(dead.ref());
  auto region = cluster_sharding::get(system).start(
      sharding_options<copy_bomb>::create()
          .with_type_name("keeper")
          .with_entity<keeper<copy_bomb>>(std::make_shared<int>(0))
          .with_extract_entity_id(picky_id<copy_bomb>)
          .with_max_entities(GetParam()));
  region.tell(copy_bomb("other", 1));
  system.run_until_idle();
  auto asked = region.ask<std::string>(copy_bomb("boom", 2), 1h, troupe::use_future);
  system.run_until_idle();
  EXPECT_EQ(failure_of(asked), code_text(errc::invalid_entity_id));
  const auto d = dead.expect_message();
  EXPECT_EQ(d.code, troupe::make_error_code(errc::invalid_entity_id));
  EXPECT_NE(d.reason.find("the entity-id extractor threw: an exception not derived from "
                          "std::exception"),
            std::string::npos)
      << d.reason;
  ASSERT_NE(d.message_as<copy_bomb>(), nullptr);
  EXPECT_EQ(d.message_as<copy_bomb>()->id, "boom");
  region.tell(copy_bomb("other", 3));
  EXPECT_EQ(view(system, region, "other"), "1: 1 3");  // not restarted: the region carried on
}

INSTANTIATE_TEST_SUITE_P(DirectAndWithALimit, NonStdExtractor, ::testing::Values(0U, 100U));

/// Fails in its constructor for the id "bad".
class fragile final : public troupe::actor<copy_bomb> {
 public:
  fragile() {
    if (entity_id() == "bad") throw std::runtime_error("cannot build bad");
  }

 private:
  void receive(copy_bomb& m) override {
    if (m.view) context().reply(entity_id());
  }
};

class EntityConstructor : public ::testing::TestWithParam<std::size_t> {};

TEST_P(EntityConstructor, ThrowingDeadLettersTheMessageAsEntityStartFailedAndTheAskFailsAtOnce) {
  troupe::actor_system system(manual());
  test_probe<troupe::dead_letter> dead(system, "dead");
  system.dead_letters().subscribe(dead.ref());
  auto region = cluster_sharding::get(system).start(sharding_options<copy_bomb>::create()
                                                        .with_type_name("fragile")
                                                        .with_entity<fragile>()
                                                        .with_extract_entity_id(id_of<copy_bomb>)
                                                        .with_num_shards(1)  // one shard for all
                                                        .with_max_entities(GetParam()));
  auto good = region.ask<std::string>(copy_bomb("good", 0, true), 1h, troupe::use_future);
  auto bad = region.ask<std::string>(copy_bomb("bad", 1, true), 1h, troupe::use_future);
  system.run_until_idle();
  EXPECT_EQ(failure_of(good), "replied good");
  EXPECT_EQ(failure_of(bad), code_text(errc::entity_start_failed));
  const auto d = dead.expect_message();
  EXPECT_EQ(d.code, troupe::make_error_code(errc::entity_start_failed));
  EXPECT_NE(d.reason.find("entity 'bad' could not be started: its constructor threw"),
            std::string::npos)
      << d.reason;
  ASSERT_NE(d.message_as<copy_bomb>(), nullptr);
  EXPECT_EQ(d.message_as<copy_bomb>()->n, 1);
  // Its sibling in the same shard is fine, and a later message tries again (and fails again).
  auto again = region.ask<std::string>(copy_bomb("bad", 2, true), 1h, troupe::use_future);
  auto still = region.ask<std::string>(copy_bomb("good", 0, true), 1h, troupe::use_future);
  system.run_until_idle();
  EXPECT_EQ(failure_of(again), code_text(errc::entity_start_failed));
  EXPECT_EQ(failure_of(still), "replied good");
  // With a limit, the region's policy does not count the entity that never started.
  if (GetParam() > 0) {
    std::size_t running = 0;
    for (const auto& s : cluster_sharding::get(system).shards("fragile")) {
      running += s.entity_count;
    }
    EXPECT_EQ(running, 1U);
  }
}

INSTANTIATE_TEST_SUITE_P(DirectAndWithALimit, EntityConstructor, ::testing::Values(0U, 100U));

}  // namespace
