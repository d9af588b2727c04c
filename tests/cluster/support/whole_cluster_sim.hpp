#pragma once
// Whole cluster nodes on one thread and one manual clock: each node is a real actor system with
// its remoting, cluster_node (lease keeper, coordinator runner, placement) and the "tally"
// persistent entity in a real region, over the memory network, the in-process etcd model and
// one memory journal, and with `tells` the plain entity "tape" (tape_entity.hpp) in a second
// region. simulate(seed) runs one seed: the seed decides the number of nodes (3 to 7), the load
// (asks to tally and tells to tape from every node, over the ids by Zipf or uniformly) and the
// faults (rebalances, partitions between nodes both ways or one way, link delays, cuts from etcd,
// pauses, graceful leaves, crashes and restarts as new incarnations, refused, answer-lost and slow
// store writes; with moves_often, shards moving all the time over uneven links), and the run's
// outcome lists every problem its checkers found: a stale activation (tally_world's checker), an
// unsound journal, an acknowledged add that is gone, an answer that does not hold its add, a
// sender's adds out of order, an add lost silently (no dead letter, no cause told to its asker, no
// fault to blame, not applied late; any add lost when no fault ran), a note heard twice or out of
// its sender's order, a note lost silently (no dead letter, no fault to blame; any note lost when
// no fault ran), the cluster not serving once the faults stop. TROUPE_SIM_VERBOSE=1 prints the
// world's story (faults with their simulated time and the activity log's position). Used by
// simulated_cluster_test.cpp and by troupe_simulate --whole-nodes.

#include <troupe/sharding/coordination/allocation_strategy.hpp>
#include <troupe/sharding/detail/planted_bugs.hpp>
#include <troupe/testkit/simulation_guard.hpp>

#include "manual_time.hpp"
#include "pausable_clock.hpp"
#include "tally_world.hpp"
#include "tape_entity.hpp"
#include "trace_hash.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace troupe::cluster::tally_test {

inline node_address address_of(int i) { return {"node-" + std::to_string(i), 2550}; }
inline std::string name_of(int i) { return "node-" + std::to_string(i); }

/// Every node's lease.
inline constexpr std::chrono::milliseconds sim_lease_ttl{2000};

/// What a run does besides the seed's load and faults.
struct sim_options {
  /// How many nodes run; 0: the seed chooses 3 to 7.
  int nodes = 0;
  /// With the faults, also one-way partitions and store write faults (false replays a seed
  /// found before they existed, with nodes = 3).
  bool one_way_and_store_faults = true;
  /// The tally acknowledges its 30th add without persisting it, and the tape forgets its 30th
  /// note (the loss checkers' own tests).
  bool planted_loss = false;
  /// Shards move gracefully all the time (the churn strategy below, a rebalance asked for
  /// every 100 ms) while each direction of each link has its own delay of up to 30 ms: a
  /// sender's adds to an old home are still on their way when it learns the new one.
  bool moves_often = false;
  /// The seed's faults (crashes, partitions, cuts from etcd, delays); without them every path
  /// a message takes is a graceful one, and every add must be acknowledged.
  bool faults = true;
  /// Bugs planted in the region on purpose (planted_bugs.hpp), for the order checker's tests.
  bool plant_skip_flush = false;
  bool plant_bounced_out_of_order = false;
  /// Half the load is tells to the plain entity "tape", and the seed chooses Zipf or uniform
  /// keys (false replays a seed found before tape existed: asks only, two hot ids).
  bool tells = true;
  /// With tells, Zipf or uniform keys (false: two hot ids or uniform, as when seeds 928 and 1663
  /// were found).
  bool zipf = true;
  /// Partitions hold what they swallow and deliver it, in order, once they heal, as TCP does
  /// (partition_kind::holds_writes); false: they lose it, as every seed so far was run.
  /// docs/simulation.md, "Partitions that hold writes": two of seeds 1-1,000 with moves still
  /// fail under them.
  bool tcp_partitions = false;
};

/// Every add (or note) that became a dead letter on any node, with the reason it gave.
using dead_adds = std::map<std::tuple<std::string, int, int>, std::string>;

/// Writes down each dead letter that is an add or a note.
class dead_letter_recorder final : public actor<dead_letter> {
 public:
  dead_letter_recorder(std::shared_ptr<dead_adds> adds, std::shared_ptr<dead_adds> notes)
      : adds_(std::move(adds)), notes_(std::move(notes)) {}

 private:
  void receive(dead_letter& d) override {
    const auto* c = d.message_as<tally_command>();
    const auto* t = d.message_as<tape_command>();
    // A message that could not go to another node's region is a dead letter in the delivery
    // that carried it (a node's remoting refuses what it cannot send any more).
    if (const auto* sd = d.message_as<cluster::sharded_delivery>(); sd != nullptr && sd->message) {
      if (sd->message->type() == typeid(tally_command)) {
        c = static_cast<const tally_command*>(sd->message->payload());
      } else if (sd->message->type() == typeid(tape_command)) {
        t = static_cast<const tape_command*>(sd->message->payload());
      }
    }
    const auto* a = c != nullptr ? std::get_if<add>(c) : nullptr;
    if (a != nullptr) (*adds_)[{a->id, a->sender, a->n}] = d.reason;
    if (t != nullptr) {
      const note& n = std::get<note>(*t);
      (*notes_)[{n.id, n.sender, n.n}] = d.reason;
    }
  }
  std::shared_ptr<dead_adds> adds_;
  std::shared_ptr<dead_adds> notes_;
};

