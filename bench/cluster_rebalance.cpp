// The join benchmark (issue 16): how fast the shards spread to a node that joins under load,
// and that no message is lost while they move.
//
// - Nodes a, b and c host the `counter` type over 64 shards; node p is a proxy whose region a
//   sender thread tells hits to, round-robin over the entities, with at most 64 unhandled. All in
//   this process over TCP on 127.0.0.1, on the etcd in TROUPE_ETCD_ENDPOINTS (else the model).
// - The coordinators use least-shards with its default limits (at most max(1, min(0.1 × 64, 20))
//   = 6 shards per round) and rebalance on every tick (1 s). Each shard that moves is handed off
//   (docs/cluster.md, "Hand-off").
// - Once every shard of the entities has a home, node d joins; the run ends when a, b, c and d
//   each hold their fair share ± 1 (16 ± 1 for 64 shards; the cluster state, as the store says),
//   and counts the rounds that moved shards.

#include "cluster_rebalance.hpp"

#include <troupe/cluster/cluster_state.hpp>
#include <troupe/sharding/coordination/allocation_strategy.hpp>

#include "cluster_nodes.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace troupe::bench::rebalance {
namespace {

namespace coord = troupe::sharding::coordination;
using troupe::sharding::shard_id;

/// Least-shards, counting the rebalance rounds that moved something.
class counted_least_shards final : public coord::allocation_strategy {
 public:
  explicit counted_least_shards(std::shared_ptr<std::atomic<int>> rounds)
      : rounds_(std::move(rounds)), inner_(coord::make_least_shards_strategy()) {}
  std::optional<coord::member_id> allocate(shard_id shard,
                                           std::span<const coord::region_view> regions) override {
    return inner_->allocate(shard, regions);
  }
  std::vector<shard_id> rebalance(std::span<const coord::region_view> regions,
                                  std::span<const shard_id> in_progress) override {
    auto shards = inner_->rebalance(regions, in_progress);
    if (!shards.empty()) rounds_->fetch_add(1);
    return shards;
  }

 private:
  std::shared_ptr<std::atomic<int>> rounds_;
  std::unique_ptr<coord::allocation_strategy> inner_;
};

/// Shards per hosting region of "counter", as the store says now.
std::vector<std::size_t> shards_per_region(const tc::cluster_node& node) {
  std::vector<std::size_t> counts;
  for (const auto& type : node.read_state().get().types) {
    if (type.type != "counter") continue;
    for (const auto& region : type.regions) {
      if (!region.proxy) counts.push_back(region.shards);
    }
  }
  return counts;
}

}  // namespace

run_result run(std::size_t workers, std::int64_t entities) {
  constexpr std::uint32_t shards = 64;
  const auto ids = make_ids(entities);
  auto rounds = std::make_shared<std::atomic<int>>(0);
  auto tune = [rounds](tc::cluster_node_options& o) {
    o.with_rebalance_interval(std::chrono::milliseconds(1));  // every tick (1 s)
    o.strategy = [rounds](const troupe::sharding::region_settings&) {
      return std::make_unique<counted_least_shards>(rounds);
    };
  };
  etcd_model model(etcd_endpoints_from_env());
  tallies t(ids.size());
  cluster_member a("a", workers, model, tcp(), {"127.0.0.1", 0}, tune);
  cluster_member b("b", workers, model, tcp(), {"127.0.0.1", 0}, tune);
  cluster_member c("c", workers, model, tcp(), {"127.0.0.1", 0}, tune);
  cluster_member p("p", workers, model, tcp(), {"127.0.0.1", 0}, tune);
  auto on_a = a.start(&t, false, shards);
  auto on_b = b.start(&t, false, shards);
  auto on_c = c.start(&t, false, shards);
  auto proxy = p.start(nullptr, true, shards);
  wait_for(
      [&] {
        return a.cluster->hosting_regions("counter") == 3 ||
               b.cluster->hosting_regions("counter") == 3 ||
               c.cluster->hosting_regions("counter") == 3;
      },
      std::chrono::seconds(30), "the coordinator to see three regions");

  sender load(proxy, ids, [&] { return t.handled().load(std::memory_order_acquire); });
  // Every shard of the ids placed on a, b or c before d comes.
  std::vector<bool> used(shards, false);
  for (const auto& id : ids) used[troupe::sharding::shard_of(id, shards)] = true;
  const auto total = static_cast<std::size_t>(std::count(used.begin(), used.end(), true));
  wait_for(
      [&] {
        const auto counts = shards_per_region(*p.cluster);
        std::size_t placed = 0;
        for (auto n : counts) placed += n;
        return placed == total;
      },
      std::chrono::seconds(60), "every shard to be allocated");
  const int rounds_before = rounds->load();

  const auto joined = steady::now();
  cluster_member d("d", workers, model, tcp(), {"127.0.0.1", 0}, tune);
  auto on_d = d.start(&t, false, shards);
  const std::size_t fair = total / 4;  // rounded down; least-shards may round up
  wait_for(
      [&] {
        const auto counts = shards_per_region(*p.cluster);
        return counts.size() == 4 && std::all_of(counts.begin(), counts.end(), [&](std::size_t n) {
                 return n + 1 >= fair && n <= fair + 2;
               });
      },
      std::chrono::seconds(120), "every node to hold its fair share of the shards");
  const double seconds = seconds_between(joined, steady::now());
  const int moved_in = rounds->load() - rounds_before;

  load.stop();
  const std::int64_t sent = load.sent();
  try {
    wait_for([&] { return t.handled().load() >= sent; }, std::chrono::seconds(10),
             "every message to be handled");
  } catch (const bench_failure&) {
  }
  const std::int64_t lost = sent - t.handled().load();
  check(lost == 0, std::to_string(lost) + " of " + std::to_string(sent) +
                       " messages were never handled while the shards moved");
  return {seconds,
          {{"rounds", static_cast<double>(moved_in)},
           {"seconds", seconds},
           {"lost", static_cast<double>(lost)},
           {"sent", static_cast<double>(sent)}}};
}

}  // namespace troupe::bench::rebalance
