// Per-type entity spawn options (sharding_options::with_entity_options, and
// troupe.sharding[.types."<type>"] in HOCON): a bounded mailbox rejects with mailbox_full, and
// the supervision chosen for the type applies; code overrides the file, the type's own section
// overrides the node's baseline.
#include <troupe/core/actor_system.hpp>
#include <troupe/core/config.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::actor_ref;
using troupe::errc;
using troupe::sharding::cluster_sharding;
using troupe::sharding::entity_options;
using troupe::sharding::sharding_options;
using troupe::testkit::test_probe;

struct put {
  std::string id;
  std::string item;
};
struct get {
  std::string id;
};
using command = std::variant<put, get>;

std::string id_of(const command& c) {
  return std::visit([](const auto& m) { return m.id; }, c);
}

/// Keeps items; the item "boom" throws.
class keeper final : public troupe::actor<command> {
 public:
  static inline const auto shard = troupe::sharding::shard_key<command>::of("keeper", id_of);

 private:
  void receive(command& c) override {
    std::visit(troupe::overloaded{
                   [this](put& p) {
                     if (p.item == "boom") throw std::runtime_error("boom");
                     items_.push_back(p.item);
                   },
                   [this](get&) {
                     std::string out;
                     for (const auto& i : items_) out += (out.empty() ? "" : " ") + i;
                     context().reply(out);
                   },
               },
               c);
  }
  std::vector<std::string> items_;
};

/// A manually scheduled system (every turn runs in run_until_idle) with `hocon` as its file.
std::unique_ptr<troupe::actor_system> manual_system(const std::string& hocon = "") {
  return std::make_unique<troupe::actor_system>(
      troupe::system_config{}.with_manual_scheduling().with_config(
          troupe::config::parse_string(hocon, "node.conf")));
}

std::string ask_get(troupe::actor_system& system, actor_ref<command> region,
                    const std::string& id) {
  auto f = region.ask<std::string>(get{id}, 3s, troupe::use_future);
  system.run_until_idle();
  return f.get();
}

/// Tells each item to entity `id`, running the actors after each (an entity stopped by its
/// failure is gone before the next arrives: its queued messages would be dead letters).
void put_each(troupe::actor_system& system, actor_ref<command> region, const std::string& id,
              std::initializer_list<const char*> items) {
  for (const char* item : items) {
    region.tell(put{id, item});
    system.run_until_idle();
  }
}

/// Tells five puts to one entity at once: its shard hands all five to it in one turn, before
/// the entity runs. Returns the mailbox_full dead letters and what the entity kept.
std::pair<int, std::string> five_at_once(troupe::actor_system& system, actor_ref<command> region) {
  test_probe<troupe::dead_letter> dead(system, "dead");
  system.dead_letters().subscribe(dead.ref());
  for (int i = 1; i <= 5; ++i) region.tell(put{"m", std::to_string(i)});
  system.run_until_idle();
  int full = 0;
  for (;;) {
    try {
      const auto d = dead.expect_message(1ms);
      if (d.code == make_error_code(errc::mailbox_full)) ++full;
    } catch (const troupe::testkit::expectation_failed&) {
      break;
    }
  }
  return {full, ask_get(system, region, "m")};
}

TEST(EntityOptions, ABoundedMailboxFromTheBuilderRejectsWithMailboxFull) {
  auto system = manual_system();
  auto region = cluster_sharding::get(*system).start<keeper>(
      sharding_options<command>::create().with_entity_options(entity_options::create().with_mailbox(
          troupe::mailbox_config::bounded(2, troupe::overflow_policy::fail))));
  EXPECT_EQ(five_at_once(*system, region), std::make_pair(3, std::string("1 2")));
}

TEST(EntityOptions, WithoutOptionsTheEntityMailboxIsUnbounded) {
  auto system = manual_system();
  auto region = cluster_sharding::get(*system).start<keeper>();
  EXPECT_EQ(five_at_once(*system, region), std::make_pair(0, std::string("1 2 3 4 5")));
}

TEST(EntityOptions, ByDefaultAFailingEntityIsStoppedAndStartsAfresh) {
  auto system = manual_system();
  auto region = cluster_sharding::get(*system).start<keeper>();
  put_each(*system, region, "s", {"1", "boom", "2"});
  EXPECT_EQ(ask_get(*system, region, "s"), "2");
}