/// A strategy that moves two shards every round (when none is moving, and while `on` holds)
/// and places each shard by a counter of rounds, so the same shard goes somewhere else after
/// each move. Deterministic: the coordinator's view and the rounds decide everything.
class churn_strategy final : public sharding::coordination::allocation_strategy {
 public:
  explicit churn_strategy(std::shared_ptr<const bool> on) : on_(std::move(on)) {}
  std::optional<sharding::coordination::member_id> allocate(
      sharding::shard_id shard,
      std::span<const sharding::coordination::region_view> regions) override {
    // A leaving region is a last resort (allocation_strategy.hpp): else its shards never leave.
    std::vector<sharding::coordination::member_id> ids;
    for (const auto& r : regions) {
      if (!r.leaving) ids.push_back(r.region);
    }
    if (ids.empty()) {
      for (const auto& r : regions) ids.push_back(r.region);
    }
    std::sort(ids.begin(), ids.end());
    return ids[(shard + rounds_) % ids.size()];
  }
  std::vector<sharding::shard_id> rebalance(
      std::span<const sharding::coordination::region_view> regions,
      std::span<const sharding::shard_id> in_progress) override {
    if (!*on_ || !in_progress.empty()) return {};
    std::vector<sharding::shard_id> owned;
    for (const auto& r : regions) owned.insert(owned.end(), r.shards.begin(), r.shards.end());
    if (owned.empty()) return {};
    std::sort(owned.begin(), owned.end());
    ++rounds_;
    const auto first = owned[(rounds_ * 5) % owned.size()];
    const auto second = owned[(rounds_ * 5 + 3) % owned.size()];
    if (first == second) return {first};
    return {first, second};
  }

 private:
  std::shared_ptr<const bool> on_;
  std::size_t rounds_ = 0;
};

/// Turns a planted bug on for its scope.
class planted_switch {
 public:
  explicit planted_switch(std::atomic<bool>& bug) : bug_(bug) { bug_ = true; }
  ~planted_switch() { bug_ = false; }
  planted_switch(const planted_switch&) = delete;
  planted_switch& operator=(const planted_switch&) = delete;

 private:
  std::atomic<bool>& bug_;
};

/// What every node shares.
struct sim_world {
  explicit sim_world(std::uint64_t seed)
      : net(std::make_shared<memory_network>(seed, clock)), etcd(clock) {}
  /// Each incarnation's executor for its etcd client, destroyed last: the model may still hold
  /// a crashed incarnation's answers (never run) when the world ends.
  std::deque<boost::asio::io_context> ios;
  std::shared_ptr<manual_clock> clock = std::make_shared<manual_clock>();
  std::shared_ptr<memory_network> net;
  in_process_etcd etcd;
  std::shared_ptr<tp::memory_storage> journal = tp::make_memory_storage();
  std::shared_ptr<activity> log = std::make_shared<activity>();
  std::shared_ptr<bool> churning = std::make_shared<bool>(true);
  std::shared_ptr<dead_adds> dead = std::make_shared<dead_adds>();
  std::shared_ptr<dead_adds> dead_notes = std::make_shared<dead_adds>();
  std::shared_ptr<heard_notes> heard = std::make_shared<heard_notes>();
  /// Store write faults, while the run's faults last: each append of every node is refused
  /// (1 %), loses its answer after it is stored (1 %) or is slow (4 %, 50 ms to 1.5 s), as a
  /// seeded generator of its own decides, in the order the appends arrive.
  struct store_faults {
    explicit store_faults(std::uint64_t seed) : rng(seed * 0x9e3779b97f4a7c15ULL + 17) {}
    bool on = false;
    std::mt19937_64 rng;
    int refused = 0;
    int answers_lost = 0;
    int slow = 0;
  };
  std::shared_ptr<store_faults> store = nullptr;

  /// The write fault of the next append.
  tp::write_fault next_write_fault() {
    if (!store || !store->on) return {};
    auto& f = *store;
    const auto roll = f.rng() % 100;
    if (roll == 0) {
      ++f.refused;
      return {.fail = true};
    }
    if (roll == 1) {
      ++f.answers_lost;
      return {.answer_lost = true};
    }
    if (roll < 6) {
      ++f.slow;
      return {.delay = std::chrono::milliseconds(50 + f.rng() % 1450)};
    }
    return {};
  }
};

