// The load-aware allocation strategy: it spreads the shards' message rates over the regions, not
// only their number (see make_load_aware_strategy in allocation_strategy.hpp).
#include <troupe/sharding/coordination/allocation_strategy.hpp>

#include "sharding/coordination/strategy_helpers.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace troupe::sharding::coordination {
namespace {

class load_aware final : public allocation_strategy {
 public:
  explicit load_aware(load_aware_options options)
      : options_(options), by_count_(make_least_shards_strategy(options.limits)) {}

  void observe_load(std::span<const shard_load> loads) override {
    loads_.assign(loads.begin(), loads.end());
    // A rate that is not a finite, positive number says nothing useful: count it as idle.
    for (auto& l : loads_) {
      if (!std::isfinite(l.per_second) || l.per_second < 0) {
        l.per_second = 0;
      }
    }
    std::stable_sort(loads_.begin(), loads_.end(),
                     [](const auto& a, const auto& b) { return a.shard < b.shard; });
    double sum = 0;
    for (const auto& l : loads_) {
      sum += l.per_second;
    }
    loaded_ = sum > 0;
    unreported_ = loads_.empty() ? 0 : sum / static_cast<double>(loads_.size());
  }

  std::optional<member_id> allocate(shard_id shard, std::span<const region_view> regions) override {
    if (regions.empty()) {
      return std::nullopt;
    }
    if (!loaded_ && plan_.empty()) {
      return by_count_->allocate(shard, regions);
    }
    const double own = rate(shard);
    const region_view* best = nullptr;
    double best_load = 0;
    for (const auto& r : regions) {
      const bool holds = std::binary_search(r.shards.begin(), r.shards.end(), shard);
      const double load = region_load(r) + (holds ? 0 : own);
      if (best == nullptr || detail::better(r, *best, load, best_load)) {
        best = &r;
        best_load = load;
      }
    }
    // The planned target, unless it is gone or a region offered is preferred to it (the target
    // started leaving, or a newer version joined since the plan).
    if (const auto p = plan_.find(shard); p != plan_.end()) {
      for (const auto& r : regions) {
        if (r.region == p->second && detail::suitability(r, *best) == 0) {
          return r.region;
        }
      }
    }
    return best->region;
  }

  std::vector<shard_id> rebalance(std::span<const region_view> regions,
                                  std::span<const shard_id> in_progress) override {
    plan_.clear();
    if (!loaded_) {
      return by_count_->rebalance(regions, in_progress);
    }
    std::vector<shard_id> moves;
    if (!in_progress.empty() || regions.empty() || !detail::a_good_time(regions)) {
      return moves;
    }
    const auto total = detail::total_shards(regions);
    if (total == 0) {
      return moves;
    }
    const auto limit = rebalance_limit(options_.limits, total);
    const auto most_shards = 2 * ((total + regions.size() - 1) / regions.size());

    // The plan is made on a copy, sorted by member id so that the input order does not matter.
    std::vector<simulated> sim;
    for (const auto& r : regions) {
      sim.push_back({&r.region, r.shards, region_load(r), true});
    }
    std::sort(sim.begin(), sim.end(), [](const auto& a, const auto& b) { return *a.id < *b.id; });

    while (moves.size() < limit) {
      simulated* hot = nullptr;
      double sum = 0;
      std::size_t active = 0;
      for (auto& r : sim) {
        if (r.active) {
          sum += r.load;
          ++active;
          if (hot == nullptr || r.load > hot->load) {
            hot = &r;
          }
        }
      }
      if (active < 2 || hot->load <= sum / static_cast<double>(active) * options_.tolerance) {
        break;
      }
      if (!move_one(*hot, sim, most_shards, moves)) {
        // The hottest region can give nothing useful (each shard is as hot as the gap or
        // hotter, or the colder regions are full): it keeps its shards, and the others even out
        // around their own mean.
        hot->active = false;
      }
    }
    return moves;
  }

 private:
  struct simulated {
    const member_id* id;
    std::vector<shard_id> shards;
    double load;
    bool active;
  };

  // Moves one shard of `hot` to the coldest region that can take one and lower the larger load
  // of the two; false when none can.
  bool move_one(simulated& hot, std::vector<simulated>& sim, std::size_t most_shards,
                std::vector<shard_id>& moves) {
    std::vector<simulated*> colder;
    for (auto& r : sim) {
      if (r.active && &r != &hot && r.load < hot.load && r.shards.size() < most_shards) {
        colder.push_back(&r);
      }
    }
    std::stable_sort(colder.begin(), colder.end(),
                     [](const auto* a, const auto* b) { return a->load < b->load; });
    for (auto* cold : colder) {
      // A shard below the gap lowers the larger load of the two; the closer to half the gap,
      // the more evenly the two end. An idle shard would move for nothing.
      const double gap = hot.load - cold->load;
      std::optional<shard_id> pick;
      double pick_distance = 0;
      for (const auto s : hot.shards) {
        const double r = rate(s);
        if (r <= 0 || r >= gap || plan_.contains(s)) {
          continue;
        }
        const double distance = std::abs(r - gap / 2);
        if (!pick || distance < pick_distance) {
          pick = s;
          pick_distance = distance;
        }
      }
      if (pick) {
        const double r = rate(*pick);
        std::erase(hot.shards, *pick);
        hot.load -= r;
        cold->shards.insert(std::upper_bound(cold->shards.begin(), cold->shards.end(), *pick),
                            *pick);
        cold->load += r;
        plan_[*pick] = *cold->id;
        moves.push_back(*pick);
        return true;
      }
    }
    return false;
  }

  // The shard's last reported rate, or the mean reported one when it has none.
  [[nodiscard]] double rate(shard_id shard) const {
    const auto it = std::lower_bound(loads_.begin(), loads_.end(), shard,
                                     [](const shard_load& l, shard_id s) { return l.shard < s; });
    return it != loads_.end() && it->shard == shard ? it->per_second : unreported_;
  }

  [[nodiscard]] double region_load(const region_view& region) const {
    double sum = 0;
    for (const auto s : region.shards) {
      sum += rate(s);
    }
    return sum;
  }

  load_aware_options options_;
  // Answers while no load is reported: the strategy then counts shards.
  std::unique_ptr<allocation_strategy> by_count_;
  std::vector<shard_load> loads_;  // by shard
  double unreported_ = 0;          // the rate of a shard without a report
  bool loaded_ = false;            // some rate is above zero
  // The last rebalance's targets, honoured by allocate() until the next rebalance.
  std::map<shard_id, member_id> plan_;
};

}  // namespace

std::unique_ptr<allocation_strategy> make_load_aware_strategy(load_aware_options options) {
  return std::make_unique<load_aware>(options);
}

}  // namespace troupe::sharding::coordination
