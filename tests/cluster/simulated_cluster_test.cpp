// Whole cluster nodes on one thread and one manual clock: each node is a real actor system with
// its remoting, cluster_node (lease keeper, coordinator runner, placement) and the "tally"
// persistent entity in a real region, over the memory network, the in-process etcd model and
// one memory journal. The seed decides the load (asks from every node to hot and cold ids) and
// the faults: rebalances, partitions between nodes, link delays, crashes and restarts (a new
// incarnation). Checks: no stale activation (tally_world's checker), a sound journal, every
// acknowledged add journaled, each sender's adds in order, the cluster serving again once the
// faults stop, one seed one trace, and nothing leaves the simulation (simulation_guard).

#include <troupe/testkit/simulation_guard.hpp>

#include "support/manual_time.hpp"
#include "support/tally_world.hpp"
#include "support/trace_hash.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace troupe::cluster::tally_test {
namespace {

constexpr int node_count = 3;

node_address address_of(int i) { return {"node-" + std::to_string(i), 2550}; }
std::string name_of(int i) { return "node-" + std::to_string(i); }

/// What every node shares; the driver polls `io` (the etcd model's client executor).
struct sim_world {
  explicit sim_world(std::uint64_t seed)
      : net(std::make_shared<memory_network>(seed, clock)), etcd(clock) {}
  boost::asio::io_context io;
  std::shared_ptr<manual_clock> clock = std::make_shared<manual_clock>();
  std::shared_ptr<memory_network> net;
  in_process_etcd etcd;
  std::shared_ptr<tp::memory_storage> journal = tp::make_memory_storage();
  std::shared_ptr<activity> log = std::make_shared<activity>();
};

/// One incarnation of a node, its actor system scheduled by hand.
struct sim_member {
  sim_member(sim_world& w, int index, int incarnation)
      : label(name_of(index) + "#" + std::to_string(incarnation)),
        system(system_config{}
                   .with_name(name_of(index))
                   .with_manual_scheduling()
                   .with_clock(w.clock)) {
    remote = std::make_unique<remote_node>(
        system, remote_options{}
                    .with_registry(registry())
                    .with_transport([net = w.net](boost::asio::any_io_executor ex) {
                      return net->make_transport(std::move(ex));
                    })
                    .with_bind(address_of(index))
                    .with_heartbeat(100ms, 600ms)
                    .with_reconnect_backoff(20ms, 200ms)
                    .with_system_io()
                    .with_incarnation(static_cast<std::uint64_t>(index * 1000 + incarnation)));
    auto& persistence = tp::get(system);
    persistence.codecs().add<added>("test.faults.added").add<tallied>("test.faults.tallied");
    persistence.set_default_plugin(tp::make_memory_plugin(w.journal));
    store = w.etcd.client(w.io.get_executor());
    auto options = cluster_node_options{}
                       .with_cluster_name("faults")
                       .with_node(name_of(index))
                       .with_lease_ttl(2s)
                       .with_rebalance_interval(1s)
                       .with_handoff_timeout(2s);
    options.lease_margin = 500ms;
    options.retry = 50ms;
    options.on_fenced = [log = w.log, l = label](const std::string&) {
      log->record(activity::entry::fence, l);
    };
    cluster = cluster_node::join(system, cluster_sharding::get(system), *remote, store,
                                 std::move(options), w.clock);
  }
  ~sim_member() {
    cluster.reset();
    remote->shutdown();
    system.terminate();
    system.await_termination();
  }
  sim_member(const sim_member&) = delete;
  sim_member& operator=(const sim_member&) = delete;

  /// Starts "tally" once the node has joined; true once it has.
  bool start_when_joined(const std::shared_ptr<activity>& log, bool planted_loss) {
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
    return true;
  }

