// Whole actor systems with their remoting, on one thread and one manual clock: the base of the
// data-plane simulation (docs/simulation.md). Three nodes on the memory network with seeded
// delays, connection resets and partitions; every node tells numbered messages to a recorder on
// every node. Checks: each sender's messages arrive in order and at most once, all of them when
// no fault cut a stream; after the faults heal, what is sent arrives; one seed gives one trace;
// and nothing starts a thread or reads a real clock (testkit::simulation_guard).

#include <troupe/cluster/memory_network.hpp>
#include <troupe/cluster/remote_node.hpp>
#include <troupe/core/actor_system.hpp>
#include <troupe/testkit/simulation_guard.hpp>

#include "support/manual_time.hpp"
#include "support/trace_hash.hpp"

#include <boost/describe/class.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace troupe::cluster {
namespace {

using namespace std::chrono_literals;

struct numbered {
  int sender = 0;
  int n = 0;
};
BOOST_DESCRIBE_STRUCT(numbered, (), (sender, n))

/// What a recorder received, in the order it did.
struct delivery {
  int receiver = 0;
  int sender = 0;
  int n = 0;
  time_point at;
};

/// A bug a test plants on purpose, to show the checker finds it.
enum class planted { none, duplicate_a_delivery, swap_two_deliveries };

class recorder final : public actor<numbered> {
 public:
  recorder(int self, std::vector<delivery>* log, planted bug) : self_(self), log_(log), bug_(bug) {}
  void receive(numbered& m) override {
    const delivery d{self_, m.sender, m.n, context().system().clock().now()};
    ++received_;
    if (bug_ == planted::duplicate_a_delivery && received_ == 50) log_->push_back(d);
    if (bug_ == planted::swap_two_deliveries && received_ == 50) {
      held_ = d;  // recorded after the next one
      return;
    }
    log_->push_back(d);
    if (held_) log_->push_back(*std::exchange(held_, std::nullopt));
  }

 private:
  int self_;
  std::vector<delivery>* log_;  // one thread runs every node: no lock
  planted bug_;
  int received_ = 0;
  std::optional<delivery> held_;
};

constexpr int node_count = 3;

node_address address_of(int i) { return {"sim-" + std::to_string(i), 2550}; }

struct sim_node {
  actor_system system;
  std::unique_ptr<remote_node> remote;

