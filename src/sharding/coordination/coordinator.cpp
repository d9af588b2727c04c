// The coordinator's state machine: how each event changes what it knows, and the one pass
// (reconcile) that turns what it knows into writes, hand-offs and answers.
#include <troupe/core/errc.hpp>
#include <troupe/sharding/coordination/coordinator.hpp>

#include "sharding/coordination/view_edits.hpp"

#include <algorithm>
#include <exception>
#include <utility>

namespace troupe::sharding::coordination {

using detail::add_shard;
using detail::describe;
using detail::find_region;

namespace {
std::vector<shard_id> shards_of(
    const std::variant<write_allocations, begin_handoffs, commit_handoff, abort_handoff>& write) {
  std::vector<shard_id> shards;
  if (const auto* w = std::get_if<write_allocations>(&write)) {
    for (const auto& a : w->shards) {
      shards.push_back(a.shard);
    }
  } else if (const auto* b = std::get_if<begin_handoffs>(&write)) {
    for (const auto& h : b->shards) {
      shards.push_back(h.shard);
    }
  } else if (const auto* c = std::get_if<commit_handoff>(&write)) {
    shards.push_back(c->shard);
  } else {
    shards.push_back(std::get<abort_handoff>(write).shard);
  }
  return shards;
}

}  // namespace

coordinator::coordinator(coordinator_settings settings,
                         std::unique_ptr<allocation_strategy> strategy)
    : settings_(std::move(settings)), strategy_(std::move(strategy)) {
  if (!strategy_) {
    throw error(errc::invalid_config, "a coordinator needs an allocation strategy, got none");
  }
}

std::vector<coordinator_decision> coordinator::handle(const coordinator_event& event) {
  out o;
  std::visit([&](const auto& e) { on(e, o); }, event);
  return o;
}

bool coordinator::deciding() const noexcept {
  return key_create_revision_.has_value() && have_state_ && !reading_;
}

std::vector<shard_id> coordinator::shards_in_flight() const {
  std::vector<shard_id> shards;
  for (const auto& [shard, id] : busy_) {
    shards.push_back(shard);
  }
  return shards;
}

std::size_t coordinator::hosting_regions() const {
  if (!deciding()) {
    return 0;
  }
  return static_cast<std::size_t>(std::count_if(regions_.begin(), regions_.end(),
                                                [&](const auto& r) { return may_host(r.second); }));
}

void coordinator::reset() {
  key_create_revision_.reset();
  have_state_ = false;
  reading_ = false;
  read_again_ = false;
  read_revision_ = 0;
  early_changes_.clear();
  members_.clear();
  regions_.clear();
  allocations_.clear();
  owned_.clear();
  handoffs_.clear();
  handoff_clocks_.clear();
  touched_.clear();
  full_pass_ = true;
  forget_view();
  handoffs_ended_.clear();
  writes_.clear();
  busy_.clear();
  waiters_.clear();
  // A deposed node may see no tick for a long time: a stale time would time hand-offs out early.
  last_now_.reset();
  last_rebalance_.reset();
  rebalance_wanted_ = false;  // a request was for the term it reached
  loads_.clear();
  // next_write_id_ keeps counting, so an outcome of a write from an earlier term never matches.
}

void coordinator::on(const elected& e, out& o) {
  // A new term starts from what the store says, not from what an earlier term believed.
  reset();
  key_create_revision_ = e.key_create_revision;
  reading_ = true;
  o.emplace_back(read_state{});
}

void coordinator::on(const deposed&, out&) { reset(); }

void coordinator::on(const state_read& e, out& o) {
  if (!key_create_revision_) {
    return;
  }
  // Writes that committed after the read was taken are newer than it: keep them.
  std::map<shard_id, allocation> newer;
  for (const auto& [shard, a] : allocations_) {
    if (a.mod_revision > e.revision) {
      newer.emplace(shard, a);
    }
  }
  std::map<shard_id, handoff> newer_handoffs;
  for (const auto& [shard, h] : handoffs_) {
    if (h.revision > e.revision) {
      newer_handoffs.emplace(shard, h);
    }
  }
  members_.clear();
  for (const auto& m : e.members) {
    members_[m.id] = m;
  }
  regions_.clear();
  for (const auto& r : e.regions) {
    regions_[r.id] = r;
  }
  allocations_.clear();
  for (const auto& a : e.allocations) {
    allocations_[a.shard] = a;
  }
  for (const auto& [shard, a] : newer) {
    allocations_[shard] = a;
  }
  index_allocations();
  handoffs_.clear();
  for (const auto& h : e.handoffs) {
    // A hand-off this coordinator committed or aborted after the read was taken stays ended.
    if (!handoff_ended(h)) {
      handoffs_[h.shard] = h;
    }
  }
  for (const auto& [shard, h] : newer_handoffs) {
    handoffs_[shard] = h;
  }
  loads_.clear();
  for (const auto& report : e.loads) {
    if (!report.loads.empty()) {
      loads_[report.region] = report.loads;
    }
  }
  publish_loads();
  read_revision_ = std::max(read_revision_, e.revision);
  std::erase_if(handoffs_ended_, [&](const auto& ended) { return ended.second <= read_revision_; });
  have_state_ = true;
  reading_ = false;
  full_pass_ = true;  // everything may have changed
  forget_view();

  auto early = std::move(early_changes_);
  early_changes_.clear();
  for (const auto& [revision, change] : early) {
    if (revision > read_revision_) {
      apply_change(change);
    }
  }
  if (read_again_) {
    // A write failed after this read was asked for: the read may not show why.
    read_again_ = false;
    reading_ = true;
    o.emplace_back(read_state{});
    return;
  }
  reconcile(o);
}

bool coordinator::change_applies(store_revision revision, const coordinator_event& event) {
  if (!key_create_revision_) {
    return false;
  }
  if (reading_) {
    early_changes_.emplace_back(revision, event);
    return false;
  }
  if (revision <= read_revision_) {
    return false;
  }
  return apply_change(event);
}

bool coordinator::apply_change(const coordinator_event& event) {
  if (const auto* m = std::get_if<member_put>(&event)) {
    auto it = members_.find(m->member.id);
    if (it != members_.end() && it->second == m->member) {
      return false;
    }
    members_[m->member.id] = m->member;
  } else if (const auto* md = std::get_if<member_deleted>(&event)) {
    loads_.erase(md->id);
    return members_.erase(md->id) > 0;
  } else if (const auto* r = std::get_if<region_put>(&event)) {
    auto it = regions_.find(r->region.id);
    if (it != regions_.end() && it->second == r->region) {
      return false;
    }
    regions_[r->region.id] = r->region;
  } else if (const auto* rd = std::get_if<region_deleted>(&event)) {
    return regions_.erase(rd->id) > 0;
  } else if (const auto* a = std::get_if<allocation_put>(&event)) {
    // Epochs only grow: a put older than what a commit told us is stale.
    auto it = allocations_.find(a->value.shard);
    if (it != allocations_.end() && it->second.mod_revision >= a->value.mod_revision) {
      return false;
    }
    set_allocation(a->value);
  } else if (const auto* ad = std::get_if<allocation_deleted>(&event)) {
    auto it = allocations_.find(ad->shard);
    if (it == allocations_.end() || it->second.mod_revision >= ad->revision) {
      return false;
    }
    erase_allocation(it);
  } else if (const auto* h = std::get_if<handoff_put>(&event)) {
    auto it = handoffs_.find(h->value.shard);
    if (handoff_ended(h->value) ||
        (it != handoffs_.end() && it->second.revision >= h->value.revision)) {
      return false;
    }
    handoffs_[h->value.shard] = h->value;
    touched_.insert(h->value.shard);
  } else if (const auto* hd = std::get_if<handoff_deleted>(&event)) {
    // The watch is past the deletion, so no older copy of the hand-off can come from it.
    auto ended = handoffs_ended_.find(hd->shard);
    if (ended != handoffs_ended_.end() && ended->second <= hd->revision) {
      handoffs_ended_.erase(ended);
    }
    auto it = handoffs_.find(hd->shard);
    if (it == handoffs_.end() || it->second.revision >= hd->revision) {
      return false;
    }
    handoffs_.erase(it);
    touched_.insert(hd->shard);
  } else if (const auto* st = std::get_if<shard_stopped>(&event)) {
    // Only the hand-off the old owner answered: a stop for an earlier one proves nothing now.
    auto it = handoffs_.find(st->shard);
    if (it == handoffs_.end() || it->second.revision != st->handoff_revision ||
        it->second.stopped) {
      return false;
    }
    it->second.stopped = true;
    touched_.insert(st->shard);
  }
  return true;
}

void coordinator::set_allocation(const allocation& a) {
  auto it = allocations_.find(a.shard);
  if (it == allocations_.end()) {
    allocations_.emplace(a.shard, a);
  } else {
    if (auto owner = owned_.find(it->second.owner); owner != owned_.end()) {
      owner->second.erase(a.shard);
      if (owner->second.empty()) {
        owned_.erase(owner);
      }
    }
    it->second = a;
  }
  owned_[a.owner].insert(a.shard);
  touched_.insert(a.shard);
}

void coordinator::erase_allocation(std::map<shard_id, allocation>::iterator it) {
  if (auto owner = owned_.find(it->second.owner); owner != owned_.end()) {
    owner->second.erase(it->first);
    if (owner->second.empty()) {
      owned_.erase(owner);
    }
  }
  touched_.insert(it->first);
  allocations_.erase(it);
}

void coordinator::index_allocations() {
  owned_.clear();
  for (const auto& [shard, a] : allocations_) {
    owned_[a.owner].insert(shard);
  }
}

void coordinator::on(const member_put& e, out& o) {
  if (change_applies(e.revision, e)) {
    full_pass_ = true;  // who may host, and whose shards must move, may have changed
    forget_view();
    reconcile(o);
  }
}

void coordinator::on(const member_deleted& e, out& o) {
  if (change_applies(e.revision, e)) {
    full_pass_ = true;  // who may host, and whose shards must move, may have changed
    forget_view();
    reconcile(o);
  }
}

void coordinator::on(const region_put& e, out& o) {
  if (change_applies(e.revision, e)) {
    full_pass_ = true;  // who may host, and whose shards must move, may have changed
    forget_view();
    reconcile(o);
  }
}

void coordinator::on(const region_deleted& e, out& o) {
  if (change_applies(e.revision, e)) {
    full_pass_ = true;  // who may host, and whose shards must move, may have changed
    forget_view();
    reconcile(o);
  }
}

void coordinator::on(const allocation_put& e, out& o) {
  if (change_applies(e.value.mod_revision, e)) {
    reconcile(o);
  }
}

void coordinator::on(const allocation_deleted& e, out& o) {
  if (change_applies(e.revision, e)) {
    reconcile(o);
  }
}

void coordinator::on(const handoff_put& e, out& o) {
  if (change_applies(e.value.revision, e)) {
    reconcile(o);
  }
}

void coordinator::on(const handoff_deleted& e, out& o) {
  if (change_applies(e.revision, e)) {
    reconcile(o);
  }
}

void coordinator::on(const shard_stopped& e, out& o) {
  if (change_applies(e.revision, e)) {
    reconcile(o);
  }
}

void coordinator::on(const home_requested& e, out& o) {
  if (!key_create_revision_) {
    return;  // not the coordinator: the region asks again elsewhere
  }
  auto& waiting = waiters_[e.shard];
  if (std::find(waiting.begin(), waiting.end(), e.requester) == waiting.end()) {
    waiting.push_back(e.requester);
  }
  touched_.insert(e.shard);
  reconcile(o);
}

void coordinator::on(const write_committed& e, out& o) {
  auto it = writes_.find(e.id);
  if (!key_create_revision_ || it == writes_.end()) {
    return;
  }
  const auto write = std::move(it->second);
  writes_.erase(it);
  for (const auto shard : shards_of(write)) {
    busy_.erase(shard);
    touched_.insert(shard);
  }
  auto allocate = [&](shard_id shard, const member_id& owner) {
    const auto known = allocations_.find(shard);
    if (known == allocations_.end() || known->second.mod_revision < e.revision) {
      set_allocation(allocation{shard, owner, e.revision});
    }
  };
  if (const auto* w = std::get_if<write_allocations>(&write)) {
    for (const auto& a : w->shards) {
      allocate(a.shard, a.owner);
    }
  } else if (const auto* b = std::get_if<begin_handoffs>(&write)) {
    for (const auto& s : b->shards) {
      // The watch may have brought this hand-off, even its stop, before the outcome came.
      auto& known = handoffs_[s.shard];
      if (known.revision < e.revision) {
        known = handoff{s.shard, s.from, s.to, s.expected_mod_revision, e.revision, false};
      }
    }
  } else if (const auto* c = std::get_if<commit_handoff>(&write)) {
    allocate(c->shard, c->to);
    end_handoff(c->shard, c->handoff_revision, e.revision);
  } else {
    const auto& a = std::get<abort_handoff>(write);
    end_handoff(a.shard, a.handoff_revision, e.revision);
  }
  // Waiters for these shards are answered here, unless the new owner died meanwhile.
  reconcile(o);
}

void coordinator::on(const write_failed& e, out& o) { write_outcome_not_known(e.id, o); }

void coordinator::on(const write_unknown& e, out& o) { write_outcome_not_known(e.id, o); }

void coordinator::write_outcome_not_known(write_id id, out& o) {
  auto it = writes_.find(id);
  if (!key_create_revision_ || it == writes_.end()) {
    return;
  }
  for (const auto shard : shards_of(it->second)) {
    busy_.erase(shard);
    touched_.insert(shard);
  }
  writes_.erase(it);
  // A compare failed (or may have): the view that chose this write is wrong somewhere. Read
  // the truth before deciding again; repeating the same write would fail the same way.
  if (reading_) {
    read_again_ = true;
  } else {
    reading_ = true;
    o.emplace_back(read_state{});
  }
}

void coordinator::on(const tick& e, out& o) {
  if (!key_create_revision_) {
    return;
  }
  last_now_ = e.now;
  if (!deciding()) {
    return;
  }
  full_pass_ = true;  // timeouts, and decisions that waited for something else, are due
  reconcile(o);
  const bool due = !last_rebalance_ || e.now - *last_rebalance_ >= settings_.rebalance_interval;
  if (!due && !rebalance_wanted_) {
    return;
  }
  last_rebalance_ = e.now;
  if (rebalance(o)) {
    rebalance_wanted_ = false;
  }
}

void coordinator::on(const rebalance_requested&, out&) {
  // Run at the next tick, not now: the tick reconciles first, so the round plans on a view with
  // no shard waiting for a home.
  if (deciding()) {
    rebalance_wanted_ = true;
  }
}

bool coordinator::may_host(const region_info& region) const {
  if (region.proxy) {
    return false;
  }
  auto member = members_.find(region.id);
  if (member == members_.end()) {
    return false;  // a region outlives its member's key only until the watch catches up
  }
  if (settings_.role.empty()) {
    return true;
  }
  const auto& roles = member->second.roles;
  return std::find(roles.begin(), roles.end(), settings_.role) != roles.end();
}

std::vector<region_view> coordinator::hosting_view() const {
  std::vector<region_view> view;
  std::map<member_id, std::size_t> index;
  for (const auto& [id, region] : regions_) {
    if (!may_host(region)) {
      continue;
    }
    const auto& member = members_.at(id);
    index.emplace(id, view.size());
    view.push_back(region_view{id, member.leaving, member.app_version, {}});
    // The index by owner is ascending by shard, as the view's lists must be.
    if (const auto owned = owned_.find(id); owned != owned_.end()) {
      view.back().shards.assign(owned->second.begin(), owned->second.end());
    }
  }
  // A shard counts for its owner, or for the target of its hand-off or of the write in flight
  // for it; an abort in flight keeps it with its owner. Only these few shards are moved in the
  // lists, so the view costs a copy of the index and nothing per allocation.
  std::map<shard_id, const member_id*> moving;
  for (const auto& [shard, h] : handoffs_) {
    moving[shard] = &h.to;
  }
  for (const auto& [id, write] : writes_) {
    if (const auto* w = std::get_if<write_allocations>(&write)) {
      for (const auto& a : w->shards) {
        moving[a.shard] = &a.owner;
      }
    } else if (const auto* b = std::get_if<begin_handoffs>(&write)) {
      for (const auto& s : b->shards) {
        moving[s.shard] = &s.to;
      }
    } else if (const auto* c = std::get_if<commit_handoff>(&write)) {
      moving[c->shard] = &c->to;
    } else if (auto a = allocations_.find(std::get<abort_handoff>(write).shard);
               a != allocations_.end()) {
      moving[a->first] = &a->second.owner;
    }
  }
  for (const auto& [shard, to] : moving) {
    const auto a = allocations_.find(shard);
    if (a != allocations_.end()) {
      if (a->second.owner == *to) {
        continue;
      }
      if (auto from = index.find(a->second.owner); from != index.end()) {
        auto& shards = view[from->second].shards;
        if (auto at = std::lower_bound(shards.begin(), shards.end(), shard);
            at != shards.end() && *at == shard) {
          shards.erase(at);
        }
      }
    }
    if (auto it = index.find(*to); it != index.end()) {
      add_shard(view[it->second], shard);
    }
  }
  return view;
}

std::vector<region_view>& coordinator::cached_view() {
  if (!view_) {
    view_ = hosting_view();
    view_index_.clear();
    view_place_.clear();
    view_stale_.clear();
    view_picks_.clear();
    for (std::size_t i = 0; i < view_->size(); ++i) {
      view_index_.emplace((*view_)[i].region, i);
      for (const auto shard : (*view_)[i].shards) {
        view_place_[shard] = i;
      }
    }
    return *view_;
  }
  auto& view = *view_;
  auto erase = [&](std::size_t region, shard_id shard) {
    auto& shards = view[region].shards;
    if (auto at = std::lower_bound(shards.begin(), shards.end(), shard);
        at != shards.end() && *at == shard) {
      shards.erase(at);
    }
  };
  // Undo what the last passes' picks added, then put each changed shard where it counts now:
  // the same lists hosting_view() would build, at the cost of what changed.
  for (const auto& [shard, region] : view_picks_) {
    erase(region, shard);
  }
  view_picks_.clear();
  for (const auto shard : view_stale_) {
    if (auto place = view_place_.find(shard); place != view_place_.end()) {
      erase(place->second, shard);
      view_place_.erase(place);
    }
    if (const auto* owner = counted_owner(shard)) {
      if (auto it = view_index_.find(*owner); it != view_index_.end()) {
        add_shard(view[it->second], shard);
        view_place_[shard] = it->second;
      }
    }
  }
  view_stale_.clear();
  return view;
}

const member_id* coordinator::counted_owner(shard_id shard) const {
  const auto a = allocations_.find(shard);
  if (const auto busy = busy_.find(shard); busy != busy_.end()) {
    if (const auto w = writes_.find(busy->second); w != writes_.end()) {
      if (const auto* wa = std::get_if<write_allocations>(&w->second)) {
        for (const auto& x : wa->shards) {
          if (x.shard == shard) return &x.owner;
        }
      } else if (const auto* b = std::get_if<begin_handoffs>(&w->second)) {
        for (const auto& x : b->shards) {
          if (x.shard == shard) return &x.to;
        }
      } else if (const auto* c = std::get_if<commit_handoff>(&w->second)) {
        return &c->to;
      } else if (a != allocations_.end()) {
        return &a->second.owner;  // an abort keeps the shard with its owner
      }
    }
  }
  if (const auto h = handoffs_.find(shard); h != handoffs_.end()) {
    return &h->second.to;
  }
  return a == allocations_.end() ? nullptr : &a->second.owner;
}

void coordinator::forget_view() {
  view_.reset();
  view_index_.clear();
  view_place_.clear();
  view_stale_.clear();
  view_picks_.clear();
}

region_view* coordinator::find_in(std::vector<region_view>& view, const member_id& id) {
  if (view_ && &view == &*view_) {
    const auto it = view_index_.find(id);
    return it == view_index_.end() ? nullptr : &view[it->second];
  }
  return find_region(view, id);
}

void coordinator::add_to(std::vector<region_view>& view, region_view& region, shard_id shard) {
  add_shard(region, shard);
  if (view_ && &view == &*view_) {
    view_picks_.emplace_back(shard, static_cast<std::size_t>(&region - view.data()));
    view_stale_.insert(shard);
  }
}

void coordinator::remove_from(std::vector<region_view>& view, const member_id& region,
                              shard_id shard) {
  if (auto* r = find_in(view, region)) {
    if (auto at = std::lower_bound(r->shards.begin(), r->shards.end(), shard);
        at != r->shards.end() && *at == shard) {
      r->shards.erase(at);
    }
  }
  if (view_ && &view == &*view_) {
    view_stale_.insert(shard);
  }
}

std::optional<member_id> coordinator::choose(shard_id shard, std::vector<region_view>& view,
                                             out& o) {
  if (view.empty()) {
    return std::nullopt;
  }
  std::optional<member_id> pick;
  try {
    pick = strategy_->allocate(shard, view);
  } catch (const std::exception& ex) {
    o.emplace_back(strategy_error{shard, std::string("allocate threw: ") + ex.what()});
    return std::nullopt;
  }
  if (!pick) {
    return std::nullopt;
  }
  auto* region = find_in(view, *pick);
  if (region == nullptr) {
    o.emplace_back(strategy_error{
        shard, "the allocation strategy chose " + describe(*pick) +
                   ", which is not one of the regions offered (a proxy, a member without the "
                   "type's role, or no live region)"});
    return std::nullopt;
  }
  // Later picks in the same pass see this one.
  add_to(view, *region, shard);
  return pick;
}

void coordinator::emit(pending_write write, out& o) {
  const auto id = next_write_id_++;
  std::visit(
      [&](auto& w) {
        w.id = id;
        w.coordinator_key_create_revision = *key_create_revision_;
      },
      write);
  for (const auto shard : shards_of(write)) {
    busy_[shard] = id;
    view_stale_.insert(shard);  // it counts for the write's target now
  }
  std::visit([&](const auto& w) { o.emplace_back(w); }, write);
  writes_.emplace(id, std::move(write));
}

void coordinator::reconcile(out& o) {
  if (!deciding()) {
    return;  // what changed meanwhile stays marked: the pass after the read is a full one
  }
  // Only what changed since the last pass can lead to a new decision, unless members, regions,
  // a read or the time changed: then everything is looked at again.
  const bool full = std::exchange(full_pass_, false);
  const auto touched = std::exchange(touched_, {});
  view_stale_.insert(touched.begin(), touched.end());

  // 1. Answer whoever waits for a shard whose owner lives and is not being replaced; during a
  // hand-off the answer waits for its commit or abort.
  auto answer = [&](std::map<shard_id, std::vector<member_id>>::iterator it) {
    const auto a = allocations_.find(it->first);
    if (a != allocations_.end() && !busy_.contains(it->first) && !handoffs_.contains(it->first) &&
        members_.contains(a->second.owner)) {
      for (const auto& requester : it->second) {
        o.emplace_back(answer_home{requester, it->first, a->second.owner, a->second.mod_revision});
      }
      return waiters_.erase(it);
    }
    return std::next(it);
  };
  if (full) {
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      it = answer(it);
    }
  } else {
    for (const auto shard : touched) {
      if (auto it = waiters_.find(shard); it != waiters_.end()) {
        answer(it);
      }
    }
  }

