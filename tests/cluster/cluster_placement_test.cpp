// A sharded type's placement on a cluster node, on the in-process model of etcd with a manual
// clock: homes come from the allocations, a shard is here only once its store fence stands at the
// allocation's epoch, an owner whose member key is gone hosts nothing, and homeless shards are
// asked for until the coordinator answers; a shard handed off from here has no home anywhere
// until the hand-off ends, is reported stopped only once the region released it, and stays here
// at its epoch when the hand-off is aborted.
#include "cluster/placement/cluster_placement.hpp"

#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/persistence/errc.hpp>
#include <troupe/persistence/memory_plugin.hpp>
#include <troupe/persistence/plugin.hpp>
#include <troupe/sharding/coordination/allocation_strategy.hpp>

#include "cluster/coordination/coordination_keys.hpp"
#include "cluster/coordination/coordinator_runner.hpp"
#include "cluster/coordination/handoff_keys.hpp"
#include "cluster/membership/members.hpp"
#include "support/manual_time.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

namespace troupe::cluster {
namespace {

using namespace std::chrono_literals;
namespace coord = sharding::coordination;
namespace tp = troupe::persistence;
using sharding::no_home_yet;
using sharding::placed_here;
using sharding::placed_remote;
using sharding::shard_home;
using sharding::shard_id;

constexpr const char* cluster = "c1";
constexpr const char* type = "cart";

/// A fence raiser whose answers the test gives by hand.
struct held_fences {
  struct call {
    shard_id shard;
    sharding::shard_epoch epoch;
    std::function<void(std::error_code, tp::fence_raise)> done;
  };
  std::vector<call> calls;

  fence_raiser raiser() {
    return [this](shard_id shard, sharding::shard_epoch epoch, auto done) {
      calls.push_back({shard, epoch, std::move(done)});
    };
  }
};

class cluster_placement_test : public ::testing::Test {
 protected:
  void poll() { test_time::poll(io_); }
  void let_time_pass(duration d) { test_time::let_time_pass(*clock_, io_, d); }

  coord::member_id join(std::string node) {
    lease_id lease = 0;
    store_->grant_lease(60s, [&](std::error_code ec, lease_grant g) {
      ASSERT_FALSE(ec);
      lease = g.id;
    });
    poll();
    member_record m;
    m.info.id = {std::move(node), lease};
    m.address = "127.0.0.1:" + std::to_string(2550 + lease % 10);
    bool done = false;
    register_member(*store_, cluster, m, [&](std::error_code ec, revision) {
      EXPECT_FALSE(ec);
      done = true;
    });
    poll();
    EXPECT_TRUE(done);
    return m.info.id;
  }

  /// Writes the allocation of `shard` to `owner` as a coordinator would; answers its epoch.
  revision allocate(shard_id shard, const coord::member_id& owner) {
    txn_request t;
    t.success.emplace_back(put_op{alloc_key(cluster, type, shard), encode_owner(owner), 0});
    revision at = 0;
    store_->txn(std::move(t), [&](std::error_code ec, txn_result r) {
      EXPECT_FALSE(ec);
      at = r.header_revision;
    });
    poll();
    return at;
  }

  void revoke(lease_id lease) {
    store_->revoke_lease(lease, [](std::error_code ec, revision) { EXPECT_FALSE(ec); });
    poll();
  }

  std::shared_ptr<cluster_placement> start(const coord::member_id& self, fence_raiser fences) {
    cluster_placement_options o;
    o.cluster = cluster;
    o.type = type;
    o.self = self;
    o.retry = 500ms;
    auto p = cluster_placement::start(store_, clock_, o, std::move(fences),
                                      [this](shard_id s) { asked_.push_back(s); });
    p->set_listener([this](shard_id s) { told_.push_back(s); });
    return p;
  }

