// Member keys and the members view against the in-process model of etcd: registration under the
// lease (create-if-absent), the key layout and value, and a view that reports joins, changes and
// departures with their revisions, also across a lost watch and compacted history.
#include "cluster/membership/members.hpp"

#include <troupe/cluster/errc.hpp>
#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/core/clock.hpp>

#include "support/manual_time.hpp"

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <variant>
#include <vector>

namespace troupe::cluster {
namespace {

using namespace std::chrono_literals;
using kind = member_change::kind;

class members_test : public ::testing::Test {
 protected:
  void poll() { test_time::poll(io_); }

  void let_time_pass(duration d) { test_time::let_time_pass(*clock_, io_, d); }

  lease_id grant(consensus_store& store, duration ttl = 60s) {
    lease_id id = 0;
    store.grant_lease(ttl, [&](std::error_code ec, lease_grant g) {
      ASSERT_FALSE(ec);
      id = g.id;
    });
    poll();
    return id;
  }

  member_record member(std::string node, lease_id lease, std::vector<std::string> roles = {}) {
    member_record m;
    m.info.id = {std::move(node), lease};
    m.info.roles = std::move(roles);
    m.address = "127.0.0.1:2552";
    return m;
  }

  std::pair<std::error_code, revision> do_register(consensus_store& store, const member_record& m) {
    std::pair<std::error_code, revision> out{make_error_code(errc::store_unavailable), -1};
    register_member(store, "c1", m, [&](std::error_code ec, revision r) { out = {ec, r}; });
    poll();
    return out;
  }