/// One incarnation of a node, its actor system scheduled by hand. Everything of it runs on its
/// own view of the world's clock, which a pause stops (a stopped process: no timer fires, no
/// handler runs, and on resume its time has jumped), and its etcd client answers on `io`.
struct sim_member {
  sim_member(sim_world& w, int index, int incarnation, const sim_options& opt)
      : label(name_of(index) + "#" + std::to_string(incarnation)),
        clock(std::make_shared<test::pausable_clock>(w.clock)),
        disk(std::make_shared<test::pausable_clock>(clock)),
        io(w.ios.emplace_back()),
        system(
            system_config{}.with_name(name_of(index)).with_manual_scheduling().with_clock(clock)) {
    remote = std::make_unique<remote_node>(
        system, remote_options{}
                    .with_registry(sim_registry())
                    .with_transport([net = w.net](boost::asio::any_io_executor ex) {
                      return net->make_transport(std::move(ex));
                    })
                    .with_bind(address_of(index))
                    .with_heartbeat(100ms, 600ms)
                    .with_reconnect_backoff(20ms, 200ms)
                    .with_system_io()
                    .with_incarnation(static_cast<std::uint64_t>(index * 1000 + incarnation)));
    system.dead_letters().subscribe(
        system.spawn<dead_letter_recorder>(spawn_options{"dead-adds"}, w.dead, w.dead_notes));
    auto& persistence = tp::get(system);
    persistence.codecs().add<added>("test.faults.added").add<tallied>("test.faults.tallied");
    persistence.set_default_plugin(tp::make_memory_plugin(
        w.journal, [&w](const tp::append_request&) { return w.next_write_fault(); }, disk));
    store = w.etcd.client(io.get_executor());
    auto options = cluster_node_options{}
                       .with_cluster_name("faults")
                       .with_node(name_of(index))
                       .with_lease_ttl(sim_lease_ttl)
                       .with_rebalance_interval(1s)
                       .with_handoff_timeout(2s);
    options.lease_margin = 500ms;
    options.retry = 50ms;
    options.on_fenced = [log = w.log, l = label](const std::string&) {
      log->record(activity::entry::fence, l);
    };
    if (opt.moves_often) {
      options.strategy = [on = w.churning](const sharding::region_settings&) {
        return std::make_unique<churn_strategy>(on);
      };
    }
    cluster = cluster_node::join(system, cluster_sharding::get(system), *remote, store,
                                 std::move(options), clock);
  }
  ~sim_member() {
    // Unless the process crashed, the region stops first, while the dead-letter recorder still
    // runs: what it still holds (its own senders' messages waiting for a home) becomes dead
    // letters the checker sees, as the process's dead-letter log would show them.
    if (region && !crashed) {
      system.stop(region);
      if (tape_region) system.stop(tape_region);
      system.run_until_idle();
    }
    cluster.reset();
    remote->shutdown();
    disk->run_all_now();  // the writes under way land; their answers reach nobody outside
    system.terminate();
    system.await_termination();
    clock->cancel_all();
  }
  sim_member(const sim_member&) = delete;
  sim_member& operator=(const sim_member&) = delete;

  /// Starts "tally" (and "tape" when `heard` is given) once the node has joined; true once it
  /// has.
  bool start_when_joined(const std::shared_ptr<activity>& log, bool planted_loss,
                         const std::shared_ptr<heard_notes>& heard) {
    if (region) return true;
    if (cluster->joined().wait_for(0s) != std::future_status::ready) return false;
    region = cluster_sharding::get(system).start(
        sharding_options<tally_command>::create()
            .with_type_name("tally")
            .with_extract_entity_id([](const tally_command& c) {
              return std::visit([](const auto& m) { return m.id; }, c);
            })
            .with_num_shards(16)
            .with_entity<tally>(label, log, planted_loss));
    if (heard) {
      tape_region = cluster_sharding::get(system).start(
          sharding_options<tape_command>::create()
              .with_type_name("tape")
              .with_extract_entity_id([](const tape_command& c) { return std::get<note>(c).id; })
              .with_num_shards(16)
              .with_entity<tape>(label, log, heard, planted_loss));
    }
    return true;
  }
  static std::shared_ptr<message_registry> sim_registry() {
    auto r = registry();
    r->add<tape_command>("test.sim.tape_command");
    return r;
  }

  /// Runs what the node has ready (none while paused); how many handlers and turns ran.
  std::size_t run() {
    if (paused) return 0;
    io.restart();
    const std::size_t handlers = io.poll();
    return handlers + system.run_until_idle();
  }

  std::string label;
  std::shared_ptr<test::pausable_clock> clock;
  /// The clock of the node's slow store writes (on the node's own clock).
  std::shared_ptr<test::pausable_clock> disk;
  boost::asio::io_context& io;
  bool paused = false;
  bool crashed = false;  // its process ends abruptly: it reports nothing more
  actor_system system;
  std::unique_ptr<remote_node> remote;
  std::shared_ptr<consensus_store> store;
  std::shared_ptr<cluster_node> cluster;
  troupe::actor_ref<tally_command> region;
  troupe::actor_ref<tape_command> tape_region;
};

struct outcome {
  std::vector<std::string> problems;
  std::vector<std::string> violations;
  std::uint64_t trace_hash = 0;
  std::size_t asked = 0;
  std::size_t acknowledged = 0;
  std::size_t told = 0;
  std::size_t heard = 0;
  int crashes = 0;
  int rebalances = 0;
  int partitions = 0;
  int etcd_cuts = 0;
  int fences = 0;
  int activations = 0;
  int pauses = 0;
  int leaves = 0;
  int one_way_partitions = 0;
  int writes_refused = 0;
  int write_answers_lost = 0;
  int slow_writes = 0;
  std::size_t dead_letters = 0;
  std::size_t timed_out = 0;

