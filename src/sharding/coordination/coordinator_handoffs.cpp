// The coordinator's hand-offs: which shards a rebalance or a leaving member moves, and how each
// hand-off in progress ends (commit once the old owner stopped the shard, abort when it cannot).
// docs/cluster-coordinator.md gives the rules and why each is safe.
#include <troupe/sharding/coordination/coordinator.hpp>

#include "sharding/coordination/view_edits.hpp"

#include <algorithm>
#include <exception>
#include <set>
#include <utility>

namespace troupe::sharding::coordination {

using detail::describe;

bool coordinator::rebalance(out& o) {
  // One round at a time, and never during a leave: moves decided while others run, or while a
  // leaving member's shards go, would be planned on a view that is about to change.
  const bool leaving =
      std::any_of(members_.begin(), members_.end(), [](const auto& m) { return m.second.leaving; });
  if (!handoffs_.empty() || !busy_.empty() || leaving) {
    return false;
  }
  ++rebalance_rounds_;
  auto& view = cached_view();
  std::vector<shard_id> shards;
  try {
    publish_loads();                          // the owners may have changed since the last report
    shards = strategy_->rebalance(view, {});  // nothing is in progress, as checked above
  } catch (const std::exception& ex) {
    o.emplace_back(strategy_error{0, std::string("rebalance threw: ") + ex.what()});
    return true;  // a round ran and failed: asking again at once would throw again
  }
  std::vector<handoff_start> starts;
  std::set<shard_id> planned;
  for (const auto shard : shards) {
    // A user strategy may name a shard twice, or one that is not a live owner's.
    const auto a = allocations_.find(shard);
    if (a == allocations_.end() || !members_.contains(a->second.owner) ||
        !planned.insert(shard).second) {
      continue;
    }
    if (auto start = plan_move(a->second, view, o)) {
      starts.push_back(std::move(*start));
    }
  }
  emit_handoffs(std::move(starts), o);
  return true;
}

std::optional<handoff_start> coordinator::plan_move(const allocation& a,
                                                    std::vector<region_view>& view, out& o) {
  // The strategy sees the owner one shard lighter, as it would be after the move.
  remove_from(view, a.owner, a.shard);
  const auto to = choose(a.shard, view, o);
  if (!to) {
    if (auto* owner = find_in(view, a.owner)) {
      add_to(view, *owner, a.shard);
    }
    return std::nullopt;
  }
  if (*to == a.owner) {
    return std::nullopt;
  }
  return handoff_start{a.shard, a.owner, *to, a.mod_revision};
}

std::optional<member_id> coordinator::handoff_target(const handoff& h, lazy_view& lazy, out& o) {
  const auto planned = regions_.find(h.to);
  if (planned != regions_.end() && may_host(planned->second) && !members_.at(h.to).leaving) {
    return h.to;
  }
  // The planned target went away or is leaving; the old owner stopped the shard, so any other
  // region may take it. Giving it back to the old owner is an abort's job, not a commit's.
  auto& view = lazy.get();
  remove_from(view, h.to, h.shard);
  auto to = choose(h.shard, view, o);
  if (to == h.from) {
    return std::nullopt;
  }
  return to;
}

bool coordinator::handoff_timed_out(const handoff& h) const {
  const auto clock = handoff_clocks_.find(h.shard);
  return last_now_ && clock != handoff_clocks_.end() &&
         *last_now_ - clock->second.since >= settings_.handoff_timeout;
}

bool coordinator::handoff_ended(const handoff& h) const {
  // Hand-off revisions of one shard only grow, so anything older than the end is that one.
  const auto ended = handoffs_ended_.find(h.shard);
  return ended != handoffs_ended_.end() && h.revision < ended->second;
}

void coordinator::end_handoff(shard_id shard, store_revision handoff_revision, store_revision at) {
  auto it = handoffs_.find(shard);
  if (it != handoffs_.end() && it->second.revision == handoff_revision) {
    handoffs_.erase(it);
  }
  auto& ended = handoffs_ended_[shard];
  ended = std::max(ended, at);
}

void coordinator::emit_handoffs(std::vector<handoff_start> starts, out& o) {
  for (std::size_t first = 0; first < starts.size(); first += max_handoffs_per_write) {
    const auto last = std::min(starts.size(), first + max_handoffs_per_write);
    emit(begin_handoffs{.shards = {starts.begin() + static_cast<std::ptrdiff_t>(first),
                                   starts.begin() + static_cast<std::ptrdiff_t>(last)}},
         o);
  }
}

// Commit and abort both compare the hand-off key's revision, so at most one of them applies.
void coordinator::decide_handoffs(bool full, const std::set<shard_id>& touched, lazy_view& view,
                                  out& o) {
  // A hand-off's timeout runs from the latest tick when the coordinator first saw it (from the
  // next tick when it has seen none yet). A clock goes stale only when its shard's hand-off
  // changes, which touches the shard.
  auto set_clock = [&](shard_id shard) {
    const auto h = handoffs_.find(shard);
    const auto clock = handoff_clocks_.find(shard);
    if (clock != handoff_clocks_.end() &&
        (h == handoffs_.end() || h->second.revision != clock->second.revision)) {
      handoff_clocks_.erase(clock);
    }
    if (last_now_ && h != handoffs_.end()) {
      handoff_clocks_.try_emplace(shard, handoff_clock{h->second.revision, *last_now_});
    }
  };
  if (full) {
    std::erase_if(handoff_clocks_, [&](const auto& clock) {
      const auto h = handoffs_.find(clock.first);
      return h == handoffs_.end() || h->second.revision != clock.second.revision;
    });
    if (last_now_) {
      for (const auto& [shard, h] : handoffs_) {
        handoff_clocks_.try_emplace(shard, handoff_clock{h.revision, *last_now_});
      }
    }
    for (const auto& [shard, h] : handoffs_) {
      decide_handoff(h, view, o);
    }
    return;
  }
  // Otherwise only a hand-off whose shard was touched can act now: a stop, a change of its
  // allocation or the end of a write for it. An owner gone, a target gone or a timeout come
  // with a full pass.
  for (const auto shard : touched) {
    set_clock(shard);
    if (const auto h = handoffs_.find(shard); h != handoffs_.end()) {
      decide_handoff(h->second, view, o);
    }
  }
}

void coordinator::decide_handoff(const handoff& h, lazy_view& view, out& o) {
  const auto shard = h.shard;
  if (busy_.contains(shard)) {
    return;
  }
  const auto a = allocations_.find(shard);
  if (!members_.contains(h.from)) {
    // Its shards move only by the dead-owner path, which compares that the key is gone.
    emit(abort_handoff{.shard = shard,
                       .handoff_revision = h.revision,
                       .reason = "the old owner " + describe(h.from) + " is gone"},
         o);
  } else if (a == allocations_.end() || a->second.mod_revision != h.from_epoch) {
    // A commit compares the epoch it began from; it would fail and re-read forever.
    emit(abort_handoff{.shard = shard,
                       .handoff_revision = h.revision,
                       .reason = "the shard's allocation is no longer at epoch " +
                                 std::to_string(h.from_epoch)},
         o);
  } else if (h.stopped) {
    // Only now: the old owner no longer runs the shard, so the new owner may start it (and
    // raises the store fence to the commit's epoch).
    if (auto to = handoff_target(h, view, o)) {
      emit(commit_handoff{.shard = shard,
                          .to = *to,
                          .expected_mod_revision = h.from_epoch,
                          .handoff_revision = h.revision},
           o);
    } else if (handoff_timed_out(h)) {
      // Nowhere to go: the old owner takes the shard back rather than nobody running it.
      emit(abort_handoff{.shard = shard,
                         .handoff_revision = h.revision,
                         .reason = "no region may take the shard"},
           o);
    }
  } else if (handoff_timed_out(h)) {
    // The shard stays with its (slow) owner; nothing moves without its stop.
    emit(abort_handoff{.shard = shard,
                       .handoff_revision = h.revision,
                       .reason = "the old owner " + describe(h.from) +
                                 " did not stop the shard within " +
                                 describe(settings_.handoff_timeout)},
         o);
  }
}

}  // namespace troupe::sharding::coordination
