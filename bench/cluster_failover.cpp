// The failover benchmark (issue 15): how long after a kill -9 the entities of the dead node
// answer again from a survivor, with their persisted state, and whether anything was lost or ran
// twice on the way.
//
// - Three nodes, each its own process (this program with --serve-node), join a cluster on the
//   etcd in TROUPE_ETCD_ENDPOINTS with a 2 s lease and host `account`, a persistent entity over
//   64 shards, journaled in one SQLite file they share (WAL; durability normal, which keeps
//   every acknowledged write across a process crash). Each node logs when each entity starts
//   and stops (one write(2) per line, so a kill -9 loses no line that was written).
// - The bench process joins as a fourth node whose region is a proxy, deposits 1 to every
//   account (the replies say which node holds each), then keeps deposits going from a second
//   thread (16 asks in flight) and kills -9 the node that holds the most accounts.
// - Until each sampled account of the dead node has answered from a survivor, it is asked for
//   its balance (asks of 250 ms, again as soon as one fails or the dead node's answer was
//   cached). Each answer must hold every deposit acknowledged before the kill. Value: seconds
//   from the kill until the last sample answered.
// - Then the load stops and every account is read once more: lost_events counts acknowledged
//   deposits missing from the balances; duplicate_activations counts accounts that ran on two
//   nodes at once (from the logs: an activation ends when its entity stops, when its node logs
//   that it fenced itself (cluster_node_options::on_fenced), or for a killed node at the kill).
//   Either above 0, or a balance above what was ever sent, fails the run.
// - A node cut off etcd is then asked directly (a delivery to its endpoint, as a region would
//   send) for each sampled account: it must not answer, since it fenced itself.

#include "cluster_failover.hpp"

#include <troupe/cluster/cluster_messages.hpp>
#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/remote_node.hpp>
#include <troupe/cluster/tcp_transport.hpp>
#include <troupe/persistence/persistence_extension.hpp>
#include <troupe/persistence/persistent_entity.hpp>
#include <troupe/persistence/serialization/wire.hpp>
#include <troupe/persistence/sqlite_plugin.hpp>
#include <troupe/sharding/cluster_sharding.hpp>

#include "child_process.hpp"
#include "cluster_support.hpp"
#include "freezable_proxy.hpp"

#include <boost/describe/class.hpp>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

namespace troupe::bench::failover {
namespace {

using namespace std::chrono_literals;
namespace tc = troupe::cluster;
namespace tp = troupe::persistence;
namespace fs = std::filesystem;

constexpr std::uint32_t shard_count = 64;
constexpr auto lease_ttl = 2s;

// -- the account --------------------------------------------------------------------------------

struct deposited {
  std::int64_t amount = 0;
  std::int64_t seq = 0;
};
BOOST_DESCRIBE_STRUCT(deposited, (), (amount, seq))
struct balance {
  std::int64_t amount = 0;
  std::int64_t last_seq = 0;
  /// Deposits applied after one the sender sent later.
  std::int64_t reordered = 0;
};
BOOST_DESCRIBE_STRUCT(balance, (), (amount, last_seq, reordered))
struct deposit {
  std::string owner;
  std::int64_t amount = 0;
  /// The sender's number for this account's deposits (0: not counted).
  std::int64_t seq = 0;
};
BOOST_DESCRIBE_STRUCT(deposit, (), (owner, amount, seq))
struct get_balance {
  std::string owner;
};
BOOST_DESCRIBE_STRUCT(get_balance, (), (owner))
using account_command = std::variant<deposit, get_balance>;
/// Every command's answer: the balance, and the node whose entity answered.
struct receipt {
  std::int64_t balance = 0;
  std::string node;
  std::int64_t reordered = 0;
};
BOOST_DESCRIBE_STRUCT(receipt, (), (balance, node, reordered))

std::shared_ptr<tc::message_registry> messages() {
  auto r = std::make_shared<tc::message_registry>();
  tc::add_cluster_messages(*r);
  r->add<account_command>("bench.failover.account_command").add<receipt>("bench.failover.receipt");
  return r;
}

/// Every node's remoting: TCP on 127.0.0.1, any free port.
tc::remote_options remoting(const std::string& cluster) {
  return tc::remote_options{}
      .with_cluster_name(cluster)
      .with_bind({"127.0.0.1", 0})
      .with_registry(messages())
      .with_transport([](boost::asio::any_io_executor ex) {
        return std::make_shared<tc::tcp_transport>(ex, tc::tcp_options{});
      });
}

/// A node's "start <id> <steady ns>" and "stop <id> <steady ns>" lines, one write(2) each.
class activation_log {
 public:
  explicit activation_log(const fs::path& file)
      : fd_(::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {
    if (fd_ < 0) throw bench_failure("cannot open " + file.string());
  }
  ~activation_log() { ::close(fd_); }
  activation_log(const activation_log&) = delete;
  activation_log& operator=(const activation_log&) = delete;

  void record(const char* what, const std::string& id) {
    const std::string line =
        std::string(what) + " " + id + " " + std::to_string(steady_ns()) + "\n";
    if (::write(fd_, line.data(), line.size()) < 0) std::perror("activation log");
  }

 private:
  int fd_;
};

class account final : public tp::persistent_entity<account_command, deposited, balance> {
 public:
  account(std::string node, std::shared_ptr<activation_log> log)
      : node_(std::move(node)), log_(std::move(log)) {}
  ~account() override {
    if (!id_.empty()) log_->record("stop", id_);
  }
  account(const account&) = delete;
  account& operator=(const account&) = delete;

