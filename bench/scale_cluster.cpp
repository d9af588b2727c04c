// The scale model's cluster: one coordinator and N entity-less nodes on the in-process etcd, all
// on this thread. The coordinator's decisions become the transactions coordinator_runner sends
// (allocation_txn, begin_handoffs_txn, commit_handoff_txn, abort_handoff_txn); the store's
// changes come back through one watch of P/, decoded as the runner decodes them.
#include "scale_cluster.hpp"

#include "cluster/coordination/coordination_keys.hpp"
#include "cluster/coordination/handoff_keys.hpp"
#include "cluster/membership/members.hpp"

#include <algorithm>
#include <ctime>
#include <stdexcept>
#include <utility>

namespace troupe::bench::scale {

namespace {

using cluster::consensus_store;
using cluster::key_range;
using cluster::txn_request;
using cluster::txn_result;

constexpr std::string_view cluster_name = "scale";
constexpr std::string_view type_name = "model";
// Leases outlive the run: keep-alives write nothing and are not what the model measures.
constexpr auto lease_ttl = std::chrono::hours(24 * 365);
using steady = std::chrono::steady_clock;

double ms_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

std::int64_t key_bytes(const key_range& r) { return static_cast<std::int64_t>(r.key.size()); }

}  // namespace

/// Forwards to the store and counts what is written.
class sim_cluster::counting_store final : public consensus_store {
 public:
  counting_store(std::shared_ptr<consensus_store> inner, store_tally& tally)
      : inner_(std::move(inner)), tally_(tally) {}

  void range(key_range r, handler<cluster::range_result> done) override {
    inner_->range(std::move(r), std::move(done));
  }

  void txn(txn_request request, handler<txn_result> done) override {
    ++tally_.txns;
    auto ops = std::make_shared<txn_request>(request);
    inner_->txn(std::move(request),
                [this, ops, done = std::move(done)](std::error_code ec, txn_result r) {
                  if (!ec) count(r.succeeded ? ops->success : ops->failure);
                  done(ec, std::move(r));
                });
  }

  void grant_lease(duration ttl, handler<cluster::lease_grant> done) override {
    inner_->grant_lease(ttl, std::move(done));
  }
  void keep_alive(cluster::lease_id lease, handler<duration> done) override {
    inner_->keep_alive(lease, std::move(done));
  }
  void revoke_lease(cluster::lease_id lease, handler<cluster::revision> done) override {
    ++tally_.revokes;
    inner_->revoke_lease(lease, std::move(done));
  }
  std::unique_ptr<cluster::watch_handle> watch(key_range r, cluster::revision start,
                                               watch_handler on_batch) override {
    return inner_->watch(std::move(r), start, std::move(on_batch));
  }
  [[nodiscard]] boost::asio::any_io_executor executor() const override {
    return inner_->executor();
  }

 private:
  void count(const std::vector<cluster::txn_op>& ops) {
    for (const auto& op : ops) {
      if (const auto* p = std::get_if<cluster::put_op>(&op)) {
        ++tally_.puts;
        tally_.bytes += static_cast<std::int64_t>(p->key.size() + p->value.size());
      } else if (const auto* d = std::get_if<cluster::delete_op>(&op)) {
        ++tally_.deletes;
        tally_.bytes += key_bytes(d->range);
      }
    }
  }

