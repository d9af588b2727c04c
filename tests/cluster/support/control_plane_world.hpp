#pragma once
// A deterministic simulation of the cluster's control plane: N nodes, each running the real lease
// keeper, coordinator runner and placement of one sharded type, over the in-process model of etcd
// and one memory journal, all on one manual clock in one thread. A seed decides every fault:
// nodes cut off from etcd (both ways, or only its answers) and healed, paused past their lease and
// resumed, crashed and restarted as new incarnations (which also makes joins and hand-offs),
// graceful leaves, partitions between nodes, home requests delayed or lost, slow journal writes,
// and rebalance requests. A stand-in region acts for a shard while the placement says it is here
// and the node's lease stands, writing events to the shard's journal at the allocation's epoch.
// docs/simulation.md has more.
//
// Checked after every round of handlers: no two running, unfenced nodes act for one shard, and no
// write of an older epoch lands once a newer owner acts; at the end, every acknowledged event is
// in the journal, with contiguous sequence numbers and the epochs written; once the faults stop,
// every shard has exactly one home that every node agrees on within a bound. The
// trace hash folds every fault, every change of who acts for a shard and every accepted write, so
// one seed run twice gives one hash.
#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/persistence/memory_plugin.hpp>
#include <troupe/persistence/plugin.hpp>
#include <troupe/sharding/coordination/allocation_strategy.hpp>