 private:
  void on_start() override {
    id_ = this->context().entity()->entity_id;
    log_->record("start", id_);
  }
  effect_type on_command(const balance& s, account_command& cmd) override {
    auto answer = [node = node_](const balance& now) {
      return receipt{now.amount, node, now.reordered};
    };
    return std::visit(troupe::overloaded{
                          [&](const deposit& d) -> effect_type {
                            return persist(deposited{d.amount, d.seq}).then_reply(answer);
                          },
                          [&](const get_balance&) -> effect_type { return reply(answer(s)); },
                      },
                      cmd);
  }
  balance apply(balance s, const deposited& e) const override {
    s.amount += e.amount;
    if (e.seq > 0) {
      if (e.seq < s.last_seq) ++s.reordered;
      s.last_seq = std::max(s.last_seq, e.seq);
    }
    return s;
  }

  std::string node_;
  std::shared_ptr<activation_log> log_;
  std::string id_;
};

// -- what every node runs -----------------------------------------------------------------------

/// One node: its system (SQLite journal for hosts), remoting and membership, and the accounts'
/// region (a proxy on the bench's own node).
struct node {
  node(const std::string& name, const std::string& cluster, const std::vector<std::string>& etcd,
       const fs::path& dir, std::size_t workers, bool hosts)
      : system(bench_config(workers).with_name(name)), remote(system, remoting(cluster)) {
    auto options = troupe::sharding::sharding_options<account_command>::create()
                       .with_type_name("account")
                       .with_extract_entity_id([](const account_command& c) {
                         return std::visit([](const auto& m) { return m.owner; }, c);
                       })
                       .with_num_shards(shard_count);
    std::shared_ptr<activation_log> log;
    if (hosts) {
      log = std::make_shared<activation_log>(dir / ("activations-" + name + ".log"));
      auto& persistence = tp::get(system);
      persistence.codecs()
          .add<deposited>("bench.failover.deposited")
          .add<balance>("bench.failover.balance");
      tp::sqlite_options journal;
      journal.file = dir / "journal.db";
      journal.durability = tp::sqlite_durability::normal;
      persistence.set_default_plugin(tp::open_sqlite_plugin(journal));
      options.with_entity<account>(name, log);
    } else {
      options.with_proxy();
    }
    auto join =
        tc::cluster_node_options{}.with_cluster_name(cluster).with_node(name).with_lease_ttl(
            lease_ttl);
    join.retry = 100ms;
    if (log) join.on_fenced = [log](const std::string&) { log->record("fence", "-"); };
    membership =
        tc::cluster_node::join(system, troupe::sharding::cluster_sharding::get(system), remote,
                               tc::make_etcd_store(io.io.get_executor(), {etcd}), std::move(join));
    membership->joined().get();
    accounts = troupe::sharding::cluster_sharding::get(system).start(std::move(options));
  }
  ~node() {
    accounts = {};
    membership.reset();
    remote.shutdown();
    system.terminate();
    system.await_termination();
  }
  node(const node&) = delete;
  node& operator=(const node&) = delete;

