// The in-process model of etcd: the conformance suite on a manual clock and an io_context polled
// on the test thread (deterministic, no sleeps), and what only the model offers: exact expiry
// timing, history limits and a client cut off from the store.
#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/core/clock.hpp>

#include "consensus_store_conformance.hpp"
#include "support/manual_time.hpp"

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace troupe::cluster {
namespace {

using namespace std::chrono_literals;
using conformance::environment_factory;
using conformance::store_environment;
using conformance::watch_log;

/// The model on a manual clock; time moves only in let_time_pass and run_until.
class model_environment final : public store_environment {
 public:
  explicit model_environment(in_process_store_options options = {}) : etcd_(clock_, options) {}

  std::shared_ptr<consensus_store> make_store() override {
    return etcd_.client(io_.get_executor());
  }

  void let_time_pass(duration d) override { test_time::let_time_pass(*clock_, io_, d); }

  bool run_until(const std::function<bool()>& done, duration timeout) override {
    const time_point deadline = clock_->now() + timeout;
    poll();
    while (!done()) {
      // Nothing left to run now: let time reach the next thing the clock holds.
      auto next = clock_->next_deadline();
      if (!next || *next > deadline) return false;
      clock_->advance(std::max(*next - clock_->now(), duration::zero()));
      poll();
    }
    return true;
  }

  std::string unique_prefix() override { return "/conformance/"; }

  std::optional<std::string> compact(revision rev) override {
    etcd_.compact(rev);
    return std::nullopt;
  }

  void poll() { test_time::poll(io_); }

  manual_clock& clock() { return *clock_; }
  in_process_etcd& etcd() { return etcd_; }

 private:
  std::shared_ptr<manual_clock> clock_ = std::make_shared<manual_clock>();
  boost::asio::io_context io_;
  in_process_etcd etcd_;
};

}  // namespace

namespace conformance {
INSTANTIATE_TEST_SUITE_P(model, consensus_store_conformance,
                         testing::Values(environment_factory{
                             "model", [] { return std::make_unique<model_environment>(); }, {}}),
                         environment_name);
}  // namespace conformance

namespace {

// -- model-only cases -----------------------------------------------------------------------------

/// One model, its environment and a helper to wait for answers.
class model_test : public testing::Test {
 protected:
  explicit model_test(in_process_store_options options = {}) : env_(options) {}

  template <class T, class Start>
  conformance::reply<T> await(Start start) {
    auto got = std::make_shared<std::optional<conformance::reply<T>>>();
    start([got](std::error_code ec, T v) {
      got->emplace(conformance::reply<T>{ec, std::move(v)});
    });
    EXPECT_TRUE(env_.run_until([&] { return got->has_value(); }, 10s));
    return got->value_or(conformance::reply<T>{make_error_code(errc::store_unavailable), T{}});
  }
  conformance::reply<txn_result> put(consensus_store& s, std::string k, lease_id lease = 0) {
    return await<txn_result>([&](auto h) { s.txn({{}, {put_op{k, "v", lease}}, {}}, h); });
  }
  std::size_t count(consensus_store& s, const std::string& prefix) {
    return await<range_result>([&](auto h) { s.range(key_range::prefix(prefix), h); })
        .value.kvs.size();
  }
  lease_grant grant(consensus_store& s, duration ttl) {
    return await<lease_grant>([&](auto h) { s.grant_lease(ttl, h); }).value;
  }
  std::pair<std::unique_ptr<watch_handle>, std::shared_ptr<watch_log>> watch(consensus_store& s,
                                                                             key_range r,
                                                                             revision start) {
    auto log = std::make_shared<watch_log>();
    auto handle = s.watch(std::move(r), start, [log](std::error_code ec, watch_batch b) {
      if (ec) {
        log->ended = ec;
      } else if (!b.events.empty()) {
        log->batches.push_back(std::move(b));
      }
    });
    return {std::move(handle), log};
  }

  model_environment env_;
};

TEST_F(model_test, handlers_are_posted_never_run_inline) {
  auto store = env_.make_store();
  bool answered = false;
  store->txn({{}, {put_op{"k", "v", 0}}, {}},
             [&](std::error_code, txn_result) { answered = true; });
  EXPECT_FALSE(answered);
  auto [handle, log] = watch(*store, key_range::single("k"), 1);
  EXPECT_TRUE(log->batches.empty());
  env_.poll();
  EXPECT_TRUE(answered);
  EXPECT_EQ(log->event_count(), 1u);
}

TEST_F(model_test, every_modifying_request_takes_exactly_one_revision) {
  auto store = env_.make_store();
  EXPECT_EQ(env_.etcd().current_revision(), 1) << "an empty etcd is at revision 1";
  EXPECT_EQ(put(*store, "a").value.header_revision, 2);
  EXPECT_EQ(put(*store, "b").value.header_revision, 3);
  // Requests that change nothing take no revision: reads, failed compares without writes,
  // deleting a missing key, granting a lease, revoking a lease without keys.
  auto nothing = await<txn_result>([&](auto h) {
    store->txn({{compare::missing("a")}, {put_op{"c", "v", 0}}, {range_op{key_range::single("a")}}},
               h);
  });
  EXPECT_FALSE(nothing.value.succeeded);
  EXPECT_EQ(nothing.value.header_revision, 3);
  await<txn_result>([&](auto h) { store->txn({{}, {delete_op{key_range::single("zz")}}, {}}, h); });
  const auto lease = grant(*store, 5s);
  EXPECT_EQ(await<revision>([&](auto h) { store->revoke_lease(lease.id, h); }).value, 3);
  EXPECT_EQ(env_.etcd().current_revision(), 3);
}

TEST_F(model_test, short_leases_are_raised_to_the_minimum_ttl_in_whole_seconds) {
  auto store = env_.make_store();
  EXPECT_EQ(grant(*store, 1s).ttl, duration(2s));
  EXPECT_EQ(grant(*store, 0s).ttl, duration(2s));
  EXPECT_EQ(grant(*store, 2100ms).ttl, duration(3s));
  EXPECT_EQ(grant(*store, 3s).ttl, duration(3s));
}

TEST_F(model_test, expiry_lands_on_the_first_scan_at_or_after_the_deadline) {
  auto store = env_.make_store();
  env_.let_time_pass(200ms);  // off the 500 ms scan grid
  const auto lease = grant(*store, 2s);
  ASSERT_FALSE(put(*store, "k", lease.id).ec);
  env_.let_time_pass(2s - 1ns);
  EXPECT_EQ(count(*store, "k"), 1u) << "before the deadline";
  env_.let_time_pass(1ns);
  EXPECT_EQ(count(*store, "k"), 1u) << "at the deadline the scan has not run yet";
  env_.let_time_pass(300ms - 1ns);
  EXPECT_EQ(count(*store, "k"), 1u) << "just before the scan at 2.5 s";
  env_.let_time_pass(1ns);
  EXPECT_EQ(count(*store, "k"), 0u) << "the scan at 2.5 s, within [deadline, deadline + scan]";
}

TEST_F(model_test, a_late_keep_alive_expires_the_lease_before_the_scan) {
  auto store = env_.make_store();
  env_.let_time_pass(200ms);
  const auto lease = grant(*store, 2s);
  ASSERT_FALSE(put(*store, "k", lease.id).ec);
  env_.let_time_pass(2s + 100ms);  // past the deadline, before the scan at 2.5 s
  const revision before = env_.etcd().current_revision();
  auto r = await<duration>([&](auto h) { store->keep_alive(lease.id, h); });
  EXPECT_EQ(r.ec, make_error_code(errc::lease_not_found));
  EXPECT_EQ(env_.etcd().current_revision(), before + 1) << "its keys went in one revision";
  EXPECT_EQ(count(*store, "k"), 0u);
}

TEST_F(model_test, keys_moved_to_another_lease_or_none_follow_their_last_put) {
  auto store = env_.make_store();
  const auto short_lease = grant(*store, 2s);
  const auto long_lease = grant(*store, 30s);
  ASSERT_FALSE(put(*store, "moved", short_lease.id).ec);
  ASSERT_FALSE(put(*store, "moved", long_lease.id).ec);
  ASSERT_FALSE(put(*store, "freed", short_lease.id).ec);
  ASSERT_FALSE(put(*store, "freed", 0).ec);
  ASSERT_FALSE(put(*store, "dies", short_lease.id).ec);
  env_.let_time_pass(3s);
  EXPECT_EQ(count(*store, "moved"), 1u);
  EXPECT_EQ(count(*store, "freed"), 1u);
  EXPECT_EQ(count(*store, "dies"), 0u);
}

TEST_F(model_test, cancel_stops_delivery_even_of_queued_batches) {
  auto store = env_.make_store();
  auto [handle, log] = watch(*store, key_range::prefix("p/"), 1);
  ASSERT_FALSE(put(*store, "p/1").ec);
  EXPECT_EQ(log->event_count(), 1u);
  store->txn({{}, {put_op{"p/2", "v", 0}}, {}}, [](std::error_code, txn_result) {});
  handle->cancel();  // the batch for p/2 is queued but not yet run
  env_.poll();
  EXPECT_EQ(log->event_count(), 1u);
  handle.reset();  // destroying after cancel is fine
}

TEST_F(model_test, a_handler_may_cancel_its_own_watch) {
  auto store = env_.make_store();
  std::unique_ptr<watch_handle> handle;
  int calls = 0;
  handle = store->watch(key_range::prefix("p/"), 1, [&](std::error_code, watch_batch) {
    ++calls;
    handle->cancel();
  });
  store->txn({{}, {put_op{"p/1", "v", 0}}, {}}, [](std::error_code, txn_result) {});
  store->txn({{}, {put_op{"p/2", "v", 0}}, {}}, [](std::error_code, txn_result) {});
  env_.poll();
  EXPECT_EQ(calls, 1);
}

TEST_F(model_test, bad_watch_starts_are_refused) {
  auto store = env_.make_store();
  auto [handle, log] = watch(*store, key_range::single("k"), 0);
  env_.poll();
  ASSERT_TRUE(log->ended);
  EXPECT_EQ(*log->ended, make_error_code(errc::invalid_store_request));
}

class model_history_test : public model_test {
 protected:
  model_history_test() : model_test(in_process_store_options{.history = 2}) {}
};

TEST_F(model_history_test, history_beyond_the_limit_is_compacted) {
  auto store = env_.make_store();
  for (int i = 0; i < 4; ++i) ASSERT_FALSE(put(*store, "k").ec);  // revisions 2..5
  auto [old_handle, old_log] = watch(*store, key_range::single("k"), 3);
  auto [kept_handle, kept_log] = watch(*store, key_range::single("k"), 4);
  env_.poll();
  ASSERT_TRUE(old_log->ended);
  EXPECT_EQ(*old_log->ended, make_error_code(errc::compacted));
  EXPECT_FALSE(kept_log->ended);
  EXPECT_EQ(kept_log->event_count(), 2u);
}

// -- a client cut off from the store --------------------------------------------------------------

TEST_F(model_test, a_cut_off_client_times_out_ends_its_watches_and_loses_its_lease) {
  auto node = env_.make_store();
  auto other = env_.make_store();
  const auto lease = grant(*node, 3s);
  ASSERT_FALSE(put(*node, "members/node", lease.id).ec);
  auto [node_handle, node_log] = watch(*node, key_range::prefix("members/"), 1);
  auto [other_handle, other_log] = watch(*other, key_range::prefix("members/"), 1);
  env_.poll();
  ASSERT_EQ(other_log->event_count(), 1u);

  env_.etcd().set_reachable(*node, false);
  env_.poll();
  ASSERT_TRUE(node_log->ended);
  EXPECT_EQ(*node_log->ended, make_error_code(errc::store_unavailable));
  EXPECT_FALSE(other_log->ended) << "other clients keep their watches";

  // A request from the cut-off node is not applied and fails after the request timeout.
  std::optional<std::error_code> put_result;
  node->txn({{}, {put_op{"members/late", "v", 0}}, {}},
            [&](std::error_code ec, txn_result) { put_result = ec; });
  std::optional<std::error_code> renew_result;
  node->keep_alive(lease.id, [&](std::error_code ec, duration) { renew_result = ec; });
  env_.let_time_pass(2s - 1ns);
  EXPECT_FALSE(put_result) << "still waiting for the request timeout";
  env_.let_time_pass(1ns);
  ASSERT_TRUE(put_result);
  EXPECT_EQ(*put_result, make_error_code(errc::store_unavailable));
  ASSERT_TRUE(renew_result);
  EXPECT_EQ(*renew_result, make_error_code(errc::store_unavailable));
  EXPECT_EQ(count(*other, "members/late"), 0u);

  // Unrenewed, its lease expires (TTL 3 s, scan 500 ms) and the other node sees the key go.
  env_.let_time_pass(1s);
  EXPECT_EQ(count(*other, "members/"), 0u);
  ASSERT_EQ(other_log->event_count(), 2u);
  EXPECT_EQ(other_log->events().back().type, watch_event::kind::del);

  // A new watch of the cut-off node ends after the timeout.
  auto [late_handle, late_log] = watch(*node, key_range::prefix("members/"), 1);
  env_.let_time_pass(2s);
  ASSERT_TRUE(late_log->ended);
  EXPECT_EQ(*late_log->ended, make_error_code(errc::store_unavailable));

  // Reconnected, it works again (with a new lease: the old one is gone).
  env_.etcd().set_reachable(*node, true);
  auto renew = await<duration>([&](auto h) { node->keep_alive(lease.id, h); });
  EXPECT_EQ(renew.ec, make_error_code(errc::lease_not_found));
  const auto fresh = grant(*node, 3s);
  ASSERT_FALSE(put(*node, "members/node", fresh.id).ec);
  EXPECT_EQ(count(*other, "members/"), 1u);
  EXPECT_EQ(other_log->event_count(), 3u);
}

TEST_F(model_test, set_reachable_refuses_a_store_of_another_model) {
  model_environment elsewhere;
  auto foreign = elsewhere.make_store();
  EXPECT_THROW(env_.etcd().set_reachable(*foreign, false), std::invalid_argument);
  EXPECT_THROW(env_.etcd().set_answers_lost(*foreign, true), std::invalid_argument);
}

TEST_F(model_test, a_client_whose_answers_are_lost_is_applied_but_times_out) {
  auto node = env_.make_store();
  auto other = env_.make_store();
  const auto lease = grant(*node, 3s);
  auto [node_handle, node_log] = watch(*node, key_range::prefix("members/"), 1);
  env_.poll();

  env_.etcd().set_answers_lost(*node, true);
  env_.poll();
  ASSERT_TRUE(node_log->ended) << "its watch stream broke";
  EXPECT_EQ(*node_log->ended, make_error_code(errc::store_unavailable));

  // The put and the renewal reach the store; their answers do not reach the node.
  std::optional<std::error_code> put_result;
  node->txn({{}, {put_op{"members/node", "v", lease.id}}, {}},
            [&](std::error_code ec, txn_result) { put_result = ec; });
  std::optional<std::error_code> renew_result;
  node->keep_alive(lease.id, [&](std::error_code ec, duration) { renew_result = ec; });
  env_.poll();
  EXPECT_EQ(count(*other, "members/node"), 1u) << "applied at once";
  EXPECT_FALSE(put_result);
  env_.let_time_pass(2s);
  ASSERT_TRUE(put_result);
  EXPECT_EQ(*put_result, make_error_code(errc::store_unavailable));
  ASSERT_TRUE(renew_result);
  EXPECT_EQ(*renew_result, make_error_code(errc::store_unavailable));

  // A renewal whose answer is lost still renews: sent at 2 s, it holds the key (TTL 3 s) past
  // the 3 s the grant gave it.
  node->keep_alive(lease.id, [](std::error_code, duration) {});
  env_.let_time_pass(2s);
  EXPECT_EQ(count(*other, "members/node"), 1u);

  env_.etcd().set_answers_lost(*node, false);
  EXPECT_EQ(count(*node, "members/node"), 1u) << "answers come again";
}

TEST(in_process_store, the_simple_form_keeps_its_model_alive) {
  auto clock = std::make_shared<manual_clock>();
  boost::asio::io_context io;
  auto store = make_in_process_store(clock, io.get_executor());
  std::optional<revision> written;
  store->txn({{}, {put_op{"k", "v", 0}}, {}},
             [&](std::error_code ec, txn_result r) { written = ec ? 0 : r.header_revision; });
  io.poll();
  EXPECT_EQ(written, 2);
  std::optional<std::error_code> renewed;
  store->grant_lease(2s, [&](std::error_code, lease_grant g) {
    store->keep_alive(g.id, [&](std::error_code ec, duration) { renewed = ec; });
  });
  io.restart();
  io.poll();
  ASSERT_TRUE(renewed);
  EXPECT_FALSE(*renewed);
  EXPECT_EQ(clock->pending(), 1u) << "the expiry scan runs while a lease exists";
  store.reset();
  EXPECT_EQ(clock->pending(), 0u) << "and stops with the model";
}

}  // namespace
}  // namespace troupe::cluster
