// The coordinator runner on the in-process model of etcd with a manual clock: election under the
// node's lease (lowest create revision wins, then the re-check of its own key), feeding the state
// machine from one read and one watch, and each decision's transaction with its compares.
#include "cluster/coordination/coordinator_runner.hpp"

#include <troupe/cluster/errc.hpp>
#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/core/clock.hpp>
#include <troupe/sharding/coordination/allocation_strategy.hpp>

#include "cluster/coordination/coordination_keys.hpp"
#include "cluster/membership/members.hpp"
#include "support/manual_time.hpp"

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace troupe::cluster {
namespace {

using namespace std::chrono_literals;
namespace coord = sharding::coordination;

constexpr const char* cluster = "c1";
constexpr const char* type = "cart";

class coordinator_runner_test : public ::testing::Test {
 protected:
  void poll() { test_time::poll(io_); }
  void let_time_pass(duration d) { test_time::let_time_pass(*clock_, io_, d); }

  /// Grants a lease and registers a member and a region of `type` under it.
  coord::member_id join(consensus_store& store, std::string node, duration ttl) {
    lease_id lease = 0;
    store.grant_lease(ttl, [&](std::error_code ec, lease_grant g) {
      ASSERT_FALSE(ec);
      lease = g.id;
    });
    poll();
    member_record m;
    m.info.id = {std::move(node), lease};
    m.address = "127.0.0.1:2552";
    bool registered = false;
    register_member(store, cluster, m, [&](std::error_code ec, revision) {
      ASSERT_FALSE(ec);
      register_region(store, cluster, type, {m.info.id, false}, [&](std::error_code ec2, revision) {
        ASSERT_FALSE(ec2);
        registered = true;
      });
    });
    poll();
    EXPECT_TRUE(registered);
    return m.info.id;
  }

  std::shared_ptr<coordinator_runner> start(std::shared_ptr<consensus_store> store,
                                            coord::member_id self) {
    coordinator_runner_options o;
    o.cluster = cluster;
    o.type = type;
    o.self = std::move(self);
    return coordinator_runner::start(
        std::move(store), clock_, o, coord::make_hash_mod_regions_strategy(),
        [this](const coord::answer_home& a) { answers_.push_back(a); });
  }

  std::optional<key_value> read(const std::string& key) {
    std::optional<key_value> out;
    bool done = false;
    observer_->range(key_range::single(key), [&](std::error_code ec, range_result r) {
      EXPECT_FALSE(ec);
      if (!r.kvs.empty()) out = r.kvs[0];
      done = true;
    });
    poll();
    EXPECT_TRUE(done);
    return out;
  }

  std::optional<coord::allocation> allocation_of(sharding::shard_id shard) {
    auto kv = read(alloc_key(cluster, type, shard));
    if (!kv) return std::nullopt;
    return decode_allocation(cluster, type, *kv);
  }

  void revoke(consensus_store& store, lease_id lease) {
    bool done = false;
    store.revoke_lease(lease, [&](std::error_code ec, revision) {
      EXPECT_FALSE(ec);
      done = true;
    });
    poll();
    ASSERT_TRUE(done);
  }

  /// Runs `t` through `store` and answers whether it succeeded.
  std::optional<txn_result> run(consensus_store& store, txn_request t) {
    std::optional<txn_result> out;
    store.txn(std::move(t), [&](std::error_code ec, txn_result r) {
      EXPECT_FALSE(ec) << ec.message();
      if (!ec) out = std::move(r);
    });
    poll();
    return out;
  }

  boost::asio::io_context io_;
  std::shared_ptr<manual_clock> clock_ = std::make_shared<manual_clock>();
  in_process_etcd etcd_{clock_};
  std::shared_ptr<consensus_store> store_a_ = etcd_.client(io_.get_executor());
  std::shared_ptr<consensus_store> store_b_ = etcd_.client(io_.get_executor());
  std::shared_ptr<consensus_store> observer_ = etcd_.client(io_.get_executor());
  std::vector<coord::answer_home> answers_;
};

TEST(coordination_keys, layout_and_round_trips) {
  const coord::member_id a{"node-a", 0x1f};
  EXPECT_EQ(coord_key("c1", "cart", 0x1f), "/troupe/c1/coord/cart/1f");
  EXPECT_EQ(region_key("c1", "cart", a), "/troupe/c1/regions/cart/node-a#1f");
  EXPECT_EQ(alloc_key("c1", "cart", 42), "/troupe/c1/alloc/cart/42");
  EXPECT_EQ(decode_region("c1", "cart", region_key("c1", "cart", a), encode_region({a, true})),
            (coord::region_info{a, true}));
  EXPECT_EQ(member_id_of("c1", member_key("c1", "node-a", 0x1f)), a);
  key_value kv{alloc_key("c1", "cart", 42), encode_owner(a), 5, 9, 2, 0};
  EXPECT_EQ(decode_allocation("c1", "cart", kv), (coord::allocation{42, a, 9}));
  kv.key = alloc_key("c1", "cart", 42) + "x";
  EXPECT_EQ(decode_allocation("c1", "cart", kv), std::nullopt);
  EXPECT_EQ(decode_region("c1", "cart", "/troupe/c1/regions/cart/node-a", "proxy=true\n"),
            std::nullopt);
  EXPECT_THROW(check_type_name("a/b"), std::invalid_argument);
  EXPECT_THROW(check_type_name(""), std::invalid_argument);
}

TEST_F(coordinator_runner_test, a_single_node_elects_itself_and_allocates_create_if_absent) {
  const auto a = join(*store_a_, "a", 60s);
  auto runner = start(store_a_, a);
  poll();
  ASSERT_TRUE(runner->leading());
  auto key = read(runner->election_key());
  ASSERT_TRUE(key);
  EXPECT_EQ(key->create_revision, runner->key_create_revision());
  EXPECT_EQ(key->lease, a.incarnation);
  EXPECT_EQ(runner->state_reads(), 1);

  runner->request_home(a, 7);
  poll();
  ASSERT_EQ(answers_.size(), 1u);
  EXPECT_EQ(answers_[0], (coord::answer_home{a, 7, a, answers_[0].epoch}));
  auto kv = read(alloc_key(cluster, type, 7));
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->version, 1);  // created, not overwritten
  EXPECT_EQ(kv->lease, 0);    // allocations outlive their writer
  EXPECT_EQ(kv->mod_revision, answers_[0].epoch);
  EXPECT_EQ(decode_allocation(cluster, type, *kv), (coord::allocation{7, a, kv->mod_revision}));

  // A second ask is answered from what the coordinator knows, with no second write.
  runner->request_home(a, 7);
  poll();
  ASSERT_EQ(answers_.size(), 2u);
  EXPECT_EQ(answers_[1], answers_[0]);
  EXPECT_EQ(read(alloc_key(cluster, type, 7))->mod_revision, kv->mod_revision);
  runner->stop();
  poll();
}

TEST_F(coordinator_runner_test, exactly_one_leads_and_the_other_takes_over_when_its_key_vanishes) {
  const auto a = join(*store_a_, "a", 60s);
  const auto b = join(*store_b_, "b", 60s);
  auto ra = start(store_a_, a);
  poll();
  auto rb = start(store_b_, b);
  poll();
  EXPECT_TRUE(ra->leading());
  EXPECT_FALSE(rb->leading());
  EXPECT_LT(ra->key_create_revision(), rb->key_create_revision());

  // Whatever the follower is asked, it decides nothing.
  rb->request_home(b, 3);
  poll();
  EXPECT_TRUE(answers_.empty());
  EXPECT_FALSE(allocation_of(3));

  revoke(*store_a_, a.incarnation);  // a leaves: its keys go in one revision
  EXPECT_TRUE(ra->lost());
  EXPECT_FALSE(ra->leading());
  EXPECT_TRUE(rb->leading());

  rb->request_home(b, 3);
  poll();
  ASSERT_EQ(answers_.size(), 1u);
  EXPECT_EQ(answers_[0].owner, b);  // a's region is gone with its lease
  EXPECT_EQ(allocation_of(3), (coord::allocation{3, b, answers_[0].epoch}));
}

TEST_F(coordinator_runner_test, candidates_started_together_take_over_one_at_a_time) {
  auto store_c = etcd_.client(io_.get_executor());
  const auto a = join(*store_a_, "a", 60s);
  const auto b = join(*store_b_, "b", 60s);
  const auto c = join(*store_c, "c", 60s);
  std::vector<std::shared_ptr<coordinator_runner>> runners{start(store_a_, a), start(store_b_, b),
                                                           start(store_c, c)};
  poll();
  auto leaders = [&] {
    int n = 0;
    for (const auto& r : runners) n += r->leading() ? 1 : 0;
    return n;
  };
  EXPECT_EQ(leaders(), 1);
  EXPECT_TRUE(runners[0]->leading());  // the lowest create revision

  revoke(*store_a_, a.incarnation);
  EXPECT_EQ(leaders(), 1);
  EXPECT_TRUE(runners[1]->leading());
  revoke(*store_b_, b.incarnation);
  EXPECT_EQ(leaders(), 1);
  EXPECT_TRUE(runners[2]->leading());
}

TEST_F(coordinator_runner_test, a_leader_cut_off_is_deposed_and_its_stale_write_fails) {
  const auto a = join(*store_a_, "a", 3s);
  const auto b = join(*store_b_, "b", 600s);
  auto ra = start(store_a_, a);
  poll();
  auto rb = start(store_b_, b);
  poll();
  ASSERT_TRUE(ra->leading());
  const revision a_key = ra->key_create_revision();

  // Cut off, a loses its watches and stops deciding at once; a's lease is not renewed.
  etcd_.set_reachable(*store_a_, false);
  poll();
  EXPECT_FALSE(ra->leading());
  ra->request_home(a, 11);
  let_time_pass(4s);  // past a's TTL and the expiry scan: a's keys are gone
  EXPECT_TRUE(rb->leading());
  EXPECT_FALSE(read(ra->election_key()));
  rb->request_home(b, 9);
  poll();
  ASSERT_EQ(answers_.size(), 1u);
  EXPECT_EQ(answers_[0].owner, b);

  etcd_.set_reachable(*store_a_, true);
  let_time_pass(3s);
  EXPECT_TRUE(ra->lost());
  EXPECT_FALSE(ra->leading());
  EXPECT_FALSE(allocation_of(11));

  // The decision a would have made as leader, sent after healing: only its election compare
  // can fail (shard 10 has no allocation, no dead owner), and it does.
  coord::write_allocations stale{1, a_key, {{10, a, 0}}, std::nullopt};
  auto r = run(*store_a_, allocation_txn(cluster, type, ra->election_key(), stale));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->succeeded);
  EXPECT_FALSE(allocation_of(10));
  // b's write with b's key went through.
  EXPECT_EQ(allocation_of(9), (coord::allocation{9, b, answers_[0].epoch}));
}