  io_runner io;
  troupe::actor_system system;
  tc::remote_node remote;
  std::shared_ptr<tc::cluster_node> membership;
  troupe::actor_ref<account_command> accounts;
};

// -- the run ------------------------------------------------------------------------------------

/// Set by SIGTERM in a node process.
volatile std::sig_atomic_t leave_asked = 0;

/// Asks until an answer comes, for at most `patience`; counts the asks in `tries`.
std::optional<receipt> ask_until_answered(const troupe::actor_ref<account_command>& accounts,
                                          const account_command& cmd, troupe::duration patience,
                                          std::int64_t* tries = nullptr) {
  const auto give_up = steady::now() + patience;
  while (steady::now() < give_up) {
    if (tries != nullptr) ++*tries;
    try {
      return accounts.ask<receipt>(cmd, 1s, troupe::use_future).get();
    } catch (const std::exception&) {
    }
  }
  return std::nullopt;
}

/// Deposits of 1, round-robin over the accounts, 16 asks in flight, from start() to stop().
class load {
 public:
  load(troupe::actor_ref<account_command> accounts, const std::vector<std::string>& ids)
      : accounts_(std::move(accounts)), ids_(ids), attempted_(ids.size()), acked_(ids.size()) {}
  ~load() { stop(); }
  load(const load&) = delete;
  load& operator=(const load&) = delete;

  void start() {
    thread_ = std::thread([this] { run(); });
  }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  /// A deposit made before start(), acknowledged after `tries` asks.
  void count_first(std::size_t i, std::int64_t tries) {
    attempted_[i].fetch_add(tries);
    acked_[i].fetch_add(1);
  }
  [[nodiscard]] std::int64_t acked(std::size_t i) const { return acked_[i].load(); }
  [[nodiscard]] std::int64_t attempted(std::size_t i) const { return attempted_[i].load(); }

 private:
  void run() {
    std::deque<std::pair<std::size_t, std::future<receipt>>> in_flight;
    auto settle = [&] {
      auto& [i, answer] = in_flight.front();
      try {
        (void)answer.get();
        acked_[i].fetch_add(1);
      } catch (const std::exception&) {
      }
      in_flight.pop_front();
    };
    for (std::size_t n = 0; !stop_; ++n) {
      if (in_flight.size() >= 16) settle();
      const std::size_t i = n % ids_.size();
      const std::int64_t seq = attempted_[i].fetch_add(1) + 1;
      in_flight.emplace_back(
          i, accounts_.ask<receipt>(deposit{ids_[i], 1, seq}, 1s, troupe::use_future));
    }
    while (!in_flight.empty()) settle();
  }

