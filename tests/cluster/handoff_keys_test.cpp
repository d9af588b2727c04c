// The keys and transactions of a shard's hand-off (src/cluster/coordination/handoff_keys.hpp), on
// the in-process model of etcd: values read back as written, and each transaction applies only
// while every one of its compares holds (each case below breaks exactly one).
#include "cluster/coordination/handoff_keys.hpp"

#include <troupe/cluster/membership/in_process_store.hpp>

#include "cluster/coordination/coordination_keys.hpp"
#include "support/manual_time.hpp"

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

namespace troupe::cluster {
namespace {

namespace coord = sharding::coordination;

constexpr const char* cluster = "c1";
constexpr const char* type = "cart";

class handoff_keys_test : public ::testing::Test {
 protected:
  void SetUp() override {
    store_->grant_lease(std::chrono::seconds(60), [&](std::error_code ec, lease_grant g) {
      ASSERT_FALSE(ec);
      lease_ = g.id;
    });
    test_time::poll(io_);
    // An election key and shard 7's allocation to a, as a coordinator would have written them.
    auto r = run({{compare::missing(coord_key_)}, {put_op{coord_key_, "a", lease_}}, {}});
    ASSERT_TRUE(r && r->succeeded);
    election_ = r->header_revision;
    auto alloc = run({{}, {put_op{alloc_key(cluster, type, 7), encode_owner(a_), 0}}, {}});
    ASSERT_TRUE(alloc);
    epoch_ = alloc->header_revision;
  }

  std::optional<txn_result> run(txn_request t) {
    std::optional<txn_result> out;
    store_->txn(std::move(t), [&](std::error_code ec, txn_result r) {
      EXPECT_FALSE(ec) << ec.message();
      if (!ec) out = std::move(r);
    });
    test_time::poll(io_);
    return out;
  }
  bool applies(txn_request t) {
    auto r = run(std::move(t));
    return r && r->succeeded;
  }
  std::optional<key_value> read(const std::string& key) {
    std::optional<key_value> out;
    store_->range(key_range::single(key), [&](std::error_code, range_result r) {
      if (!r.kvs.empty()) out = r.kvs[0];
    });
    test_time::poll(io_);
    return out;
  }
  /// Begins the hand-off of shard 7 from a to b; answers its revision.
  coord::store_revision begin() {
    coord::begin_handoffs b{1, election_, {{7, a_, b_, epoch_}}};
    auto r = run(begin_handoffs_txn(cluster, type, coord_key_, lease_, b));
    EXPECT_TRUE(r && r->succeeded);
    return r ? r->header_revision : 0;
  }

  boost::asio::io_context io_;
  std::shared_ptr<manual_clock> clock_ = std::make_shared<manual_clock>();
  in_process_etcd etcd_{clock_};
  std::shared_ptr<consensus_store> store_ = etcd_.client(io_.get_executor());
  lease_id lease_ = 0;
  std::string coord_key_ = coord_key(cluster, type, 0x1);
  coord::member_id a_{"a", 0x1};
  coord::member_id b_{"b", 0x2};
  coord::store_revision election_ = 0;
  coord::store_revision epoch_ = 0;
};

TEST_F(handoff_keys_test, a_hand_off_and_its_stopped_report_read_back_as_written) {
  const auto h = begin();
  const auto kv = read(handoff_key(cluster, type, 7));
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->lease, lease_) << "under the coordinator's lease";
  EXPECT_EQ(decode_handoff(cluster, type, *kv), (coord::handoff{7, a_, b_, epoch_, h, false}));
  EXPECT_EQ(shard_of_handoff_key(cluster, type, kv->key), 7U);

  ASSERT_TRUE(applies(report_stopped_txn(cluster, type, 7, h, lease_)));
  const auto stopped = read(stopped_key(cluster, type, 7));
  ASSERT_TRUE(stopped);
  const auto report = decode_stopped(cluster, type, *stopped);
  ASSERT_TRUE(report);
  EXPECT_EQ(report->shard, 7U);
  EXPECT_EQ(report->handoff_revision, h);

