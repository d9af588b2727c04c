// troupe_bench_cluster: sharded types on cluster nodes (issue 15), with etcd modelled in-process
// (the in-process consensus store), so that a run measures the runtime and not etcd.
//
//   local_tell_clustered  the sharding benchmark's local_tell (10,000 entities, 1 M tells from one
//                         non-actor thread, round-robin, timed after every entity is active) on a
//                         node that has joined a cluster and hosts every shard, and the same run
//                         on a plain actor system right before it: value = clustered msgs/s;
//                         fields single_node (msgs/s) and ratio.
//   remote_sharded_tell   two nodes in two processes, over TCP on 127.0.0.1, on a real etcd
//                         (TROUPE_ETCD_ENDPOINTS; the case fails without it): one thread on
//                         node A tells 1 M messages through A's region (a proxy) to 10,000
//                         entities that all live on node B (this program again, with
//                         --serve-sharded), with at most 20,000 not yet handled; and the same
//                         messages told straight to one actor on B by path (remote_tell, as in
//                         troupe_bench_remote): value = sharded msgs/s; fields remote_tell
//                         (msgs/s) and ratio. B's entities count into a file A maps too
//                         (shared_tallies.hpp), which is how A bounds what is in flight.
//   cold_activation_remote the same two nodes: one message at a time, each to a new entity of a
//                         shard that has no home yet (the proxy asks b's coordinator, which
//                         writes the allocation to the store; both regions see it, b raises the
//                         shard's store fence, starts the entity and handles the message): value
//                         = p99 in µs from the tell until the entity has handled it; fields
//                         p50_us and p99_us. With TROUPE_ETCD_ENDPOINTS set (scripts/etcd.sh
//                         start prints it) the store is that etcd, else the in-process model.
//
//   failover              three nodes in three processes on a real etcd (TROUPE_ETCD_ENDPOINTS;
//                         the case fails without it), a 2 s lease, 64 shards of persistent
//                         accounts under load; kill -9 of the node holding the most: value =
//                         seconds until every sampled account of it answered from a survivor
//                         with its persisted deposits; fields p50_s, max_s,
//                         duplicate_activations, lost_events (cluster_failover.cpp).
//   failover_etcd_cut     the same, but node n1 reaches etcd through a proxy that freezes
//                         instead of being killed: n1 must fence itself (its entities stop
//                         before they start elsewhere) while it lives on.
//   handoff               one shard (8 entities) moved back and forth between nodes a and b, 20
//                         times, while a proxy node p tells its entities from one thread (at most
//                         64 unhandled); one process, TCP, etcd when TROUPE_ETCD_ENDPOINTS is set:
//                         value = p99 ms from the coordinator beginning a move until the new node
//                         handled a message of the shard; fields p50_ms, p99_ms, lost (must be 0)
//                         (cluster_handoff.cpp).
//   join_rebalance        three hosting nodes and a proxy under load (640 entities, 64 shards,
//                         least-shards with its default limits, a rebalance round a second); a
//                         fourth node joins: value = seconds until every node holds 16 ± 1
//                         shards; fields rounds (rounds that moved shards; target <= 2), lost
//                         (must be 0); then the same join under a Zipf(1.1) load: fields
//                         load_aware_busiest_share (the busiest node's message share over its
//                         fair share with the load-aware strategy; target <= 1.3) and
//                         shard_count_busiest_share (the same with least-shards)
//                         (cluster_rebalance.cpp).
//   graceful_leave        failover's three nodes and load, but the node holding the most gets
//                         SIGTERM and leaves (cluster_node::leave: its shards are handed off):
//                         value = ms until every sampled account of it answered from its new
//                         node; fields p50_ms, max_ms, lost (deposits sent and not applied: must
//                         be 0), reordered (applied after a later one: must be 0),
//                         duplicate_activations.
//
//   troupe_bench_cluster [--case NAME[,NAME...]]... [--runs N] [--workers N] [--json-only]
//                        [--shrink K]

#include <troupe/cluster/cluster_messages.hpp>
#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/cluster/memory_network.hpp>
#include <troupe/cluster/remote_node.hpp>
#include <troupe/cluster/tcp_transport.hpp>
#include <troupe/core/actor.hpp>
#include <troupe/sharding/cluster_sharding.hpp>

#include "bench_support.hpp"
#include "child_process.hpp"
#include "cluster_failover.hpp"
#include "cluster_handoff.hpp"
#include "cluster_nodes.hpp"
#include "cluster_rebalance.hpp"
#include "cluster_support.hpp"
#include "shared_tallies.hpp"