TEST(EntityOptions, TheSupervisionFromTheBuilderApplies) {
  auto system = manual_system();
  auto region = cluster_sharding::get(*system).start<keeper>(
      sharding_options<command>::create().with_entity_options(
          entity_options::create().with_supervision(troupe::supervisor_strategy::resuming())));
  put_each(*system, region, "s", {"1", "boom", "2"});
  EXPECT_EQ(ask_get(*system, region, "s"), "1 2");  // resumed: state kept, the failed put skipped
}

TEST(EntityOptions, EscalateIsTakenAsStopSoThatSiblingsLiveOn) {
  auto system = manual_system();
  auto region = cluster_sharding::get(*system).start<keeper>(
      sharding_options<command>::create().with_num_shards(1).with_entity_options(
          entity_options::create().with_supervision(troupe::supervisor_strategy::escalating())));
  region.tell(put{"sibling", "x"});
  put_each(*system, region, "s", {"1", "boom", "2"});
  EXPECT_EQ(ask_get(*system, region, "s"), "2");
  EXPECT_EQ(ask_get(*system, region, "sibling"), "x");  // the shard did not fail
}

TEST(EntityOptions, TheTypesOwnSectionInTheFileSetsMailboxAndSupervision) {
  auto system = manual_system(
      "troupe.sharding.types.keeper {\n"
      "  entity-mailbox-capacity = 2\n"
      "  entity-mailbox-overflow = fail\n"
      "  entity-supervision = resume\n"
      "}\n");
  auto region = cluster_sharding::get(*system).start<keeper>();
  EXPECT_EQ(five_at_once(*system, region), std::make_pair(3, std::string("1 2")));
  put_each(*system, region, "m", {"boom", "3"});
  EXPECT_EQ(ask_get(*system, region, "m"), "1 2 3");
}

TEST(EntityOptions, CodeOverridesTheTypesSectionWhichOverridesTheBaseline) {
  auto system = manual_system(
      "troupe.sharding {\n"
      "  entity-supervision = restart\n"
      "  entity-mailbox-capacity = 2\n"
      "  types.keeper.entity-supervision = resume\n"
      "}\n");
  auto& sharding = cluster_sharding::get(*system);
  // The baseline bound applies to the type; the type's supervision (resume) to its entities...
  auto region = sharding.start<keeper>();
  EXPECT_EQ(five_at_once(*system, region), std::make_pair(3, std::string("1 2")));
  // ...and code wins over both: unbounded, stop on failure.
  auto other = sharding.start<keeper>(
      "other",
      sharding_options<command>::create().with_extract_entity_id(id_of).with_entity_options(
          entity_options::create()
              .with_mailbox(troupe::mailbox_config::unbounded())
              .with_supervision(troupe::supervisor_strategy::stopping())));
  EXPECT_EQ(five_at_once(*system, other), std::make_pair(0, std::string("1 2 3 4 5")));
  put_each(*system, other, "m", {"boom", "6"});
  EXPECT_EQ(ask_get(*system, other, "m"), "6");
}

TEST(EntityOptions, ABadValueOrUnknownKeyInTheTypesSectionFailsNamingIt) {
  {
    auto system = manual_system("troupe.sharding.types.keeper.entity-supervision = maybe");
    try {
      (void)cluster_sharding::get(*system).start<keeper>();
      FAIL() << "expected a config error";
    } catch (const troupe::config_error& e) {
      EXPECT_NE(std::string(e.what()).find("node.conf:1: troupe.sharding.types.keeper."
                                           "entity-supervision: expected stop, restart or resume"),
                std::string::npos)
          << e.what();
    }
  }
  auto system = manual_system("troupe.sharding.types.keeper {\n  entity-mailbox-size = 3\n}");
  try {
    (void)cluster_sharding::get(*system).start<keeper>();
    FAIL() << "expected a config error";
  } catch (const troupe::config_error& e) {
    EXPECT_NE(std::string(e.what()).find("entity-mailbox-size"), std::string::npos) << e.what();
  }
}

}  // namespace