  sim_node(int i, std::uint64_t seed, const std::shared_ptr<manual_clock>& clock,
           const std::shared_ptr<memory_network>& net, std::vector<delivery>* log, planted bug)
      : system(system_config{}
                   .with_name("sim-" + std::to_string(i))
                   .with_manual_scheduling()
                   .with_clock(clock)) {
    auto registry = std::make_shared<message_registry>();
    registry->add<numbered>("numbered");
    remote = std::make_unique<remote_node>(
        system, remote_options{}
                    .with_registry(std::move(registry))
                    .with_transport([net](boost::asio::any_io_executor ex) {
                      return net->make_transport(std::move(ex));
                    })
                    .with_bind(address_of(i))
                    .with_heartbeat(100ms, 600ms)
                    .with_reconnect_backoff(20ms, 200ms)
                    .with_system_io()
                    .with_incarnation(seed * node_count + static_cast<std::uint64_t>(i) + 1));
    remote->expose(system.spawn<recorder>("recorder", i, log, bug));
  }
  ~sim_node() {
    remote->shutdown();
    system.terminate();
    system.await_termination();
  }
  sim_node(const sim_node&) = delete;
  sim_node& operator=(const sim_node&) = delete;
};

struct outcome {
  std::vector<std::string> violations;
  std::vector<std::string> problems;  // order, duplicates, losses
  std::uint64_t trace_hash = 0;
  std::size_t sent = 0;
  std::size_t delivered = 0;
  int faults = 0;
};

/// One seeded run: 600 ms of traffic under faults, then healing, then 400 ms of traffic that
/// must all arrive, then 2 s to settle.
outcome simulate(std::uint64_t seed, planted bug = planted::none) {
  outcome out;
  testkit::simulation_guard guard;
  std::mt19937_64 rng(seed);
  auto chance = [&](double p) { return std::uniform_real_distribution<>(0, 1)(rng) < p; };
  auto clock = std::make_shared<manual_clock>();
  auto net = std::make_shared<memory_network>(seed, clock);
  std::vector<delivery> log;
  {
    std::vector<std::unique_ptr<sim_node>> nodes;
    for (int i = 0; i < node_count; ++i) {
      nodes.push_back(std::make_unique<sim_node>(i, seed, clock, net, &log, bug));
    }
    for (int a = 0; a < node_count; ++a) {
      for (int b = 0; b < node_count; ++b) {
        if (a != b)
          net->delay(address_of(a), address_of(b), 0ms, std::chrono::milliseconds(rng() % 15));
      }
    }
    // refs[a][b]: node a's ref to b's recorder (local for a == b).
    std::vector<std::vector<actor_ref<numbered>>> refs(node_count);
    for (int a = 0; a < node_count; ++a) {
      for (int b = 0; b < node_count; ++b) {
        refs[a].push_back(nodes[a]->remote->ref_to<numbered>(address_of(b), "/user/recorder"));
      }
    }
    // sent[a][b]: the numbers a told b, in order; cut[a][b]: a fault may have lost some.
    std::vector<std::vector<std::vector<int>>> sent(node_count,
                                                    std::vector<std::vector<int>>(node_count));
    std::vector<std::vector<bool>> cut(node_count, std::vector<bool>(node_count, false));
    std::vector<int> next(node_count * node_count, 0);
    auto run_all = [&] {
      for (bool busy = true; busy;) {
        busy = false;
        for (auto& n : nodes) busy = n->system.run_until_idle() > 0 || busy;
      }
    };
    auto step = [&](duration d) { test_time::let_time_pass(*clock, d, run_all); };
    auto tell_some = [&](bool faults_on) {
      const int a = static_cast<int>(rng() % node_count);
      const int b = static_cast<int>(rng() % node_count);
      const int n = next[a * node_count + b]++;
      sent[a][b].push_back(n);
      refs[a][b].tell(numbered{a, n});
      if (!faults_on) return;
      if (chance(0.01)) {
        const int x = static_cast<int>(rng() % node_count);
        const int y = (x + 1 + static_cast<int>(rng() % (node_count - 1))) % node_count;
        ++out.faults;
        if (chance(0.5)) {
          net->disconnect(address_of(x), address_of(y));
        } else {
          net->partition(address_of(x), address_of(y));
        }
        cut[x][y] = cut[y][x] = true;
      } else if (chance(0.01)) {
        net->heal_all();
      }
    };
    for (int i = 0; i < 600; ++i) {
      tell_some(true);
      step(1ms);
    }
    net->heal_all();
    step(2s);  // heartbeats notice the partitions that cut streams; backoff reconnects
    const auto tail_from = next;
    for (int i = 0; i < 400; ++i) {
      tell_some(false);
      step(1ms);
    }
    step(2s);

    // Each sender's messages to each recipient: strictly increasing (order, no duplicate);
    // all of them without a cut; every one sent after the healing.
    std::map<std::pair<int, int>, std::vector<int>> got;
    for (const auto& d : log) got[{d.sender, d.receiver}].push_back(d.n);
    for (int a = 0; a < node_count; ++a) {
      for (int b = 0; b < node_count; ++b) {
        const auto& g = got[{a, b}];
        out.sent += sent[a][b].size();
        out.delivered += g.size();
        const std::string link = std::to_string(a) + "->" + std::to_string(b);
        if (!std::is_sorted(g.begin(), g.end()) ||
            std::adjacent_find(g.begin(), g.end()) != g.end()) {
          out.problems.push_back(link + ": out of order or duplicated");
        }
        if (!cut[a][b] && g.size() != sent[a][b].size()) {
          out.problems.push_back(link + ": lost " + std::to_string(sent[a][b].size() - g.size()) +
                                 " without a fault on the link");
        }
        const int tail = tail_from[a * node_count + b];
        const auto tail_got = std::count_if(g.begin(), g.end(), [&](int n) { return n >= tail; });
        if (static_cast<std::size_t>(tail_got) != sent[a][b].size() - tail) {
          out.problems.push_back(link + ": lost messages sent after the healing");
        }
      }
    }
  }
  test::trace_hash hash;
  for (const auto& d : log) {
    hash.add((static_cast<std::uint64_t>(d.receiver) << 56U) ^
             (static_cast<std::uint64_t>(d.sender) << 48U) ^ static_cast<std::uint64_t>(d.n));
    hash.add(static_cast<std::uint64_t>(d.at.time_since_epoch().count()));
  }
  out.trace_hash = hash.value();
  out.violations = guard.violations();
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += "\n  " + l;
  return s;
}

TEST(SimulatedNodes, SeededFaultsKeepEachSendersOrderAndLoseNothingOnHealthyLinks) {
  std::size_t sent = 0;
  std::size_t delivered = 0;
  int faults = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const outcome o = simulate(seed);
    EXPECT_TRUE(o.problems.empty()) << "seed " << seed << ":" << joined(o.problems);
    EXPECT_TRUE(o.violations.empty())
        << "seed " << seed << " left the simulation:" << joined(o.violations);
    sent += o.sent;
    delivered += o.delivered;
    faults += o.faults;
  }
  EXPECT_GT(faults, 10);       // the schedule did cut links
  EXPECT_LT(delivered, sent);  // and some cut lost messages on the way
  std::printf("20 seeds: %zu sent, %zu delivered, %d faults\n", sent, delivered, faults);
}

