// A sharded entity's cell keeps its id only and builds its name ("entity-<escaped id>") and its
// path when asked: what an entity, its shard and introspection see must not change for that.
#include <troupe/core/actor_system.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/sharding/entity_path.hpp>
#include <troupe/testkit/deterministic.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using troupe::sharding::cluster_sharding;
using troupe::sharding::entity_child_name;
using troupe::sharding::sharding_options;

/// Asks entity `id` what it sees of itself.
struct look {
  std::string id;
};

/// Replies with its name, path and id, and with what its shard's child lookup finds under its
/// name and under its raw id, one per line.
class mirror final : public troupe::actor<look> {
  void receive(look& /*unused*/) override {
    auto& cell = context().cell();
    const bool found_by_name = cell.parent()->child(context().name()).get() == &cell;
    const bool found_by_id = cell.parent()->child(entity_id()).get() == &cell;
    context().reply(context().name() + "\n" + context().path() + "\n" + entity_id() + "\n" +
                    (found_by_name ? "found by name" : "not found by name") + "\n" +
                    (found_by_id ? "found by id" : "not found by id"));
  }
};

/// Replies with its own ref.
class keeper final : public troupe::actor<look> {
  void receive(look& /*unused*/) override { context().reply(context().self_ref()); }
};

std::string look_at(troupe::actor_ref<look>& region, const std::string& id) {
  return region.ask<std::string>(look{id}, troupe::testkit::dilated(3s), troupe::use_future).get();
}

TEST(EntityName, IsBuiltFromTheIdForIdsLongerThanTheInlineBufferAndWithEscapes) {
  troupe::actor_system system(troupe::system_config{}.with_workers(2));
  auto region = cluster_sharding::get(system).start(
      sharding_options<look>::create()
          .with_type_name("mirror")
          .with_entity<mirror>()
          .with_extract_entity_id([](const look& l) { return l.id; }));
  // A UUID (past std::string's inline buffer), one with escapes, a short one, and one
  // starting with '$' like the runtime's generated names (its raw id must not pass for a name).
  const std::vector<std::string> ids = {"1b4e28ba-2fa1-11d2-883f-0016d3cca427",
                                        "tenant/7 1b4e28ba-2fa1-11d2-883f-0016d3cca427~", "a7",
                                        "$x"};
  for (const std::string& id : ids) {
    const std::string name = entity_child_name(id);
    const std::string shard = std::to_string(troupe::sharding::shard_of(id, 64));
    EXPECT_EQ(look_at(region, id), name + "\n/system/cluster/sharding/region-mirror/shard-" +
                                       shard + "/" + name + "\n" + id +
                                       "\nfound by name\nnot found by id")
        << "id '" << id << "'";
  }
  // Introspection still reads the ids as the extractor returned them.
  std::vector<std::string> listed;
  for (std::uint32_t s = 0; s < 64; ++s) {
    for (std::string& id : cluster_sharding::get(system)
                               .shard("mirror", s)
                               .entity_ids(troupe::testkit::dilated(3s), troupe::use_future)
                               .get()) {
      listed.push_back(std::move(id));
    }
  }
  std::sort(listed.begin(), listed.end());
  std::vector<std::string> expected = ids;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(listed, expected);
}

TEST(EntityName, OfAStoppedEntityOutlivesItsShardsInstance) {
  // A ref kept after its system is gone (a dead letter's sender, a log line) still gives the
  // path: the name is built through the parent cell the entity keeps alive, not through the
  // shard's instance, which is destroyed with its state.
  const std::string id = "1b4e28ba-2fa1-11d2-883f-0016d3cca427/x";
  troupe::untyped_ref kept;
  {
    troupe::actor_system system(troupe::system_config{}.with_workers(2));
    auto region = cluster_sharding::get(system).start(
        sharding_options<look>::create()
            .with_type_name("keeper")
            .with_entity<keeper>()
            .with_extract_entity_id([](const look& l) { return l.id; }));
    kept =
        region.ask<troupe::untyped_ref>(look{id}, troupe::testkit::dilated(3s), troupe::use_future)
            .get();
  }
  EXPECT_EQ(kept.path(), "/system/cluster/sharding/region-keeper/shard-" +
                             std::to_string(troupe::sharding::shard_of(id, 64)) + "/" +
                             entity_child_name(id));
}

}  // namespace
