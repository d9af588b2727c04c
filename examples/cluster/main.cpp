// Three nodes of one cluster in one process, and one of them crashing (in production each node
// is its own process, usually on its own machine, and etcd is a real etcd):
//
//   * each node is an actor system with its remoting over TCP on 127.0.0.1 and a cluster_node
//     joined to etcd, here the in-process model of it;
//   * `account` is a persistent entity sharded over the three nodes; the nodes share one journal
//     (in memory here; PostgreSQL in production);
//   * deposits go to twelve accounts through node a's region, and every reply names the node that
//     holds the account;
//   * node c crashes: it loses etcd and the network at once, without leaving. It fences itself
//     before its lease can run out; when the lease runs out, its shards are allocated to a and b,
//     and every account it held answers again from there with the balance it had persisted.
//
// Exits with 1 when an account is not found again, or its balance is not the persisted one.

#include <troupe/cluster/cluster_messages.hpp>
#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/cluster/remote_node.hpp>
#include <troupe/cluster/tcp_transport.hpp>
#include <troupe/core/actor_system.hpp>
#include <troupe/persistence/memory_plugin.hpp>
#include <troupe/persistence/persistence_extension.hpp>
#include <troupe/persistence/persistent_entity.hpp>
#include <troupe/sharding/cluster_sharding.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/describe/class.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

using namespace std::chrono_literals;
namespace tc = troupe::cluster;
namespace tp = troupe::persistence;

namespace {

// -- the account: one event, one state, two commands ----------------------------------------------

struct deposited {
  std::int64_t amount = 0;
};
BOOST_DESCRIBE_STRUCT(deposited, (), (amount))

struct balance {
  std::int64_t amount = 0;
};
BOOST_DESCRIBE_STRUCT(balance, (), (amount))

struct deposit {
  std::string owner;
  std::int64_t amount = 0;
};
BOOST_DESCRIBE_STRUCT(deposit, (), (owner, amount))
struct get_balance {
  std::string owner;
};
BOOST_DESCRIBE_STRUCT(get_balance, (), (owner))
using account_command = std::variant<deposit, get_balance>;

/// The answer to every command: the balance, and the node whose entity answered.
struct receipt {
  std::int64_t balance = 0;
  std::string node;
};
BOOST_DESCRIBE_STRUCT(receipt, (), (balance, node))

class account final : public tp::persistent_entity<account_command, deposited, balance> {
 public:
  explicit account(std::string node) : node_(std::move(node)) {}

 private:
  effect_type on_command(const balance& s, account_command& cmd) override {
    auto answer = [node = node_](const balance& now) { return receipt{now.amount, node}; };
    return std::visit(troupe::overloaded{
                          [&](const deposit& d) -> effect_type {
                            return persist(deposited{d.amount}).then_reply(answer);
                          },
                          [&](const get_balance&) -> effect_type { return reply(answer(s)); },
                      },
                      cmd);
  }
  balance apply(balance s, const deposited& e) const override {
    s.amount += e.amount;
    return s;
  }
  std::string node_;
};

// -- a node ---------------------------------------------------------------------------------------

/// Runs the handlers of the nodes' etcd clients, as a node's I/O thread would.
class io_thread {
 public:
  io_thread() : guard_(io_.get_executor()), thread_([this] { io_.run(); }) {}
  ~io_thread() {
    io_.stop();
    thread_.join();
  }
  boost::asio::any_io_executor executor() { return io_.get_executor(); }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::thread thread_;
};

std::shared_ptr<tc::message_registry> messages() {
  auto registry = std::make_shared<tc::message_registry>();
  tc::add_cluster_messages(*registry);
  registry->add<account_command>("example.account_command").add<receipt>("example.receipt");
  return registry;
}

struct node {
  node(const std::string& name, tc::in_process_etcd& etcd, io_thread& io,
       const std::shared_ptr<tp::memory_storage>& journal,
       const std::shared_ptr<troupe::clock>& clock)
      : system(troupe::system_config{}.with_name(name).with_workers(2)),
        remote(system, tc::remote_options{}
                           .with_cluster_name("bank")
                           .with_bind({"127.0.0.1", 0})
                           .with_registry(messages())
                           .with_transport([](boost::asio::any_io_executor ex) {
                             return std::make_shared<tc::tcp_transport>(ex, tc::tcp_options{});
                           })),
        store(etcd.client(io.executor())) {
    auto& persistence = tp::get(system);
    persistence.codecs().add<deposited>("example.deposited").add<balance>("example.balance");
    persistence.set_default_plugin(tp::make_memory_plugin(journal));
    auto options =
        tc::cluster_node_options{}.with_cluster_name("bank").with_node(name).with_lease_ttl(
            2s);  // a crashed node's shards move after 2-2.5 s
    options.retry = 200ms;
    cluster = tc::cluster_node::join(system, troupe::sharding::cluster_sharding::get(system),
                                     remote, store, std::move(options), clock);
    cluster->joined().get();
    accounts = troupe::sharding::cluster_sharding::get(system).start(
        troupe::sharding::sharding_options<account_command>::create()
            .with_type_name("account")
            .with_entity<account>(name)
            .with_extract_entity_id([](const account_command& c) {
              return std::visit([](const auto& m) { return m.owner; }, c);
            })
            .with_num_shards(12));
  }
  ~node() {
    cluster.reset();
    remote.shutdown();
    system.terminate();
    system.await_termination();
  }

