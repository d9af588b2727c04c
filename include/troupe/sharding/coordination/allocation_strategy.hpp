#pragma once
/// How a sharded type spreads its shards over the regions that may host them: where a new shard
/// goes (allocate) and which shards should move (rebalance). A strategy is a pure function of the
/// view it is given; the coordinator gives it only regions that may host the type (not proxies,
/// on live members with the type's role), so a strategy never has to filter, and it checks every
/// answer before acting on it.
///
/// Three strategies come with Troupe: the spec's default, hash-mod-regions; least-shards (Akka
/// 2.6.10's); and load-aware, which spreads the shards' message rates rather than their number.
/// All three follow the rolling-update rules: new shards go to the newest application version,
/// and nothing moves while versions are mixed, so nothing moves back to an older one. A user
/// strategy is a class deriving from allocation_strategy.

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

  /// The shards' message rates the regions reported last (by shard, ascending; a shard that is
  /// absent has no report yet). The coordinator gives them before each pass of allocate() and
  /// rebalance() that follows a new report; strategies that count shards ignore them.
  virtual void observe_load(std::span<const shard_load> loads) { (void)loads; }
};

/// How many shards one rebalance round may move: max(1, min(int(relative × total shards),
/// absolute)). Akka's `rebalance-relative-limit` and `rebalance-absolute-limit`; Akka leaves the
/// absolute limit 0 (its older algorithm), Troupe defaults it to 20, the value Akka's docs suggest.
struct rebalance_limits {
  /// 0.3 rather than Akka's 0.1: a node joining n nodes needs 1/(n+1) of the shards, so with 0.3
  /// a node joining 3 or more takes its share in one round (64 shards: min(19, 20) = 19 ≥ 16)
  /// and a third node joining two takes it in two rounds.
  double relative = 0.3;
  std::size_t absolute = 20;
};

/// The number of shards one round may move out of `total_shards` (at least 1).
[[nodiscard]] std::size_t rebalance_limit(const rebalance_limits& limits, std::size_t total_shards);

/// The spec's default strategy, hash mod regions: a shard goes to region number
/// `shard mod n` of the n preferred regions sorted by member id (those not leaving, unless all
/// are, and of those only the ones with the newest application version), so every coordinator
/// computes the same answer from the same view, whatever order it lists regions in. Rebalance
/// moves the shards whose owner differs from that answer, at most rebalance_limit() per round;
/// like least-shards it runs only when nothing is moving, no member is leaving and all run one
/// version, so a rolling update never moves a shard back to an older version.
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

/// The load-aware strategy's settings.
struct load_aware_options {
  /// How many shards one rebalance round may move.
  rebalance_limits limits{};
  /// Rebalance stops once the busiest region's load is at most tolerance × the mean load.
  double tolerance = 1.1;
};

/// Spreads the shards' message rates (observe_load) rather than their number. A shard without a
/// report counts as the mean reported rate; a region's load is the sum of its shards'. With no
/// load reported at all (none, or all zero) it answers exactly as least-shards.
/// Allocation picks the target the last rebalance planned for the shard if it is offered and no
/// offered region is preferred to it (not leaving, newest version); otherwise the region not
/// leaving, then with the newest application version, then with the lowest load counting the
/// shard's own, then with the fewest shards (ties: the lowest member id).
/// Rebalance runs only when nothing is moving, no member is leaving and all run one version. It
/// plans greedily on a copy of the view: while the hottest region is above tolerance × the mean
/// load, it moves to the coldest region that can take one (at most 2 × ceil(shards / regions)
/// shards) the hottest region's shard whose rate is below the load gap and closest to half of
/// it (ties: the lowest shard id); a region that cannot give (its shards are all as hot as the
/// gap or hotter, or no colder region can take one) is set aside and the rest even out around
/// their own mean. Every move lowers the sum of squared loads, so rounds end; each stops at
/// rebalance_limit(). It returns the moved shards and remembers their targets for the
/// allocate() calls that follow.
[[nodiscard]] std::unique_ptr<allocation_strategy> make_load_aware_strategy(
    load_aware_options options = {});

}  // namespace troupe::sharding::coordination