#include <boost/describe/class.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using namespace troupe::bench;
namespace tc = troupe::cluster;

void check_per_id(const tallies& t, std::int64_t expected) {
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto got = t.per_id(i).load();
    check(got == expected, "entity " + std::to_string(i) + " handled " + std::to_string(got) +
                               " messages, expected " + std::to_string(expected));
  }
}

// -- local_tell_clustered -----------------------------------------------------------------------

double local_tell(troupe::actor_ref<hit> region, const std::vector<std::string>& ids,
                  std::int64_t messages, tallies& t) {
  tell_all(region, ids, static_cast<std::int64_t>(ids.size()), 0, t);  // every entity active
  const double rate = tell_all(region, ids, messages, 0, t);
  check_per_id(t, 1 + messages / static_cast<std::int64_t>(ids.size()));
  return rate;
}

run_result local_tell_clustered(std::size_t workers, std::int64_t entities, std::int64_t messages) {
  const auto ids = make_ids(entities);
  double single = 0;
  {
    troupe::actor_system system(bench_config(workers));
    tallies t(ids.size());
    auto region = troupe::sharding::cluster_sharding::get(system).start(
        troupe::sharding::sharding_options<hit>::create()
            .with_type_name("counter")
            .with_entity<counter>(&t)
            .with_extract_entity_id([](const hit& h) { return h.id; })
            .with_passivation_idle(0s));
    single = local_tell(region, ids, messages, t);
    region = {};
    shut_down(system);
  }
  double clustered = 0;
  {
    etcd_model model;
    auto net = std::make_shared<tc::memory_network>(1);
    tallies t(ids.size());
    cluster_member node("solo", workers, model,
                        [net](boost::asio::any_io_executor ex) { return net->make_transport(ex); },
                        {"solo", 2550});
    auto region = node.start(&t, false);
    clustered = local_tell(region, ids, messages, t);
    region = {};
  }
  return {clustered, {{"single_node", single}, {"ratio", clustered / single}}};
}

// -- remote_sharded_tell ------------------------------------------------------------------------

/// Node b of remote_sharded_tell, in a child process (this program with --serve-sharded): joins
/// the run's cluster on the etcd in TROUPE_ETCD_ENDPOINTS and hosts the entities, which count
/// into the tallies file the parent made; a plain counter at /user/plain counts into a second
/// one. Prints "READY <address>" and runs until stdin closes.
int serve_sharded(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s --serve-sharded CLUSTER WORKERS ENTITIES TALLIES PLAIN\n",
                 argv[0]);
    return 2;
  }
  const auto entities = static_cast<std::size_t>(std::atoll(argv[4]));
  tallies sharded(entities, argv[5], false);
  tallies plain(entities, argv[6], false);
  etcd_model model(etcd_endpoints_from_env(), argv[2]);
  {
    cluster_member b("b", static_cast<std::size_t>(std::atoi(argv[3])), model, tcp(),
                     {"127.0.0.1", 0});
    auto hosted = b.start(&sharded, false);
    b.remote.expose(b.system.spawn<counter>("plain", &plain));
    std::printf("READY %s\n", tc::to_string(b.remote.self().address).c_str());
    std::fflush(stdout);
    char buf[64];
    while (::read(0, buf, sizeof buf) > 0) {
    }
  }
  return 0;
}

/// Files removed when the run ends, however it ends.
struct removed_at_end {
  ~removed_at_end() {
    for (const auto& p : paths) std::filesystem::remove(p);
  }
  std::vector<std::string> paths;
};