TEST_F(coordinator_runner_test, a_waiting_candidate_whose_key_vanished_never_leads) {
  const auto a = join(*store_a_, "a", 600s);
  const auto b = join(*store_b_, "b", 3s);
  auto ra = start(store_a_, a);
  poll();
  auto rb = start(store_b_, b);
  poll();
  ASSERT_TRUE(ra->leading());
  ASSERT_FALSE(rb->leading());

  // b misses, cut off, both the leader's key going and its own (its lease expires meanwhile).
  etcd_.set_reachable(*store_b_, false);
  poll();
  revoke(*store_a_, a.incarnation);
  let_time_pass(4s);
  EXPECT_FALSE(read(rb->election_key()));

  etcd_.set_reachable(*store_b_, true);
  let_time_pass(5s);
  // Its read shows no older key, but not its own either: it must not lead.
  EXPECT_FALSE(rb->leading());
  EXPECT_TRUE(rb->lost());
}

TEST_F(coordinator_runner_test, a_dead_owners_shards_move_only_after_its_member_key_is_gone) {
  const auto a = join(*store_a_, "a", 10h);
  const auto c = join(*store_b_, "c", 10h);
  auto ra = start(store_a_, a);
  poll();
  ASSERT_TRUE(ra->leading());

  ra->request_home(a, 1);  // hash mod 2 over [a, c]: shard 1 goes to c
  poll();
  ASSERT_EQ(answers_.size(), 1u);
  ASSERT_EQ(answers_[0].owner, c);
  const revision epoch = answers_[0].epoch;

  // c's region goes, its member key stays: however long, shard 1 stays with c.
  ASSERT_TRUE(
      run(*observer_, {{}, {delete_op{key_range::single(region_key(cluster, type, c))}}, {}}));
  let_time_pass(10min);
  EXPECT_EQ(allocation_of(1), (coord::allocation{1, c, epoch}));

  revoke(*store_b_, c.incarnation);  // now c's member key is gone
  auto moved = allocation_of(1);
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->owner, a);
  EXPECT_GT(moved->mod_revision, epoch);
}