  troupe::actor_system system;
  tc::remote_node remote;
  std::shared_ptr<tc::consensus_store> store;
  std::shared_ptr<tc::cluster_node> cluster;
  troupe::actor_ref<account_command> accounts;
};

/// Asks until an answer comes (a message to a node that just crashed is lost, so its ask times
/// out: a client retries), or gives up after `patience`.
std::optional<receipt> ask_until_answered(const troupe::actor_ref<account_command>& accounts,
                                          const account_command& cmd, troupe::duration patience) {
  const auto give_up = std::chrono::steady_clock::now() + patience;
  while (std::chrono::steady_clock::now() < give_up) {
    try {
      return accounts.ask<receipt>(cmd, 1s, troupe::use_future).get();
    } catch (const std::exception&) {
      // timed out or refused: ask again
    }
  }
  return std::nullopt;
}

}  // namespace

int main() {
  io_thread io;  // before the clock: the model's timers on the clock hold the io's strands
  auto clock = troupe::make_steady_clock();
  tc::in_process_etcd etcd(clock);
  auto journal = tp::make_memory_storage();
  std::map<std::string, std::unique_ptr<node>> nodes;
  for (const char* name : {"a", "b", "c"}) {
    nodes[name] = std::make_unique<node>(name, etcd, io, journal, clock);
    std::printf("node %s joined, listening at %s\n", name,
                to_string(nodes[name]->remote.self()).c_str());
  }
  auto& a = *nodes["a"];
  // Wait until the leading coordinator knows all three regions, or the first shards could all
  // go to the nodes it heard of first.
  const auto formed_by = std::chrono::steady_clock::now() + 10s;
  while (std::none_of(nodes.begin(), nodes.end(), [](const auto& n) {
    return n.second->cluster->hosting_regions("account") == 3;
  })) {
    if (std::chrono::steady_clock::now() > formed_by) {
      std::printf("the coordinator never saw all three regions\n");
      return 1;
    }
    std::this_thread::sleep_for(10ms);
  }

  std::printf("== deposits through node a's region\n");
  std::vector<std::string> owners;
  for (int i = 0; i < 12; ++i) owners.push_back("customer-" + std::to_string(i));
  std::map<std::string, std::int64_t> expected;
  std::vector<std::string> on_c;
  for (std::size_t i = 0; i < owners.size(); ++i) {
    const auto amount = static_cast<std::int64_t>(100 * (i + 1));
    auto r = ask_until_answered(a.accounts, deposit{owners[i], amount}, 10s);
    if (!r) {
      std::printf("%s: no answer\n", owners[i].c_str());
      return 1;
    }
    expected[owners[i]] = r->balance;
    if (r->node == "c") on_c.push_back(owners[i]);
    std::printf("  %-12s balance %5lld, held by node %s\n", owners[i].c_str(),
                static_cast<long long>(r->balance), r->node.c_str());
  }
  if (on_c.empty()) {
    std::printf("node c holds no account: nothing to show\n");
    return 1;
  }

  std::printf("== node c crashes: it loses etcd and the network, and never says goodbye\n");
  const auto crashed_at = std::chrono::steady_clock::now();
  etcd.set_reachable(*nodes["c"]->store, false);
  nodes["c"]->remote.shutdown();

  bool all_found = true;
  for (const auto& owner : on_c) {
    auto r = ask_until_answered(a.accounts, get_balance{owner}, 15s);
    const double after =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - crashed_at).count();
    if (!r || r->node == "c" || r->balance != expected[owner]) {
      std::printf("  %-12s NOT found again with its balance %lld\n", owner.c_str(),
                  static_cast<long long>(expected[owner]));
      all_found = false;
      continue;
    }
    std::printf("  %-12s balance %5lld, held by node %s now (%.1f s after the crash)\n",
                owner.c_str(), static_cast<long long>(r->balance), r->node.c_str(), after);
  }
  std::printf("node c fenced itself: %s\n", nodes["c"]->cluster->fenced() ? "yes" : "no");
  nodes.clear();
  std::printf(all_found ? "== every account of node c answered from a or b with its balance\n"
                        : "== some accounts were not found again\n");
  return all_found ? 0 : 1;
}