  key_value junk{handoff_key(cluster, type, 7), "from=a\nto=b#2\nepoch=3\n", 1, 1, 1, 0};
  EXPECT_FALSE(decode_handoff(cluster, type, junk)) << "an incarnation without its lease";
  junk.value = "from=a#1\nto=b#2\n";
  EXPECT_FALSE(decode_handoff(cluster, type, junk)) << "no epoch";
  junk.key = alloc_key(cluster, type, 7);
  junk.value = "handoff=5\n";
  EXPECT_FALSE(decode_stopped(cluster, type, junk)) << "not a stopped key";
}

TEST_F(handoff_keys_test, a_begin_applies_only_for_the_elected_coordinator_at_the_epoch_it_saw) {
  auto begin_with = [&](coord::store_revision election, coord::store_revision epoch) {
    coord::begin_handoffs b{1, election, {{7, a_, b_, epoch}}};
    return begin_handoffs_txn(cluster, type, coord_key_, lease_, b);
  };
  EXPECT_FALSE(applies(begin_with(election_ + 1, epoch_))) << "another election";
  EXPECT_FALSE(applies(begin_with(election_, epoch_ + 1))) << "another epoch";
  EXPECT_FALSE(read(handoff_key(cluster, type, 7)));
  EXPECT_TRUE(applies(begin_with(election_, epoch_)));
  EXPECT_FALSE(applies(begin_with(election_, epoch_))) << "a second hand-off of the shard";
}

TEST_F(handoff_keys_test, a_commit_applies_only_to_the_hand_off_it_names_and_moves_the_shard) {
  const auto h = begin();
  ASSERT_TRUE(applies(report_stopped_txn(cluster, type, 7, h, lease_)));
  auto commit_with = [&](coord::store_revision election, coord::store_revision epoch,
                         coord::store_revision handoff) {
    return commit_handoff_txn(cluster, type, coord_key_,
                              coord::commit_handoff{2, election, 7, b_, epoch, handoff});
  };
  EXPECT_FALSE(applies(commit_with(election_ + 1, epoch_, h))) << "another election";
  EXPECT_FALSE(applies(commit_with(election_, epoch_ + 1, h))) << "another epoch";
  EXPECT_FALSE(applies(commit_with(election_, epoch_, h + 1))) << "another hand-off";
  EXPECT_EQ(decode_allocation(cluster, type, *read(alloc_key(cluster, type, 7)))->owner, a_);

  auto r = run(commit_with(election_, epoch_, h));
  ASSERT_TRUE(r && r->succeeded);
  const auto moved = decode_allocation(cluster, type, *read(alloc_key(cluster, type, 7)));
  EXPECT_EQ(moved, (coord::allocation{7, b_, r->header_revision})) << "the new epoch";
  EXPECT_FALSE(read(handoff_key(cluster, type, 7)));
  EXPECT_FALSE(read(stopped_key(cluster, type, 7)));
}

TEST_F(handoff_keys_test, an_abort_leaves_the_allocation_and_a_late_report_then_fails) {
  const auto h = begin();
  auto abort_with = [&](coord::store_revision election, coord::store_revision handoff) {
    return abort_handoff_txn(cluster, type, coord_key_,
                             coord::abort_handoff{3, election, 7, handoff, "test"});
  };
  EXPECT_FALSE(applies(abort_with(election_ + 1, h))) << "another election";
  EXPECT_FALSE(applies(abort_with(election_, h + 1))) << "another hand-off";
  EXPECT_TRUE(applies(abort_with(election_, h)));
  EXPECT_FALSE(read(handoff_key(cluster, type, 7)));
  EXPECT_EQ(read(alloc_key(cluster, type, 7))->mod_revision, epoch_) << "the shard stays";
  EXPECT_FALSE(applies(report_stopped_txn(cluster, type, 7, h, lease_)))
      << "a report for a hand-off that ended";
  EXPECT_FALSE(read(stopped_key(cluster, type, 7)));
}

}  // namespace
}  // namespace troupe::cluster