TEST_F(coordinator_runner_test, every_compare_of_an_allocation_write_is_checked) {
  const auto a = join(*store_a_, "a", 60s);
  const auto c = join(*store_b_, "c", 60s);
  auto ra = start(store_a_, a);
  poll();
  ASSERT_TRUE(ra->leading());
  const revision me = ra->key_create_revision();
  const std::string key = ra->election_key();
  ra->request_home(a, 1);  // to c
  poll();
  ASSERT_EQ(answers_.size(), 1u);
  const revision e1 = answers_[0].epoch;

  auto applies = [&](const coord::write_allocations& w) {
    auto r = run(*observer_, allocation_txn(cluster, type, key, w));
    return r && r->succeeded;
  };
  // Each of these fails on exactly one compare.
  EXPECT_FALSE(applies({1, me + 1, {{2, a, 0}}, std::nullopt}));   // not our key's revision
  EXPECT_FALSE(applies({1, me, {{1, a, 0}}, std::nullopt}));       // shard 1 exists
  EXPECT_FALSE(applies({1, me, {{1, a, e1 + 1}}, std::nullopt}));  // not shard 1's epoch
  EXPECT_FALSE(applies({1, me, {{1, a, e1}}, c}));                 // c's member key exists
  EXPECT_EQ(allocation_of(1), (coord::allocation{1, c, e1}));
  EXPECT_FALSE(allocation_of(2));

  ra->stop();  // so the runner does not move shard 1 itself
  poll();
  revoke(*store_b_, c.incarnation);
  // Resigned: our key is gone, so even the right write fails now...
  EXPECT_FALSE(applies({1, me, {{1, a, e1}}, c}));
  // ...and succeeds under a key that holds.
  const std::string other = coord_key(cluster, type, a.incarnation);
  auto put = run(*store_a_, {{compare::missing(other)}, {put_op{other, "a", a.incarnation}}, {}});
  ASSERT_TRUE(put && put->succeeded);
  auto r = run(*observer_,
               allocation_txn(cluster, type, other, {1, put->header_revision, {{1, a, e1}}, c}));
  ASSERT_TRUE(r && r->succeeded);
  EXPECT_EQ(allocation_of(1), (coord::allocation{1, a, r->header_revision}));
}