  /// Adds up the counts (not the problems or the hash) of several runs.
  outcome& operator+=(const outcome& o) {
    asked += o.asked;
    acknowledged += o.acknowledged;
    told += o.told;
    heard += o.heard;
    crashes += o.crashes;
    rebalances += o.rebalances;
    partitions += o.partitions;
    etcd_cuts += o.etcd_cuts;
    fences += o.fences;
    activations += o.activations;
    pauses += o.pauses;
    leaves += o.leaves;
    one_way_partitions += o.one_way_partitions;
    writes_refused += o.writes_refused;
    write_answers_lost += o.write_answers_lost;
    slow_writes += o.slow_writes;
    dead_letters += o.dead_letters;
    timed_out += o.timed_out;
    return *this;
  }
  /// The counts, one line.
  [[nodiscard]] std::string counts() const {
    return std::to_string(asked) + " asked, " + std::to_string(acknowledged) + " acknowledged, " +
           std::to_string(timed_out) + " timed out, " + std::to_string(dead_letters) +
           " dead letters; " + std::to_string(told) + " told, " + std::to_string(heard) +
           " heard; " + std::to_string(activations) + " activations, " + std::to_string(crashes) +
           " crashes, " + std::to_string(rebalances) + " rebalances, " +
           std::to_string(partitions) + " partitions (" + std::to_string(one_way_partitions) +
           " one-way), " + std::to_string(etcd_cuts) + " cuts from etcd, " +
           std::to_string(pauses) + " pauses, " + std::to_string(leaves) + " graceful leaves, " +
           std::to_string(fences) + " self-fences; writes: " + std::to_string(writes_refused) +
           " refused, " + std::to_string(write_answers_lost) + " answers lost, " +
           std::to_string(slow_writes) + " slow";
  }
};

struct ask_in_flight {
  std::string id;
  int sender;
  int n;
  std::future<tally_reply> answer;
  time_point sent_at;
};

struct told_note {
  std::string id;
  int sender;
  int n;
  time_point sent_at;
};

