// The join benchmark (issue 16): how fast the shards spread to a node that joins under load,
// that no message is lost while they move, and how evenly the load-aware strategy spreads a
// skewed load.
//
// - Nodes a, b and c host the `counter` type over 64 shards; node p is a proxy whose region a
//   sender thread tells hits to, with at most 64 unhandled. All in this process over TCP on
//   127.0.0.1, on the etcd in TROUPE_ETCD_ENDPOINTS (else the model).
// - The coordinators rebalance on every tick (1 s). Each shard that moves is handed off
//   (docs/cluster.md, "Hand-off").
// - Join: round-robin over the entities, least-shards with its default limits (at most
//   max(1, min(int(0.3 × 64), 20)) = 19 shards per round). Once every shard of the entities has
//   a home, node d joins; the part ends when a, b, c and d each hold their fair share ± 1 (16 ± 1
//   for 64 shards; the cluster state, as the store says), and counts the rounds that moved
//   shards.
// - Zipf: the same cluster afresh, but the entities drawn from Zipf(1.1) (the hottest gets about
//   a fifth of the messages); d joins, and once the strategy has had three quiet rounds in a row
//   (at most 30 s), the busiest node's share of the messages over 3 s, over its fair share (1/4).
//   Once with the load-aware strategy, which spreads the shards' reported rates, once with
//   least-shards, which counts shards.

#include "cluster_rebalance.hpp"

#include <troupe/cluster/cluster_state.hpp>
#include <troupe/sharding/coordination/allocation_strategy.hpp>

#include "cluster_nodes.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace troupe::bench::rebalance {
namespace {

namespace coord = troupe::sharding::coordination;
using troupe::sharding::shard_id;

/// A strategy that counts its rebalance rounds: those that moved something, and the quiet ones
/// since the last move.
class counted final : public coord::allocation_strategy {
 public:
  struct rounds {
    std::atomic<int> moved{0};
    std::atomic<int> quiet{0};
  };
  counted(std::shared_ptr<rounds> r, std::unique_ptr<coord::allocation_strategy> inner)
      : rounds_(std::move(r)), inner_(std::move(inner)) {}
  std::optional<coord::member_id> allocate(shard_id shard,
                                           std::span<const coord::region_view> regions) override {
    return inner_->allocate(shard, regions);
  }
  std::vector<shard_id> rebalance(std::span<const coord::region_view> regions,
                                  std::span<const shard_id> in_progress) override {
    auto shards = inner_->rebalance(regions, in_progress);
    if (shards.empty()) {
      rounds_->quiet.fetch_add(1);
    } else {
      rounds_->moved.fetch_add(1);
      rounds_->quiet.store(0);
    }
    return shards;
  }
  void observe_load(std::span<const coord::shard_load> loads) override {
    inner_->observe_load(loads);
  }

 private:
  std::shared_ptr<rounds> rounds_;
  std::unique_ptr<coord::allocation_strategy> inner_;
};

/// Rebalances on every tick (1 s) with `make`'s strategy, counted into `r`.
template <class Make>
auto rebalancing(std::shared_ptr<counted::rounds> r, Make make) {
  return [r, make](tc::cluster_node_options& o) {
    o.with_rebalance_interval(std::chrono::milliseconds(1));
    o.strategy = [r, make](const troupe::sharding::region_settings&) {
      return std::make_unique<counted>(r, make());
    };
  };
}

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

/// The three hosting nodes a, b, c and the proxy p, each with its tallies; d joins later.
struct cluster {
  cluster(std::size_t workers, etcd_model& model, std::size_t entities,
          const std::function<void(tc::cluster_node_options&)>& tune)
      : workers(workers), model(model), tune(tune) {
    for (int i = 0; i < 4; ++i) counts.push_back(std::make_unique<tallies>(entities));
    for (const char* name : {"a", "b", "c"}) add(name);
    p = std::make_unique<cluster_member>("p", workers, model, tcp(),
                                         tc::node_address{"127.0.0.1", 0}, tune);
    proxy = p->start(nullptr, true, shards);
    wait_for(
        [&] {
          return std::any_of(hosts.begin(), hosts.end(), [](const auto& h) {
            return h->cluster->hosting_regions("counter") == 3;
          });
        },
        std::chrono::seconds(30), "the coordinator to see three regions");
  }
  void add(const std::string& name) {
    hosts.push_back(std::make_unique<cluster_member>(name, workers, model, tcp(),
                                                     tc::node_address{"127.0.0.1", 0}, tune));
    hosts.back()->start(counts[hosts.size() - 1].get(), false, shards);
  }
  [[nodiscard]] std::int64_t handled() const {
    std::int64_t n = 0;
    for (const auto& c : counts) n += c->handled().load(std::memory_order_acquire);
    return n;
  }
  /// Waits until every shard of `ids` has a home.
  void wait_placed(const std::vector<std::string>& ids) const {
    std::vector<bool> used(shards, false);
    for (const auto& id : ids) used[troupe::sharding::shard_of(id, shards)] = true;
    const auto total = static_cast<std::size_t>(std::count(used.begin(), used.end(), true));
    wait_for(
        [&] {
          const auto counts = shards_per_region(*p->cluster);
          std::size_t placed = 0;
          for (auto n : counts) placed += n;
          return placed >= total;
        },
        std::chrono::seconds(60), "every shard to be allocated");
  }

