#include "cluster/placement/cluster_placement.hpp"

#include <troupe/cluster/errc.hpp>
#include <troupe/core/actor.hpp>
#include <troupe/persistence/errc.hpp>
#include <troupe/persistence/plugin.hpp>

#include "cluster/coordination/coordination_keys.hpp"
#include "cluster/coordination/handoff_keys.hpp"
#include "cluster/membership/members.hpp"
#include "cluster/strand_steps.hpp"

#include <boost/asio/post.hpp>

#include <stdexcept>
#include <utility>

namespace troupe::cluster {

namespace coord = sharding::coordination;
using sharding::no_home_yet;
using sharding::placed_here;
using sharding::placed_remote;
using sharding::shard_epoch;
using sharding::shard_home;
using sharding::shard_id;

fence_raiser raise_fences_in(std::shared_ptr<persistence::plugin> store, std::string type) {
  if (!store) throw std::invalid_argument("raise_fences_in: a store is required");
  return [store = std::move(store), type = std::move(type)](
             shard_id shard, shard_epoch epoch,
             std::function<void(std::error_code, persistence::fence_raise)> done) {
    persistence::shard_fence_raise r{{type, shard},
                                     static_cast<persistence::ownership_epoch>(epoch)};
    store->async_raise_shard_fence(
        std::move(r), [done = std::move(done)](std::exception_ptr e, persistence::fence_raise v) {
          if (!e) {
            done({}, v);
            return;
          }
          std::error_code ec = persistence::make_error_code(persistence::errc::store_failure);
          try {
            std::rethrow_exception(e);
          } catch (const std::system_error& x) {
            ec = x.code();
          } catch (...) {
          }
          done(ec, persistence::fence_raise::superseded);
        });
  };
}

std::shared_ptr<cluster_placement> cluster_placement::start(std::shared_ptr<consensus_store> store,
                                                            std::shared_ptr<troupe::clock> clock,
                                                            cluster_placement_options options,
                                                            fence_raiser raise_fence,
                                                            home_request ask) {
  if (!store || !clock || !ask) {
    throw std::invalid_argument("cluster_placement: store, clock and home request are required");
  }
  check_type_name(options.type);
  if (options.self.incarnation <= 0 || options.self.node.empty()) {
    throw std::invalid_argument("cluster_placement: self needs a node id and the node's lease");
  }
  auto p = std::make_shared<cluster_placement>(token{}, std::move(store), std::move(clock),
                                               std::move(options), std::move(raise_fence),
                                               std::move(ask));
  boost::asio::post(p->strand_, [weak = p->weak_from_this()] {
    if (auto self = weak.lock(); self && !self->stopped()) {
      self->register_region();
      self->read();
      self->tick();
      if (!self->options_.proxy && self->options_.load_interval > duration::zero()) {
        self->last_counted_ = self->clock_->now();
        self->report_load();
      }
    }
  });
  return p;
}

cluster_placement::cluster_placement(token, std::shared_ptr<consensus_store> store,
                                     std::shared_ptr<troupe::clock> clock,
                                     cluster_placement_options options, fence_raiser raise_fence,
                                     home_request ask)
    : placement(options.standing),
      store_(std::move(store)),
      clock_(std::move(clock)),
      options_(std::move(options)),
      raise_fence_(std::move(raise_fence)),
      ask_(std::move(ask)),
      strand_(boost::asio::make_strand(store_->executor())) {}

cluster_placement::~cluster_placement() {
  stopped_ = true;
  if (watch_) watch_->cancel();
  if (tick_timer_ != 0) clock_->cancel(tick_timer_);
  if (load_timer_ != 0) clock_->cancel(load_timer_);
  for (timer_id t : retry_timers_) clock_->cancel(t);
}

template <class Step>
void cluster_placement::after_retry(Step step) {
  detail::run_after(*clock_, options_.retry, weak_from_this(), strand_, retry_timers_,
                    std::move(step));
}

// -- answers ----------------------------------------------------------------------------------

shard_home cluster_placement::home_locked(shard_id shard) const {
  if (stopped_ || !read_) return no_home_yet{};
  auto it = allocations_.find(shard);
  if (it == allocations_.end()) return no_home_yet{};
  // Being handed off: its old owner stops it, and its messages wait (each region flushes what it
  // sent there) until the hand-off commits or aborts.
  if (handoffs_.contains(shard)) return no_home_yet{};
  const coord::allocation& a = it->second;
  if (a.owner == options_.self) {
    // A proxy is never allocated a shard; a node that left or fenced itself hosts none.
    if (options_.proxy || !hosting_) return no_home_yet{};
    if (!raise_fence_) return placed_here{a.mod_revision};
    // Here only once the store refuses the previous owner's writes.
    auto f = fences_.find(shard);
    const bool fenced = f != fences_.end() && f->second.epoch == a.mod_revision &&
                        f->second.state == fence_state::raised;
    return fenced ? shard_home{placed_here{a.mod_revision}} : shard_home{no_home_yet{}};
  }
  // An owner whose member key is gone hosts nothing: the coordinator reallocates its shards. One
  // that leaves drains them: what comes meanwhile waits here for the next owner (and a region
  // that sent it some flushes them now, while it is still a member).
  if (auto m = members_.find(a.owner); m != members_.end() && !m->second.leaving) {
    return placed_remote{a.owner.node, a.mod_revision};
  }
  return no_home_yet{};
}

shard_home cluster_placement::peek_home(shard_id shard) {
  std::lock_guard lock(mutex_);
  return home_locked(shard);
}

shard_home cluster_placement::home_of(shard_id shard) {
  shard_home home;
  bool find = false;
  {
    std::lock_guard lock(mutex_);
    home = home_locked(shard);
    asked_[shard] = home;
    find = std::holds_alternative<no_home_yet>(home) && read_ && !stopped_;
    if (auto h = handoffs_.find(shard); h != handoffs_.end()) h->second.asked = true;
  }
  if (find) {
    boost::asio::post(strand_, [weak = weak_from_this(), shard] {
      if (auto self = weak.lock(); self && !self->stopped()) self->find_home(shard);
    });
  }
  return home;
}

void cluster_placement::released(shard_id shard) {
  {
    std::lock_guard lock(mutex_);
    auto h = handoffs_.find(shard);
    // Only an answer given during this hand-off counts: before it, the region could still
    // have started the shard again.
    if (h == handoffs_.end() || h->second.value.from != options_.self || !h->second.asked ||
        h->second.released) {
      return;
    }
    h->second.released = true;
  }
  boost::asio::post(strand_, [weak = weak_from_this(), shard] {
    if (auto self = weak.lock(); self && !self->stopped()) self->report_stopped(shard);
  });
}

bool cluster_placement::owns_shards() const {
  std::lock_guard lock(mutex_);
  for (const auto& [shard, a] : allocations_) {
    if (a.owner == options_.self) return true;
  }
  return false;
}

std::string cluster_placement::owned_shards_progress() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& [shard, a] : allocations_) {
    if (a.owner != options_.self) continue;
    if (!out.empty()) out += "; ";
    out += "shard " + std::to_string(shard);
    auto h = handoffs_.find(shard);
    if (h == handoffs_.end()) {
      out += ": no hand-off yet";
    } else {
      const auto& e = h->second;
      out += std::string(": hand-off ") + (e.asked ? "asked" : "not asked") +
             (e.released ? ", released" : ", not released") +
             (e.reported    ? ", reported"
              : e.reporting ? ", reporting"
                            : ", not reported");
    }
  }
  return out;
}