  troupe::actor_ref<account_command> accounts_;
  const std::vector<std::string>& ids_;
  std::vector<std::atomic<std::int64_t>> attempted_;
  std::vector<std::atomic<std::int64_t>> acked_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// Accounts that ran on two nodes at once, from the nodes' activation logs; activations still
/// open on `dead` end at `killed_ns`, those on other nodes at the end of the run.
std::int64_t count_duplicates(const fs::path& dir, const std::vector<std::string>& nodes,
                              const std::string& dead, std::int64_t killed_ns) {
  // An activation ends when its entity stops, or when its node fenced itself (from then on it
  // handles nothing and writes nothing, even before it is gone).
  struct span {
    std::string node;
    std::int64_t from = 0;
    std::int64_t to = LLONG_MAX;
  };
  std::map<std::string, std::vector<span>> by_id;
  for (const auto& name : nodes) {
    std::ifstream in(dir / ("activations-" + name + ".log"));
    std::string what;
    std::string id;
    std::int64_t at = 0;
    while (in >> what >> id >> at) {
      if (what == "fence") {
        for (auto& [account, spans] : by_id) {
          for (auto& sp : spans) {
            if (sp.node == name && sp.from < at) sp.to = std::min(sp.to, at);
          }
        }
        continue;
      }
      auto& spans = by_id[id];
      if (what == "start") {
        spans.push_back({name, at, name == dead ? killed_ns : LLONG_MAX});
        continue;
      }
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->node == name) {
          it->to = std::min(it->to, at);
          break;
        }
      }
    }
  }
  std::int64_t duplicates = 0;
  for (const auto& [id, spans] : by_id) {
    bool twice = false;
    for (std::size_t i = 0; i < spans.size() && !twice; ++i) {
      for (std::size_t j = i + 1; j < spans.size() && !twice; ++j) {
        twice = spans[i].node != spans[j].node && spans[i].from < spans[j].to &&
                spans[j].from < spans[i].to;
      }
    }
    duplicates += twice ? 1 : 0;
  }
  return duplicates;
}

/// How many of `ids` still answer on node `cut_off` (listening `at`) when asked there directly,
/// by a delivery to its endpoint as a region would send one. After it fenced itself, none may.
/// The probe is a node of its own outside the cluster: the cluster's nodes no longer talk to a
/// member whose key is gone.
std::int64_t answers_after_fencing(const std::string& cluster, const std::string& cut_off,
                                   const tc::node_address& at,
                                   const std::vector<std::string>& ids) {
  troupe::actor_system system(bench_config(1).with_name("probe"));
  tc::remote_node probe(system, remoting(cluster));
  const auto registry = probe.registry();
  const auto* entry = registry->find(typeid(account_command));
  check(entry != nullptr, "account_command is in the registry");
  auto endpoint = probe.ref_to<tc::sharded_delivery>(at, "/system/cluster-deliveries");
  std::int64_t answered = 0;
  for (const auto& id : ids) {
    auto d = tc::sharded_delivery::carrying(*entry, account_command(get_balance{id}));
    d.type = "account";
    d.shard = troupe::sharding::shard_of(id, shard_count);
    d.epoch = 1;
    d.entity_id = id;
    try {
      const receipt r = endpoint.ask<receipt>(std::move(d), 300ms, troupe::use_future).get();
      answered += r.node == cut_off ? 1 : 0;
    } catch (const std::exception&) {
      // no answer: it holds or refuses the message, as a fenced node must
    }
  }
  probe.shutdown();
  system.terminate();
  system.await_termination();
  return answered;
}

/// Removes the run's directory when the run ends.
struct scratch_dir {
  explicit scratch_dir(fs::path p) : path(std::move(p)) { fs::create_directories(path); }
  ~scratch_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  fs::path path;
};

}  // namespace

bool is_node(int argc, char** argv) {
  return argc >= 2 && std::strcmp(argv[1], "--serve-node") == 0;
}

int serve_node(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s --serve-node NAME CLUSTER ETCD DIR WORKERS\n", argv[0]);
    return 2;
  }
  node self(argv[2], argv[3], split_endpoints(argv[4]), argv[5],
            static_cast<std::size_t>(std::atoi(argv[6])), true);
  struct sigaction on_term {};
  on_term.sa_handler = [](int) { leave_asked = 1; };
  sigemptyset(&on_term.sa_mask);
  ::sigaction(SIGTERM, &on_term, nullptr);
  std::printf("READY\n");
  std::fflush(stdout);
  // Until stdin closes; a SIGTERM first makes the node leave (its shards are handed off).
  bool left = false;
  char buf[64];
  for (;;) {
    if (leave_asked != 0 && !left) {
      left = true;
      std::promise<void> done;
      self.membership->leave([&](std::error_code) { done.set_value(); });
      done.get_future().wait();
    }
    pollfd in{0, POLLIN, 0};
    const int ready = ::poll(&in, 1, 20);
    if (ready > 0 && ::read(0, buf, sizeof buf) <= 0) break;
  }
  return 0;
}