  // 2. Hand-offs: commit the stopped ones, abort those whose owner is gone or too slow.
  lazy_view view(*this);
  decide_handoffs(full, touched, view, o);
  if (std::none_of(regions_.begin(), regions_.end(),
                   [&](const auto& r) { return may_host(r.second); })) {
    return;  // nowhere to put anything: retried when a region that may host appears
  }

  // 3. Shards of members whose key is gone (and only those: a member whose key exists may still
  // run its entities). One write per dead member and batch, comparing the old epochs. A shard
  // being handed off waits for the abort.
  auto reallocate = [&](const member_id& owner, const auto& shards) {
    std::vector<allocation_write> batch;
    for (const auto shard : shards) {
      if (busy_.contains(shard) || handoffs_.contains(shard)) {
        continue;
      }
      if (auto to = choose(shard, view.get(), o)) {
        batch.push_back(allocation_write{shard, *to, allocations_.at(shard).mod_revision});
      }
      if (batch.size() == max_shards_per_write) {
        emit(write_allocations{.shards = std::exchange(batch, {}), .dead_owner = owner}, o);
      }
    }
    if (!batch.empty()) {
      emit(write_allocations{.shards = std::move(batch), .dead_owner = owner}, o);
    }
  };
  if (full) {
    for (const auto& [owner, shards] : owned_) {
      if (!members_.contains(owner)) {
        reallocate(owner, shards);
      }
    }
  } else {
    std::map<member_id, std::vector<shard_id>> dead;  // ascending, as on a full pass
    for (const auto shard : touched) {
      const auto a = allocations_.find(shard);
      if (a != allocations_.end() && !members_.contains(a->second.owner)) {
        dead[a->second.owner].push_back(shard);
      }
    }
    for (const auto& [owner, shards] : dead) {
      reallocate(owner, shards);
    }
  }