  std::string label;
  actor_system system;
  std::unique_ptr<remote_node> remote;
  std::shared_ptr<consensus_store> store;
  std::shared_ptr<cluster_node> cluster;
  troupe::actor_ref<tally_command> region;
};

struct outcome {
  std::vector<std::string> problems;
  std::vector<std::string> violations;
  std::uint64_t trace_hash = 0;
  std::size_t asked = 0;
  std::size_t acknowledged = 0;
  int crashes = 0;
  int rebalances = 0;
  int partitions = 0;
  int etcd_cuts = 0;
  int fences = 0;
};

struct ask_in_flight {
  std::string id;
  int sender;
  int n;
  std::future<tally_reply> answer;
};

outcome simulate(std::uint64_t seed, bool planted_loss = false) {
  outcome out;
  std::mt19937_64 rng(seed);
  auto chance = [&](double p) { return std::uniform_real_distribution<>(0, 1)(rng) < p; };
  const std::vector<std::string> ids = {"a", "b", "c", "d", "e", "f", "g", "h"};
  sim_world w(seed);
  std::vector<ask_in_flight> asks;
  std::map<std::pair<int, std::string>, int> next;  // (sender, id) -> last n
  {
    testkit::simulation_guard guard;
    std::vector<std::unique_ptr<sim_member>> nodes(node_count);
    std::vector<int> incarnations(node_count, 0);
    auto start = [&](int i) { nodes[i] = std::make_unique<sim_member>(w, i, ++incarnations[i]); };
    for (int i = 0; i < node_count; ++i) start(i);

    auto run_all = [&] {
      for (bool busy = true; busy;) {
        busy = false;
        w.io.restart();
        busy = w.io.poll() > 0;
        for (auto& n : nodes) {
          if (n) busy = n->system.run_until_idle() > 0 || busy;
        }
      }
      for (auto& n : nodes) {
        if (n) n->start_when_joined(w.log, planted_loss);
      }
    };
    auto step = [&](duration d) { test_time::let_time_pass(*w.clock, d, run_all); };
    auto ask_some = [&] {
      const int from = static_cast<int>(rng() % node_count);
      if (!nodes[from] || !nodes[from]->region) return;
      // Each node is one sender; half its adds go to two hot ids.
      const auto& id = ids[chance(0.5) ? rng() % 2 : rng() % ids.size()];
      const int n = ++next[{from, id}];
      asks.push_back({id, from, n,
                      nodes[from]->region.ask<tally_reply>(tally_command{add{id, from, n, 0}}, 3s,
                                                           troupe::use_future)});
      ++out.asked;
    };
    auto fault = [&] {
      const int x = static_cast<int>(rng() % node_count);
      switch (rng() % 5) {
        case 0:
          if (nodes[x] && nodes[x]->region && nodes[x]->cluster->rebalance("tally")) {
            ++out.rebalances;
          }
          break;
        case 1: {
          const int y = (x + 1 + static_cast<int>(rng() % (node_count - 1))) % node_count;
          w.net->partition(address_of(x), address_of(y));
          ++out.partitions;
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
            ++out.etcd_cuts;
          }
          break;
        case 2:
          for (int y = 0; y < node_count; ++y) {
            if (y != x) w.net->delay(address_of(x), address_of(y), 0ms, 20ms);
          }
          break;
        default:
          if (!nodes[x]) {
            start(x);  // back as a new incarnation
            for (int y = 0; y < node_count; ++y) {
              if (y != x) w.net->heal(address_of(x), address_of(y));
            }
          } else if (out.crashes < 2) {
            // A crash: gone from etcd and the network at once, then the process ends.
            w.etcd.set_reachable(*nodes[x]->store, false);
            for (int y = 0; y < node_count; ++y) {
              if (y != x) w.net->partition(address_of(x), address_of(y));
            }
            nodes[x].reset();
            ++out.crashes;
          }
      }
    };

    step(3s);  // everyone joins, "tally" starts on every node
    for (int i = 0; i < 1500; ++i) {
      ask_some();
      if (chance(0.006)) fault();
      step(2ms);
    }
    // The faults stop: partitions heal, etcd answers everyone, crashed and fenced nodes come
    // back (an application restarts a node that fenced itself), asks time out or answer.
    w.net->heal_all();
    for (auto& n : nodes) {
      if (!n) continue;
      w.etcd.set_reachable(*n->store, true);
      w.etcd.set_answers_lost(*n->store, false);
    }
    step(3s);  // a node cut off until now may still fence itself: its lease ran out meanwhile
    for (int i = 0; i < node_count; ++i) {
      if (nodes[i] && nodes[i]->cluster->fenced()) nodes[i].reset();
      if (!nodes[i]) {
        start(i);
        for (int y = 0; y < node_count; ++y) {
          if (y != i) w.net->heal(address_of(i), address_of(y));
        }
      }
    }
    step(15s);
    // Liveness: once quiet, every node's adds to every id are acknowledged.
    const std::size_t tail_from = asks.size();
    for (int from = 0; from < node_count; ++from) {
      for (const auto& id : ids) {
        const int n = ++next[{from, id}];
        asks.push_back({id, from, n,
                        nodes[from]->region.ask<tally_reply>(tally_command{add{id, from, n, 0}}, 3s,
                                                             troupe::use_future)});
      }
    }
    step(5s);
    for (std::size_t i = tail_from; i < asks.size(); ++i) {
      if (asks[i].answer.wait_for(0s) != std::future_status::ready) {
        out.problems.push_back("after the faults, " + asks[i].id + " from node " +
                               std::to_string(asks[i].sender) + " got no answer");
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
      if (r.state.ns.size() > f.ns.size()) f = r.state;
    } catch (const std::exception&) {
      // not acknowledged: it may or may not have been applied
    }
  }
  for (const auto& [id, acks] : acknowledged) {
    const tallied& f = final_state[id];
    std::set<std::pair<int, int>> applied;
    std::map<int, int> last;
    for (std::size_t i = 0; i < f.ns.size(); ++i) {
      applied.insert({f.senders[i], f.ns[i]});
      if (f.ns[i] <= last[f.senders[i]]) {
        out.problems.push_back(id + ": sender " + std::to_string(f.senders[i]) + "'s add " +
                               std::to_string(f.ns[i]) + " applied after its add " +
                               std::to_string(last[f.senders[i]]));
      }
      last[f.senders[i]] = std::max(last[f.senders[i]], f.ns[i]);
    }
    for (const auto& [sender, n] : acks) {
      if (!applied.contains({sender, n})) {
        out.problems.push_back(id + ": sender " + std::to_string(sender) + "'s add " +
                               std::to_string(n) + " was acknowledged and is gone");
      }
    }
  }
  test::trace_hash hash;
  for (const auto& e : w.log->entries) {
    if (e.what == activity::entry::fence) ++out.fences;
    hash.add(std::to_string(static_cast<int>(e.what)) + e.label + e.id + e.detail);
  }
  out.trace_hash = hash.value();
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (std::size_t i = 0; i < lines.size() && i < 20; ++i) s += "\n  " + lines[i];
  return s;
}

TEST(SimulatedCluster, SeededFaultsKeepOneActivationTheJournalAndEachSendersOrder) {
  int crashes = 0;
  int rebalances = 0;
  int partitions = 0;
  int etcd_cuts = 0;
  int fences = 0;
  std::size_t acknowledged = 0;
  std::size_t asked = 0;
  // TROUPE_SIM_SEEDS runs more (a longer campaign by hand).
  const char* more = std::getenv("TROUPE_SIM_SEEDS");
  const std::uint64_t seeds = more != nullptr ? std::strtoull(more, nullptr, 10) : 5;
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    const outcome o = simulate(seed);
    EXPECT_TRUE(o.problems.empty()) << "seed " << seed << ":" << joined(o.problems);
    EXPECT_TRUE(o.violations.empty())
        << "seed " << seed << " left the simulation:" << joined(o.violations);
    crashes += o.crashes;
    rebalances += o.rebalances;
    partitions += o.partitions;
    etcd_cuts += o.etcd_cuts;
    fences += o.fences;
    acknowledged += o.acknowledged;
    asked += o.asked;
  }
  std::printf(
      "%llu seeds: %zu asked, %zu acknowledged; %d crashes, %d rebalances, %d partitions, %d "
      "cuts from etcd, %d self-fences\n",
      static_cast<unsigned long long>(seeds), asked, acknowledged, crashes, rebalances, partitions,
      etcd_cuts, fences);
}

// The loss checker's own test: an entity that acknowledges an add without persisting it.
TEST(SimulatedCluster, TheCheckerFindsAPlantedLostAcknowledgement) {
  const outcome o = simulate(1, true);
  ASSERT_FALSE(o.problems.empty()) << "the planted loss was not found at seed 1";
  EXPECT_NE(joined(o.problems).find("was acknowledged and is gone"), std::string::npos)
      << joined(o.problems);
}

TEST(SimulatedCluster, OneSeedGivesOneTrace) {
  const outcome first = simulate(3);
  const outcome second = simulate(3);
  EXPECT_EQ(first.trace_hash, second.trace_hash);
  EXPECT_EQ(first.acknowledged, second.acknowledged);
}

}  // namespace
}  // namespace troupe::cluster::tally_test