  std::shared_ptr<consensus_store> inner_;
  store_tally& tally_;
};

sim_cluster::sim_cluster(cluster_settings settings)
    : settings_(settings),
      clock_(std::make_shared<manual_clock>()),
      start_(clock_->now()),
      coordinator_(coord::coordinator_settings{.role = {},
                                               .rebalance_interval = settings.rebalance_interval,
                                               .handoff_timeout = std::chrono::seconds(10)},
                   coord::make_least_shards_strategy(settings.limits)),
      owner_of_(settings.shards, -1) {
  cluster::in_process_store_options options;
  // The watch keeps up (it is drained after every request), so a short history would do; a
  // long one costs only memory.
  options.history = 1'000'000;
  store_ = std::make_shared<counting_store>(
      cluster::make_in_process_store(clock_, io_.get_executor(), options), tally_);
}

sim_cluster::~sim_cluster() {
  if (watch_) watch_->cancel();
}

double sim_cluster::sim_seconds() const {
  return std::chrono::duration<double>(clock_->now() - start_).count();
}

coord::member_id sim_cluster::member_of(std::size_t n) const {
  return {nodes_.at(n).id, nodes_.at(n).lease};
}

std::string sim_cluster::address_of(std::size_t n) const {
  return "10.0." + std::to_string(n / 250) + "." + std::to_string(n % 250 + 1) + ":2552";
}

std::int64_t sim_cluster::grant() {
  std::int64_t id = -1;
  store_->grant_lease(lease_ttl, [&](std::error_code ec, cluster::lease_grant g) {
    if (ec) throw std::runtime_error("grant_lease failed: " + ec.message());
    id = g.id;
  });
  while (id < 0) {
    io_.restart();
    io_.run_one();
  }
  return id;
}

std::size_t sim_cluster::join(const std::string& app_version) {
  const std::size_t n = nodes_.size();
  char name[32];
  std::snprintf(name, sizeof name, "node-%05zu", n);
  nodes_.push_back(node{name, grant(), app_version});
  by_id_[name] = n;
  cluster::member_record record{{member_of(n), {}, false, app_version}, address_of(n)};
  auto report = [this](std::error_code ec, cluster::revision) {
    if (ec) ++troubles_;
  };
  cluster::register_member(*store_, cluster_name, record, report);
  cluster::register_region(*store_, cluster_name, type_name, {member_of(n), false}, report);
  return n;
}

void sim_cluster::leave(std::size_t n) {
  auto& nd = nodes_.at(n);
  nd.leaving = true;
  cluster::member_record record{{member_of(n), {}, true, nd.app_version}, address_of(n)};
  cluster::update_member(*store_, cluster_name, record, [this, n](std::error_code ec, auto) {
    if (ec) ++troubles_;
    auto& left = nodes_.at(n);
    if (left.owned == 0 && !left.revoking) {
      left.revoking = true;
      store_->revoke_lease(left.lease,
                           [this, n](std::error_code, auto) { nodes_.at(n).gone = true; });
    }
  });
}

cycle sim_cluster::bootstrap() {
  coordinator_lease_ = grant();
  own_key_ = cluster::coord_key(cluster_name, type_name, coordinator_lease_);
  txn_request t;
  t.compares.push_back(cluster::compare::missing(own_key_));
  t.success.emplace_back(cluster::put_op{own_key_, "coordinator", coordinator_lease_});
  cluster::revision created = 0;
  store_->txn(std::move(t), [&](std::error_code ec, txn_result r) {
    if (ec || !r.succeeded) throw std::runtime_error("the election key could not be written");
    created = r.header_revision;
  });
  while (created == 0) {
    io_.restart();
    io_.run_one();
  }
  cycle c;
  feed(coord::elected{created}, c, true);
  // The regions ask while the coordinator reads: the read's reconcile allocates them in batches.
  for (sharding::shard_id s = 0; s < settings_.shards; ++s) {
    feed(coord::home_requested{member_of(0), s}, c, false);
  }
  pump_into(c);
  return c;
}

cycle sim_cluster::settle() {
  cycle c;
  pump_into(c);
  return c;
}

cycle sim_cluster::tick() {
  clock_->advance(settings_.rebalance_interval);
  const auto rounds = coordinator_.rebalance_rounds();
  cycle c;
  feed(coord::tick{clock_->now()}, c, true);
  pump_into(c);
  c.round = coordinator_.rebalance_rounds() != rounds;
  return c;
}

void sim_cluster::pump_into(cycle& c) {
  for (;;) {
    io_.restart();
    const auto ran = io_.poll();
    if (ran == 0 && queue_.empty()) return;
    while (!queue_.empty()) {
      auto event = std::move(queue_.front());
      queue_.pop_front();
      feed(event, c, false);
    }
  }
}

void sim_cluster::feed(const coord::coordinator_event& event, cycle& c, bool stimulus) {
  const auto cpu0 = thread_cpu_ms();
  const auto t0 = steady::now();
  auto decisions = coordinator_.handle(event);
  const auto ms = ms_between(t0, steady::now());
  c.thread_cpu_ms += thread_cpu_ms() - cpu0;
  c.cpu_ms += ms;
  c.max_call_ms = std::max(c.max_call_ms, ms);
  if (stimulus) c.plan_ms = ms;
  if (const auto* done = std::get_if<coord::write_committed>(&event)) {
    if (auto it = commits_.find(done->id); it != commits_.end()) {
      if (it->second) ++c.moved;
      commits_.erase(it);
    }
  }
  carry_out(decisions);
}

void sim_cluster::carry_out(const std::vector<coord::coordinator_decision>& decisions) {
  for (const auto& d : decisions) {
    if (std::holds_alternative<coord::read_state>(d)) {
      read_state();
    } else if (const auto* w = std::get_if<coord::write_allocations>(&d)) {
      write(w->id, cluster::allocation_txn(cluster_name, type_name, own_key_, *w), false);
    } else if (const auto* b = std::get_if<coord::begin_handoffs>(&d)) {
      write(b->id,
            cluster::begin_handoffs_txn(cluster_name, type_name, own_key_, coordinator_lease_, *b),
            false);
    } else if (const auto* m = std::get_if<coord::commit_handoff>(&d)) {
      write(m->id, cluster::commit_handoff_txn(cluster_name, type_name, own_key_, *m), true);
    } else if (const auto* a = std::get_if<coord::abort_handoff>(&d)) {
      ++troubles_;
      write(a->id, cluster::abort_handoff_txn(cluster_name, type_name, own_key_, *a), false);
    } else if (std::holds_alternative<coord::strategy_error>(d)) {
      ++troubles_;
    }
    // answer_home goes to the asking region, which hosts no entity here.
  }
}

void sim_cluster::write(coord::write_id id, txn_request t, bool is_commit) {
  commits_[id] = is_commit;
  store_->txn(std::move(t), [this, id](std::error_code ec, txn_result r) {
    if (ec) {
      queue_.emplace_back(coord::write_unknown{id});
    } else if (r.succeeded) {
      queue_.emplace_back(coord::write_committed{id, r.header_revision});
    } else {
      queue_.emplace_back(coord::write_failed{id});
    }
  });
}

void sim_cluster::read_state() {
  txn_request t;
  for (const auto& prefix :
       {cluster::members_prefix(cluster_name), cluster::regions_prefix(cluster_name, type_name),
        cluster::alloc_prefix(cluster_name, type_name),
        cluster::handoff_prefix(cluster_name, type_name),
        cluster::stopped_prefix(cluster_name, type_name)}) {
    t.success.emplace_back(cluster::range_op{key_range::prefix(prefix)});
  }
  store_->txn(std::move(t), [this](std::error_code ec, txn_result r) {
    if (ec || r.ranges.size() != 5) throw std::runtime_error("the state read failed");
    coord::state_read s;
    s.revision = r.header_revision;
    for (const auto& kv : r.ranges[0]) {
      if (auto m = cluster::decode_member(cluster_name, kv.key, kv.value)) {
        s.members.push_back(m->info);
      }
    }
    for (const auto& kv : r.ranges[1]) {
      if (auto g = cluster::decode_region(cluster_name, type_name, kv.key, kv.value)) {
        s.regions.push_back(*g);
      }
    }
    for (const auto& kv : r.ranges[2]) {
      if (auto a = cluster::decode_allocation(cluster_name, type_name, kv)) {
        s.allocations.push_back(*a);
      }
    }
    std::map<sharding::shard_id, coord::store_revision> stopped;
    for (const auto& kv : r.ranges[4]) {
      if (auto st = cluster::decode_stopped(cluster_name, type_name, kv)) {
        stopped[st->shard] = st->handoff_revision;
      }
    }
    for (const auto& kv : r.ranges[3]) {
      if (auto h = cluster::decode_handoff(cluster_name, type_name, kv)) {
        auto it = stopped.find(h->shard);
        h->stopped = it != stopped.end() && it->second == h->revision;
        s.handoffs.push_back(*h);
      }
    }
    if (!watch_) {
      watch_ =
          store_->watch(key_range::prefix(cluster::cluster_prefix(cluster_name) + "/"),
                        r.header_revision + 1, [this](std::error_code wec, cluster::watch_batch b) {
                          if (wec) throw std::runtime_error("the watch ended: " + wec.message());
                          on_watch(b);
                        });
    }
    queue_.emplace_back(std::move(s));
  });
}

void sim_cluster::on_watch(const cluster::watch_batch& batch) {
  const auto members = cluster::members_prefix(cluster_name);
  const auto regions = cluster::regions_prefix(cluster_name, type_name);
  const auto allocs = cluster::alloc_prefix(cluster_name, type_name);
  const auto handoffs = cluster::handoff_prefix(cluster_name, type_name);
  const auto stops = cluster::stopped_prefix(cluster_name, type_name);
  for (const auto& e : batch.events) {
    const auto& kv = e.kv;
    ++tally_.watch_events;
    tally_.watch_bytes += static_cast<std::int64_t>(kv.key.size() + kv.value.size());
    const bool put = e.type == cluster::watch_event::kind::put;
    // What the coordinator's runner feeds (coordinator_runner::on_state_batch).
    if (kv.key.starts_with(members)) {
      if (put) {
        if (auto m = cluster::decode_member(cluster_name, kv.key, kv.value)) {
          queue_.emplace_back(coord::member_put{kv.mod_revision, m->info});
        }
      } else if (auto id = cluster::member_id_of(cluster_name, kv.key)) {
        queue_.emplace_back(coord::member_deleted{kv.mod_revision, *id});
      }
    } else if (kv.key.starts_with(regions)) {
      if (put) {
        if (auto g = cluster::decode_region(cluster_name, type_name, kv.key, kv.value)) {
          queue_.emplace_back(coord::region_put{kv.mod_revision, *g});
        }
      } else if (auto id = cluster::region_id_of(cluster_name, type_name, kv.key)) {
        queue_.emplace_back(coord::region_deleted{kv.mod_revision, *id});
      }
    } else if (kv.key.starts_with(allocs)) {
      if (!put) continue;  // never deleted in this model
      auto a = cluster::decode_allocation(cluster_name, type_name, kv);
      if (!a) continue;
      // What the nodes see: the owner of each shard; a leaving node goes once it owns none.
      auto& owner = owner_of_.at(a->shard);
      if (owner >= 0) {
        auto& old = nodes_.at(static_cast<std::size_t>(owner));
        if (--old.owned == 0 && old.leaving && !old.revoking) {
          old.revoking = true;
          const auto n = static_cast<std::size_t>(owner);
          store_->revoke_lease(old.lease,
                               [this, n](std::error_code, auto) { nodes_.at(n).gone = true; });
        }
      }
      const auto to = by_id_.at(a->owner.node);
      owner = static_cast<std::int64_t>(to);
      ++nodes_.at(to).owned;
      queue_.emplace_back(coord::allocation_put{*a});
    } else if (kv.key.starts_with(handoffs)) {
      if (put) {
        auto h = cluster::decode_handoff(cluster_name, type_name, kv);
        if (!h) continue;
        queue_.emplace_back(coord::handoff_put{*h});
        // The old owner stops the shard (no entities: at once) and reports it, as its
        // placement does (cluster_placement's report_stopped_txn).
        const auto& from = nodes_.at(by_id_.at(h->from.node));
        if (!from.gone) {
          store_->txn(cluster::report_stopped_txn(cluster_name, type_name, h->shard, h->revision,
                                                  from.lease),
                      [this](std::error_code ec, txn_result r) {
                        if (ec || !r.succeeded) ++troubles_;
                      });
        }
      } else if (auto shard = cluster::shard_of_handoff_key(cluster_name, type_name, kv.key)) {
        queue_.emplace_back(coord::handoff_deleted{kv.mod_revision, *shard});
      }
    } else if (put && kv.key.starts_with(stops)) {
      if (auto r = cluster::decode_stopped(cluster_name, type_name, kv)) queue_.emplace_back(*r);
    }
  }
}

std::vector<std::size_t> sim_cluster::live_nodes() const {
  std::vector<std::size_t> out;
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    if (!nodes_[n].gone) out.push_back(n);
  }
  return out;
}

std::size_t sim_cluster::homeless_shards() const {
  return static_cast<std::size_t>(std::count_if(owner_of_.begin(), owner_of_.end(), [&](auto o) {
    return o < 0 || nodes_.at(static_cast<std::size_t>(o)).gone;
  }));
}

bool sim_cluster::moving() const {
  return !coordinator_.handoffs().empty() || !coordinator_.shards_in_flight().empty();
}

}  // namespace troupe::bench::scale