  boost::asio::io_context io_;
  std::shared_ptr<manual_clock> clock_ = std::make_shared<manual_clock>();
  in_process_etcd etcd_{clock_};
  std::shared_ptr<consensus_store> node_ = etcd_.client(io_.get_executor());
  std::shared_ptr<consensus_store> observer_ = etcd_.client(io_.get_executor());
  std::vector<member_change> changes_;
};

TEST(member_keys, round_trip_and_layout) {
  member_record m;
  m.info.id = {"node-a", 0x1f};
  m.info.roles = {"backend", "web"};
  m.info.leaving = true;
  m.info.app_version = "1.2.0";
  m.address = "10.0.0.1:2552";
  const std::string key = member_key("c1", "node-a", 0x1f);
  EXPECT_EQ(key, "/troupe/c1/members/node-a#1f");
  EXPECT_EQ(decode_member("c1", key, encode_member(m)), m);
  EXPECT_EQ(decode_member("c2", key, encode_member(m)), std::nullopt);
  EXPECT_EQ(decode_member("c1", "/troupe/c1/members/node-a", encode_member(m)), std::nullopt);
  EXPECT_EQ(decode_member("c1", "/troupe/c1/members/node-a#zz", encode_member(m)), std::nullopt);
  EXPECT_EQ(decode_member("c1", key, "address=x\nstate=gone\n"), std::nullopt);
  // Unknown fields are skipped: a later version may add some.
  auto extra = decode_member("c1", key, "address=x\nstate=up\nzone=eu\n");
  ASSERT_TRUE(extra);
  EXPECT_FALSE(extra->info.leaving);
}

TEST_F(members_test, registers_under_the_lease_once_per_incarnation) {
  const lease_id lease = grant(*node_);
  auto [ec, rev] = do_register(*node_, member("a", lease));
  ASSERT_FALSE(ec);
  EXPECT_EQ(rev, etcd_.current_revision());
  auto [ec2, rev2] = do_register(*node_, member("a", lease));
  EXPECT_EQ(ec2, errc::invalid_store_request);

  std::optional<range_result> read;
  observer_->range(key_range::single(member_key("c1", "a", lease)),
                   [&](std::error_code, range_result r) { read = std::move(r); });
  poll();
  ASSERT_TRUE(read);
  ASSERT_EQ(read->kvs.size(), 1u);
  EXPECT_EQ(read->kvs[0].lease, lease);

  EXPECT_THROW(do_register(*node_, member("a#b", lease)), std::invalid_argument);
  EXPECT_THROW(do_register(*node_, member("a", 0)), std::invalid_argument);
  EXPECT_THROW(do_register(*node_, member("a", lease, {"x\ny"})), std::invalid_argument);
}

TEST_F(members_test, the_view_reports_joins_changes_and_departures_with_their_revisions) {
  const lease_id a = grant(*node_);
  ASSERT_FALSE(do_register(*node_, member("a", a, {"web"})).first);
  const revision r0 = etcd_.current_revision();

  auto view = members_view::start(observer_, clock_, "c1",
                                  [&](const member_change& c) { changes_.push_back(c); });
  poll();
  ASSERT_EQ(changes_.size(), 1u);
  EXPECT_EQ(changes_[0].type, kind::joined);
  EXPECT_EQ(changes_[0].at, r0);
  EXPECT_EQ(changes_[0].member, member("a", a, {"web"}));
  changes_.clear();

  const lease_id b = grant(*node_);
  const revision rb = do_register(*node_, member("b", b)).second;
  auto leaving = member("a", a, {"web"});
  leaving.info.leaving = true;
  std::optional<revision> ru;
  update_member(*node_, "c1", leaving, [&](std::error_code ec, revision r) {
    ASSERT_FALSE(ec);
    ru = r;
  });
  poll();
  ASSERT_TRUE(ru);
  std::optional<revision> rv;
  node_->revoke_lease(a, [&](std::error_code, revision r) { rv = r; });
  poll();
  ASSERT_TRUE(rv);

  ASSERT_EQ(changes_.size(), 3u);
  EXPECT_EQ(changes_[0].type, kind::joined);
  EXPECT_EQ(changes_[0].at, rb);
  EXPECT_EQ(changes_[0].member.info.id.node, "b");
  EXPECT_EQ(changes_[1].type, kind::changed);
  EXPECT_EQ(changes_[1].at, *ru);
  EXPECT_TRUE(changes_[1].member.info.leaving);
  EXPECT_EQ(changes_[2].type, kind::left);
  EXPECT_EQ(changes_[2].at, *rv);
  EXPECT_EQ(changes_[2].member.info.id, (sharding::coordination::member_id{"a", a}));
  EXPECT_EQ(view->members().size(), 1u);
  EXPECT_EQ(view->seen(), *rv);

  // The coordinator's form.
  auto put = to_coordinator_event(changes_[1]);
  ASSERT_TRUE(std::holds_alternative<sharding::coordination::member_put>(put));
  EXPECT_EQ(std::get<sharding::coordination::member_put>(put).revision, *ru);
  auto del = to_coordinator_event(changes_[2]);
  ASSERT_TRUE(std::holds_alternative<sharding::coordination::member_deleted>(del));
  EXPECT_EQ(std::get<sharding::coordination::member_deleted>(del).id.node, "a");

  // An updated member whose key is gone is not re-created.
  std::error_code gone;
  update_member(*node_, "c1", leaving, [&](std::error_code ec, revision) { gone = ec; });
  poll();
  EXPECT_EQ(gone, errc::lease_not_found);
}

TEST_F(members_test, a_lease_that_expires_shows_as_a_departure) {
  const lease_id a = grant(*node_, 3s);
  ASSERT_FALSE(do_register(*node_, member("a", a)).first);
  auto view = members_view::start(observer_, clock_, "c1",
                                  [&](const member_change& c) { changes_.push_back(c); });
  poll();
  changes_.clear();
  let_time_pass(4s);  // never renewed
  ASSERT_EQ(changes_.size(), 1u);
  EXPECT_EQ(changes_[0].type, kind::left);
  EXPECT_TRUE(view->members().empty());
}

TEST_F(members_test, after_a_lost_watch_and_compacted_history_the_view_reads_again_and_diffs) {
  const lease_id a = grant(*node_);
  const lease_id b = grant(*node_);
  ASSERT_FALSE(do_register(*node_, member("a", a)).first);
  ASSERT_FALSE(do_register(*node_, member("b", b)).first);
  auto view = members_view::start(observer_, clock_, "c1",
                                  [&](const member_change& c) { changes_.push_back(c); });
  poll();
  EXPECT_EQ(view->reads(), 1);
  changes_.clear();

  // The observer loses the store; meanwhile a leaves, c joins and b changes, and the history of
  // those revisions is compacted away, so no watch could replay them.
  etcd_.set_reachable(*observer_, false);
  poll();
  node_->revoke_lease(a, [](std::error_code, revision) {});
  const lease_id c = grant(*node_);
  ASSERT_FALSE(do_register(*node_, member("c", c)).first);
  auto b_leaving = member("b", b);
  b_leaving.info.leaving = true;
  update_member(*node_, "c1", b_leaving, [](std::error_code, revision) {});
  poll();
  etcd_.compact(etcd_.current_revision());
  let_time_pass(3s);  // reads fail while cut off, and are retried
  EXPECT_TRUE(changes_.empty());
  etcd_.set_reachable(*observer_, true);
  let_time_pass(3s);

  const revision now = etcd_.current_revision();
  ASSERT_EQ(changes_.size(), 3u);
  for (const auto& ch : changes_) EXPECT_EQ(ch.at, now);
  EXPECT_EQ(changes_[0].type, kind::left);
  EXPECT_EQ(changes_[0].member.info.id.node, "a");
  EXPECT_EQ(changes_[1].type, kind::changed);
  EXPECT_TRUE(changes_[1].member.info.leaving);
  EXPECT_EQ(changes_[2].type, kind::joined);
  EXPECT_EQ(changes_[2].member.info.id.node, "c");
  EXPECT_GE(view->reads(), 2);

  // And the new watch follows on from the read.
  changes_.clear();
  node_->revoke_lease(c, [](std::error_code, revision) {});
  poll();
  ASSERT_EQ(changes_.size(), 1u);
  EXPECT_EQ(changes_[0].type, kind::left);
  EXPECT_EQ(changes_[0].at, etcd_.current_revision());
}

}  // namespace
}  // namespace troupe::cluster