void cluster_placement::track_hosted_shards() {
  {
    std::lock_guard lock(mutex_);
    if (track_hosted_) return;
    track_hosted_ = true;
  }
  boost::asio::post(strand_, [weak = weak_from_this()] {
    auto self = weak.lock();
    if (!self || self->stopped()) return;
    std::vector<shard_id> hosted;
    {
      std::lock_guard lock(self->mutex_);
      hosted = self->track_hosted_locked();
    }
    if (!hosted.empty()) self->announce(hosted);
  });
}

std::vector<shard_id> cluster_placement::track_hosted_locked() {
  std::vector<shard_id> hosted;
  if (!track_hosted_ || options_.proxy) return hosted;
  for (const auto& [shard, a] : allocations_) {
    // Told nothing yet: the next announce tells the region once it is placed here.
    if (a.owner == options_.self && asked_.try_emplace(shard, no_home_yet{}).second) {
      hosted.push_back(shard);
    }
  }
  return hosted;
}

void cluster_placement::set_listener(home_listener listener) {
  std::lock_guard lock(mutex_);
  listener_ = std::move(listener);
}

void cluster_placement::send_remote(const placed_remote& home, shard_id shard,
                                    const std::string& entity_id, const void* message,
                                    const untyped_ref& sender,
                                    const sharding::origin_stamp& passed_on) {
  const std::optional<std::string> address = address_of(home.node);
  if (!address) {
    throw cluster_error(errc::node_unreachable, "node " + home.node + " is not a member any more");
  }
  sharding::origin_stamp stamp = passed_on;
  if (stamp.run == 0) {
    std::lock_guard lock(mutex_);
    stamp = own_stamp_locked(shard);
  }
  options_.send(*address, shard, home.epoch, entity_id, message, sender, stamp);
}