  boost::asio::io_context io_;
  std::shared_ptr<manual_clock> clock_ = std::make_shared<manual_clock>();
  in_process_etcd etcd_{clock_};
  std::shared_ptr<consensus_store> store_ = etcd_.client(io_.get_executor());
  std::vector<shard_id> asked_;
  std::vector<shard_id> told_;
  held_fences fences_;
};

TEST_F(cluster_placement_test,
       registers_its_region_reads_and_asks_for_homeless_shards_until_placed) {
  const auto a = join("a");
  auto p = start(a, fences_.raiser());
  EXPECT_EQ(p->home_of(5), shard_home{no_home_yet{}});  // nothing read yet
  poll();
  EXPECT_TRUE(p->ready());
  bool registered = false;
  store_->range(key_range::single(region_key(cluster, type, a)),
                [&](std::error_code ec, range_result r) {
                  registered = !ec && r.kvs.size() == 1 && r.kvs[0].lease == a.incarnation;
                });
  poll();
  EXPECT_TRUE(registered);
  EXPECT_EQ(told_, std::vector<shard_id>{});  // still homeless: nothing to tell

  EXPECT_EQ(p->home_of(5), shard_home{no_home_yet{}});
  poll();
  EXPECT_EQ(asked_, std::vector<shard_id>{5});
  EXPECT_EQ(p->home_of(5), shard_home{no_home_yet{}});
  poll();
  EXPECT_EQ(asked_.size(), 1u) << "asked again before the retry interval";
  let_time_pass(600ms);
  EXPECT_EQ(asked_.size(), 2u) << "a coordinator that was not leading ignored the first ask";
  EXPECT_EQ(p->address_of("a"), "127.0.0.1:" + std::to_string(2550 + a.incarnation % 10));
  p->stop();
  poll();
}

// A flush of this node that times out starts the shard's next round: its own messages carry it
// from then on (messages passed on keep the stamp they came with), and a message of an older
// round comes too late: of this node, or of another run once one of its newer round was seen
// (docs/cluster.md, "A flush that times out"; whole-node seeds 611 and 1591 with moves).
TEST_F(cluster_placement_test, a_flush_that_times_out_starts_a_round_older_messages_cannot_follow) {
  const auto a = join("a");
  const auto b = join("b");
  std::vector<std::pair<shard_id, sharding::origin_stamp>> sent;
  cluster_placement_options o;
  o.cluster = cluster;
  o.type = type;
  o.self = a;
  o.send = [&](const std::string&, shard_id shard, sharding::shard_epoch, const std::string&,
               const void*, const untyped_ref&,
               const sharding::origin_stamp& stamp) { sent.emplace_back(shard, stamp); };
  o.send_flush = [](const std::string&, shard_id, sharding::shard_epoch, std::uint64_t,
                    const untyped_ref&, const std::string&) {};
  round_counter link_round;  // what a link of shard 3 stamps its messages with
  o.link = [&](const std::string&, shard_id, sharding::shard_epoch, std::int64_t run,
               round_counter round) {
    EXPECT_EQ(run, a.incarnation);
    link_round = std::move(round);
    return std::shared_ptr<sharding::placement::remote_link>();
  };
  o.flush_timeout = 5s;
  auto p = cluster_placement::start(store_, clock_, o, fences_.raiser(), [](shard_id) {});
  poll();
  const placed_remote home{"b", allocate(3, b)};
  p->send_remote(home, 3, "x", nullptr, {}, {});
  (void)p->link_to(home, 3);
  ASSERT_TRUE(link_round);
  EXPECT_EQ(link_round->load(), 0U);
  ASSERT_TRUE(p->send_flush(home, 3, 77, {}, ""));
  let_time_pass(6s);  // no answer: the region sends on
  EXPECT_EQ(link_round->load(), 1U) << "a link reads the round at each send";
  p->send_remote(home, 3, "x", nullptr, {}, {});
  p->send_remote(home, 4, "x", nullptr, {}, {});
  p->send_remote(home, 3, "x", nullptr, {}, {b.incarnation, 4});  // passed on
  const auto stamp_of = [](const auto& s) {
    return std::tuple(s.first, s.second.run, s.second.round);
  };
  std::vector<std::tuple<shard_id, std::int64_t, std::uint32_t>> stamps;
  std::transform(sent.begin(), sent.end(), std::back_inserter(stamps), stamp_of);
  const std::vector<std::tuple<shard_id, std::int64_t, std::uint32_t>> want = {
      {3, a.incarnation, 0}, {3, a.incarnation, 1}, {4, a.incarnation, 0}, {3, b.incarnation, 4}};
  EXPECT_EQ(stamps, want);

  EXPECT_TRUE(p->overtaken(3, {a.incarnation, 0})) << "sent before its own flush timed out";
  EXPECT_FALSE(p->overtaken(3, {a.incarnation, 1}));
  EXPECT_FALSE(p->overtaken(4, {a.incarnation, 0})) << "rounds are per shard";
  EXPECT_FALSE(p->overtaken(3, {b.incarnation, 0})) << "no newer round of b seen yet";
  EXPECT_FALSE(p->overtaken(3, {b.incarnation, 2}));
  EXPECT_TRUE(p->overtaken(3, {b.incarnation, 1}));
  EXPECT_TRUE(p->overtaken(3, {b.incarnation, 0}));
  EXPECT_FALSE(p->overtaken(3, {b.incarnation, 2}));
  EXPECT_FALSE(p->overtaken(4, {b.incarnation, 0})) << "rounds are per shard";
  EXPECT_FALSE(p->overtaken(3, {b.incarnation + 1, 0})) << "another run starts afresh";
  p->stop();
  poll();
}

// A region that cannot send its own marker behind what it sent to an old home (that node is no
// member any more) sends on at once; the placement starts the shard's next round as for a flush
// that timed out, because what it sent there may still arrive: a node that left gracefully
// passes on what reaches it (whole-node seed 5775: a note passed on by a node that had left,
// delivered after its sender's newer ones).
TEST_F(cluster_placement_test, an_abandoned_flush_starts_a_round_older_messages_cannot_follow) {
  const auto a = join("a");
  const auto b = join("b");
  std::vector<std::uint32_t> rounds;  // of shard 3's messages, in the order sent
  cluster_placement_options o;
  o.cluster = cluster;
  o.type = type;
  o.self = a;
  o.send = [&](const std::string&, shard_id, sharding::shard_epoch, const std::string&, const void*,
               const untyped_ref&,
               const sharding::origin_stamp& stamp) { rounds.push_back(stamp.round); };
  auto p = cluster_placement::start(store_, clock_, o, fences_.raiser(), [](shard_id) {});
  poll();
  const placed_remote home{"b", allocate(3, b)};
  p->send_remote(home, 3, "x", nullptr, {}, {});
  p->flush_abandoned(3);
  p->send_remote(home, 3, "x", nullptr, {}, {});
  EXPECT_EQ(rounds, (std::vector<std::uint32_t>{0, 1}));
  EXPECT_TRUE(p->overtaken(3, {a.incarnation, 0})) << "sent before the flush was abandoned";
  EXPECT_FALSE(p->overtaken(3, {a.incarnation, 1}));
  // Elsewhere: the node that saw a's newer message refuses its older one.
  EXPECT_FALSE(p->overtaken(3, {b.incarnation, 1}));
  EXPECT_TRUE(p->overtaken(3, {b.incarnation, 0}));
  p->stop();
  poll();
}

TEST_F(cluster_placement_test, a_shard_allocated_here_is_placed_only_once_its_fence_is_raised) {
  const auto a = join("a");
  auto p = start(a, fences_.raiser());
  poll();
  ASSERT_EQ(p->home_of(7), shard_home{no_home_yet{}});
  const revision epoch = allocate(7, a);
  ASSERT_EQ(fences_.calls.size(), 1u);
  EXPECT_EQ(fences_.calls[0].shard, 7u);
  EXPECT_EQ(fences_.calls[0].epoch, epoch);
  // Until the store refuses the previous owner's writes, the shard is not here.
  EXPECT_EQ(p->home_of(7), shard_home{no_home_yet{}});
  EXPECT_TRUE(told_.empty());
  fences_.calls[0].done({}, tp::fence_raise::raised);
  poll();
  EXPECT_EQ(told_, std::vector<shard_id>{7});
  EXPECT_EQ(p->home_of(7), shard_home{placed_here{epoch}});

  // The incarnation ends: every home it knew is gone.
  p->stop();
  poll();
  EXPECT_EQ(told_, (std::vector<shard_id>{7, 7}));
  EXPECT_EQ(p->home_of(7), shard_home{no_home_yet{}});
}

TEST_F(cluster_placement_test,
       a_superseded_or_failed_fence_keeps_the_shard_homeless_until_a_raise_holds) {
  const auto a = join("a");
  auto p = start(a, fences_.raiser());
  poll();
  (void)p->home_of(2);
  const revision first = allocate(2, a);
  ASSERT_EQ(fences_.calls.size(), 1u);
  fences_.calls[0].done({}, tp::fence_raise::superseded);
  poll();
  EXPECT_EQ(p->home_of(2), shard_home{no_home_yet{}});
  let_time_pass(600ms);
  EXPECT_EQ(fences_.calls.size(), 1u) << "a superseded epoch is never raised again";

  const revision second = allocate(2, a);  // the newer allocation the store knew of
  ASSERT_EQ(fences_.calls.size(), 2u);
  EXPECT_EQ(fences_.calls[1].epoch, second);
  EXPECT_GT(second, first);
  fences_.calls[1].done(tp::make_error_code(tp::errc::store_failure), tp::fence_raise::superseded);
  poll();
  EXPECT_EQ(p->home_of(2), shard_home{no_home_yet{}});
  let_time_pass(600ms);  // the tick raises a failed fence again
  ASSERT_EQ(fences_.calls.size(), 3u);
  EXPECT_EQ(fences_.calls[2].epoch, second);
  fences_.calls[2].done({}, tp::fence_raise::raised);
  poll();
  EXPECT_EQ(p->home_of(2), shard_home{placed_here{second}});
  p->stop();
  poll();
}

TEST_F(cluster_placement_test,
       a_live_owner_elsewhere_is_remote_and_its_shards_go_homeless_when_its_key_goes) {
  const auto a = join("a");
  const auto b = join("b");
  auto p = start(a, fences_.raiser());
  poll();
  const revision at_b = allocate(3, b);
  EXPECT_EQ(p->home_of(3), shard_home{(placed_remote{"b", at_b})});
  poll();
  EXPECT_TRUE(asked_.empty());
  EXPECT_TRUE(fences_.calls.empty());

  revoke(b.incarnation);  // b's member key goes with its lease
  EXPECT_EQ(told_, std::vector<shard_id>{3});
  EXPECT_EQ(p->home_of(3), shard_home{no_home_yet{}});
  EXPECT_EQ(asked_, std::vector<shard_id>{3});

  const revision at_a = allocate(3, a);  // the coordinator moves it here
  ASSERT_EQ(fences_.calls.size(), 1u);
  EXPECT_EQ(fences_.calls[0].epoch, at_a);
  fences_.calls[0].done({}, tp::fence_raise::raised);
  poll();
  EXPECT_EQ(p->home_of(3), shard_home{placed_here{at_a}});
  EXPECT_EQ(told_, (std::vector<shard_id>{3, 3}));

  // Another incarnation of node "a" is not this one: its allocation is not here.
  const auto a2 = join("a");
  const revision at_a2 = allocate(3, a2);
  EXPECT_EQ(p->home_of(3), shard_home{(placed_remote{"a", at_a2})});
  p->stop();
  poll();
}

TEST_F(cluster_placement_test, a_lost_watch_reads_again_and_misses_no_change) {
  const auto a = join("a");
  const auto b = join("b");
  auto p = start(a, fences_.raiser());
  poll();
  (void)p->home_of(4);
  poll();
  etcd_.set_reachable(*store_, false);  // the watch ends; reads fail after the request timeout
  poll();
  // Written while the placement cannot see it.
  auto other = etcd_.client(io_.get_executor());
  txn_request t;
  t.success.emplace_back(put_op{alloc_key(cluster, type, 4), encode_owner(b), 0});
  revision at = 0;
  other->txn(std::move(t), [&](std::error_code ec, txn_result r) {
    EXPECT_FALSE(ec);
    at = r.header_revision;
  });
  let_time_pass(100ms);
  ASSERT_GT(at, 0);
  EXPECT_EQ(p->home_of(4), shard_home{no_home_yet{}});
  etcd_.set_reachable(*store_, true);
  let_time_pass(30s);
  EXPECT_EQ(p->home_of(4), shard_home{(placed_remote{"b", at})});
  EXPECT_NE(std::find(told_.begin(), told_.end(), 4u), told_.end());
  p->stop();
  poll();
}

TEST_F(cluster_placement_test, fences_raised_through_a_journal_refuse_the_previous_owners_writes) {
  const auto a = join("a");
  const auto b = join("b");
  std::shared_ptr<tp::plugin> journal = tp::make_memory_plugin();
  auto pa = start(a, raise_fences_in(journal, type));
  poll();
  const revision at_a = allocate(9, a);
  (void)pa->home_of(9);
  for (int i = 0; i < 1000 && pa->home_of(9) != shard_home{placed_here{at_a}}; ++i) poll();
  ASSERT_EQ(pa->home_of(9), shard_home{placed_here{at_a}});

  auto append = [&](revision epoch) {
    tp::append_request r;
    r.persistence_id = "cart|9|x";
    r.expected_next = 1;
    r.events.push_back({{"e", 1}, {}});
    r.epoch = static_cast<tp::ownership_epoch>(epoch);
    r.shard_fence = tp::fenced_shard{type, 9};
    try {
      journal->journal().async_append(std::move(r), boost::asio::use_future).get();
      return std::error_code{};
    } catch (const std::system_error& e) {
      return e.code();
    }
  };
  // b takes shard 9 over (a's key is gone): once b places it, a's epoch writes nothing more.
  revoke(a.incarnation);
  auto pb = start(b, raise_fences_in(journal, type));
  poll();
  const revision at_b = allocate(9, b);
  (void)pb->home_of(9);
  for (int i = 0; i < 1000 && pb->home_of(9) != shard_home{placed_here{at_b}}; ++i) poll();
  ASSERT_EQ(pb->home_of(9), shard_home{placed_here{at_b}});
  EXPECT_EQ(append(at_a), tp::make_error_code(tp::errc::epoch_fenced));
  EXPECT_EQ(append(at_b), std::error_code{});
  pa->stop();
  pb->stop();
  poll();
}

TEST_F(cluster_placement_test, with_the_coordinator_runner_a_homeless_shard_finds_a_home) {
  const auto a = join("a");
  std::shared_ptr<coordinator_runner> runner;
  cluster_placement_options o;
  o.cluster = cluster;
  o.type = type;
  o.self = a;
  auto p = cluster_placement::start(store_, clock_, o, {},
                                    [&](shard_id s) { runner->request_home(a, s); });
  coordinator_runner_options ro;
  ro.cluster = cluster;
  ro.type = type;
  ro.self = a;
  runner = coordinator_runner::start(store_, clock_, ro, coord::make_hash_mod_regions_strategy(),
                                     [](const coord::answer_home&) {});
  p->set_listener([this](shard_id s) { told_.push_back(s); });
  poll();
  ASSERT_TRUE(p->ready());
  ASSERT_TRUE(runner->leading());
  EXPECT_EQ(p->home_of(11), shard_home{no_home_yet{}});
  poll();
  ASSERT_EQ(told_, std::vector<shard_id>{11});
  const auto home = p->home_of(11);
  ASSERT_TRUE(std::holds_alternative<placed_here>(home));
  EXPECT_GT(std::get<placed_here>(home).epoch, 0);
  runner->stop();
  p->stop();
  poll();
}

/// Allocates to `picks` in turn (the last one again and again); its first rebalance moves
/// `shard`, and no later one.
class move_shard final : public coord::allocation_strategy {
 public:
  move_shard(shard_id shard, std::vector<coord::member_id> picks)
      : shard_(shard), picks_(std::move(picks)) {}
  std::optional<coord::member_id> allocate(shard_id, std::span<const coord::region_view>) override {
    const auto& pick = picks_[std::min(next_, picks_.size() - 1)];
    ++next_;
    return pick;
  }
  std::vector<shard_id> rebalance(std::span<const coord::region_view>,
                                  std::span<const shard_id>) override {
    if (rebalanced_) return {};
    rebalanced_ = true;
    return {shard_};
  }