  // 4. Shards someone asked for that have no allocation: create if absent.
  std::vector<allocation_write> batch;
  auto create = [&](shard_id shard) {
    if (allocations_.contains(shard) || busy_.contains(shard) || handoffs_.contains(shard)) {
      return;
    }
    if (auto to = choose(shard, view.get(), o)) {
      batch.push_back(allocation_write{shard, *to, 0});
    }
    if (batch.size() == max_shards_per_write) {
      emit(write_allocations{.shards = std::exchange(batch, {}), .dead_owner = std::nullopt}, o);
    }
  };
  if (full) {
    for (const auto& [shard, requesters] : waiters_) {
      create(shard);
    }
  } else {
    for (const auto shard : touched) {
      if (waiters_.contains(shard)) {
        create(shard);
      }
    }
  }
  if (!batch.empty()) {
    emit(write_allocations{.shards = std::move(batch), .dead_owner = std::nullopt}, o);
  }

  // 5. A leaving member's shards move by hand-off while its lease lives, so none waits for the
  // dead-owner path.
  auto leaves = [&](const member_id& owner) {
    const auto m = members_.find(owner);
    return m != members_.end() && m->second.leaving;
  };
  std::vector<shard_id> leaving;
  if (full) {
    for (const auto& [id, member] : members_) {
      const auto owned = owned_.find(id);
      if (!member.leaving || owned == owned_.end()) {
        continue;
      }
      for (const auto shard : owned->second) {
        if (!busy_.contains(shard) && !handoffs_.contains(shard)) {
          leaving.push_back(shard);
        }
      }
    }
    std::sort(leaving.begin(), leaving.end());  // in shard order, whoever owns them
  } else {
    for (const auto shard : touched) {  // ascending already
      const auto a = allocations_.find(shard);
      if (a != allocations_.end() && leaves(a->second.owner) && !busy_.contains(shard) &&
          !handoffs_.contains(shard)) {
        leaving.push_back(shard);
      }
    }
  }
  std::vector<handoff_start> starts;
  for (const auto shard : leaving) {
    if (auto start = plan_move(allocations_.at(shard), view.get(), o)) {
      starts.push_back(std::move(*start));
    }
  }
  emit_handoffs(std::move(starts), o);
}

}  // namespace troupe::sharding::coordination