sharding::origin_stamp cluster_placement::own_stamp_locked(shard_id shard) const {
  const auto it = rounds_.find(shard);
  return {options_.self.incarnation,
          it == rounds_.end() ? 0U : it->second->load(std::memory_order_acquire)};
}

const std::shared_ptr<std::atomic<std::uint32_t>>& cluster_placement::round_locked(shard_id shard) {
  auto& slot = rounds_[shard];
  if (!slot) slot = std::make_shared<std::atomic<std::uint32_t>>(0);
  return slot;
}

void cluster_placement::next_round_locked(shard_id shard) {
  round_locked(shard)->fetch_add(1, std::memory_order_acq_rel);
  any_round_.store(true, std::memory_order_release);
}

void cluster_placement::flush_abandoned(shard_id shard) {
  std::lock_guard lock(mutex_);
  next_round_locked(shard);
}

bool cluster_placement::overtaken(shard_id shard, const sharding::origin_stamp& stamp) {
  // Round 0 while no round above it exists here (no flush of this node timed out, none seen
  // from another run): nothing to check, and no lock on the receiving path.
  if (stamp.round == 0 && !any_round_.load(std::memory_order_acquire)) return false;
  std::lock_guard lock(mutex_);
  if (stamp.run == options_.self.incarnation) return stamp.round < own_stamp_locked(shard).round;
  if (stamp.round == 0) {
    const auto it = rounds_seen_.find({shard, stamp.run});
    return it != rounds_seen_.end();  // a round above 0 was seen (only those are kept)
  }
  // Runs come and go over a long life; a bound keeps the map small (forgetting only weakens
  // the check for a message that is late already).
  constexpr std::size_t most_remembered = 4096;
  if (rounds_seen_.size() >= most_remembered) rounds_seen_.clear();
  auto& seen = rounds_seen_[{shard, stamp.run}];
  any_round_.store(true, std::memory_order_release);
  if (stamp.round < seen) return true;
  seen = stamp.round;
  return false;
}

std::shared_ptr<sharding::placement::remote_link> cluster_placement::link_to(
    const placed_remote& home, shard_id shard) {
  if (!options_.link) return placement::link_to(home, shard);
  const std::optional<std::string> address = address_of(home.node);
  if (!address) {
    throw cluster_error(errc::node_unreachable, "node " + home.node + " is not a member any more");
  }
  std::shared_ptr<std::atomic<std::uint32_t>> round;
  {
    std::lock_guard lock(mutex_);
    round = round_locked(shard);
  }
  return options_.link(*address, shard, home.epoch, options_.self.incarnation, std::move(round));
}

void cluster_placement::set_arrival_handler(arrival_handler handler) {
  std::vector<sharding::remote_arrival> early;
  {
    std::lock_guard lock(mutex_);
    arrivals_ = std::move(handler);
    if (!arrivals_) return;
    had_arrivals_handler_ = true;
    early.swap(early_arrivals_);
    // Handed on under the lock: a later arrival cannot overtake them.
    for (auto& a : early) arrivals_(a);
  }
}

bool cluster_placement::send_flush(const placed_remote& home, shard_id shard, std::uint64_t token,
                                   const untyped_ref& reply_to, const std::string& origin) {
  if (!options_.send_flush) return false;
  const std::optional<std::string> address = address_of(home.node);
  if (!address) {
    throw cluster_error(errc::node_unreachable, "node " + home.node + " is not a member any more");
  }
  if (!reply_to) {
    std::lock_guard lock(mutex_);
    own_flushes_[token] = {home.node, shard, clock_->now() + options_.flush_timeout};
  }
  try {
    options_.send_flush(*address, shard, home.epoch, token, reply_to,
                        reply_to ? origin : options_.self.node);
  } catch (...) {
    if (!reply_to) {
      std::lock_guard lock(mutex_);
      own_flushes_.erase(token);
    }
    throw;
  }
  return true;
}