TEST_F(coordinator_runner_test, a_failed_compare_leads_to_a_reread_and_the_stores_answer) {
  const auto a = join(*store_a_, "a", 60s);
  const auto c = join(*store_b_, "c", 60s);
  auto ra = start(store_a_, a);
  poll();
  ASSERT_TRUE(ra->leading());
  ASSERT_EQ(ra->state_reads(), 1);

  // The ask is queued first; the store gets shard 4 from elsewhere before the runner's write.
  ra->request_home(a, 4);  // hash mod 2: the runner would pick a
  auto other = run(*observer_, {{}, {put_op{alloc_key(cluster, type, 4), encode_owner(c), 0}}, {}});
  ASSERT_TRUE(other);
  poll();
  EXPECT_EQ(ra->state_reads(), 2);
  ASSERT_EQ(answers_.size(), 1u);
  EXPECT_EQ(answers_[0], (coord::answer_home{a, 4, c, other->header_revision}));
  EXPECT_EQ(allocation_of(4), (coord::allocation{4, c, other->header_revision}));
}

TEST_F(coordinator_runner_test, a_lost_watch_starts_the_term_again_with_a_fresh_read) {
  const auto a = join(*store_a_, "a", 60s);
  auto ra = start(store_a_, a);
  poll();
  ASSERT_TRUE(ra->leading());
  const revision key = ra->key_create_revision();
  etcd_.set_reachable(*store_a_, false);
  poll();
  EXPECT_FALSE(ra->leading());
  etcd_.set_reachable(*store_a_, true);
  let_time_pass(3s);
  EXPECT_TRUE(ra->leading());
  EXPECT_EQ(ra->key_create_revision(), key);
  EXPECT_EQ(ra->state_reads(), 2);
  ra->request_home(a, 5);
  poll();
  ASSERT_EQ(answers_.size(), 1u);
  EXPECT_EQ(answers_[0].owner, a);
}

TEST_F(coordinator_runner_test, stopping_resigns_and_leaves_the_lease_alone) {
  const auto a = join(*store_a_, "a", 60s);
  const auto b = join(*store_b_, "b", 60s);
  auto ra = start(store_a_, a);
  poll();
  auto rb = start(store_b_, b);
  poll();
  ASSERT_TRUE(ra->leading());
  ra->stop();
  poll();
  EXPECT_FALSE(ra->leading());
  EXPECT_TRUE(rb->leading());
  EXPECT_FALSE(read(ra->election_key()));
  EXPECT_TRUE(read(member_key(cluster, a.node, a.incarnation)));
}

}  // namespace
}  // namespace troupe::cluster
