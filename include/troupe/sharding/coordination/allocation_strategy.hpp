#pragma once
/// How a sharded type spreads its shards over the regions that may host them: where a new shard
/// goes (allocate) and which shards should move (rebalance). A strategy is a pure function of the
/// view it is given; the coordinator gives it only regions that may host the type (not proxies,
/// on live members with the type's role), so a strategy never has to filter, and it checks every
/// answer before acting on it.
///
/// Two strategies come with Troupe: the spec's default, hash-mod-regions, and least-shards (Akka
/// 2.6.10's). A user strategy is a class deriving from allocation_strategy.

#include <troupe/sharding/coordination/cluster_view.hpp>
#include <troupe/sharding/shard_id.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace troupe::sharding::coordination {

/// A region that may host the type, as a strategy sees it.
struct region_view {
  member_id region;
  /// The member is leaving gracefully: a last resort for new shards.
  bool leaving = false;
  /// The member's application version (see compare_app_versions).
  std::string app_version;
  /// The shards the region owns now, ascending.
  std::vector<shard_id> shards;
};

/// Chooses homes for shards.
class allocation_strategy {
 public:
  virtual ~allocation_strategy() = default;
  allocation_strategy() = default;
  allocation_strategy(const allocation_strategy&) = delete;
  allocation_strategy& operator=(const allocation_strategy&) = delete;

  /// The region that should host `shard`, one of `regions` (never empty, in no promised
  /// order), or nullopt to leave the shard without a home for now (the coordinator asks again
  /// on its next event). An answer outside `regions` is refused and reported.
  [[nodiscard]] virtual std::optional<member_id> allocate(shard_id shard,
                                                          std::span<const region_view> regions) = 0;

  /// The shards that should move to even out `regions`; `in_progress` are shards being moved
  /// now. Each returned shard is later handed off and allocated anew through allocate().
  [[nodiscard]] virtual std::vector<shard_id> rebalance(std::span<const region_view> regions,
                                                        std::span<const shard_id> in_progress) = 0;
};

/// How many shards one rebalance round may move: max(1, min(int(relative × total shards),
/// absolute)). Akka's `rebalance-relative-limit` and `rebalance-absolute-limit`; Akka leaves the
/// absolute limit 0 (its older algorithm), Troupe defaults it to 20, the value Akka's docs suggest.
struct rebalance_limits {
  double relative = 0.1;
  std::size_t absolute = 20;
};

/// The number of shards one round may move out of `total_shards` (at least 1).
[[nodiscard]] std::size_t rebalance_limit(const rebalance_limits& limits, std::size_t total_shards);

/// The spec's default strategy, hash mod regions: a shard goes to region number
/// `shard mod n` of the n regions sorted by member id (the regions not leaving, unless all are),
/// so every coordinator computes the same answer from the same view, whatever order it lists
/// regions in. Rebalance moves the shards whose owner differs from that answer, at most
/// rebalance_limit() per round and nothing while a move is in progress.
[[nodiscard]] std::unique_ptr<allocation_strategy> make_hash_mod_regions_strategy(
    rebalance_limits limits = {});

/// Akka 2.6.10's least-shards strategy. Allocation picks the region not leaving, then with the
/// newest application version, then with the fewest shards (ties: the lowest member id).
/// Rebalance runs only when nothing is moving, no member is leaving and all run one version;
/// with optimal = ceil(shards / regions), phase 1 takes from every region above optimal its
/// first (size − optimal) shards; when phase 1 takes none, phase 2 takes the first shard of
/// every region at optimal or above, as many as regions lack below optimal − 1. Both stop at
/// rebalance_limit(); a skewed cluster evens out in one or two rounds.
[[nodiscard]] std::unique_ptr<allocation_strategy> make_least_shards_strategy(
    rebalance_limits limits = {});

}  // namespace troupe::sharding::coordination