void cluster_placement::answer_flush(const untyped_ref& reply_to, shard_id shard,
                                     std::uint64_t token) {
  if (reply_to && options_.answer_flush) options_.answer_flush(reply_to, shard, token);
}

void cluster_placement::flushed(shard_id shard, std::uint64_t token) {
  std::lock_guard lock(mutex_);
  end_flushes_locked(
      [&](std::uint64_t t, const own_flush& f) { return t == token && f.shard == shard; });
}

template <class Pred>
void cluster_placement::end_flushes_locked(Pred done) {
  for (auto it = own_flushes_.begin(); it != own_flushes_.end();) {
    if (!done(it->first, it->second)) {
      ++it;
      continue;
    }
    sharding::remote_arrival a;
    a.shard = it->second.shard;
    a.flush_token = it->first;
    a.flushed = true;
    it = own_flushes_.erase(it);
    // Like arrive(): in order, behind what arrived before the region started.
    if (arrivals_) {
      arrivals_(a);
    } else {
      early_arrivals_.push_back(std::move(a));
    }
  }
}

bool cluster_placement::arrive(sharding::remote_arrival& arrival) {
  arrived_.fetch_add(1, std::memory_order_relaxed);
  // Arrivals come on each connection's inbound thread, in that connection's order; the lock
  // keeps them behind the early ones.
  std::lock_guard lock(mutex_);
  // This node's own flush marker, passed back here: the region ends that flush itself.
  if (arrival.flush_token != 0) own_flushes_.erase(arrival.flush_token);
  if (!arrivals_) {
    // A region about to start: its arrivals wait for it, bounded (the region starts right after
    // its placement, so few arrive meanwhile).
    constexpr std::size_t early_limit = 4096;
    if (had_arrivals_handler_ || early_arrivals_.size() >= early_limit) return false;
    early_arrivals_.push_back(std::move(arrival));
    return true;
  }
  arrivals_(arrival);
  return true;
}

bool cluster_placement::ready() const {
  std::lock_guard lock(mutex_);
  return registered_ && read_;
}

std::vector<std::pair<coord::member_id, std::string>> cluster_placement::members() const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<coord::member_id, std::string>> out;
  for (const auto& [id, m] : members_) out.emplace_back(id, m.address);
  return out;
}

std::optional<std::string> cluster_placement::address_of(const std::string& node) const {
  std::lock_guard lock(mutex_);
  auto it = addresses_.find(node);
  if (it == addresses_.end()) return std::nullopt;
  return it->second;
}

std::string cluster_placement::node_of_run(std::int64_t run) const {
  std::lock_guard lock(mutex_);
  for (const auto& [id, m] : members_) {
    if (id.incarnation == run) return id.node;
  }
  return {};
}

void cluster_placement::index_addresses() {
  addresses_.clear();
  for (const auto& [id, m] : members_) addresses_.try_emplace(id.node, m.address);
}

void cluster_placement::stop_hosting(bool fenced) {
  {
    std::lock_guard lock(mutex_);
    if (!hosting_ && (!fenced || this->fenced())) return;
    hosting_ = false;
    // At once, before the region hears of it: the entities stop handling messages now.
    if (fenced) mark_fenced();
  }
  boost::asio::post(strand_, [self = shared_from_this(), fenced] {
    self->announce({});
    if (!fenced) return;
    home_listener listener;
    std::vector<shard_id> shards;
    {
      std::lock_guard lock(self->mutex_);
      listener = self->listener_;
      for (const auto& [shard, told] : self->asked_) shards.push_back(shard);
    }
    if (listener) {
      for (shard_id shard : shards) listener(shard);
    }
  });
}

void cluster_placement::stop() {
  if (stopped_.exchange(true)) return;
  boost::asio::post(strand_, [self = shared_from_this()] {
    ++self->watch_gen_;
    if (self->watch_) self->watch_->cancel();
    self->watch_.reset();
    if (self->tick_timer_ != 0) self->clock_->cancel(self->tick_timer_);
    self->tick_timer_ = 0;
    if (self->load_timer_ != 0) self->clock_->cancel(self->load_timer_);
    self->load_timer_ = 0;
    for (timer_id t : self->retry_timers_) self->clock_->cancel(t);
    self->retry_timers_.clear();
    self->announce({});  // every home the region knows is now gone
  });
}

