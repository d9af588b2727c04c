// The lease keeper: renewals every TTL/3 with one in flight, the self-fence at s + TTL - margin
// measured from the send time of the last answered renewal, and the fence on a dead lease. A
// manual clock and an io_context polled on the test thread make every step deterministic.
#include "cluster/membership/lease_keeper.hpp"

#include <troupe/cluster/errc.hpp>
#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/core/clock.hpp>

#include "support/manual_time.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

namespace troupe::cluster {
namespace {

using namespace std::chrono_literals;

/// A store whose lease calls wait for the test to answer them; the rest is unused here.
class scripted_store final : public consensus_store {
 public:
  explicit scripted_store(boost::asio::any_io_executor ex) : ex_(std::move(ex)) {}

  struct renewal {
    lease_id lease;
    handler<duration> done;
  };

  void range(key_range, handler<range_result>) override { throw std::logic_error("unused"); }
  void txn(txn_request, handler<txn_result>) override { throw std::logic_error("unused"); }
  void grant_lease(duration ttl, handler<lease_grant> done) override {
    boost::asio::post(ex_, [ttl, done = std::move(done)] { done({}, {42, ttl}); });
  }
  void keep_alive(lease_id lease, handler<duration> done) override {
    renewals.push_back({lease, std::move(done)});
  }
  void revoke_lease(lease_id lease, handler<revision> done) override {
    revoked.push_back(lease);
    boost::asio::post(ex_, [done = std::move(done)] { done({}, 7); });
  }
  std::unique_ptr<watch_handle> watch(key_range, revision, watch_handler) override {
    throw std::logic_error("unused");
  }
  [[nodiscard]] boost::asio::any_io_executor executor() const override { return ex_; }

  /// Answers the oldest renewal.
  void answer(std::error_code ec, duration ttl) {
    auto r = std::move(renewals.front());
    renewals.pop_front();
    boost::asio::post(ex_, [r = std::move(r), ec, ttl] { r.done(ec, ttl); });
  }

  std::deque<renewal> renewals;
  std::vector<lease_id> revoked;

 private:
  boost::asio::any_io_executor ex_;
};

class lease_keeper_test : public ::testing::Test {
 protected:
  void poll() { test_time::poll(io_); }

  /// Moves the clock by `d`, running due timers and the work they post at each step.
  void let_time_pass(duration d) { test_time::let_time_pass(*clock_, io_, d); }

  std::shared_ptr<lease_keeper> start_scripted(lease_keeper_options options = {}) {
    store_ = std::make_shared<scripted_store>(io_.get_executor());
    start_ = clock_->now();
    auto k = lease_keeper::start(
        store_, clock_, options,
        [this](std::error_code ec, lease_id id) {
          grant_ec_ = ec;
          granted_ = id;
        },
        [this](fence_reason why) { fences_.push_back(why); });
    poll();
    return k;
  }