#include "cluster/coordination/coordinator_runner.hpp"
#include "cluster/membership/lease_keeper.hpp"
#include "cluster/membership/members.hpp"
#include "cluster/placement/cluster_placement.hpp"
#include "cluster/support/pausable_clock.hpp"

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace troupe::cluster::sim {

using namespace std::chrono_literals;
namespace coord = sharding::coordination;

struct world_options {
  std::uint64_t seed = 1;
  /// How many nodes; 0: the seed decides, 3 to 7.
  int nodes = 0;
  int shards = 12;
  /// How long faults are injected; then everything heals and the run must settle.
  duration faulty = 60s;
  /// The liveness bound: after the faults stop, every shard has one agreed home by then.
  duration settle = 40s;
  /// Plants the bug of a node that never fences itself on its lease deadline.
  bool plant_no_self_fence = false;
  /// Plants the bug of a new owner that acts before the shard's store fence stands.
  bool plant_skip_shard_fence = false;
  /// Prints every traced event (a replay's story).
  bool print_trace = false;
};

struct world_result {
  /// Empty when every check held; otherwise what failed, when, and on which shard or node.
  std::string failure;
  std::uint64_t trace_hash = 0;
  int crashes = 0, pauses = 0, cuts = 0, deafs = 0, partitions = 0, leaves = 0, rebalances = 0,
      lost_requests = 0;
  int activations = 0;  // a node began acting for a shard
  int writes = 0;       // events the journal acknowledged

  /// Adds another run's counts (a campaign's summary); the failure and hash stay.
  world_result& operator+=(const world_result& r) {
    crashes += r.crashes;
    pauses += r.pauses;
    cuts += r.cuts;
    deafs += r.deafs;
    partitions += r.partitions;
    leaves += r.leaves;
    rebalances += r.rebalances;
    lost_requests += r.lost_requests;
    activations += r.activations;
    writes += r.writes;
    return *this;
  }
};

class control_plane_world {
 public:
  explicit control_plane_world(world_options o) : options_(o), rng_(o.seed) {
    if (options_.nodes <= 0) options_.nodes = 3 + static_cast<int>(o.seed % 5);
    for (int i = 0; i < options_.nodes; ++i) {
      nodes_.push_back(std::make_unique<node>());
      nodes_.back()->name = "n" + std::to_string(i);
    }
  }

  /// Takes the world apart in an order that leaves no callback holding a destroyed executor:
  /// every node crashed, every timer cancelled, every io_context run empty, then the objects.
  ~control_plane_world() {
    for (auto& n : nodes_) crash(*n, false);
    etcd_clock_->cancel_all();
    for (auto& r : graveyard_) r.clock->cancel_all();
    for (int round = 0; round < 100; ++round) {
      std::size_t ran = 0;
      for (auto& io : ios_) {
        io.restart();
        ran += io.poll();
      }
      if (ran == 0) break;
    }
    graveyard_.clear();
  }

  world_result run() {
    for (auto& n : nodes_) start(*n);
    const time_point faults_end = clock_->now() + options_.faulty;
    while (ok() && clock_->now() < faults_end) {
      lifecycles();
      inject_faults();
      step(100ms);
    }
    heal_all();
    const time_point give_up = clock_->now() + options_.settle;
    while (ok() && !settled()) {
      if (clock_->now() >= give_up) {
        fail("not settled " + std::to_string(to_ms(options_.settle)) +
             " ms after the faults stopped: " + unsettled_reason_);
        break;
      }
      lifecycles();
      step(100ms);
    }
    if (ok()) check_journal();
    result_.trace_hash = hash_;
    return result_;
  }

 private:
  struct node {
    std::string name;
    bool up = false;
    bool paused = false;
    bool cut = false;
    bool deaf = false;         // etcd's answers to it are lost (one way)
    bool restart_due = false;  // it fenced itself
    bool leaving = false;      // a graceful leave: its shards are being handed off
    bool revoking = false;     // the leave's last step: its lease is being revoked
    time_point leave_deadline{};
    time_point fault_ends{};                // when a pause, cut or downtime ends
    boost::asio::io_context* io = nullptr;  // in ios_
    std::shared_ptr<test::pausable_clock> clock;
    std::shared_ptr<consensus_store> store;
    std::shared_ptr<lease_keeper> keeper;
    std::shared_ptr<coordinator_runner> runner;
    std::shared_ptr<cluster_placement> placement;
    coord::member_id id;
    std::set<sharding::shard_id> acting;  // the stand-in region's shards
    std::map<sharding::shard_id, sharding::shard_epoch> acting_epoch;
    // What act() last saw: the epoch of each shard placed here while the lease stands. Only the
    // node's handlers, its timers, its lease's deadline and the world's calls into it change
    // that, so act() looks again only at a node where one of them happened since (the world's
    // calls and the handlers clear `looked`).
    std::vector<std::optional<sharding::shard_epoch>> seen;
    bool looked = false;
    bool standing_seen = false;
    std::uint64_t timers_seen = 0;
  };
  /// What a crashed incarnation leaves behind: kept (its io_context never polled again) until
  /// the world ends, so no handler of it runs and none is destroyed while its objects are in use.
  struct remains {
    std::shared_ptr<test::pausable_clock> clock;
    std::shared_ptr<consensus_store> store;
    std::shared_ptr<lease_keeper> keeper;
    std::shared_ptr<coordinator_runner> runner;
    std::shared_ptr<cluster_placement> placement;
  };

  static constexpr const char* cluster = "sim";
  static constexpr const char* type = "t";

  static long long to_ms(duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  }
  [[nodiscard]] bool ok() const { return result_.failure.empty(); }
  [[nodiscard]] long long now_ms() const { return to_ms(clock_->now().time_since_epoch()); }

  void fail(const std::string& what) {
    if (ok()) result_.failure = "t=" + std::to_string(now_ms()) + " ms: " + what;
  }
  void trace(const std::string& event) {
    const std::string line = std::to_string(now_ms()) + " " + event + "\n";
    if (options_.print_trace) std::cout << line;
    for (const char c : line) hash_ = (hash_ ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  duration between(duration lo, duration hi) {
    return duration{std::uniform_int_distribution<duration::rep>(lo.count(), hi.count())(rng_)};
  }
  node& any_node() {
    return *nodes_[std::uniform_int_distribution<std::size_t>(0, nodes_.size() - 1)(rng_)];
  }

  // -- a node's life ------------------------------------------------------------------------

  void start(node& n) {
    n.io = &ios_.emplace_back();
    n.clock = std::make_shared<test::pausable_clock>(clock_);
    n.store = etcd_.client(n.io->get_executor());
    forget_state(n);
    n.up = true;
    n.id = {};
    trace("start " + n.name);
    lease_keeper_options ko;
    ko.ttl = 3s;
    ko.margin = 500ms;
    ko.plant_no_self_fence = options_.plant_no_self_fence;
    node* self = &n;
    auto* store = n.store.get();
    n.keeper = lease_keeper::start(
        n.store, n.clock, ko,
        [this, self, store](std::error_code ec, lease_id lease) {
          if (self->store.get() != store) return;  // an older incarnation's answer
          if (ec) {
            self->fault_ends = clock_->now() + 1s;  // restarts when the fence reports it
            return;
          }
          join(*self, lease);
        },
        [this, self, store](fence_reason why) {
          if (self->store.get() != store) return;
          trace("fenced " + self->name + " " + std::string(to_string(why)));
          if (why == fence_reason::revoked) return;  // the end of a graceful leave
          if (self->placement) self->placement->stop_hosting(true);
          // A fenced node restarts as a new incarnation, as its supervisor would restart it.
          self->restart_due = true;
        });
  }

  void join(node& n, lease_id lease) {
    n.id = {n.name, lease};
    member_record m;
    m.info.id = n.id;
    m.address = n.name + ":2552";
    node* self = &n;
    auto* store = n.store.get();
    register_member(*n.store, cluster, m, [this, self, store](std::error_code ec, revision) {
      if (self->store.get() != store) return;
      if (ec) {
        // The join failed (cluster_node::joined() throws); its supervisor starts it again.
        trace("join failed " + self->name);
        self->restart_due = true;
        return;
      }
      coordinator_runner_options ro;
      ro.cluster = cluster;
      ro.type = type;
      ro.self = self->id;
      self->runner = coordinator_runner::start(self->store, self->clock, ro,
                                               coord::make_hash_mod_regions_strategy(),
                                               [](const coord::answer_home&) {});
      cluster_placement_options po;
      po.cluster = cluster;
      po.type = type;
      po.self = self->id;
      po.retry = 500ms;
      const auto requester = self->id;
      self->placement = cluster_placement::start(
          self->store, self->clock, po, fences(),
          [this, requester](sharding::shard_id s) { request_home(requester, s); });
      self->placement->set_listener([](sharding::shard_id) {});
    });
  }

  /// The store's shard fence; with the planted bug, a raiser that says the fence stands at once
  /// and raises it only 2 s later, so the new owner acts while the old one can still write.
  fence_raiser fences() {
    auto raise = raise_fences_in(journal_store_, type);
    if (!options_.plant_skip_shard_fence) return raise;
    return [this, raise](sharding::shard_id shard, sharding::shard_epoch epoch, auto done) {
      done({}, persistence::fence_raise::raised);
      clock_->schedule_at(clock_->now() + 2s, [raise, shard, epoch] {
        raise(shard, epoch, [](std::error_code, persistence::fence_raise) {});
      });
    };
  }

  /// A crash: the node's connection to etcd drops first (nothing it had in flight lands), then
  /// everything of it stops where it stands. Its lease runs out on its own.
  void crash(node& n, bool traced = true) {
    if (!n.io) return;
    if (traced) trace("crash " + n.name);
    etcd_.set_reachable(*n.store, false);
    n.io = nullptr;
    remains r{std::move(n.clock), std::move(n.store), std::move(n.keeper), std::move(n.runner),
              std::move(n.placement)};
    if (r.placement) r.placement->stop();
    if (r.runner) r.runner->stop();
    if (r.keeper) r.keeper->stop();
    graveyard_.push_back(std::move(r));
    forget_state(n);
  }

  /// A node down, or just started: no fault, leave or activity of its last incarnation stays.
  static void forget_state(node& n) {
    n.up = false;
    n.paused = false;
    n.cut = false;
    n.deaf = false;
    n.restart_due = false;
    n.leaving = false;
    n.revoking = false;
    n.acting.clear();
    n.acting_epoch.clear();
  }

  // -- faults -------------------------------------------------------------------------------

  /// Faults that end, restarts that are due, and graceful leaves that go on (every step, also
  /// once the faults stopped).
  void lifecycles() {
    const auto now = clock_->now();
    for (auto& p : nodes_) {
      node& n = *p;
      if (!n.up && (healed_ || now >= n.fault_ends)) start(n);
      if (n.up && n.restart_due) {
        crash(n);
        n.fault_ends = now + between(500ms, 3s);
        continue;
      }
      if (n.paused && now >= n.fault_ends) resume(n);
      if (n.cut && now >= n.fault_ends) reconnect(n);
      if (n.leaving && !n.paused) go_on_leaving(n);
    }
    for (auto it = cut_links_.begin(); it != cut_links_.end();) {
      if (healed_ || now >= it->second) {
        trace("link healed " + nodes_[it->first.first]->name + "-" +
              nodes_[it->first.second]->name);
        it = cut_links_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void inject_faults() {
    const auto now = clock_->now();
    node& n = any_node();
    if (!n.up || n.paused || n.cut || n.leaving) return;
    if (chance(0.003) && n.placement) {
      ++result_.leaves;
      leave(n);
      return;
    }
    if (chance(0.005)) {
      node& other = any_node();
      if (&other != &n) {
        ++result_.partitions;
        trace("partition " + n.name + "-" + other.name);
        cut_links_[link(n, other)] = now + between(500ms, 8s);
        return;
      }
    }
    if (chance(0.004)) {
      ++result_.crashes;
      crash(n);
      n.fault_ends = now + between(500ms, 5s);
    } else if (chance(0.005)) {
      ++result_.pauses;
      trace("pause " + n.name);
      n.paused = true;
      n.fault_ends = now + between(500ms, 8s);
      n.clock->freeze();
    } else if (chance(0.004)) {
      ++result_.deafs;
      trace("deaf " + n.name);
      n.cut = true;
      n.deaf = true;
      n.fault_ends = now + between(500ms, 8s);
      etcd_.set_answers_lost(*n.store, true);
    } else if (chance(0.005)) {
      ++result_.cuts;
      trace("cut " + n.name);
      n.cut = true;
      n.fault_ends = now + between(500ms, 8s);
      etcd_.set_reachable(*n.store, false);
    } else if (chance(0.01) && n.runner) {
      ++result_.rebalances;
      trace("rebalance " + n.name);
      n.runner->request_rebalance();
    }
  }

  /// A graceful leave, as cluster_node::leave does it: marked leaving, the placement stops
  /// hosting, and once no shard is allocated here any more (or after 10 s) the lease is revoked.
  void leave(node& n) {
    trace("leave " + n.name);
    n.leaving = true;
    n.leave_deadline = clock_->now() + 10s;
    member_record m;
    m.info.id = n.id;
    m.info.leaving = true;
    m.address = n.name + ":2552";
    update_member(*n.store, cluster, m, [](std::error_code, revision) {});
    n.placement->stop_hosting(false);
  }

  void go_on_leaving(node& n) {
    if (n.revoking || (n.placement->owns_shards() && clock_->now() < n.leave_deadline)) return;
    n.revoking = true;
    trace("revoke " + n.name);
    node* self = &n;
    auto* store = n.store.get();
    n.keeper->revoke([this, self, store](std::error_code) {
      if (self->store.get() != store) return;
      // Left: what remains of it stops (its runner resigns), and it comes back later.
      trace("left " + self->name);
      remains r{std::move(self->clock), std::move(self->store), std::move(self->keeper),
                std::move(self->runner), std::move(self->placement)};
      if (r.placement) r.placement->stop();
      if (r.runner) r.runner->stop();
      graveyard_.push_back(std::move(r));
      self->io = nullptr;
      forget_state(*self);
      self->fault_ends = clock_->now() + between(500ms, 3s);
    });
  }

  [[nodiscard]] std::pair<std::size_t, std::size_t> link(const node& a, const node& b) const {
    const auto i = index_of(a.name);
    const auto j = index_of(b.name);
    return {std::min(i, j), std::max(i, j)};
  }
  [[nodiscard]] std::size_t index_of(const std::string& name) const {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i]->name == name) return i;
    }
    return 0;
  }

  void resume(node& n) {
    trace("resume " + n.name);
    n.paused = false;
    n.clock->resume_time();
    check_single_activation();  // the moment after SIGCONT, before any timer of the node runs
    n.clock->release();
  }

  void reconnect(node& n) {
    trace("reconnect " + n.name);
    n.cut = false;
    n.deaf = false;
    etcd_.set_reachable(*n.store, true);
    etcd_.set_answers_lost(*n.store, false);
  }

  void heal_all() {
    trace("heal");
    for (auto& p : nodes_) {
      if (p->paused) resume(*p);
      if (p->cut) reconnect(*p);
    }
    healed_ = true;
    lifecycles();
  }

  /// A region's home request reaches the coordinator after a short delay, or is lost before the
  /// heal; every node's runner gets it and only the leader acts on it.
  void request_home(const coord::member_id& from, sharding::shard_id shard) {
    if (!healed_ && chance(0.05)) {
      ++result_.lost_requests;
      return;
    }
    clock_->schedule_at(clock_->now() + between(1ms, 50ms), [this, from, shard] {
      const node& sender = *nodes_[index_of(from.node)];
      for (auto& p : nodes_) {
        p->looked = false;  // called from outside its handlers
        if (!p->up || !p->runner) continue;
        if (p.get() != &sender && cut_links_.contains(link(sender, *p))) continue;
        p->runner->request_home(from, shard);
      }
    });
  }

  // -- time ---------------------------------------------------------------------------------

  /// Runs every ready handler of every node that runs (a paused one runs nothing), until none is
  /// left, and checks after each round that ran one (and after the first: a timer, or time
  /// itself, may have changed what a node acts for).
  void poll_all() {
    for (int round = 0; round < 1000; ++round) {
      std::size_t ran = 0;
      for (auto& p : nodes_) {
        if (!p->up || p->paused) continue;
        p->io->restart();
        const std::size_t ran_here = p->io->poll();
        if (ran_here > 0) p->looked = false;
        ran += ran_here;
      }
      if (ran > 0 || round == 0) act();
      if (ran == 0) return;
    }
    fail("handlers still ready after 1,000 rounds: a busy loop");
  }

  void step(duration d) {
    const time_point target = clock_->now() + d;
    for (auto& p : nodes_) p->looked = false;  // faults, restarts and requests since the last step
    ask_homes();
    write_some();
    poll_all();
    while (ok()) {
      const auto next = clock_->next_deadline();
      if (!next || *next > target) break;
      clock_->advance(std::max(*next - clock_->now(), duration::zero()));
      poll_all();
    }
    clock_->advance(target - clock_->now());
    poll_all();
  }

  // -- the stand-in region ------------------------------------------------------------------

  [[nodiscard]] static bool stands(const node& n) {
    return n.up && !n.paused && n.keeper && !n.keeper->fenced();
  }

  [[nodiscard]] static std::optional<sharding::shard_epoch> here(node& n, sharding::shard_id s) {
    if (!n.placement) return std::nullopt;
    const auto h = n.placement->peek_home(s);
    if (const auto* p = std::get_if<sharding::placed_here>(&h)) return p->epoch;
    return std::nullopt;
  }

  /// Each running node's region asks where every shard lives, as traffic to all of them would,
  /// and lets go of those not here (which is what lets a hand-off from it finish).
  void ask_homes() {
    for (auto& p : nodes_) {
      node& n = *p;
      if (!n.up || n.paused || !n.placement) continue;
      for (int s = 0; s < options_.shards; ++s) {
        const auto shard = static_cast<sharding::shard_id>(s);
        (void)n.placement->home_of(shard);
        if (!n.acting.contains(shard)) n.placement->released(shard);
      }
    }
  }

  /// Each running node acts for the shards placed here while its lease stands, and stops
  /// acting for the others; no shard may have two such nodes.
  void act() {
    std::vector<std::string> owners(static_cast<std::size_t>(options_.shards));
    for (auto& p : nodes_) {
      node& n = *p;
      if (!n.up || n.paused || !n.placement) continue;
      const bool standing = stands(n);
      const std::uint64_t timers = n.clock->fired();
      if (!n.looked || standing != n.standing_seen || timers != n.timers_seen) {
        n.seen.assign(static_cast<std::size_t>(options_.shards), std::nullopt);
        for (int s = 0; standing && s < options_.shards; ++s) {
          n.seen[static_cast<std::size_t>(s)] = here(n, static_cast<sharding::shard_id>(s));
        }
        n.looked = true;
        n.standing_seen = standing;
        n.timers_seen = timers;
      }
      for (int s = 0; s < options_.shards; ++s) {
        const auto shard = static_cast<sharding::shard_id>(s);
        const auto epoch = n.seen[static_cast<std::size_t>(s)];
        if (epoch) {
          auto& owner = owners[static_cast<std::size_t>(s)];
          if (!owner.empty()) {
            fail("shard " + std::to_string(s) + " is active on " + owner + ", " + n.name);
            return;
          }
          owner = n.name;
          if (n.acting.insert(shard).second || n.acting_epoch[shard] != *epoch) {
            n.acting_epoch[shard] = *epoch;
            auto& newest = newest_active_[shard];
            newest = std::max(newest, *epoch);
            ++result_.activations;
            trace("act " + n.name + " " + std::to_string(s) + "@" + std::to_string(*epoch));
          }
        } else if (n.acting.erase(shard) > 0) {
          n.acting_epoch.erase(shard);
          trace("release " + n.name + " " + std::to_string(s));
          n.placement->released(shard);
          n.looked = false;
        }
      }
    }
  }

  /// Some of the entities each standing node acts for write an event (once per step: the workload
  /// does not depend on how many rounds the handlers took).
  void write_some() {
    for (auto& p : nodes_) {
      if (!stands(*p)) continue;
      for (const auto shard : p->acting) {
        if (chance(0.2)) write(*p, shard, p->acting_epoch[shard]);
      }
    }
  }

  /// The entity writes an event; the store applies it after a delay (sometimes a long one, a
  /// slow disk or a request stuck in a queue), with the sequence number it has by then.
  void write(node& n, sharding::shard_id shard, sharding::shard_epoch epoch) {
    const auto delay = chance(0.1) ? between(1s, 5s) : between(0ms, 300ms);
    clock_->schedule_at(clock_->now() + delay, [this, shard, epoch, who = n.name] {
      const std::string pid = "t|" + std::to_string(shard);
      persistence::append_request r;
      r.persistence_id = pid;
      r.expected_next = acknowledged_[pid].size() + 1;
      r.epoch = static_cast<persistence::ownership_epoch>(epoch);
      r.shard_fence = persistence::fenced_shard{type, shard};
      persistence::serialized e;
      e.manifest.type_name = "sim.event";
      r.events.push_back(e);
      journal_store_->journal().async_append(
          std::move(r),
          [this, pid, shard, epoch, who](std::exception_ptr ex, persistence::sequence_nr) {
            if (ex) return;  // fenced: the writer learns, nothing lands
            acknowledged(pid, shard, epoch, who);
          });
    });
  }

  /// A write landed: it must not be older than an owner that already acts (that owner recovered
  /// without it) nor than an earlier write.
  void acknowledged(const std::string& pid, sharding::shard_id shard, sharding::shard_epoch epoch,
                    const std::string& who) {
    auto& acks = acknowledged_[pid];
    if (const auto newest = newest_active_[shard]; epoch < newest) {
      fail("a write of " + who + " at epoch " + std::to_string(epoch) + " landed in " + pid +
           " after an owner at epoch " + std::to_string(newest) + " began acting");
    } else if (!acks.empty() && acks.back() > epoch) {
      fail("the journal acknowledged " + pid + " at epoch " + std::to_string(epoch) +
           " after epoch " + std::to_string(acks.back()));
    }
    acks.push_back(epoch);
    ++result_.writes;
    trace("wrote " + who + " " + pid + "@" + std::to_string(epoch));
  }

  // -- checks -------------------------------------------------------------------------------

  /// No two running nodes whose leases stand act for one shard (act() checks it as it goes; this
  /// looks without acting, for the moment a paused node resumes).
  void check_single_activation() {
    for (int s = 0; s < options_.shards; ++s) {
      const auto shard = static_cast<sharding::shard_id>(s);
      std::vector<std::string> owners;
      for (auto& p : nodes_) {
        if (stands(*p) && here(*p, shard)) owners.push_back(p->name);
      }
      if (owners.size() > 1) {
        std::string names;
        for (const auto& o : owners) names += (names.empty() ? "" : ", ") + o;
        fail("shard " + std::to_string(s) + " is active on " + names);
        return;
      }
    }
  }

  /// Every node up and standing, and every shard placed on one of them, which every other node
  /// routes to at the same epoch.
  bool settled() {
    for (auto& p : nodes_) {
      if (!stands(*p) || !p->placement || !p->placement->ready()) {
        unsettled_reason_ = p->name + " is not up and ready";
        return false;
      }
    }
    for (int s = 0; s < options_.shards; ++s) {
      const auto shard = static_cast<sharding::shard_id>(s);
      const node* owner = nullptr;
      sharding::shard_epoch epoch = 0;
      for (auto& p : nodes_) {
        if (auto e = here(*p, shard)) {
          owner = p.get();
          epoch = *e;
        }
      }
      if (owner == nullptr) {
        unsettled_reason_ = "shard " + std::to_string(s) + " has no home";
        return false;
      }
      for (auto& p : nodes_) {
        if (p.get() == owner) continue;
        const auto h = p->placement->home_of(shard);
        const auto* r = std::get_if<sharding::placed_remote>(&h);
        if (r == nullptr || r->node != owner->name || r->epoch != epoch) {
          unsettled_reason_ = p->name + " does not route shard " + std::to_string(s) + " to " +
                              owner->name + "@" + std::to_string(epoch);
          return false;
        }
      }
    }
    return true;
  }

  /// Every acknowledged event is in the journal: sequence numbers 1..n, the epochs as written.
  void check_journal() {
    for (const auto& [pid, acks] : acknowledged_) {
      persistence::read_request r;
      r.persistence_id = pid;
      bool done = false;
      journal_store_->journal().async_read(
          r, [&, pid = pid](std::exception_ptr ex, std::vector<persistence::event_record> events) {
            done = true;
            if (ex) {
              fail("reading " + pid + " failed");
              return;
            }
            if (events.size() != acks.size()) {
              fail(pid + ": " + std::to_string(acks.size()) + " events acknowledged, " +
                   std::to_string(events.size()) + " in the journal");
              return;
            }
            for (std::size_t i = 0; i < events.size(); ++i) {
              if (events[i].sequence != i + 1 ||
                  events[i].epoch != static_cast<persistence::ownership_epoch>(acks[i])) {
                fail(pid + ": event " + std::to_string(i + 1) + " is not the one acknowledged");
                return;
              }
            }
          });
      if (!done) fail("the memory journal answered a read later than at once");
    }
  }

  world_options options_;
  std::mt19937_64 rng_;
  /// Every incarnation's io_context, destroyed last: the clock's and the model's pending
  /// callbacks hold strands of them.
  std::deque<boost::asio::io_context> ios_;
  std::shared_ptr<manual_clock> clock_ = std::make_shared<manual_clock>();
  /// The model's own timers go through a clock the teardown can cancel.
  std::shared_ptr<test::pausable_clock> etcd_clock_ =
      std::make_shared<test::pausable_clock>(clock_);
  in_process_etcd etcd_{etcd_clock_};
  std::shared_ptr<persistence::plugin> journal_store_ = persistence::make_memory_plugin();
  std::vector<std::unique_ptr<node>> nodes_;
  std::vector<remains> graveyard_;
  std::map<std::string, std::vector<sharding::shard_epoch>> acknowledged_;
  std::map<sharding::shard_id, sharding::shard_epoch> newest_active_;  // by shard
  /// Links between two nodes (by index, lower first) cut until the time given.
  std::map<std::pair<std::size_t, std::size_t>, time_point> cut_links_;
  bool healed_ = false;
  std::string unsettled_reason_;
  std::uint64_t hash_ = 14695981039346656037ULL;
  world_result result_;
};

}  // namespace troupe::cluster::sim