// -- reading the store ------------------------------------------------------------------------

void cluster_placement::register_region() {
  cluster::register_region(
      *store_, options_.cluster, options_.type, {options_.self, options_.proxy},
      detail::resume_on<revision>(
          weak_from_this(), strand_, [](cluster_placement& self, std::error_code ec, revision) {
            if (!ec || ec == errc::invalid_store_request) {  // written, or written before
              std::lock_guard lock(self.mutex_);
              self.registered_ = true;
            } else if (ec == errc::lease_not_found) {
              troupe::logger()->warn("placement {}: the lease of {} is gone; not registering",
                                     self.options_.type, self.options_.self.node);
            } else {
              self.after_retry([](cluster_placement& s) { s.register_region(); });
            }
          }));
}

void cluster_placement::read() {
  // Members and allocations in one transaction: one revision for both, so an allocation is never
  // judged against members older or newer than it.
  txn_request t;
  t.success.emplace_back(range_op{key_range::prefix(members_prefix(options_.cluster))});
  t.success.emplace_back(
      range_op{key_range::prefix(alloc_prefix(options_.cluster, options_.type))});
  t.success.emplace_back(
      range_op{key_range::prefix(handoff_prefix(options_.cluster, options_.type))});
  auto done = [](cluster_placement& self, std::error_code ec, txn_result r) {
    if (ec || r.ranges.size() != 3) {
      self.after_retry([](cluster_placement& s) { s.read(); });
      return;
    }
    std::vector<shard_id> from_here;  // hand-offs from this node it did not know
    {
      std::lock_guard lock(self.mutex_);
      self.members_.clear();
      for (const auto& kv : r.ranges[0]) {
        if (auto m = decode_member(self.options_.cluster, kv.key, kv.value)) {
          self.members_[m->info.id] = {m->address, m->info.leaving};
        }
      }
      self.index_addresses();
      self.allocations_.clear();
      for (const auto& kv : r.ranges[1]) {
        if (auto a = decode_allocation(self.options_.cluster, self.options_.type, kv)) {
          self.allocations_[a->shard] = *a;
        }
      }
      std::map<shard_id, handoff_entry> handoffs;
      for (const auto& kv : r.ranges[2]) {
        if (auto h = decode_handoff(self.options_.cluster, self.options_.type, kv)) {
          // The same hand-off read again keeps what the region said of it.
          auto known = self.handoffs_.find(h->shard);
          if (known != self.handoffs_.end() && known->second.value.revision == h->revision) {
            handoffs.emplace(h->shard, known->second);
          } else {
            handoffs.emplace(h->shard, handoff_entry{*h});
            if (h->from == self.options_.self) from_here.push_back(h->shard);
          }
        }
      }
      self.handoffs_ = std::move(handoffs);
      self.read_ = true;
      (void)self.track_hosted_locked();  // announced below, with every shard asked about
    }
    // From R + 1: no change falls between the read and the watch.
    self.watch_from(r.header_revision + 1);
    self.announce({});
    self.ask_release(from_here);
  };
  store_->txn(std::move(t), detail::resume_on<txn_result>(weak_from_this(), strand_, done));
}

void cluster_placement::watch_from(revision start) {
  const std::uint64_t gen = ++watch_gen_;
  if (watch_) watch_->cancel();
  watch_ = store_->watch(key_range::prefix(cluster_prefix(options_.cluster) + "/"), start,
                         detail::resume_on<watch_batch>(
                             weak_from_this(), strand_,
                             [gen](cluster_placement& self, std::error_code ec, watch_batch b) {
                               if (gen != self.watch_gen_) return;
                               if (ec) {
                                 self.read();  // changes may be missing: read everything again
                                 return;
                               }
                               self.on_batch(b);
                             }));
}