TEST(SimulatedNodes, OneSeedGivesOneTrace) {
  const outcome first = simulate(7);
  const outcome second = simulate(7);
  EXPECT_NE(first.trace_hash, 0U);
  EXPECT_EQ(first.trace_hash, second.trace_hash);
  EXPECT_EQ(first.delivered, second.delivered);
  EXPECT_NE(simulate(8).trace_hash, first.trace_hash);
}

// The order checker's own test: a recorder that records one delivery twice, or two in the
// wrong order, fails the run.
TEST(SimulatedNodes, TheCheckerFindsPlantedDuplicatesAndSwaps) {
  for (const planted bug : {planted::duplicate_a_delivery, planted::swap_two_deliveries}) {
    const outcome o = simulate(1, bug);
    ASSERT_FALSE(o.problems.empty()) << "planted bug " << static_cast<int>(bug) << " not found";
    EXPECT_NE(o.problems.front().find("out of order or duplicated"), std::string::npos)
        << joined(o.problems);
  }
}

// The guard's own test: a planted escape from the simulation (a remoting with its own I/O
// thread, a system with workers and a real clock) is reported.
TEST(SimulatedNodes, TheGuardReportsThreadsAndRealClocks) {
  testkit::simulation_guard guard;
  {
    auto net = std::make_shared<memory_network>(1, std::make_shared<manual_clock>());
    auto registry = std::make_shared<message_registry>();
    registry->add<numbered>("numbered");
    actor_system threaded(system_config{}.with_name("escapee").with_workers(1));
    remote_node remote(threaded, remote_options{}
                                     .with_registry(registry)
                                     .with_transport([net](boost::asio::any_io_executor ex) {
                                       return net->make_transport(std::move(ex));
                                     })
                                     .with_bind(address_of(9)));
    const auto v = guard.violations();
    const std::string all = joined(v);
    EXPECT_NE(all.find("a real clock's timer thread"), std::string::npos) << all;
    EXPECT_NE(all.find("a scheduler worker thread"), std::string::npos) << all;
    EXPECT_NE(all.find("the actor system's I/O thread"), std::string::npos) << all;
    EXPECT_NE(all.find("the remoting's I/O thread"), std::string::npos) << all;
    EXPECT_NE(all.find("a thread started since the guard"), std::string::npos) << all;
    remote.shutdown();
  }
}

}  // namespace
}  // namespace troupe::cluster