 private:
  shard_id shard_;
  std::vector<coord::member_id> picks_;
  std::size_t next_ = 0;
  bool rebalanced_ = false;
};

/// Nodes a and b, each with a placement (no store fences), and a's runner, whose strategy puts
/// shard 11 on a and then hands it off to b.
class handoff_test : public cluster_placement_test {
 protected:
  void SetUp() override {
    a_ = join("a");
    b_ = join("b");
    coordinator_runner_options ro;
    ro.cluster = cluster;
    ro.type = type;
    ro.self = a_;
    ro.settings.rebalance_interval = 1s;
    ro.settings.handoff_timeout = 3s;
    auto ask = [this](const coord::member_id& who) {
      return [this, who](shard_id s) { runner_->request_home(who, s); };
    };
    pa_ = place(a_, ask(a_), told_);
    pb_ = place(b_, ask(b_), told_b_);
    runner_ = coordinator_runner::start(store_, clock_, ro,
                                        std::make_unique<move_shard>(11, std::vector{a_, b_}),
                                        [](const coord::answer_home&) {});
    poll();
    ASSERT_TRUE(runner_->leading());
    ASSERT_EQ(pa_->home_of(11), shard_home{no_home_yet{}});
    poll();
    const auto home = pa_->home_of(11);
    ASSERT_TRUE(std::holds_alternative<placed_here>(home));
    epoch_ = std::get<placed_here>(home).epoch;
    told_.clear();
  }
  void TearDown() override {
    runner_->stop();
    pa_->stop();
    pb_->stop();
    poll();
  }

