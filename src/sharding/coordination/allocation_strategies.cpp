// Two of the built-in allocation strategies (hash mod regions, least shards), the rebalance
// limit and the application-version order; load-aware is in load_aware_strategy.cpp.
#include <troupe/sharding/coordination/allocation_strategy.hpp>

#include "sharding/coordination/strategy_helpers.hpp"

#include <algorithm>
#include <cstddef>

namespace troupe::sharding::coordination {
namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string_view next_part(std::string_view& rest) {
  const auto dot = rest.find('.');
  const auto part = rest.substr(0, dot);
  rest = dot == std::string_view::npos ? std::string_view{} : rest.substr(dot + 1);
  return part;
}

// Numbers compared without parsing, so any length works: fewer digits (after leading zeros)
// is smaller, equal lengths compare as text.
std::strong_ordering compare_numbers(std::string_view a, std::string_view b) {
  a.remove_prefix(std::min(a.find_first_not_of('0'), a.size()));
  b.remove_prefix(std::min(b.find_first_not_of('0'), b.size()));
  if (a.size() != b.size()) {
    return a.size() <=> b.size();
  }
  return a.compare(b) <=> 0;
}

// The regions a new shard may go to by preference, sorted by member id: those not leaving
// (unless all are), and of those only the ones with the newest application version.
std::vector<const region_view*> preferred(std::span<const region_view> regions) {
  const region_view* top = nullptr;
  for (const auto& r : regions) {
    if (top == nullptr || detail::suitability(r, *top) > 0) {
      top = &r;
    }
  }
  std::vector<const region_view*> out;
  for (const auto& r : regions) {
    if (detail::suitability(r, *top) == 0) {
      out.push_back(&r);
    }
  }
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->region < b->region; });
  return out;
}

class hash_mod_regions final : public allocation_strategy {
 public:
  explicit hash_mod_regions(rebalance_limits limits) : limits_(limits) {}

  std::optional<member_id> allocate(shard_id shard, std::span<const region_view> regions) override {
    if (regions.empty()) {
      return std::nullopt;
    }
    const auto order = preferred(regions);
    return order[shard % order.size()]->region;
  }

  std::vector<shard_id> rebalance(std::span<const region_view> regions,
                                  std::span<const shard_id> in_progress) override {
    std::vector<shard_id> moves;
    if (!in_progress.empty() || regions.empty() || !detail::a_good_time(regions)) {
      return moves;
    }
    const auto order = preferred(regions);
    for (const auto& r : regions) {
      for (const auto s : r.shards) {
        if (order[s % order.size()]->region != r.region) {
          moves.push_back(s);
        }
      }
    }
    std::sort(moves.begin(), moves.end());
    moves.resize(std::min(moves.size(), rebalance_limit(limits_, detail::total_shards(regions))));
    return moves;
  }

 private:
  rebalance_limits limits_;
};

class least_shards final : public allocation_strategy {
 public:
  explicit least_shards(rebalance_limits limits) : limits_(limits) {}

  std::optional<member_id> allocate(shard_id, std::span<const region_view> regions) override {
    const region_view* best = nullptr;
    for (const auto& r : regions) {
      if (best == nullptr || detail::better(r, *best)) {
        best = &r;
      }
    }
    if (best == nullptr) {
      return std::nullopt;
    }
    return best->region;
  }

  std::vector<shard_id> rebalance(std::span<const region_view> regions,
                                  std::span<const shard_id> in_progress) override {
    std::vector<shard_id> moves;
    if (!in_progress.empty() || regions.empty() || !detail::a_good_time(regions)) {
      return moves;
    }
    // Most suitable first, as for allocation, so phase 2 takes from the least suitable last.
    std::vector<const region_view*> sorted;
    for (const auto& r : regions) {
      sorted.push_back(&r);
    }
    std::sort(sorted.begin(), sorted.end(),
              [](auto* a, auto* b) { return detail::better(*a, *b); });

    const auto total = detail::total_shards(regions);
    if (total == 0) {
      return moves;
    }
    const auto limit = rebalance_limit(limits_, total);
    const auto optimal = (total + sorted.size() - 1) / sorted.size();

    // Phase 1: everything above optimal.
    for (const auto* r : sorted) {
      for (std::size_t i = 0; r->shards.size() > optimal && i < r->shards.size() - optimal; ++i) {
        moves.push_back(r->shards[i]);
      }
    }
    if (!moves.empty()) {
      moves.resize(std::min(moves.size(), limit));
      return moves;
    }

    // Phase 2: nobody is above optimal, but some are more than one below it; take one shard
    // from each region at optimal, as many as the regions below lack.
    std::size_t below = 0;
    for (const auto* r : sorted) {
      if (r->shards.size() + 1 < optimal) {
        below += optimal - 1 - r->shards.size();
      }
    }
    const auto wanted = std::min(below, limit);
    for (const auto* r : sorted) {
      if (moves.size() >= wanted) {
        break;
      }
      if (!r->shards.empty() && r->shards.size() >= optimal) {
        moves.push_back(r->shards.front());
      }
    }
    return moves;
  }

 private:
  rebalance_limits limits_;
};

}  // namespace

std::strong_ordering compare_app_versions(std::string_view a, std::string_view b) {
  if (a == b) {
    return std::strong_ordering::equal;  // the common case (one version runs), asked per region
  }
  while (!a.empty() || !b.empty()) {
    if (a.empty() || b.empty()) {
      return a.empty() ? std::strong_ordering::less : std::strong_ordering::greater;
    }
    const auto pa = next_part(a);
    const auto pb = next_part(b);
    const auto c =
        all_digits(pa) && all_digits(pb) ? compare_numbers(pa, pb) : pa.compare(pb) <=> 0;
    if (c != 0) {
      return c;
    }
  }
  return std::strong_ordering::equal;
}

std::size_t rebalance_limit(const rebalance_limits& limits, std::size_t total_shards) {
  const auto relative =
      static_cast<std::size_t>(std::max(0.0, limits.relative * static_cast<double>(total_shards)));
  return std::max<std::size_t>(1, std::min(relative, limits.absolute));
}

std::unique_ptr<allocation_strategy> make_hash_mod_regions_strategy(rebalance_limits limits) {
  return std::make_unique<hash_mod_regions>(limits);
}

std::unique_ptr<allocation_strategy> make_least_shards_strategy(rebalance_limits limits) {
  return std::make_unique<least_shards>(limits);
}

}  // namespace troupe::sharding::coordination
