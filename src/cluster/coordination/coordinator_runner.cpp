#include "cluster/coordination/coordinator_runner.hpp"

#include <troupe/cluster/errc.hpp>
#include <troupe/core/actor.hpp>

#include "cluster/coordination/coordination_keys.hpp"
#include "cluster/coordination/handoff_keys.hpp"
#include "cluster/coordination/load_keys.hpp"
#include "cluster/membership/members.hpp"
#include "cluster/strand_steps.hpp"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <map>
#include <stdexcept>
#include <utility>

namespace troupe::cluster {

namespace coord = sharding::coordination;

std::shared_ptr<coordinator_runner> coordinator_runner::start(
    std::shared_ptr<consensus_store> store, std::shared_ptr<troupe::clock> clock,
    coordinator_runner_options options, std::unique_ptr<coord::allocation_strategy> strategy,
    home_answer_sink answers) {
  if (!store || !clock || !strategy) {
    throw std::invalid_argument("coordinator_runner: store, clock and strategy are required");
  }
  check_type_name(options.type);
  if (options.self.incarnation <= 0 || options.self.node.empty()) {
    throw std::invalid_argument("coordinator_runner: self needs a node id and the node's lease");
  }
  auto runner = std::make_shared<coordinator_runner>(token{}, std::move(store), std::move(clock),
                                                     std::move(options), std::move(strategy),
                                                     std::move(answers));
  boost::asio::post(runner->strand_, [weak = runner->weak_from_this()] {
    if (auto self = weak.lock(); self && !self->stopped_) self->campaign();
  });
  return runner;
}

coordinator_runner::coordinator_runner(token, std::shared_ptr<consensus_store> store,
                                       std::shared_ptr<troupe::clock> clock,
                                       coordinator_runner_options options,
                                       std::unique_ptr<coord::allocation_strategy> strategy,
                                       home_answer_sink answers)
    : store_(std::move(store)),
      clock_(std::move(clock)),
      options_(std::move(options)),
      answers_(std::move(answers)),
      key_(coord_key(options_.cluster, options_.type, options_.self.incarnation)),
      strand_(boost::asio::make_strand(store_->executor())),
      coordinator_(options_.settings, std::move(strategy)) {}

coordinator_runner::~coordinator_runner() {
  stopped_ = true;
  if (election_watch_) election_watch_->cancel();
  if (state_watch_) state_watch_->cancel();
  if (tick_timer_ != 0) clock_->cancel(tick_timer_);
  for (timer_id t : retry_timers_) clock_->cancel(t);
}

template <class T, class F>
std::function<void(std::error_code, T)> coordinator_runner::on_strand(F f) {
  return detail::resume_on<T>(weak_from_this(), strand_, std::move(f));
}

template <class Step>
void coordinator_runner::after_retry(Step step) {
  detail::run_after(*clock_, options_.retry, weak_from_this(), strand_, retry_timers_,
                    std::move(step));
}

void coordinator_runner::request_home(coord::member_id requester, sharding::shard_id shard) {
  boost::asio::post(strand_, [weak = weak_from_this(), requester = std::move(requester), shard] {
    if (auto self = weak.lock(); self && !self->stopped_) {
      self->feed(coord::home_requested{requester, shard});
    }
  });
}

void coordinator_runner::request_rebalance() {
  boost::asio::post(strand_, [weak = weak_from_this()] {
    if (auto self = weak.lock(); self && !self->stopped_ && self->leading_) {
      self->feed(coord::rebalance_requested{});
    }
  });
}

void coordinator_runner::stop() {
  if (stopped_.exchange(true)) return;
  boost::asio::post(strand_, [self = shared_from_this()] { self->halt(); });
}

// -- election ---------------------------------------------------------------------------------

void coordinator_runner::campaign() {
  // etcd's Campaign: create our key under the lease if absent, else read it (a repeated campaign
  // after an unknown outcome finds the key it already made).
  txn_request t;
  t.compares.push_back(compare::create_revision_is(key_, 0));
  t.success.emplace_back(put_op{key_, options_.self.node, options_.self.incarnation});
  t.failure.emplace_back(range_op{key_range::single(key_)});
  store_->txn(std::move(t),
              on_strand<txn_result>([](coordinator_runner& self, std::error_code ec, txn_result r) {
                if (ec == errc::lease_not_found) {
                  self.lose();
                  return;
                }
                if (ec || (!r.succeeded && (r.ranges.empty() || r.ranges[0].empty()))) {
                  self.after_retry([](coordinator_runner& s) { s.campaign(); });
                  return;
                }
                self.my_revision_ =
                    r.succeeded ? r.header_revision : r.ranges[0][0].create_revision;
                self.campaigned_ = true;
                self.check_election();
              }));
}

void coordinator_runner::check_election() {
  if (lost_ || !campaigned_) return;
  if (checking_) {
    check_again_ = true;
    return;
  }
  checking_ = true;
  store_->range(
      key_range::prefix(coord_prefix(options_.cluster, options_.type)),
      on_strand<range_result>([](coordinator_runner& self, std::error_code ec, range_result r) {
        self.checking_ = false;
        if (self.lost_) return;  // a read or the watch saw our key go meanwhile
        if (ec) {
          self.after_retry([](coordinator_runner& s) { s.check_election(); });
          return;
        }
        if (self.check_again_) {
          self.check_again_ = false;
          self.check_election();
          return;
        }
        const revision mine = self.my_revision_;
        // Our own key must still be there with the revision we campaigned with: waiting for the
        // keys before ours can outlast our lease (Jepsen's finding against etcd 3.4's Campaign).
        bool own = false;
        const key_value* older = nullptr;  // the newest key older than ours
        for (const auto& kv : r.kvs) {
          if (kv.key == self.key_) {
            own = kv.create_revision == mine;
          } else if (kv.create_revision < mine &&
                     (older == nullptr || kv.create_revision > older->create_revision)) {
            older = &kv;
          }
        }
        if (!own) {
          self.lose();
          return;
        }
        if (older == nullptr) {
          self.waiting_on_.clear();
          if (!self.leading_) self.lead();
        } else {
          self.waiting_on_ = older->key;
          if (self.leading_) self.depose();
        }
        self.watch_election(r.header_revision + 1);
      }));
}

void coordinator_runner::watch_election(revision start) {
  const std::uint64_t gen = ++election_gen_;
  if (election_watch_) election_watch_->cancel();
  election_watch_ = store_->watch(
      key_range::prefix(coord_prefix(options_.cluster, options_.type)), start,
      on_strand<watch_batch>([gen](coordinator_runner& self, std::error_code ec, watch_batch b) {
        if (gen != self.election_gen_) return;
        if (ec) {
          // Lost or compacted: we may have missed a deletion; read the election again.
          self.check_election();
          return;
        }
        self.on_election_batch(b);
      }));
}

void coordinator_runner::on_election_batch(const watch_batch& batch) {
  for (const auto& e : batch.events) {
    if (e.type != watch_event::kind::del) continue;
    if (e.kv.key == key_) {
      lose();
      return;
    }
    if (!waiting_on_.empty() && e.kv.key == waiting_on_) {
      check_election();
      return;
    }
  }
}

void coordinator_runner::lead() {
  leading_ = true;
  ++term_;
  if (options_.metrics) options_.metrics->leading(options_.type, true);
  troupe::logger()->info("coordinator {}: {} leads (election key revision {})", options_.type,
                         options_.self.node, my_revision_.load());
  if (tick_timer_ == 0) tick();
  feed(coord::elected{my_revision_});
}

void coordinator_runner::depose() {
  leading_ = false;
  ++term_;
  ++state_gen_;
  handoff_began_.clear();
  if (options_.metrics) options_.metrics->leading(options_.type, false);
  if (state_watch_) state_watch_->cancel();
  state_watch_.reset();
  feed(coord::deposed{});
}

void coordinator_runner::lose() {
  troupe::logger()->info("coordinator {}: {} lost its election key", options_.type,
                         options_.self.node);
  lost_ = true;
  if (leading_) depose();
  ++election_gen_;
  if (election_watch_) election_watch_->cancel();
  election_watch_.reset();
  if (tick_timer_ != 0) clock_->cancel(tick_timer_);
  tick_timer_ = 0;
}

// -- feeding and carrying out -----------------------------------------------------------------

void coordinator_runner::feed(const coord::coordinator_event& event) {
  for (const auto& d : coordinator_.handle(event)) carry_out(d);
  hosting_regions_.store(coordinator_.hosting_regions());
  if (options_.metrics) {
    const auto rounds = coordinator_.rebalance_rounds();
    options_.metrics->rebalance_rounds(options_.type, rounds - rounds_recorded_);
    rounds_recorded_ = rounds;
  }
}

void coordinator_runner::carry_out(const coord::coordinator_decision& decision) {
  if (std::holds_alternative<coord::read_state>(decision)) {
    read_state(term_);
  } else if (const auto* w = std::get_if<coord::write_allocations>(&decision)) {
    write(w->id, allocation_txn(options_.cluster, options_.type, key_, *w), recorder_of(decision));
  } else if (const auto* a = std::get_if<coord::answer_home>(&decision)) {
    if (answers_) answers_(*a);
  } else if (const auto* b = std::get_if<coord::begin_handoffs>(&decision)) {
    troupe::logger()->info("coordinator {}: handing off {} shard(s), the first {} from {} to {}",
                           options_.type, b->shards.size(), b->shards.front().shard,
                           b->shards.front().from.node, b->shards.front().to.node);
    write(b->id,
          begin_handoffs_txn(options_.cluster, options_.type, key_, options_.self.incarnation, *b),
          recorder_of(decision));
  } else if (const auto* c = std::get_if<coord::commit_handoff>(&decision)) {
    write(c->id, commit_handoff_txn(options_.cluster, options_.type, key_, *c),
          recorder_of(decision));
  } else if (const auto* x = std::get_if<coord::abort_handoff>(&decision)) {
    troupe::logger()->warn("coordinator {}: aborting the hand-off of shard {}: {}", options_.type,
                           x->shard, x->reason);
    write(x->id, abort_handoff_txn(options_.cluster, options_.type, key_, *x),
          recorder_of(decision));
  } else if (const auto* e = std::get_if<coord::strategy_error>(&decision)) {
    troupe::logger()->warn("coordinator {}: shard {}: {}", options_.type, e->shard, e->message);
  }
}

void coordinator_runner::read_state(std::uint64_t term) {
  // Members, regions and allocations in one transaction: one revision for all of them. And our
  // own election key at that revision: a write that failed on the election compare must end the
  // term here, or the same decision would be written, and fail, again and again.
  txn_request t;
  t.success.emplace_back(range_op{key_range::prefix(members_prefix(options_.cluster))});
  t.success.emplace_back(
      range_op{key_range::prefix(regions_prefix(options_.cluster, options_.type))});
  t.success.emplace_back(
      range_op{key_range::prefix(alloc_prefix(options_.cluster, options_.type))});
  t.success.emplace_back(range_op{key_range::single(key_)});
  t.success.emplace_back(
      range_op{key_range::prefix(handoff_prefix(options_.cluster, options_.type))});
  t.success.emplace_back(
      range_op{key_range::prefix(stopped_prefix(options_.cluster, options_.type))});
  t.success.emplace_back(range_op{key_range::prefix(load_prefix(options_.cluster, options_.type))});
  auto done = [term](coordinator_runner& self, std::error_code ec, txn_result r) {
    if (term != self.term_) return;
    if (ec || r.ranges.size() != 7) {
      self.after_retry([term](coordinator_runner& s) {
        if (term == s.term_) s.read_state(term);
      });
      return;
    }
    if (r.ranges[3].empty() || r.ranges[3][0].create_revision != self.my_revision_) {
      self.lose();
      return;
    }
    self.on_state(term, r.header_revision, std::move(r.ranges));
  };
  store_->txn(std::move(t), on_strand<txn_result>(std::move(done)));
}

void coordinator_runner::on_state(std::uint64_t term, revision at,
                                  std::vector<std::vector<key_value>> ranges) {
  coord::state_read s;
  s.revision = at;
  for (const auto& kv : ranges[0]) {
    if (auto m = decode_member(options_.cluster, kv.key, kv.value)) s.members.push_back(m->info);
  }
  for (const auto& kv : ranges[1]) {
    if (auto g = decode_region(options_.cluster, options_.type, kv.key, kv.value)) {
      s.regions.push_back(std::move(*g));
    }
  }
  for (const auto& kv : ranges[2]) {
    if (auto a = decode_allocation(options_.cluster, options_.type, kv)) {
      s.allocations.push_back(std::move(*a));
    }
  }
  std::map<sharding::shard_id, coord::store_revision> stopped;  // shard -> the hand-off answered
  for (const auto& kv : ranges[5]) {
    if (auto r = decode_stopped(options_.cluster, options_.type, kv)) {
      stopped[r->shard] = r->handoff_revision;
    }
  }
  for (const auto& kv : ranges[4]) {
    if (auto h = decode_handoff(options_.cluster, options_.type, kv)) {
      auto it = stopped.find(h->shard);
      h->stopped = it != stopped.end() && it->second == h->revision;
      s.handoffs.push_back(std::move(*h));
    }
  }
  for (const auto& kv : ranges[6]) {
    if (auto l = decode_load_report(options_.cluster, options_.type, kv.key, kv.value)) {
      s.loads.push_back(std::move(*l));
    }
  }
  ++state_reads_;
  // The watch starts at R + 1 before anything is fed, so no change falls between the read and it.
  watch_state(at + 1);
  if (term == term_) feed(s);
}

void coordinator_runner::watch_state(revision start) {
  const std::uint64_t gen = ++state_gen_;
  if (state_watch_) state_watch_->cancel();
  // One watch on P/ keeps members, regions and allocations in one revision order.
  state_watch_ = store_->watch(
      key_range::prefix(cluster_prefix(options_.cluster) + "/"), start,
      on_strand<watch_batch>([gen](coordinator_runner& self, std::error_code ec, watch_batch b) {
        if (gen != self.state_gen_) return;
        if (ec) {
          // Changes may be missing: start the term again, which reads everything afresh, if the
          // election still holds.
          if (self.leading_) self.depose();
          self.check_election();
          return;
        }
        self.on_state_batch(b);
      }));
}

void coordinator_runner::on_state_batch(const watch_batch& batch) {
  const std::string& cluster = options_.cluster;
  const std::string& type = options_.type;
  const std::string members = members_prefix(cluster);
  const std::string regions = regions_prefix(cluster, type);
  const std::string allocs = alloc_prefix(cluster, type);
  const std::string handoffs = handoff_prefix(cluster, type);
  const std::string stops = stopped_prefix(cluster, type);
  const std::string loads = load_prefix(cluster, type);
  const std::uint64_t gen = state_gen_;
  for (const auto& e : batch.events) {
    if (gen != state_gen_) return;  // a change deposed us meanwhile
    const auto& kv = e.kv;
    const bool put = e.type == watch_event::kind::put;
    if (kv.key.starts_with(members)) {
      if (put) {
        if (auto m = decode_member(cluster, kv.key, kv.value)) {
          feed(coord::member_put{kv.mod_revision, m->info});
        }
      } else if (auto id = member_id_of(cluster, kv.key)) {
        feed(coord::member_deleted{kv.mod_revision, *id});
      }
    } else if (kv.key.starts_with(regions)) {
      if (put) {
        if (auto g = decode_region(cluster, type, kv.key, kv.value)) {
          feed(coord::region_put{kv.mod_revision, *g});
        }
      } else if (auto id = region_id_of(cluster, type, kv.key)) {
        feed(coord::region_deleted{kv.mod_revision, *id});
      }
    } else if (kv.key.starts_with(allocs)) {
      if (put) {
        if (auto a = decode_allocation(cluster, type, kv)) feed(coord::allocation_put{*a});
      } else if (auto shard = shard_of_alloc_key(cluster, type, kv.key)) {
        feed(coord::allocation_deleted{kv.mod_revision, *shard});
      }
    } else if (kv.key.starts_with(handoffs)) {
      if (put) {
        if (auto h = decode_handoff(cluster, type, kv)) feed(coord::handoff_put{*h});
      } else if (auto shard = shard_of_handoff_key(cluster, type, kv.key)) {
        feed(coord::handoff_deleted{kv.mod_revision, *shard});
      }
    } else if (put && kv.key.starts_with(stops)) {
      if (auto r = decode_stopped(cluster, type, kv)) feed(*r);
    } else if (kv.key.starts_with(loads)) {
      if (put) {
        if (auto l = decode_load_report(cluster, type, kv.key, kv.value)) {
          feed(coord::load_reported{std::move(*l)});
        }
      } else if (auto id = load_region_of(cluster, type, kv.key)) {
        feed(coord::load_reported{{*id, {}}});
      }
    }
  }
}

void coordinator_runner::write(coord::write_id id, txn_request t,
                               std::function<void(coordinator_runner&)> committed) {
  const std::uint64_t term = term_;
  auto done = [term, id, committed = std::move(committed)](coordinator_runner& self,
                                                           std::error_code ec, txn_result r) {
    // An outcome from an earlier term is the new term's read's business.
    if (term != self.term_) return;
    if (ec) {
      // Timed out or cut off: it may still commit.
      self.feed(coord::write_unknown{id});
    } else if (!r.succeeded) {
      self.feed(coord::write_failed{id});
    } else {
      if (committed) committed(self);
      self.feed(coord::write_committed{id, r.header_revision});
    }
  };
  store_->txn(std::move(t), on_strand<txn_result>(std::move(done)));
}

std::function<void(coordinator_runner&)> coordinator_runner::recorder_of(
    const coord::coordinator_decision& decision) const {
  if (!options_.metrics) return {};
  return [decision](coordinator_runner& self) { self.record_commit(decision); };
}

void coordinator_runner::record_commit(const coord::coordinator_decision& decision) {
  auto* m = options_.metrics.get();
  const auto& type = options_.type;
  if (const auto* w = std::get_if<coord::write_allocations>(&decision)) {
    m->allocated(type, w->shards.size());
  } else if (const auto* b = std::get_if<coord::begin_handoffs>(&decision)) {
    m->handoffs(type, "begun", b->shards.size());
    for (const auto& h : b->shards) handoff_began_[h.shard] = clock_->now();
  } else if (const auto* c = std::get_if<coord::commit_handoff>(&decision)) {
    m->handoffs(type, "completed", 1);
    if (auto it = handoff_began_.find(c->shard); it != handoff_began_.end()) {
      m->handoff_took(type, clock_->now() - it->second);
      handoff_began_.erase(it);
    }
  } else if (const auto* x = std::get_if<coord::abort_handoff>(&decision)) {
    m->handoffs(type, "aborted", 1);
    handoff_began_.erase(x->shard);
  }
}

void coordinator_runner::tick() {
  tick_timer_ =
      clock_->schedule_after(options_.tick_interval, [weak = weak_from_this(), strand = strand_] {
        boost::asio::post(strand, [weak] {
          auto self = weak.lock();
          if (!self || self->stopped_ || self->tick_timer_ == 0) return;
          self->tick();
          if (self->leading_) self->feed(coord::tick{self->clock_->now()});
        });
      });
}

void coordinator_runner::halt() {
  hosting_regions_ = 0;
  ++election_gen_;
  ++state_gen_;
  if (election_watch_) election_watch_->cancel();
  if (state_watch_) state_watch_->cancel();
  election_watch_.reset();
  state_watch_.reset();
  if (tick_timer_ != 0) clock_->cancel(tick_timer_);
  tick_timer_ = 0;
  for (timer_id t : retry_timers_) clock_->cancel(t);
  retry_timers_.clear();
  leading_ = false;
  // Resign: delete our own key, so the next candidate need not wait for our lease; only while it
  // carries our lease (a key under our lease can only be ours, also when the campaign's answer is
  // still on its way). The lease itself is the node's, not ours to revoke.
  if (!lost_) {
    txn_request t;
    t.compares.push_back(
        {key_, compare::target::lease, compare::relation::equal, options_.self.incarnation, {}});
    t.success.emplace_back(delete_op{key_range::single(key_)});
    store_->txn(std::move(t), [](std::error_code, txn_result) {});
  }
}

}  // namespace troupe::cluster