  std::shared_ptr<cluster_placement> place(const coord::member_id& self, home_request ask,
                                           std::vector<shard_id>& told) {
    cluster_placement_options o;
    o.cluster = cluster;
    o.type = type;
    o.self = self;
    auto p = cluster_placement::start(store_, clock_, o, {}, std::move(ask));
    p->set_listener([&told](shard_id s) { told.push_back(s); });
    return p;
  }

  /// The key's value, or "" when it does not exist.
  std::string read(const std::string& key) {
    std::string value;
    store_->range(key_range::single(key), [&](std::error_code, range_result r) {
      if (!r.kvs.empty()) value = r.kvs[0].value;
    });
    poll();
    return value;
  }
  bool handing_off() { return !read(handoff_key(cluster, type, 11)).empty(); }

  coord::member_id a_;
  coord::member_id b_;
  std::shared_ptr<cluster_placement> pa_;
  std::shared_ptr<cluster_placement> pb_;
  std::shared_ptr<coordinator_runner> runner_;
  std::vector<shard_id> told_b_;
  sharding::shard_epoch epoch_ = 0;
};

TEST_F(handoff_test, the_shard_moves_only_once_the_old_owners_region_released_it) {
  let_time_pass(1s);  // the rebalance: a hand-off of shard 11 from a to b
  ASSERT_TRUE(handing_off());
  ASSERT_FALSE(told_.empty()) << "a's region is told to stop the shard";
  EXPECT_EQ(std::count(told_.begin(), told_.end(), 11), static_cast<long>(told_.size()));
  EXPECT_EQ(pb_->home_of(11), shard_home{no_home_yet{}}) << "nobody routes to it meanwhile";

  // A release the region reported before it asked the shard's home during this hand-off may be
  // from before it: the region could have started the shard again since.
  pa_->released(11);
  let_time_pass(2s);
  EXPECT_EQ(read(stopped_key(cluster, type, 11)), "");
  EXPECT_EQ(pa_->home_of(11), shard_home{no_home_yet{}});
  EXPECT_EQ(read(alloc_key(cluster, type, 11)), encode_owner(a_)) << "no move without the stop";

  pa_->released(11);  // after its home_of: the region has no actor for the shard
  poll();
  EXPECT_FALSE(handing_off());
  EXPECT_EQ(read(alloc_key(cluster, type, 11)), encode_owner(b_));
  const auto home = pb_->home_of(11);
  ASSERT_TRUE(std::holds_alternative<placed_here>(home));
  const auto moved_at = std::get<placed_here>(home).epoch;
  EXPECT_GT(moved_at, epoch_);
  EXPECT_EQ(pa_->home_of(11), shard_home{(placed_remote{"b", moved_at})});
  EXPECT_EQ(read(stopped_key(cluster, type, 11)), "") << "the commit deletes the report";
}

TEST_F(handoff_test, a_hand_off_the_old_owner_does_not_stop_in_time_leaves_the_shard_there) {
  let_time_pass(1s);
  ASSERT_TRUE(handing_off());
  EXPECT_EQ(pa_->home_of(11), shard_home{no_home_yet{}});
  let_time_pass(5s);  // past the hand-off timeout, and its region never released the shard
  EXPECT_FALSE(handing_off());
  EXPECT_EQ(read(alloc_key(cluster, type, 11)), encode_owner(a_));
  EXPECT_EQ(pa_->home_of(11), shard_home{placed_here{epoch_}}) << "back here, at its epoch";
  EXPECT_EQ(pb_->home_of(11), shard_home{(placed_remote{"a", epoch_})});
}

}  // namespace
}  // namespace troupe::cluster