  boost::asio::io_context io_;
  std::shared_ptr<manual_clock> clock_ = std::make_shared<manual_clock>();
  std::shared_ptr<scripted_store> store_;
  time_point start_;
  std::error_code grant_ec_;
  lease_id granted_ = 0;
  std::vector<fence_reason> fences_;
};

TEST_F(lease_keeper_test, renews_every_third_of_the_ttl_with_one_renewal_in_flight) {
  auto keeper = start_scripted();
  EXPECT_EQ(granted_, 42);
  EXPECT_EQ(keeper->lease(), 42);
  EXPECT_EQ(keeper->deadline(), start_ + 2500ms);

  let_time_pass(999ms);
  EXPECT_TRUE(store_->renewals.empty());
  let_time_pass(1ms);
  ASSERT_EQ(store_->renewals.size(), 1u);
  EXPECT_EQ(store_->renewals.front().lease, 42);

  // The next renewal falls due at 2 s while the first is unanswered: it waits for the answer.
  let_time_pass(1200ms);
  EXPECT_EQ(store_->renewals.size(), 1u);
  store_->answer({}, 3s);  // the renewal sent at 1 s: deadline 1 + 3 - 0.5 = 3.5 s
  poll();
  ASSERT_EQ(store_->renewals.size(), 1u);  // the one that was due goes out now, at 2.2 s
  EXPECT_EQ(keeper->deadline(), start_ + 3500ms);
  store_->answer({}, 3s);
  poll();
  EXPECT_EQ(keeper->deadline(), start_ + 4700ms);  // sent at 2.2 s

  // Answered at once from here on: one renewal per TTL/3 of the last send.
  for (int i = 1; i <= 6; ++i) {
    let_time_pass(1s);
    ASSERT_EQ(store_->renewals.size(), 1u) << i;
    store_->answer({}, 3s);
    poll();
  }
  EXPECT_EQ(keeper->deadline(), start_ + 2200ms + 6s + 2500ms);
  EXPECT_FALSE(keeper->fenced());
  EXPECT_TRUE(fences_.empty());
}

TEST_F(lease_keeper_test, a_renewal_answered_late_still_fences_at_its_send_time_plus_ttl) {
  auto keeper = start_scripted();
  let_time_pass(1s);  // renewal sent at 1 s
  ASSERT_EQ(store_->renewals.size(), 1u);
  let_time_pass(1400ms);  // answered at 2.4 s, before the grant's deadline of 2.5 s
  store_->answer({}, 3s);
  poll();
  // The deadline counts from the send (1 s), not from the answer (2.4 s would give 4.9 s).
  EXPECT_EQ(keeper->deadline(), start_ + 3500ms);
  // The renewal due at 2 s went out with the answer, at 2.4 s; it is never answered.
  ASSERT_EQ(store_->renewals.size(), 1u);
  let_time_pass(3500ms - 2400ms - 1ns);
  EXPECT_FALSE(keeper->fenced());
  clock_->advance(1ns);
  EXPECT_TRUE(keeper->fenced());  // at the deadline, before the fence timer's work has run
  poll();
  EXPECT_EQ(fences_, std::vector{fence_reason::deadline_passed});
  EXPECT_EQ(keeper->reason(), fence_reason::deadline_passed);
}

TEST_F(lease_keeper_test, an_answer_after_the_deadline_does_not_unfence) {
  auto keeper = start_scripted();
  let_time_pass(1s);
  ASSERT_EQ(store_->renewals.size(), 1u);
  let_time_pass(1499ms);
  // The renewal sent at 1 s is answered (it would move the deadline to 3.5 s), but its answer is
  // handled only after the grant's deadline of 2.5 s has passed, before the fence timer's work.
  store_->answer({}, 3s);
  clock_->advance(1ms);
  EXPECT_TRUE(keeper->fenced());
  poll();
  EXPECT_TRUE(keeper->fenced());
  EXPECT_EQ(keeper->reason(), fence_reason::deadline_passed);
  EXPECT_EQ(fences_, std::vector{fence_reason::deadline_passed});
  let_time_pass(10s);
  EXPECT_TRUE(keeper->fenced());
  EXPECT_TRUE(store_->renewals.empty());  // a fenced keeper renews nothing
}

// The node's entities read the standing: it follows each renewal's deadline, is lost the moment
// the clock reaches it (before the fence timer has run: as after a process pause), and stays
// lost once the keeper fences.
TEST_F(lease_keeper_test, the_standing_is_lost_at_the_deadline_before_any_timer_runs) {
  auto standing = std::make_shared<troupe::detail::node_standing>(clock_);
  lease_keeper_options options;
  options.standing = standing;
  auto keeper = start_scripted(options);
  EXPECT_EQ(keeper->standing(), standing);
  EXPECT_FALSE(standing->lost());
  let_time_pass(1s);
  store_->answer({}, 3s);  // sent at 1 s: deadline 3.5 s
  poll();
  clock_->advance(2499ms);  // the timers only post work, and nothing polls it
  EXPECT_FALSE(standing->lost());
  clock_->advance(1ms);
  EXPECT_TRUE(standing->lost());  // at 3.5 s, though the fence timer has not run
  EXPECT_TRUE(keeper->fenced());
  EXPECT_TRUE(fences_.empty());
  poll();
  EXPECT_EQ(fences_, std::vector{fence_reason::deadline_passed});
  EXPECT_TRUE(standing->lost());
}

// A keeper that fences for a reason of its own (here the lease is gone) leaves the standing lost,
// however far its last deadline was.
TEST_F(lease_keeper_test, a_fence_loses_the_standing_before_its_deadline) {
  auto keeper = start_scripted();
  let_time_pass(1s);
  store_->answer(make_error_code(errc::lease_not_found), 0s);
  poll();
  EXPECT_EQ(fences_, std::vector{fence_reason::lease_not_found});
  EXPECT_TRUE(keeper->standing()->lost());
}

TEST_F(lease_keeper_test, an_answer_without_ttl_fences_at_once) {
  auto keeper = start_scripted();
  let_time_pass(1s);
  store_->answer({}, 0s);
  poll();
  EXPECT_TRUE(keeper->fenced());
  EXPECT_EQ(fences_, std::vector{fence_reason::no_ttl});
  let_time_pass(10s);
  EXPECT_TRUE(store_->renewals.empty());
  EXPECT_EQ(fences_.size(), 1u);
}

TEST_F(lease_keeper_test, lease_not_found_fences_at_once_and_unavailable_does_not) {
  auto keeper = start_scripted();
  let_time_pass(1s);
  store_->answer(make_error_code(errc::store_unavailable), 0s);
  poll();
  EXPECT_FALSE(keeper->fenced());  // proves nothing: the deadline stands
  let_time_pass(1s);
  store_->answer(make_error_code(errc::lease_not_found), 0s);
  poll();
  EXPECT_TRUE(keeper->fenced());
  EXPECT_EQ(fences_, std::vector{fence_reason::lease_not_found});
}

TEST_F(lease_keeper_test, revoke_fences_first_then_revokes_the_lease) {
  auto keeper = start_scripted();
  std::optional<std::error_code> done;
  keeper->revoke([&](std::error_code ec) {
    EXPECT_TRUE(keeper->fenced());
    done = ec;
  });
  EXPECT_TRUE(keeper->fenced());
  poll();
  ASSERT_TRUE(done);
  EXPECT_FALSE(*done);
  EXPECT_EQ(store_->revoked, std::vector<lease_id>{42});
  EXPECT_EQ(fences_, std::vector{fence_reason::revoked});
}

// A graceful leave gives the lease back while it holds: the standing is lost (no entity handles
// anything) but has not lapsed, so the regions still pass on what other nodes send. A lease that
// ran out first, or a node that fenced itself, has lapsed.
TEST_F(lease_keeper_test, a_lease_given_back_in_time_has_not_lapsed) {
  auto keeper = start_scripted();
  EXPECT_FALSE(keeper->standing()->lapsed());
  keeper->revoke({});
  poll();
  EXPECT_TRUE(keeper->standing()->lost());
  EXPECT_FALSE(keeper->standing()->lapsed());
  keeper->standing()->revoke();  // the placement fences the shards after all
  EXPECT_TRUE(keeper->standing()->lapsed());
}

TEST_F(lease_keeper_test, a_lease_given_back_after_its_deadline_has_lapsed) {
  auto keeper = start_scripted();
  let_time_pass(1s);
  store_->answer({}, 3s);  // sent at 1 s: deadline 3.5 s
  poll();
  clock_->advance(2500ms);  // past it, as after a pause, before the fence timer has run
  EXPECT_TRUE(keeper->standing()->lapsed());
  keeper->revoke({});  // a leave's next step runs first
  poll();
  EXPECT_TRUE(keeper->standing()->lapsed());
}

TEST_F(lease_keeper_test, refuses_a_ttl_below_two_seconds_and_a_margin_without_room) {
  store_ = std::make_shared<scripted_store>(io_.get_executor());
  EXPECT_THROW(lease_keeper::start(store_, clock_, {1500ms, 500ms, nullptr, {}}, {}, {}),
               std::invalid_argument);
  EXPECT_THROW(lease_keeper::start(store_, clock_, {3s, 2s, nullptr, {}}, {}, {}),
               std::invalid_argument);
  EXPECT_NO_THROW(lease_keeper::start(store_, clock_, {2s, 500ms, nullptr, {}}, {}, {}));
}

// The keeper against the model of etcd, cut off from it: it fences at s + TTL - margin, while
// the model still holds the lease and the key under it, and the model expires them only later.
TEST_F(lease_keeper_test, a_lost_store_fences_strictly_before_the_model_expires_the_lease) {
  for (const duration ttl : {duration(2s), duration(3s)}) {
    SCOPED_TRACE(ttl.count());
    in_process_etcd etcd(clock_);
    auto node = etcd.client(io_.get_executor());
    auto observer = etcd.client(io_.get_executor());
    fences_.clear();
    const time_point begin = clock_->now();
    auto keeper = lease_keeper::start(
        node, clock_, {ttl, 500ms, nullptr, {}}, [](std::error_code, lease_id) {},
        [this](fence_reason why) { fences_.push_back(why); });
    poll();
    ASSERT_NE(keeper->lease(), 0);
    bool put = false;
    node->txn({{}, {put_op{"/k", "v", keeper->lease()}}, {}},
              [&](std::error_code ec, txn_result) { put = !ec; });
    poll();
    ASSERT_TRUE(put);

    auto key_alive = [&] {
      std::optional<bool> alive;
      observer->range(key_range::single("/k"),
                      [&](std::error_code ec, range_result r) { alive = !ec && !r.kvs.empty(); });
      poll();
      EXPECT_TRUE(alive.has_value());
      return alive.value_or(false);
    };

    // Healthy for a few TTLs: the last renewal answered is sent at begin + 5 * TTL/3.
    let_time_pass(5 * (ttl / 3));
    const time_point s = clock_->now();
    poll();
    etcd.set_reachable(*node, false);
    const time_point fence_at = s + ttl - 500ms;
    EXPECT_EQ(keeper->deadline(), fence_at);

    let_time_pass(fence_at - clock_->now() - 1ns);
    EXPECT_FALSE(keeper->fenced());
    let_time_pass(1ns);
    EXPECT_TRUE(keeper->fenced());
    EXPECT_EQ(fences_, std::vector{fence_reason::deadline_passed});
    EXPECT_TRUE(key_alive()) << "the model must still hold the lease when the node fences";

    // The model expires it no earlier than s + TTL, and within its 500 ms scan.
    let_time_pass(s + ttl - clock_->now() - 1ns);
    EXPECT_TRUE(key_alive());
    let_time_pass(600ms);
    EXPECT_FALSE(key_alive());
    (void)begin;
    keeper.reset();
  }
}

}  // namespace
}  // namespace troupe::cluster