run_result remote_sharded_tell(std::size_t workers, std::int64_t entities, std::int64_t messages,
                               std::int64_t window) {
  const auto endpoints = etcd_endpoints_from_env();
  if (endpoints.empty()) {
    throw bench_failure(
        "remote_sharded_tell runs node b in a process of its own, so the nodes need a real "
        "etcd: set TROUPE_ETCD_ENDPOINTS (scripts/etcd.sh start prints it)");
  }
  const auto ids = make_ids(entities);
  etcd_model model(endpoints);
  const std::string files = "/dev/shm/troupe-" + model.cluster;
  removed_at_end cleanup{{files + "-sharded", files + "-plain"}};
  tallies t(ids.size(), files + "-sharded", true);
  tallies plain(ids.size(), files + "-plain", true);
  child_process b({"--serve-sharded", model.cluster, std::to_string(workers),
                   std::to_string(entities), files + "-sharded", files + "-plain"},
                  "node b");
  std::optional<tc::node_address> b_address;
  if (b.first_line().starts_with("READY ")) {
    b_address = tc::parse_node_address(b.first_line().substr(6));
  }
  check(b_address.has_value(), "node b printed its address (it printed '" + b.first_line() + "')");
  cluster_member a("a", workers, model, tcp(), {"127.0.0.1", 0});
  auto proxy = a.start(&t, true);
  // Every shard allocated to b and every entity active before the clock starts.
  tell_all(proxy, ids, entities, window, t);
  const double sharded = tell_all(proxy, ids, messages, window, t);
  check_per_id(t, 1 + messages / entities);

  auto far = a.remote.ref_to<hit>(*b_address, "/user/plain");
  tell_all(far, ids, entities, window, plain);
  const double direct = tell_all(far, ids, messages, window, plain);
  return {sharded, {{"remote_tell", direct}, {"ratio", sharded / direct}}};
}

// -- cold_activation_remote ---------------------------------------------------------------------

/// The first `count` of "e0", "e1", ... whose shards (of `shards`) differ, and differ from e0's.
std::vector<std::string> ids_of_distinct_shards(std::int64_t count, std::uint32_t shards) {
  std::vector<bool> taken(shards, false);
  taken[troupe::sharding::shard_of("e0", shards)] = true;
  std::vector<std::string> ids;
  for (std::int64_t i = 1; static_cast<std::int64_t>(ids.size()) < count; ++i) {
    std::string id = "e" + std::to_string(i);
    const auto shard = troupe::sharding::shard_of(id, shards);
    if (taken[shard]) continue;
    taken[shard] = true;
    ids.push_back(std::move(id));
  }
  return ids;
}

run_result cold_activation_remote(std::size_t workers, std::int64_t samples, std::uint32_t shards) {
  const auto ids = ids_of_distinct_shards(samples, shards);
  std::size_t highest = 0;
  for (const auto& id : ids) highest = std::max<std::size_t>(highest, std::stoul(id.substr(1)));
  etcd_model model(etcd_endpoints_from_env());
  tallies t(highest + 1);
  cluster_member b("b", workers, model, tcp(), {"127.0.0.1", 0});
  cluster_member a("a", workers, model, tcp(), {"127.0.0.1", 0});
  auto hosted = b.start(&t, false, shards);
  auto proxy = a.start(&t, true, shards);
  // A first entity: the coordinator is elected and the connections are up.
  proxy.tell(hit{"e0"});
  wait_handled(t, 1, "the first entity");
  std::vector<double> micros;
  micros.reserve(ids.size());
  for (const auto& id : ids) {
    const std::int64_t before = t.handled().load();
    const auto start = steady::now();
    proxy.tell(hit{id});
    wait_handled(t, before + 1, "entity " + id);
    micros.push_back(seconds_between(start, steady::now()) * 1e6);
  }
  std::sort(micros.begin(), micros.end());
  const double p99 = percentile(micros, 0.99);
  return {p99, {{"p50_us", percentile(micros, 0.5)}, {"p99_us", p99}}};
}