void cluster_placement::on_batch(const watch_batch& batch) {
  const std::string& cluster = options_.cluster;
  const std::string members = members_prefix(cluster);
  const std::string allocs = alloc_prefix(cluster, options_.type);
  const std::string handoffs = handoff_prefix(cluster, options_.type);
  std::vector<shard_id> changed;
  std::vector<shard_id> from_here;  // hand-offs from this node that began
  bool members_changed = false;
  {
    std::lock_guard lock(mutex_);
    for (const auto& e : batch.events) {
      const auto& kv = e.kv;
      const bool put = e.type == watch_event::kind::put;
      if (kv.key.starts_with(members)) {
        if (put) {
          if (auto m = decode_member(cluster, kv.key, kv.value)) {
            members_[m->info.id] = {m->address, m->info.leaving};
            members_changed = true;
          }
        } else if (auto id = member_id_of(cluster, kv.key)) {
          members_changed |= members_.erase(*id) > 0;
        }
      } else if (kv.key.starts_with(allocs)) {
        if (put) {
          if (auto a = decode_allocation(cluster, options_.type, kv)) {
            allocations_[a->shard] = *a;
            changed.push_back(a->shard);
            if (track_hosted_ && !options_.proxy && a->owner == options_.self) {
              asked_.try_emplace(a->shard, no_home_yet{});
            }
          }
        } else if (auto shard = shard_of_alloc_key(cluster, options_.type, kv.key)) {
          allocations_.erase(*shard);
          changed.push_back(*shard);
        }
      } else if (kv.key.starts_with(handoffs)) {
        if (put) {
          if (auto h = decode_handoff(cluster, options_.type, kv)) {
            handoffs_[h->shard] = handoff_entry{*h};
            changed.push_back(h->shard);
            if (h->from == options_.self) from_here.push_back(h->shard);
          }
        } else if (auto shard = shard_of_handoff_key(cluster, options_.type, kv.key)) {
          handoffs_.erase(*shard);
          changed.push_back(*shard);
        }
      }
    }
    if (members_changed) index_addresses();
  }
  if (members_changed) {
    announce({});  // any shard's owner may have come or gone
  } else if (!changed.empty()) {
    announce(changed);
  }
  ask_release(from_here);
}

void cluster_placement::ask_release(const std::vector<shard_id>& shards) {
  if (shards.empty()) return;
  std::vector<shard_id> tell;
  std::vector<shard_id> free;
  home_listener listener;
  {
    std::lock_guard lock(mutex_);
    listener = listener_;
    for (shard_id shard : shards) {
      auto h = handoffs_.find(shard);
      if (h == handoffs_.end()) continue;
      if (listener && asked_.contains(shard)) {
        tell.push_back(shard);  // the region may run it: it answers with released()
      } else {
        // The region never asked (or none runs): it starts a shard only on a placed_here
        // answer, and from now on it gets none.
        h->second.asked = h->second.released = true;
        free.push_back(shard);
      }
    }
  }
  // Told even when the answer the region last had was no_home_yet too (a leaving node's).
  for (shard_id shard : tell) listener(shard);
  for (shard_id shard : free) report_stopped(shard);
}

void cluster_placement::report_stopped(shard_id shard) {
  coord::store_revision handoff = 0;
  {
    std::lock_guard lock(mutex_);
    auto h = handoffs_.find(shard);
    if (h == handoffs_.end() || !h->second.released || h->second.reporting || h->second.reported ||
        fenced()) {
      return;
    }
    h->second.reporting = true;
    handoff = h->second.value.revision;
  }
  store_->txn(report_stopped_txn(options_.cluster, options_.type, shard, handoff,
                                 options_.self.incarnation),
              detail::resume_on<txn_result>(
                  weak_from_this(), strand_,
                  [shard, handoff](cluster_placement& self, std::error_code ec, txn_result) {
                    std::lock_guard lock(self.mutex_);
                    auto h = self.handoffs_.find(shard);
                    if (h == self.handoffs_.end() || h->second.value.revision != handoff) return;
                    h->second.reporting = false;
                    // A failed compare: the hand-off ended meanwhile, and the watch says how.
                    h->second.reported = !ec;
                  }));
}

// -- finding homes ----------------------------------------------------------------------------

void cluster_placement::announce(const std::vector<shard_id>& shards) {
  std::vector<shard_id> changed;
  std::vector<shard_id> homeless;
  home_listener listener;
  {
    std::lock_guard lock(mutex_);
    auto recompute = [&](shard_id shard, shard_home& told) {
      shard_home now = home_locked(shard);
      if (std::holds_alternative<no_home_yet>(now)) homeless.push_back(shard);
      if (now != told) {
        told = std::move(now);
        changed.push_back(shard);
      }
    };
    if (shards.empty()) {
      for (auto& [shard, told] : asked_) recompute(shard, told);
    } else {
      for (shard_id shard : shards) {
        if (auto it = asked_.find(shard); it != asked_.end()) recompute(shard, it->second);
      }
    }
    listener = listener_;
  }
  if (listener) {
    for (shard_id shard : changed) listener(shard);
  }
  if (!stopped()) {
    for (shard_id shard : homeless) find_home(shard);
  }
}