run_result run(std::size_t workers, std::int64_t entities, std::int64_t samples, fault what) {
  const auto endpoints = etcd_endpoints_from_env();
  std::string etcd;  // as the nodes' command line takes it
  for (const auto& e : endpoints) etcd += (etcd.empty() ? "" : ",") + e;
  if (endpoints.empty()) {
    throw bench_failure(
        "failover needs a real etcd: set TROUPE_ETCD_ENDPOINTS (scripts/etcd.sh start prints it)");
  }
  static std::atomic<int> runs{0};
  const std::string tag = std::to_string(::getpid()) + "-" + std::to_string(++runs);
  const std::string cluster = "failover-" + tag;
  scratch_dir dir(fs::temp_directory_path() / ("troupe-failover-" + tag));
  // The schema, once, before three processes open the file.
  {
    tp::sqlite_options journal;
    journal.file = dir.path / "journal.db";
    (void)tp::open_sqlite_plugin(journal);
  }
  const std::vector<std::string> names{"n1", "n2", "n3"};
  // With etcd_cut, n1 reaches etcd only through the proxy.
  std::optional<freezable_proxy> proxy;
  if (what == fault::etcd_cut) proxy.emplace(endpoints.front());
  std::map<std::string, std::unique_ptr<child_process>> hosts;  // each prints READY
  for (const auto& name : names) {
    hosts[name] = std::make_unique<child_process>(
        std::vector<std::string>{"--serve-node", name, cluster,
                                 name == "n1" && proxy ? proxy->endpoint() : etcd,
                                 dir.path.string(), std::to_string(workers)},
        "node " + name);
  }
  node bench("bench", cluster, endpoints, dir.path, workers, false);
  const auto deadline = steady::now() + 30s;
  while (!bench.membership->ready("account") ||
         bench.membership->read_state().get().members.size() != names.size() + 1) {
    if (steady::now() > deadline) throw bench_failure("the four nodes did not form a cluster");
    std::this_thread::sleep_for(10ms);
  }

  std::vector<std::string> ids;
  for (std::int64_t i = 0; i < entities; ++i) ids.push_back("acct-" + std::to_string(i));
  load deposits(bench.accounts, ids);
  std::map<std::string, std::vector<std::size_t>> held;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    std::int64_t tries = 0;
    auto r = ask_until_answered(bench.accounts, deposit{ids[i], 1}, 20s, &tries);
    if (!r) throw bench_failure(ids[i] + " never answered");
    deposits.count_first(i, tries);
    held[r->node].push_back(i);
  }
  deposits.start();
  const auto victim =
      what == fault::etcd_cut
          ? std::string("n1")
          : std::max_element(held.begin(), held.end(), [](const auto& a, const auto& b) {
              return a.second.size() < b.second.size();
            })->first;
  std::vector<std::size_t> sampled = held[victim];
  if (sampled.empty()) throw bench_failure(victim + " holds no account");
  sampled.resize(std::min<std::size_t>(sampled.size(), static_cast<std::size_t>(samples)));
  std::this_thread::sleep_for(200ms);  // deposits under way everywhere

  std::vector<std::int64_t> acked_before;
  for (std::size_t i : sampled) acked_before.push_back(deposits.acked(i));
  std::optional<tc::node_address> victim_at;
  for (const auto& m : bench.membership->read_state().get().members) {
    if (m.info.id.node == victim) victim_at = tc::parse_node_address(m.address);
  }
  check(victim_at.has_value(), victim + " is a member before the fault");
  const std::int64_t killed_ns = steady_ns();
  const auto killed = steady::now();
  if (what == fault::kill) {
    hosts[victim]->kill_now();
  } else if (what == fault::leave) {
    hosts[victim]->terminate();
  } else {
    proxy->freeze();
  }

  // Each sample is asked again as soon as its last ask failed or came from the dead node.
  std::vector<double> took;
  {
    std::vector<std::optional<std::future<receipt>>> asks(sampled.size());
    std::size_t open = sampled.size();
    const auto give_up = killed + 30s;
    while (open > 0) {
      if (steady::now() > give_up) {
        throw bench_failure(std::to_string(open) + " accounts of " + victim +
                            " never answered from a survivor");
      }
      for (std::size_t s = 0; s < sampled.size(); ++s) {
        auto& ask = asks[s];
        if (!ask) {
          ask =
              bench.accounts.ask<receipt>(get_balance{ids[sampled[s]]}, 250ms, troupe::use_future);
          continue;
        }
        if (!ask->valid() || ask->wait_for(0s) != std::future_status::ready) continue;
        std::optional<receipt> r;
        try {
          r = ask->get();
        } catch (const std::exception&) {
        }
        if (!r || r->node == victim) {
          ask.reset();
          continue;
        }
        took.push_back(seconds_between(killed, steady::now()));
        check(r->balance >= acked_before[s], ids[sampled[s]] + " answered from " + r->node +
                                                 " with " + std::to_string(r->balance) +
                                                 ", not the " + std::to_string(acked_before[s]) +
                                                 " deposits acknowledged before the fault");
        --open;  // the future stays empty (invalid): this sample is done
      }
      std::this_thread::sleep_for(1ms);
    }
  }
  deposits.stop();
  if (what == fault::etcd_cut) {
    std::vector<std::string> moved;
    for (std::size_t i : sampled) moved.push_back(ids[i]);
    const std::int64_t stale = answers_after_fencing(cluster, victim, *victim_at, moved);
    check(stale == 0, std::to_string(stale) + " accounts still answered on " + victim +
                          " after they moved: it did not fence itself");
  }

  // Every account, once more: nothing acknowledged is missing, nothing was made up; after a
  // leave, nothing sent is missing and nothing came out of order.
  std::int64_t lost = 0;
  std::int64_t lost_sent = 0;
  std::int64_t reordered = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto r = ask_until_answered(bench.accounts, get_balance{ids[i]}, 20s);
    if (!r) throw bench_failure(ids[i] + " never answered after the failover");
    lost += std::max<std::int64_t>(0, deposits.acked(i) - r->balance);
    lost_sent += std::max<std::int64_t>(0, deposits.attempted(i) - r->balance);
    reordered += r->reordered;
    check(r->balance <= deposits.attempted(i),
          ids[i] + " holds " + std::to_string(r->balance) + ", more than the " +
              std::to_string(deposits.attempted(i)) + " deposits ever sent");
  }
  hosts.clear();  // the survivors stop (their logs are complete), the dead one is reaped
  // A killed node's activations end at the kill; a node cut off from etcd must have stopped its
  // own, and any it did not stop overlap their next activation elsewhere.
  const std::int64_t duplicates =
      count_duplicates(dir.path, names, what == fault::kill ? victim : "", killed_ns);
  check(duplicates == 0,
        std::to_string(duplicates) + " accounts ran on two nodes at once around the fault");
  check(lost == 0, std::to_string(lost) + " acknowledged deposits were lost");
  std::sort(took.begin(), took.end());
  if (what == fault::leave) {
    check(lost_sent == 0, std::to_string(lost_sent) + " deposits sent were lost in the leave");
    check(reordered == 0, std::to_string(reordered) + " deposits were applied out of order");
    return {took.back() * 1000,
            {{"p50_ms", percentile(took, 0.5) * 1000},
             {"max_ms", took.back() * 1000},
             {"lost", static_cast<double>(lost_sent)},
             {"reordered", static_cast<double>(reordered)},
             {"duplicate_activations", static_cast<double>(duplicates)}}};
  }
  return {took.back(),
          {{"p50_s", percentile(took, 0.5)},
           {"max_s", took.back()},
           {"duplicate_activations", static_cast<double>(duplicates)},
           {"lost_events", static_cast<double>(lost)}}};
}

}  // namespace troupe::bench::failover