std::vector<bench_case> all_cases(std::int64_t shrink) {
  const std::int64_t million = 1'000'000 / shrink;
  const std::int64_t entities = 10'000 / shrink;
  const std::int64_t window = 20'000;
  std::vector<bench_case> cases;
  cases.push_back(
      {"local_tell_clustered",
       "msgs/s",
       "ratio >= 0.9",
       {},
       {{"entities", str(entities)},
        {"messages", str(million)},
        {"cluster", json_string("one node, the in-process etcd model, every shard local")},
        {"sent_by", json_string("one non-actor thread, through the region ref")}},
       [=](std::size_t w) { return local_tell_clustered(w, entities, million); }});
  cases.push_back(
      {"remote_sharded_tell",
       "msgs/s",
       ">= 2 M",
       at_least(2e6),
       {{"entities", str(entities)},
        {"messages", str(million)},
        {"window", str(window)},
        {"nodes", json_string("two processes, TCP on 127.0.0.1; a proxies to b")},
        {"store", json_string("etcd on TROUPE_ETCD_ENDPOINTS")},
        {"sent_by", json_string("one non-actor thread on node a")}},
       [=](std::size_t w) { return remote_sharded_tell(w, entities, million, window); }});
  const std::int64_t samples = std::max<std::int64_t>(200 / shrink, 10);
  const std::uint32_t shards = 1000;
  const bool real_etcd = !etcd_endpoints_from_env().empty();
  cases.push_back(
      {"cold_activation_remote",
       "us",
       "p99 <= 5 ms",
       at_most(5000),
       {{"samples", str(samples)},
        {"shards", str(shards)},
        {"store", json_string(real_etcd ? "etcd on TROUPE_ETCD_ENDPOINTS"
                                        : "the in-process etcd model (TROUPE_ETCD_ENDPOINTS "
                                          "unset)")},
        {"nodes", json_string("two, in one process, TCP on 127.0.0.1; a proxies to b, b "
                              "coordinates")},
        {"sent_by", json_string("one non-actor thread on node a, one message at a time")}},
       [=](std::size_t w) { return cold_activation_remote(w, samples, shards); }});
  const std::int64_t accounts = std::max<std::int64_t>(640 / shrink, 64);
  const std::int64_t sampled = std::max<std::int64_t>(64 / shrink, 16);
  auto failover_case = [&](std::string name, troupe::bench::failover::fault what,
                           std::string target, std::function<bool(double)> meets,
                           const std::string& store, std::string unit = "s") {
    cases.push_back(
        {std::move(name),
         std::move(unit),
         std::move(target),
         std::move(meets),
         {{"accounts", str(accounts)},
          {"shards", "64"},
          {"sampled", str(sampled)},
          {"lease_ttl_s", "2"},
          {"nodes", json_string("three host processes and this one as a proxy, TCP on 127.0.0.1")},
          {"store", json_string(store)}},
         [=](std::size_t w) { return troupe::bench::failover::run(w, accounts, sampled, what); }});
  };
  failover_case("failover", troupe::bench::failover::fault::kill, "<= 3 s", at_most(3.0),
                "etcd on TROUPE_ETCD_ENDPOINTS; one SQLite journal file");
  failover_case("failover_etcd_cut", troupe::bench::failover::fault::etcd_cut, "", {},
                "etcd on TROUPE_ETCD_ENDPOINTS (n1 through a proxy that freezes); one SQLite "
                "journal file");
  const std::int64_t moves = std::max<std::int64_t>(20 / shrink, 3);
  cases.push_back(
      {"handoff",
       "ms",
       "p99 <= 50 ms",
       at_most(50.0),
       {{"moves", str(moves)},
        {"entities", json_string("8, all in the moved shard")},
        {"load", json_string("one thread telling through a proxy node, at most 64 unhandled")},
        {"nodes", json_string("a and b host, p proxies; one process, TCP on 127.0.0.1")},
        {"store", json_string(etcd_endpoints_from_env().empty()
                                  ? "the in-process etcd model (TROUPE_ETCD_ENDPOINTS unset)"
                                  : "etcd on TROUPE_ETCD_ENDPOINTS")}},
       [=](std::size_t w) { return troupe::bench::handoff::run(w, moves, 8); }});
  cases.push_back(
      {"join_rebalance",
       "s",
       "rounds <= 2; load_aware_busiest_share <= 1.3",
       {},
       {{"entities", str(std::max<std::int64_t>(640 / shrink, 64))},
        {"shards", "64"},
        {"strategy", json_string("least-shards, limits 0.3 and 20 (19 shards a round), a round a "
                                 "second; load-aware and least-shards for the Zipf(1.1) shares")},
        {"load", json_string("one thread telling through a proxy node, at most 64 unhandled")},
        {"nodes", json_string("a, b, c host, then d joins; p proxies; one process, TCP")},
        {"store", json_string(etcd_endpoints_from_env().empty()
                                  ? "the in-process etcd model (TROUPE_ETCD_ENDPOINTS unset)"
                                  : "etcd on TROUPE_ETCD_ENDPOINTS")}},
       [=](std::size_t w) {
         return troupe::bench::rebalance::run(w, std::max<std::int64_t>(640 / shrink, 64));
       }});
  failover_case("graceful_leave", troupe::bench::failover::fault::leave, "<= 500 ms",
                at_most(500.0), "etcd on TROUPE_ETCD_ENDPOINTS; one SQLite journal file", "ms");
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "--serve-sharded") return serve_sharded(argc, argv);
  if (troupe::bench::failover::is_node(argc, argv)) {
    return troupe::bench::failover::serve_node(argc, argv);
  }
  return troupe::bench::run_benchmarks(
      argc, argv,
      {"cluster",
       {{"--shrink", "K", 1, 10'000}},
       [](const std::vector<std::int64_t>& flags) { return all_cases(flags[0]); },
       9,
       13});
}
