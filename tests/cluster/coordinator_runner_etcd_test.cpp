// ctest-labels: concurrency
// A smoke test of the coordinator runner on a real etcd 3.4 (TROUPE_ETCD_ENDPOINTS, started by
// scripts/etcd.sh start; the test skips without it): one node elects itself and allocates a
// shard create-if-absent. The safety cases run deterministically on the model
// (coordinator_runner_test.cpp); this one checks the same transactions against etcd itself.
#include <troupe/cluster/membership/consensus_store.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/sharding/coordination/allocation_strategy.hpp>
#include <troupe/testkit/test_probe.hpp>

#include "cluster/coordination/coordination_keys.hpp"
#include "cluster/coordination/coordinator_runner.hpp"
#include "cluster/membership/members.hpp"
#include "support/etcd_endpoints.hpp"
#include "support/io_thread.hpp"

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace troupe::cluster {
namespace {

using namespace std::chrono_literals;
namespace coord = sharding::coordination;

/// Starts a request with a handler and waits for its answer.
template <class T, class Start>
std::pair<std::error_code, T> ask(Start start) {
  auto p = std::make_shared<std::promise<std::pair<std::error_code, T>>>();
  auto f = p->get_future();
  start([p](std::error_code ec, T v) { p->set_value({ec, std::move(v)}); });
  if (f.wait_for(testkit::dilated(10s)) != std::future_status::ready) {
    throw std::runtime_error("etcd did not answer within the timeout");
  }
  return f.get();
}

TEST(coordinator_runner_etcd, elects_itself_and_allocates_create_if_absent) {
  const auto endpoints = test::etcd_endpoints();
  if (endpoints.empty()) GTEST_SKIP() << "TROUPE_ETCD_ENDPOINTS is not set (scripts/etcd.sh start)";
  test::io_thread io;
  auto store = make_etcd_store(io.executor(), {endpoints});
  std::random_device rd;
  const std::string cluster = "runner-test-" + std::to_string(rd()) + std::to_string(rd());
  const std::string type = "cart";

  auto grant = ask<lease_grant>([&](auto h) { store->grant_lease(10s, h); });
  ASSERT_FALSE(grant.first) << grant.first.message();
  member_record m;
  m.info.id = {"a", grant.second.id};
  m.address = "127.0.0.1:2552";
  ASSERT_FALSE(ask<revision>([&](auto h) { register_member(*store, cluster, m, h); }).first);
  ASSERT_FALSE(ask<revision>([&](auto h) {
                 register_region(*store, cluster, type, {m.info.id, false}, h);
               }).first);

  std::mutex mutex;
  std::vector<coord::answer_home> answers;
  coordinator_runner_options o;
  o.cluster = cluster;
  o.type = type;
  o.self = m.info.id;
  auto runner =
      coordinator_runner::start(store, make_steady_clock(), o, coord::make_least_shards_strategy(),
                                [&](const coord::answer_home& a) {
                                  std::lock_guard lock(mutex);
                                  answers.push_back(a);
                                });
  testkit::await_condition([&] { return runner->leading(); }, 10s, "leading");
  // The state read may still be on its way: ask until answered, as a region would.
  testkit::await_condition(
      [&] {
        runner->request_home(m.info.id, 3);
        std::lock_guard lock(mutex);
        return !answers.empty();
      },
      10s, "an answer");
  coord::answer_home first;
  {
    std::lock_guard lock(mutex);
    first = answers.front();
  }
  EXPECT_EQ(first.owner, m.info.id);
  auto alloc = ask<range_result>(
      [&](auto h) { store->range(key_range::single(alloc_key(cluster, type, 3)), h); });
  ASSERT_FALSE(alloc.first);
  ASSERT_EQ(alloc.second.kvs.size(), 1u);
  EXPECT_EQ(alloc.second.kvs[0].version, 1);
  EXPECT_EQ(decode_allocation(cluster, type, alloc.second.kvs[0]),
            (coord::allocation{3, m.info.id, first.epoch}));

  // Stopping resigns: the election key goes, the lease stays until revoked.
  runner->stop();
  testkit::await_condition(
      [&] {
        auto key = ask<range_result>(
            [&](auto h) { store->range(key_range::single(runner->election_key()), h); });
        return !key.first && key.second.kvs.empty();
      },
      10s, "the election key deleted");
  EXPECT_FALSE(ask<revision>([&](auto h) { store->revoke_lease(grant.second.id, h); }).first);
  txn_request clean;
  clean.success.emplace_back(delete_op{key_range::prefix(cluster_prefix(cluster) + "/")});
  EXPECT_FALSE(ask<txn_result>([&](auto h) { store->txn(std::move(clean), h); }).first);
}

}  // namespace
}  // namespace troupe::cluster