  static constexpr std::uint32_t shards = 64;
  std::size_t workers;
  etcd_model& model;
  std::function<void(tc::cluster_node_options&)> tune;
  std::vector<std::unique_ptr<tallies>> counts;  // per hosting node, in join order
  std::vector<std::unique_ptr<cluster_member>> hosts;
  std::unique_ptr<cluster_member> p;
  troupe::actor_ref<hit> proxy;
};

/// `draws` entity ids drawn from a Zipf(1.1) distribution over `entities` (rank k is "e<k-1>").
std::vector<std::string> zipf_ids(std::int64_t entities, std::size_t draws) {
  std::vector<double> weights;
  for (std::int64_t k = 1; k <= entities; ++k) weights.push_back(std::pow(double(k), -1.1));
  std::discrete_distribution<std::int64_t> pick(weights.begin(), weights.end());
  std::mt19937_64 random(11);
  std::vector<std::string> ids;
  ids.reserve(draws);
  for (std::size_t i = 0; i < draws; ++i) ids.push_back("e" + std::to_string(pick(random)));
  return ids;
}

/// The busiest hosting node's share of the messages handled over `window`, over its fair share.
double busiest_share(const cluster& c, troupe::duration window) {
  std::vector<std::int64_t> before;
  for (const auto& t : c.counts) before.push_back(t->handled().load());
  std::this_thread::sleep_for(window);
  std::int64_t total = 0;
  std::int64_t most = 0;
  for (std::size_t i = 0; i < c.counts.size(); ++i) {
    const std::int64_t n = c.counts[i]->handled().load() - before[i];
    total += n;
    most = std::max(most, n);
  }
  check(total > 0, "no message was handled while the shares were measured");
  return static_cast<double>(most) * static_cast<double>(c.counts.size()) /
         static_cast<double>(total);
}

/// The Zipf part: d joins a, b and c under a Zipf(1.1) load, and once the strategy has had
/// three quiet rounds in a row (or after 30 s), the busiest node's share over its fair share.
double zipf_share(std::size_t workers, std::int64_t entities, bool load_aware) {
  auto rounds = std::make_shared<counted::rounds>();
  auto tune = rebalancing(rounds, [load_aware] {
    return load_aware ? coord::make_load_aware_strategy() : coord::make_least_shards_strategy();
  });
  etcd_model model(etcd_endpoints_from_env());
  cluster c(workers, model, static_cast<std::size_t>(entities), tune);
  const auto draws = zipf_ids(entities, std::size_t{1} << 16);
  sender load(c.proxy, draws, [&] { return c.handled(); });
  c.wait_placed(draws);
  c.add("d");
  const auto give_up = steady::now() + std::chrono::seconds(30);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // d registers; loads are reported
  while (rounds->quiet.load() < 3 && steady::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const double share = busiest_share(c, std::chrono::seconds(3));
  load.stop();
  return share;
}

}  // namespace

run_result run(std::size_t workers, std::int64_t entities) {
  const auto ids = make_ids(entities);
  auto rounds = std::make_shared<counted::rounds>();
  etcd_model model(etcd_endpoints_from_env());
  cluster c(workers, model, ids.size(),
            rebalancing(rounds, [] { return coord::make_least_shards_strategy(); }));
  sender load(c.proxy, ids, [&] { return c.handled(); });
  c.wait_placed(ids);
  const int rounds_before = rounds->moved.load();

  const auto joined = steady::now();
  c.add("d");
  std::size_t total = 0;
  for (auto n : shards_per_region(*c.p->cluster)) total += n;
  const std::size_t fair = total / 4;  // rounded down; least-shards may round up
  wait_for(
      [&] {
        const auto counts = shards_per_region(*c.p->cluster);
        return counts.size() == 4 && std::all_of(counts.begin(), counts.end(), [&](std::size_t n) {
                 return n + 1 >= fair && n <= fair + 2;
               });
      },
      std::chrono::seconds(120), "every node to hold its fair share of the shards");
  const double seconds = seconds_between(joined, steady::now());
  const int moved_in = rounds->moved.load() - rounds_before;

  load.stop();
  const std::int64_t sent = load.sent();
  try {
    wait_for([&] { return c.handled() >= sent; }, std::chrono::seconds(10),
             "every message to be handled");
  } catch (const bench_failure&) {
  }
  const std::int64_t lost = sent - c.handled();
  check(lost == 0, std::to_string(lost) + " of " + std::to_string(sent) +
                       " messages were never handled while the shards moved");
  const double load_aware = zipf_share(workers, entities, true);
  const double shard_count = zipf_share(workers, entities, false);
  return {seconds,
          {{"rounds", static_cast<double>(moved_in)},
           {"seconds", seconds},
           {"lost", static_cast<double>(lost)},
           {"sent", static_cast<double>(sent)},
           {"load_aware_busiest_share", load_aware},
           {"shard_count_busiest_share", shard_count}}};
}

}  // namespace troupe::bench::rebalance