inline outcome simulate(std::uint64_t seed, const sim_options& opt = {}) {
  outcome out;
  std::optional<planted_switch> skip_flush;
  if (opt.plant_skip_flush)
    skip_flush.emplace(sharding::detail::planted::skip_flush_before_handoff);
  std::optional<planted_switch> out_of_order;
  if (opt.plant_bounced_out_of_order) {
    out_of_order.emplace(sharding::detail::planted::bounced_out_of_order);
  }
  std::mt19937_64 rng(seed);
  auto chance = [&](double p) { return std::uniform_real_distribution<>(0, 1)(rng) < p; };
  const std::vector<std::string> ids = {"a", "b", "c", "d", "e", "f", "g", "h"};
  sim_world w(seed);
  const int node_count = opt.nodes > 0 ? opt.nodes : 3 + static_cast<int>(rng() % 5);
  // With tells the seed also chooses the keys: Zipf (exponent 1.1: of eight ids the first takes
  // a third of the load, the last 3 %) or uniform.
  const bool uniform = opt.tells && rng() % 2 == 0;
  std::vector<double> zipf_weights;
  for (std::size_t k = 1; k <= ids.size(); ++k) zipf_weights.push_back(std::pow(k, -1.1));
  std::discrete_distribution<std::size_t> zipf(zipf_weights.begin(), zipf_weights.end());
  if (opt.faults && opt.one_way_and_store_faults) {
    w.store = std::make_shared<sim_world::store_faults>(seed);
  }
  const time_point began = w.clock->now();
  const bool verbose = std::getenv("TROUPE_SIM_VERBOSE") != nullptr;
  auto at = [&](time_point t) {  // simulated time since the run began, for the report
    return std::to_string(
               std::chrono::duration_cast<std::chrono::milliseconds>(t - began).count()) +
           " ms";
  };
  auto story = [&](const std::string& what) {  // TROUPE_SIM_VERBOSE: the world's own story
    if (!verbose) return;
    std::size_t events = 0;
    {
      std::lock_guard lock(w.log->mutex);
      events = w.log->entries.size();
    }
    std::printf("%s (before event %zu): %s\n", at(w.clock->now()).c_str(), events, what.c_str());
  };
  std::vector<ask_in_flight> asks;
  std::map<std::pair<int, std::string>, int> next;  // (sender, id) -> last n
  // (id, sender, n) -> the run of the sender's node that sent it: order holds per sender, and a
  // node's new run is another sender (a crashed run's add may arrive after the new run's).
  std::map<std::tuple<std::string, int, int>, int> run_of;
  std::vector<told_note> notes;  // every note told, in the order told
  std::map<std::pair<int, std::string>, int> next_note;
  std::map<std::tuple<std::string, int, int>, int> note_run_of;
  // When the first fault that can lose a message without a trace came (bytes on a cut link, a
  // crashed node's mailboxes): an ask whose deadline came before it must end with an answer or
  // a dead letter that says why.
  std::optional<time_point> first_lossy_fault;
  {
    testkit::simulation_guard guard;
    std::vector<std::unique_ptr<sim_member>> nodes(node_count);
    std::vector<int> incarnations(node_count, 0);
    auto start = [&](int i) {
      nodes[i] = std::make_unique<sim_member>(w, i, ++incarnations[i], opt);
    };
    for (int i = 0; i < node_count; ++i) start(i);
    // Uneven links: each direction its own delay (a heal clears it; it is set again then).
    std::map<std::pair<int, int>, duration> link_delay;
    auto slow_links = [&](int x) {
      if (!opt.moves_often) return;
      for (int y = 0; y < node_count; ++y) {
        if (y == x) continue;
        for (auto [from, to] : {std::pair{x, y}, std::pair{y, x}}) {
          auto& d = link_delay[{from, to}];
          if (d == duration{}) d = std::chrono::milliseconds(1 + rng() % 30);
          w.net->delay(address_of(from), address_of(to), 1ms, d);
        }
      }
    };
    for (int i = 0; i < node_count; ++i) slow_links(i);

    auto run_all = [&] {
      for (bool busy = true; busy;) {
        busy = false;
        for (auto& n : nodes) {
          if (n) busy = n->run() > 0 || busy;
        }
      }
      for (auto& n : nodes) {
        if (n && !n->paused) {
          n->start_when_joined(w.log, opt.planted_loss, opt.tells ? w.heard : nullptr);
        }
      }
    };
    auto step = [&](duration d) { test_time::let_time_pass(*w.clock, d, run_all); };
    // Graceful leaves: the node leaves (cluster_node::leave); once the leave is done and its own
    // asks have ended (at most 3 s more), its process ends, and it comes back 0.5 to 3 s later as
    // a new incarnation. A leaving node sends nothing more.
    struct leaving_node {
      std::shared_ptr<bool> done = std::make_shared<bool>(false);
      std::optional<time_point> ends_by;
    };
    std::vector<std::optional<leaving_node>> leaving(node_count);
    // Node `from` asks `id` to add its next number.
    auto ask_add = [&](int from, const std::string& id) {
      const int n = ++next[{from, id}];
      run_of[{id, from, n}] = incarnations[from];
      asks.push_back({id, from, n,
                      nodes[from]->region.ask<tally_reply>(tally_command{add{id, from, n, 0}}, 3s,
                                                           troupe::use_future),
                      w.clock->now()});
      ++out.asked;
    };
    // Node `from` tells tape `id` its next note.
    auto tell_note = [&](int from, const std::string& id) {
      const int n = ++next_note[{from, id}];
      note_run_of[{id, from, n}] = incarnations[from];
      nodes[from]->tape_region.tell(tape_command{note{id, from, n}});
      notes.push_back({id, from, n, w.clock->now()});
      ++out.told;
    };
    auto ask_some = [&] {
      const int from = static_cast<int>(rng() % node_count);
      if (!nodes[from] || !nodes[from]->region || nodes[from]->paused || leaving[from]) return;
      // Each node is one sender. Before the tells, half its messages went to two hot ids.
      std::size_t key = 0;
      if (!opt.tells) {
        key = chance(0.5) ? rng() % 2 : rng() % ids.size();
      } else {
        key = uniform       ? rng() % ids.size()
              : opt.zipf    ? zipf(rng)
              : chance(0.5) ? rng() % 2
                            : rng() % ids.size();
      }
      const auto& id = ids[key];
      if (opt.tells && chance(0.5)) {
        tell_note(from, id);
      } else {
        ask_add(from, id);
      }
    };
    std::vector<time_point> resume_at(node_count);
    // A paused node resumes: its time jumps first, and what it holds runs before any of its
    // timers (the fence's included) has fired; then its timers fire.
    auto resume = [&](int x) {
      story("node " + std::to_string(x) + " resumes");
      auto& n = *nodes[x];
      n.clock->resume_time();
      n.paused = false;
      w.log->record(activity::entry::resume, n.label);
      // Past its deadline now, the node is fenced from this instant: its entities read the
      // deadline on its clock before each message (node_standing), though its fence timer runs
      // only once its held timers are released below, after other nodes may have acted.
      if (n.cluster->fenced()) w.log->record(activity::entry::fence, n.label);
      run_all();
      n.clock->release();
    };
    auto resume_due = [&] {
      for (int x = 0; x < node_count; ++x) {
        if (nodes[x] && nodes[x]->paused && w.clock->now() >= resume_at[x]) resume(x);
      }
    };
    std::vector<std::optional<time_point>> rejoin_at(node_count);
    auto rejoin = [&](int x) {
      story("node " + std::to_string(x) + " starts again");
      start(x);  // back as a new incarnation
      for (int y = 0; y < node_count; ++y) {
        if (y != x) w.net->heal(address_of(x), address_of(y));
      }
      slow_links(x);
    };
    auto leave = [&](int x) {
      if (!nodes[x] || !nodes[x]->region || nodes[x]->paused || leaving[x]) return;
      leaving[x].emplace();
      nodes[x]->cluster->leave([done = leaving[x]->done](std::error_code) { *done = true; });
      story("node " + std::to_string(x) + " leaves");
      ++out.leaves;
    };
    auto asks_pending_from = [&](int x) {
      return std::any_of(asks.begin(), asks.end(), [&](const ask_in_flight& a) {
        return a.sender == x && a.answer.wait_for(0s) != std::future_status::ready;
      });
    };
    auto leaves_due = [&] {
      const auto now = w.clock->now();
      for (int x = 0; x < node_count; ++x) {
        if (!nodes[x]) leaving[x].reset();  // crashed while leaving
        if (leaving[x] && *leaving[x]->done) {
          if (!leaving[x]->ends_by) {
            leaving[x]->ends_by = now + 3s;
            story("node " + std::to_string(x) + " has left");
          }
          if (!asks_pending_from(x) || now >= *leaving[x]->ends_by) {
            story("node " + std::to_string(x) + "'s process ends");
            nodes[x].reset();
            leaving[x].reset();
            rejoin_at[x] = now + std::chrono::milliseconds(500 + rng() % 2500);
          }
        }
        if (rejoin_at[x] && now >= *rejoin_at[x]) {
          if (!nodes[x]) rejoin(x);
          rejoin_at[x].reset();
        }
      }
    };
    /// Lets `d` pass in 10 ms steps, with the leaves going on.
    auto pass = [&](duration d) {
      for (duration t{}; t < d; t += 10ms) {
        step(10ms);
        leaves_due();
      }
    };
    auto lossy = [&] {
      if (!first_lossy_fault) first_lossy_fault = w.clock->now();
    };
    auto fault = [&] {
      const int x = static_cast<int>(rng() % node_count);
      switch (rng() % 7) {
        case 0:
          if (nodes[x] && nodes[x]->region && nodes[x]->cluster->rebalance("tally")) {
            ++out.rebalances;
          }
          break;
        case 1: {
          // Both ways, or one way only (x's writes to y are lost or wait, y's to x arrive).
          const int y = (x + 1 + static_cast<int>(rng() % (node_count - 1))) % node_count;
          const bool one_way = opt.one_way_and_store_faults && chance(0.5);
          w.net->partition(
              address_of(x), address_of(y),
              one_way ? partition_direction::a_to_b : partition_direction::both,
              opt.tcp_partitions ? partition_kind::holds_writes : partition_kind::loses_writes);
          story("partition " + std::to_string(x) + (one_way ? " -> " : " | ") + std::to_string(y));
          lossy();
          ++out.partitions;
          if (one_way) ++out.one_way_partitions;
          break;
        }
        case 4:
          // Cut off etcd, both ways or only its answers, until the faults stop: past the
          // lease, the node fences itself; it is restarted then.
          if (nodes[x]) {
            if (chance(0.5)) {
              w.etcd.set_reachable(*nodes[x]->store, false);
            } else {
              w.etcd.set_answers_lost(*nodes[x]->store, true);
            }
            story("node " + std::to_string(x) + " cut from etcd");
            lossy();
            ++out.etcd_cuts;
          }
          break;
        case 2:
          for (int y = 0; y < node_count; ++y) {
            if (y != x) w.net->delay(address_of(x), address_of(y), 0ms, 20ms);
          }
          break;
        case 5:
          // A pause (a stopped process, a long GC): for 0.3 to 4 s, past its lease or not.
          if (nodes[x] && !nodes[x]->paused) {
            nodes[x]->clock->freeze();
            nodes[x]->paused = true;
            w.log->record(activity::entry::pause, nodes[x]->label);
            const auto pause = std::chrono::milliseconds(300 + rng() % 3700);
            resume_at[x] = w.clock->now() + pause;
            story("node " + std::to_string(x) + " paused until " + at(resume_at[x]));
            // Long enough for its lease to run out (the last renewal may be a third of the TTL
            // old): the cluster takes it for dead, it fences itself on resuming, and what was on
            // its connections, unread, goes with it as with a crash (seed 3003).
            if (pause >= sim_lease_ttl - sim_lease_ttl / 3) lossy();
            ++out.pauses;
          }
          break;
        case 6:
          leave(x);
          break;
        default:
          if (!nodes[x]) {
            rejoin(x);
          } else if (out.crashes < 2) {
            // A crash: gone from etcd and the network at once, then the process ends.
            w.etcd.set_reachable(*nodes[x]->store, false);
            for (int y = 0; y < node_count; ++y) {
              if (y != x) w.net->partition(address_of(x), address_of(y));
            }
            nodes[x]->crashed = true;
            nodes[x].reset();
            story("node " + std::to_string(x) + " crashed");
            lossy();
            ++out.crashes;
          }
      }
    };

    step(3s);  // everyone joins, "tally" starts on every node
    if (w.store) w.store->on = true;
    for (int i = 0; i < 1500; ++i) {
      ask_some();
      if (chance(0.006) && opt.faults) fault();
      // Without faults, one graceful leave (and the node's return) is part of the moves.
      if (!opt.faults && i == 300) leave(static_cast<int>(seed % node_count));
      resume_due();
      leaves_due();
      if (opt.moves_often && i % 50 == 0) {
        const int x = (i / 50) % node_count;
        if (nodes[x] && nodes[x]->region) (void)nodes[x]->cluster->rebalance("tally");
      }
      step(2ms);
    }
    // The faults and the churn stop: partitions heal, etcd answers everyone, crashed, fenced and
    // left nodes come back (an application restarts a node that fenced itself), asks time out
    // or answer; the store's writes are sound again.
    w.net->heal_all();
    if (w.store) w.store->on = false;
    for (int x = 0; x < node_count; ++x) {
      if (nodes[x] && nodes[x]->paused) resume(x);
    }
    for (auto& n : nodes) {
      if (!n) continue;
      w.etcd.set_reachable(*n->store, true);
      w.etcd.set_answers_lost(*n->store, false);
    }
    // A node cut off until now may still fence itself (its lease ran out meanwhile); a leave
    // under way ends (its hand-offs wait at most the leave timeout, 4 s).
    pass(6s);
    for (int i = 0; i < node_count; ++i) {
      if (nodes[i] && nodes[i]->cluster->fenced()) nodes[i].reset();
      if (!nodes[i]) rejoin(i);
      rejoin_at[i].reset();
    }
    *w.churning = false;
    step(15s);
    // Liveness: once quiet, every node's adds to every id are acknowledged.
    const std::size_t tail_from = asks.size();
    const std::size_t notes_from = notes.size();
    for (int from = 0; from < node_count; ++from) {
      for (const auto& id : ids) {
        ask_add(from, id);
        if (opt.tells) tell_note(from, id);
      }
    }
    step(5s);
    for (std::size_t i = tail_from; i < asks.size(); ++i) {
      if (asks[i].answer.wait_for(0s) != std::future_status::ready) {
        out.problems.push_back("after the faults, " + asks[i].id + " from node " +
                               std::to_string(asks[i].sender) + " got no answer");
      }
    }
    for (std::size_t i = notes_from; i < notes.size(); ++i) {
      const auto& t = notes[i];
      const bool heard = std::any_of(w.heard->begin(), w.heard->end(), [&](const note& h) {
        return h.id == t.id && h.sender == t.sender && h.n == t.n;
      });
      if (!heard) {
        const auto dead = w.dead_notes->find({t.id, t.sender, t.n});
        out.problems.push_back(
            tape_key(t.id) + ": after the faults, note " + std::to_string(t.sender) + ":" +
            std::to_string(t.n) + " was not heard within 5 s" +
            (dead != w.dead_notes->end() ? " (a dead letter: " + dead->second + ")" : ""));
      }
    }
    out.violations = guard.violations();
    for (auto& n : nodes) n.reset();
  }

  // The checks, after the run (reading the journal may use threads).
  for (auto& p : stale_activations(*w.log)) out.problems.push_back(std::move(p));
  for (auto& p : journal_faults(w.journal, ids)) out.problems.push_back(std::move(p));
  // Every acknowledged add is in its entity's state as the last answers after the faults show
  // it, and each sender's adds are there in the order it sent them.
  std::map<std::string, std::set<std::pair<int, int>>> acknowledged;
  std::map<std::string, tallied> final_state;
  std::vector<std::optional<troupe::error>> failures(asks.size());
  for (std::size_t i = 0; i < asks.size(); ++i) {
    auto& a = asks[i];
    if (a.answer.wait_for(0s) != std::future_status::ready) {
      out.problems.push_back("an ask never ended: " + a.id);
      continue;
    }
    try {
      const tally_reply r = a.answer.get();
      acknowledged[a.id].insert({a.sender, a.n});
      ++out.acknowledged;
      auto& f = final_state[a.id];
      // The answer to an add is the state with that add in it; any other is someone else's.
      bool has_it = false;
      for (std::size_t k = 0; k < r.state.ns.size() && !has_it; ++k) {
        has_it = r.state.senders[k] == a.sender && r.state.ns[k] == a.n;
      }
      if (!has_it) {
        out.problems.push_back("the answer to " + a.id + "'s add " + std::to_string(a.sender) +
                               ":" + std::to_string(a.n) + " (sent at " + at(a.sent_at) +
                               ", answered by " + r.label + ") does not hold that add");
        continue;
      }
      if (r.state.ns.size() > f.ns.size()) f = r.state;
    } catch (const troupe::error& e) {
      failures[i] = e;
    }
  }
  std::map<std::string, std::set<std::pair<int, int>>> applied;
  for (const auto& [id, f] : final_state) {
    for (std::size_t i = 0; i < f.ns.size(); ++i) applied[id].insert({f.senders[i], f.ns[i]});
  }
  for (std::size_t i = 0; i < asks.size(); ++i) {
    if (!failures[i]) continue;
    const auto& a = asks[i];
    const troupe::error& e = *failures[i];
    // Not acknowledged (it may or may not have been applied): on a graceful path that is a
    // loss. On a faulty one it must be accounted for: a dead letter that says why, or a
    // failure that tells the asker why (its recipient's node left, the node fenced itself, the
    // store failed); silence (a timeout) only when a fault that leaves no trace came before its
    // deadline, or when the add was applied after all (a slow write: late, not lost).
    const std::string what = a.id + " from node " + std::to_string(a.sender) + " (add " +
                             std::to_string(a.n) + ", sent at " + at(a.sent_at) +
                             ") failed: " + e.what();
    const auto dead = w.dead->find({a.id, a.sender, a.n});
    const bool traceless_fault = first_lossy_fault && *first_lossy_fault <= a.sent_at + 3s;
    const bool silent = e.code() == troupe::errc::ask_timeout;
    const bool late = applied[a.id].contains({a.sender, a.n});
    if (silent) ++out.timed_out;
    if (!opt.faults) {
      out.problems.push_back("on a graceful path, " + what);
    } else if (dead == w.dead->end() && silent && !traceless_fault && !late) {
      out.problems.push_back("lost with no dead letter and no fault to blame: " + what);
    } else if (dead != w.dead->end() && dead->second.empty()) {
      out.problems.push_back("a dead letter with no reason: " + what);
    }
  }
  out.dead_letters = w.dead->size() + w.dead_notes->size();
  // Each note is heard at most once, after its sender's earlier notes (per run of the sender's
  // node); one never heard is accounted for as an unanswered add is, less the asker's part.
  std::set<std::tuple<std::string, int, int>> heard;
  std::map<std::tuple<std::string, int, int>, int> last_note;  // (id, sender, run) -> highest
  for (const note& h : *w.heard) {
    ++out.heard;
    const std::string who =
        tape_key(h.id) + ": sender " + std::to_string(h.sender) + "'s note " + std::to_string(h.n);
    if (!heard.insert({h.id, h.sender, h.n}).second) out.problems.push_back(who + " heard twice");
    int& highest = last_note[{h.id, h.sender, note_run_of[{h.id, h.sender, h.n}]}];
    if (h.n < highest) {
      out.problems.push_back(who + " heard after its note " + std::to_string(highest));
    }
    highest = std::max(highest, h.n);
  }
  for (const auto& t : notes) {
    if (heard.contains({t.id, t.sender, t.n})) continue;
    const std::string what = tape_key(t.id) + ": note " + std::to_string(t.sender) + ":" +
                             std::to_string(t.n) + " (sent at " + at(t.sent_at) +
                             ") was never heard";
    const auto dead = w.dead_notes->find({t.id, t.sender, t.n});
    const bool traceless_fault = first_lossy_fault && *first_lossy_fault <= t.sent_at + 3s;
    if (!opt.faults) {
      out.problems.push_back(what + " on a graceful path" +
                             (dead != w.dead_notes->end() ? ": " + dead->second : ""));
    } else if (dead == w.dead_notes->end() && !traceless_fault) {
      out.problems.push_back(what + ", with no dead letter and no fault to blame");
    } else if (dead != w.dead_notes->end() && dead->second.empty()) {
      out.problems.push_back(what + ": a dead letter with no reason");
    }
  }
  for (const auto& [id, acks] : acknowledged) {
    const tallied& f = final_state[id];
    std::map<std::pair<int, int>, int> last;  // (sender, run) -> its highest add applied
    for (std::size_t i = 0; i < f.ns.size(); ++i) {
      int& highest = last[{f.senders[i], run_of[{id, f.senders[i], f.ns[i]}]}];
      if (f.ns[i] <= highest) {
        out.problems.push_back(id + ": sender " + std::to_string(f.senders[i]) + "'s add " +
                               std::to_string(f.ns[i]) + " applied after its add " +
                               std::to_string(highest));
      }
      highest = std::max(highest, f.ns[i]);
    }
    for (const auto& [sender, n] : acks) {
      if (!applied[id].contains({sender, n})) {
        out.problems.push_back(id + ": sender " + std::to_string(sender) + "'s add " +
                               std::to_string(n) + " was acknowledged and is gone");
      }
    }
  }
  if (verbose) {  // each problem with its entity's history (the problem names the id first)
    for (const auto& p : out.problems) {
      const auto skip = p.starts_with("tape:") ? 5 : 0;  // "tape:<id>: ..." names tape <id>
      std::printf("%s\n%s", p.c_str(),
                  w.log->history(p.substr(0, p.find_first_of(" :", skip))).c_str());
    }
  }
  test::trace_hash hash;
  std::set<std::string> fenced;  // a node resumed past its deadline has two fence entries
  for (const auto& e : w.log->entries) {
    if (e.what == activity::entry::fence && fenced.insert(e.label).second) ++out.fences;
    if (e.what == activity::entry::start) ++out.activations;
    hash.add(std::to_string(static_cast<int>(e.what)) + e.label + e.id + e.detail);
  }
  out.trace_hash = hash.value();
  if (w.store) {
    out.writes_refused = w.store->refused;
    out.write_answers_lost = w.store->answers_lost;
    out.slow_writes = w.store->slow;
  }
  return out;
}

inline std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (std::size_t i = 0; i < lines.size() && i < 20; ++i) s += "\n  " + lines[i];
  return s;
}

}  // namespace troupe::cluster::tally_test