void cluster_placement::find_home(shard_id shard) {
  shard_epoch raise_to = 0;
  {
    std::lock_guard lock(mutex_);
    if (stopped_ || !read_ || handoffs_.contains(shard)) return;  // a hand-off ends by itself
    auto it = allocations_.find(shard);
    if (it != allocations_.end() && it->second.owner == options_.self) {
      if (options_.proxy || !hosting_ || !raise_fence_) return;
      const shard_epoch epoch = it->second.mod_revision;
      auto& f = fences_[shard];
      if (f.epoch == epoch && f.state != fence_state::failed) return;  // raising, raised or lost
      f = {epoch, fence_state::raising};
      raise_to = epoch;
    } else if (it != allocations_.end() && members_.contains(it->second.owner)) {
      return;  // it has a home
    }
  }
  if (raise_to != 0) {
    raise_fence(shard, raise_to);
    return;
  }
  // No allocation, or its owner is gone: ask the coordinator, at most once per retry interval
  // (a coordinator that is not leading ignores the question; the tick repeats it).
  const time_point now = clock_->now();
  if (auto r = requested_.find(shard); r != requested_.end() && now - r->second < options_.retry) {
    return;
  }
  requested_[shard] = now;
  ask_(shard);
}

void cluster_placement::raise_fence(shard_id shard, shard_epoch epoch) {
  raise_fence_(
      shard, epoch,
      detail::resume_on<persistence::fence_raise>(
          weak_from_this(), strand_,
          [shard, epoch](cluster_placement& self, std::error_code ec, persistence::fence_raise v) {
            {
              std::lock_guard lock(self.mutex_);
              auto& f = self.fences_[shard];
              if (f.epoch != epoch) return;  // a newer allocation's raise replaced this one
              if (ec) {
                f.state = fence_state::failed;  // the tick tries again
                troupe::logger()->warn("placement {}: raising the fence of shard {} to {}: {}",
                                       self.options_.type, shard, epoch, ec.message());
              } else {
                // Superseded: a newer allocation exists; the watch will bring it.
                f.state = v == persistence::fence_raise::raised ? fence_state::raised
                                                                : fence_state::superseded;
              }
            }
            self.announce({shard});
          }));
}

void cluster_placement::tick() {
  tick_timer_ = clock_->schedule_after(options_.retry, [weak = weak_from_this(), strand = strand_] {
    boost::asio::post(strand, [weak] {
      auto self = weak.lock();
      if (!self || self->stopped() || self->tick_timer_ == 0) return;
      self->tick();
      {
        std::lock_guard lock(self->mutex_);
        const time_point now = self->clock_->now();
        self->end_flushes_locked([&](std::uint64_t token, const own_flush& f) {
          if (now < f.give_up) return false;
          // Messages this node sent before the flush may still be on their way (held by a node
          // that cannot pass them on yet): newer ones go out in the next round, and a node that
          // sees one of them refuses the older round from then on.
          self->next_round_locked(f.shard);
          troupe::logger()->warn(
              "placement {}: no answer from node {} to flush {} of shard {}; sending on",
              self->options_.type, f.node, token, f.shard);
          return true;
        });
      }
      // Homeless shards the region waits for: ask again, raise failed fences again.
      // Stopped reports that failed: write them again.
      std::vector<shard_id> homeless;
      std::vector<shard_id> unreported;
      {
        std::lock_guard lock(self->mutex_);
        for (const auto& [shard, told] : self->asked_) {
          if (std::holds_alternative<no_home_yet>(told)) homeless.push_back(shard);
        }
        for (const auto& [shard, h] : self->handoffs_) {
          if (h.released && !h.reported && !h.reporting) unreported.push_back(shard);
        }
      }
      for (shard_id shard : homeless) self->find_home(shard);
      for (shard_id shard : unreported) self->report_stopped(shard);
    });
  });
}

}  // namespace troupe::cluster
