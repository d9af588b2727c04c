#pragma once
// The consensus store conformance suite: what every consensus_store (the in-process model of
// etcd, the etcd client) must do, as etcd 3.4 does it. A value-parameterized GoogleTest suite
// over a store_environment; to run it against a store, write one small test file with an
// environment and instantiate it there:
//
//   INSTANTIATE_TEST_SUITE_P(etcd, consensus_store_conformance,
//                            testing::Values(environment_factory{"etcd", make_env, why_not}),
//                            environment_name);
//
// The cases assume only etcd's guarantees, never the model's internals: revisions are compared
// relative to each other (other writers may share a real etcd), keys live under a prefix of
// their own, lease expiry is awaited as TTL plus etcd's 500 ms scan, and watches may deliver
// empty progress batches.

#include <troupe/cluster/errc.hpp>
#include <troupe/cluster/membership/consensus_store.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace troupe::cluster::conformance {

using namespace std::chrono_literals;

/// Where one run of the suite takes its stores and its time from.
class store_environment {
 public:
  virtual ~store_environment() = default;
  /// A new client (connection) of the one store this environment runs against; every store
  /// made in one test reaches the same data.
  virtual std::shared_ptr<consensus_store> make_store() = 0;
  /// Lets `d` pass on the store's clock, running handlers meanwhile (the model advances a manual
  /// clock; a real etcd sleeps).
  virtual void let_time_pass(duration d) = 0;
  /// Runs handlers until `done()` holds, for at most `timeout` of the store's time; returns
  /// done().
  virtual bool run_until(const std::function<bool()>& done, duration timeout) = 0;
  /// A key prefix ending in '/' that no other test or run uses.
  virtual std::string unique_prefix() = 0;
  /// Compacts the store's history below `rev`; returns why it cannot (the case is skipped).
  virtual std::optional<std::string> compact(revision rev) = 0;
};

/// How the suite makes an environment for each case.
struct environment_factory {
  std::string name;
  std::function<std::unique_ptr<store_environment>()> make;
  /// Why the environment cannot run here (no etcd), or nothing; the cases are then skipped.
  std::function<std::optional<std::string>()> unavailable;

  friend void PrintTo(const environment_factory& f, std::ostream* os) { *os << f.name; }
};

/// Names instantiated cases after their environment.
inline std::string environment_name(const testing::TestParamInfo<environment_factory>& info) {
  return info.param.name;
}

/// An answer of the store.
template <class T>
struct reply {
  std::error_code ec;
  T value{};
};

/// Everything one watch delivered: its non-empty batches and the error that ended it.
struct watch_log {
  std::vector<watch_batch> batches;
  std::optional<std::error_code> ended;

  [[nodiscard]] std::vector<watch_event> events() const {
    std::vector<watch_event> all;
    for (const auto& b : batches) all.insert(all.end(), b.events.begin(), b.events.end());
    return all;
  }
  [[nodiscard]] std::size_t event_count() const { return events().size(); }
};

class consensus_store_conformance : public testing::TestWithParam<environment_factory> {
 protected:
  void SetUp() override {
    if (GetParam().unavailable) {
      if (auto why = GetParam().unavailable()) GTEST_SKIP() << *why;
    }
    env_ = GetParam().make();
    store_ = env_->make_store();
    prefix_ = env_->unique_prefix();
  }

  void TearDown() override {
    watches_.clear();
    store_.reset();
  }

  [[nodiscard]] std::string key(const std::string& name) const { return prefix_ + name; }
  [[nodiscard]] key_range all() const { return key_range::prefix(prefix_); }

  /// Starts a request with `start(handler)` and runs handlers until it is answered.
  template <class T, class Start>
  reply<T> await(Start start, duration timeout = 10s) {
    auto got = std::make_shared<std::optional<reply<T>>>();
    start([got](std::error_code ec, T value) { got->emplace(reply<T>{ec, std::move(value)}); });
    if (!env_->run_until([&] { return got->has_value(); }, timeout)) {
      ADD_FAILURE() << "no answer from the store";
      return {make_error_code(errc::store_unavailable), T{}};
    }
    return std::move(**got);
  }

  reply<txn_result> txn(consensus_store& s, txn_request r) {
    return await<txn_result>([&](auto h) { s.txn(std::move(r), std::move(h)); });
  }
  reply<txn_result> txn(txn_request r) { return txn(*store_, std::move(r)); }

  /// Puts and expects success; returns the revision it wrote.
  revision put(consensus_store& s, const std::string& k, const std::string& v, lease_id l = 0) {
    auto r = txn(s, {{}, {put_op{k, v, l}}, {}});
    EXPECT_FALSE(r.ec) << r.ec.message();
    EXPECT_TRUE(r.value.succeeded);
    return r.value.header_revision;
  }
  revision put(const std::string& k, const std::string& v, lease_id l = 0) {
    return put(*store_, k, v, l);
  }

  range_result get(consensus_store& s, key_range r) {
    auto got = await<range_result>([&](auto h) { s.range(std::move(r), std::move(h)); });
    EXPECT_FALSE(got.ec) << got.ec.message();
    return got.value;
  }
  range_result get(key_range r) { return get(*store_, std::move(r)); }
  std::optional<key_value> get_one(const std::string& k) {
    auto r = get(key_range::single(k));
    if (r.kvs.empty()) return std::nullopt;
    return r.kvs.front();
  }

  lease_grant grant(consensus_store& s, duration ttl) {
    auto r = await<lease_grant>([&](auto h) { s.grant_lease(ttl, std::move(h)); });
    EXPECT_FALSE(r.ec) << r.ec.message();
    return r.value;
  }
  lease_grant grant(duration ttl) { return grant(*store_, ttl); }

  reply<duration> keep_alive(consensus_store& s, lease_id l) {
    return await<duration>([&](auto h) { s.keep_alive(l, std::move(h)); });
  }
  reply<duration> keep_alive(lease_id l) { return keep_alive(*store_, l); }

  reply<revision> revoke(lease_id l) {
    return await<revision>([&](auto h) { store_->revoke_lease(l, std::move(h)); });
  }

  /// Watches `r` from `start`, logging what arrives; the watch lives until the test ends.
  std::shared_ptr<watch_log> watch(consensus_store& s, key_range r, revision start) {
    auto log = std::make_shared<watch_log>();
    watches_.push_back(s.watch(std::move(r), start, [log](std::error_code ec, watch_batch b) {
      if (ec) {
        log->ended = ec;
      } else if (!b.events.empty()) {
        log->batches.push_back(std::move(b));
      }
    }));
    return log;
  }
  std::shared_ptr<watch_log> watch(key_range r, revision start) {
    return watch(*store_, std::move(r), start);
  }

  bool wait_for_events(const watch_log& log, std::size_t n, duration timeout = 10s) {
    return env_->run_until([&] { return log.event_count() >= n || log.ended; }, timeout);
  }

  /// A lease id that surely does not exist: granted, then revoked.
  lease_id dead_lease() {
    const auto l = grant(10s);
    EXPECT_FALSE(revoke(l.id).ec);
    return l.id;
  }

  std::unique_ptr<store_environment> env_;
  std::shared_ptr<consensus_store> store_;
  std::string prefix_;
  std::vector<std::unique_ptr<watch_handle>> watches_;
};

// -- keys, revisions, versions --------------------------------------------------------------------

TEST_P(consensus_store_conformance, put_and_range_track_revisions_and_versions) {
  const revision start = get(all()).header_revision;
  EXPECT_GE(start, 1);

  const revision r1 = put(key("b"), "1");
  EXPECT_GT(r1, start);
  auto b = get_one(key("b"));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->value, "1");
  EXPECT_EQ(b->create_revision, r1);
  EXPECT_EQ(b->mod_revision, r1);
  EXPECT_EQ(b->version, 1);
  EXPECT_EQ(b->lease, 0);

  const revision r2 = put(key("b"), "2");
  EXPECT_GT(r2, r1);
  b = get_one(key("b"));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->value, "2");
  EXPECT_EQ(b->create_revision, r1) << "create revision is fixed while the key exists";
  EXPECT_EQ(b->mod_revision, r2);
  EXPECT_EQ(b->version, 2);

  const revision r3 = put(key("a"), "x");
  const auto listed = get(all());
  EXPECT_GE(listed.header_revision, r3);
  ASSERT_EQ(listed.kvs.size(), 2u);
  EXPECT_EQ(listed.kvs[0].key, key("a")) << "ranges come in key order";
  EXPECT_EQ(listed.kvs[1].key, key("b"));

  auto del = txn({{}, {delete_op{key_range::single(key("b"))}}, {}});
  ASSERT_FALSE(del.ec);
  const revision r4 = del.value.header_revision;
  EXPECT_GT(r4, r3);
  EXPECT_FALSE(get_one(key("b")));

  const revision r5 = put(key("b"), "again");
  b = get_one(key("b"));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->create_revision, r5) << "a re-created key starts over";
  EXPECT_EQ(b->version, 1);

  // One transaction, one revision for all its writes.
  auto both = txn({{}, {put_op{key("c"), "1", 0}, put_op{key("d"), "1", 0}}, {}});
  ASSERT_FALSE(both.ec);
  EXPECT_GT(both.value.header_revision, r5);
  EXPECT_EQ(get_one(key("c"))->mod_revision, both.value.header_revision);
  EXPECT_EQ(get_one(key("d"))->mod_revision, both.value.header_revision);
}

// -- transactions -------------------------------------------------------------------------------

TEST_P(consensus_store_conformance, compares_every_target_with_every_relation) {
  const auto lease = grant(30s);
  const std::string k = key("k");
  const revision created = put(k, "m", lease.id);
  const revision modified = put(k, "m", lease.id);
  const std::string gone = key("missing");
  using t = compare::target;
  using r = compare::relation;
  auto num = [](std::string key, t what, r rel, std::int64_t n) {
    return compare{std::move(key), what, rel, n, {}};
  };
  auto val = [](std::string key, r rel, std::string v) {
    return compare{std::move(key), t::value, rel, 0, std::move(v)};
  };
  struct case_ {
    compare c;
    bool holds;
  };
  const std::vector<case_> cases = {
      {num(k, t::version, r::equal, 2), true},
      {num(k, t::version, r::equal, 1), false},
      {num(k, t::version, r::not_equal, 1), true},
      {num(k, t::version, r::not_equal, 2), false},
      {num(k, t::version, r::less, 3), true},
      {num(k, t::version, r::less, 2), false},
      {num(k, t::version, r::greater, 1), true},
      {num(k, t::version, r::greater, 2), false},
      {num(k, t::create_revision, r::equal, created), true},
      {num(k, t::create_revision, r::not_equal, created), false},
      {num(k, t::create_revision, r::less, created + 1), true},
      {num(k, t::create_revision, r::less, created), false},
      {num(k, t::create_revision, r::greater, created - 1), true},
      {num(k, t::create_revision, r::greater, created), false},
      {num(k, t::mod_revision, r::equal, modified), true},
      {num(k, t::mod_revision, r::equal, created), false},
      {num(k, t::mod_revision, r::not_equal, created), true},
      {num(k, t::mod_revision, r::less, modified + 1), true},
      {num(k, t::mod_revision, r::less, modified), false},
      {num(k, t::mod_revision, r::greater, created), true},
      {num(k, t::mod_revision, r::greater, modified), false},
      {val(k, r::equal, "m"), true},
      {val(k, r::equal, "n"), false},
      {val(k, r::not_equal, "n"), true},
      {val(k, r::not_equal, "m"), false},
      {val(k, r::less, "n"), true},
      {val(k, r::less, "m"), false},
      {val(k, r::greater, "l"), true},
      {val(k, r::greater, "m"), false},
      {num(k, t::lease, r::equal, lease.id), true},
      {num(k, t::lease, r::not_equal, lease.id), false},
      {num(k, t::lease, r::greater, 0), true},
      {num(k, t::lease, r::less, lease.id), false},
      {num(k, t::lease, r::equal, 0), false},
      // A missing key compares as zeros; a value compare on it never holds.
      {num(gone, t::version, r::equal, 0), true},
      {num(gone, t::version, r::greater, 0), false},
      {num(gone, t::create_revision, r::equal, 0), true},
      {num(gone, t::mod_revision, r::less, 1), true},
      {num(gone, t::lease, r::equal, 0), true},
      {val(gone, r::equal, ""), false},
      {val(gone, r::not_equal, "x"), false},
      {compare::missing(gone), true},
      {compare::missing(k), false},
      {compare::create_revision_is(k, created), true},
      {compare::mod_revision_is(k, modified), true},
      {compare::value_is(k, "m"), true},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    auto got = txn({{cases[i].c}, {}, {}});
    ASSERT_FALSE(got.ec) << "case " << i << ": " << got.ec.message();
    EXPECT_EQ(got.value.succeeded, cases[i].holds) << "case " << i;
  }
  // Compares are all required.
  auto mixed = txn({{compare::value_is(k, "m"), compare::missing(k)}, {}, {}});
  ASSERT_FALSE(mixed.ec);
  EXPECT_FALSE(mixed.value.succeeded);
  // Nothing above wrote.
  EXPECT_EQ(get_one(k)->mod_revision, modified);
}

TEST_P(consensus_store_conformance, failure_branch_runs_atomically_with_its_ranges) {
  put(key("a"), "1");
  auto r = txn(
      {{compare::value_is(key("a"), "2")},
       {put_op{key("a"), "success", 0}},
       {range_op{key_range::single(key("a"))}, put_op{key("b"), "failure", 0}, range_op{all()}}});
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_FALSE(r.value.succeeded);
  ASSERT_EQ(r.value.ranges.size(), 2u);
  ASSERT_EQ(r.value.ranges[0].size(), 1u);
  EXPECT_EQ(r.value.ranges[0][0].value, "1");
  // A range sees the writes made before it in the same transaction.
  ASSERT_EQ(r.value.ranges[1].size(), 2u);
  EXPECT_EQ(r.value.ranges[1][1].key, key("b"));
  EXPECT_EQ(r.value.ranges[1][1].mod_revision, r.value.header_revision);
  EXPECT_EQ(get_one(key("a"))->value, "1");
  EXPECT_EQ(get_one(key("b"))->value, "failure");

  auto ok = txn({{compare::value_is(key("a"), "1")},
                 {put_op{key("a"), "success", 0}, range_op{key_range::single(key("b"))}},
                 {put_op{key("b"), "not this", 0}}});
  ASSERT_FALSE(ok.ec);
  EXPECT_TRUE(ok.value.succeeded);
  ASSERT_EQ(ok.value.ranges.size(), 1u);
  ASSERT_EQ(ok.value.ranges[0].size(), 1u);
  EXPECT_EQ(ok.value.ranges[0][0].value, "failure");
  EXPECT_EQ(get_one(key("a"))->value, "success");
  EXPECT_EQ(get_one(key("b"))->value, "failure");
}

TEST_P(consensus_store_conformance, too_many_operations_are_refused_whole) {
  auto puts = [&](std::size_t n) {
    std::vector<txn_op> ops;
    for (std::size_t i = 0; i < n; ++i) ops.emplace_back(put_op{key(std::to_string(i)), "v", 0});
    return ops;
  };
  auto r = txn({{}, puts(max_txn_ops + 1), {}});
  EXPECT_EQ(r.ec, make_error_code(errc::invalid_store_request));
  EXPECT_TRUE(get(all()).kvs.empty()) << "nothing of a refused request is applied";

  std::vector<compare> compares(max_txn_ops + 1, compare::missing(key("x")));
  r = txn({compares, {put_op{key("x"), "v", 0}}, {}});
  EXPECT_EQ(r.ec, make_error_code(errc::invalid_store_request));

  // The branch that would not run counts too.
  r = txn({{}, {put_op{key("x"), "v", 0}}, puts(max_txn_ops + 1)});
  EXPECT_EQ(r.ec, make_error_code(errc::invalid_store_request));
  EXPECT_TRUE(get(all()).kvs.empty());

  r = txn({{}, puts(max_txn_ops), {}});
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(get(all()).kvs.size(), max_txn_ops);
}

TEST_P(consensus_store_conformance, a_key_written_twice_is_refused_whole) {
  auto r =
      txn({{}, {put_op{key("a"), "1", 0}, put_op{key("b"), "1", 0}, put_op{key("a"), "2", 0}}, {}});
  EXPECT_EQ(r.ec, make_error_code(errc::invalid_store_request));
  r = txn({{}, {put_op{key("a"), "1", 0}, delete_op{key_range::single(key("a"))}}, {}});
  EXPECT_EQ(r.ec, make_error_code(errc::invalid_store_request));
  r = txn({{}, {delete_op{all()}, put_op{key("a"), "1", 0}}, {}});
  EXPECT_EQ(r.ec, make_error_code(errc::invalid_store_request));
  r = txn({{compare::missing(key("a"))}, {}, {put_op{key("a"), "1", 0}, put_op{key("a"), "2", 0}}});
  EXPECT_EQ(r.ec, make_error_code(errc::invalid_store_request));
  EXPECT_TRUE(get(all()).kvs.empty());
}

TEST_P(consensus_store_conformance, a_put_with_an_unknown_lease_fails_whole) {
  const lease_id dead = dead_lease();
  auto r = txn({{}, {put_op{key("a"), "1", 0}, put_op{key("b"), "1", dead}}, {}});
  EXPECT_EQ(r.ec, make_error_code(errc::lease_not_found));
  EXPECT_TRUE(get(all()).kvs.empty());
}

// -- leases ---------------------------------------------------------------------------------------

TEST_P(consensus_store_conformance, lease_expiry_deletes_its_keys_in_one_revision) {
  const auto lease = grant(2s);
  EXPECT_EQ(lease.ttl, duration(2s));
  put(key("a"), "1", lease.id);
  put(key("b"), "1", lease.id);
  const revision last = put(key("c"), "stays");
  auto log = watch(all(), last + 1);

  env_->let_time_pass(1s);
  EXPECT_EQ(get(all()).kvs.size(), 3u) << "no key goes before its lease's TTL";
  env_->let_time_pass(1s);
  // etcd's expiry scan runs every 500 ms: the keys go within TTL + 0.5 s (+ slack for a real
  // server).
  ASSERT_TRUE(wait_for_events(*log, 2, 2s));
  ASSERT_FALSE(log->ended);
  ASSERT_EQ(log->batches.size(), 1u) << "all deletes of one expiry arrive as one revision";
  const auto events = log->events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].type, watch_event::kind::del);
  EXPECT_EQ(events[1].type, watch_event::kind::del);
  EXPECT_EQ(events[0].kv.mod_revision, events[1].kv.mod_revision);
  EXPECT_EQ(std::set<std::string>({events[0].kv.key, events[1].kv.key}),
            std::set<std::string>({key("a"), key("b")}));
  const auto left = get(all());
  ASSERT_EQ(left.kvs.size(), 1u);
  EXPECT_EQ(left.kvs[0].key, key("c"));
  EXPECT_EQ(keep_alive(lease.id).ec, make_error_code(errc::lease_not_found));
}

TEST_P(consensus_store_conformance, keep_alive_extends_the_lease) {
  const auto lease = grant(2s);
  put(key("a"), "1", lease.id);
  for (int i = 0; i < 4; ++i) {
    env_->let_time_pass(1s);
    auto r = keep_alive(lease.id);
    ASSERT_FALSE(r.ec) << "renewal " << i << ": " << r.ec.message();
    EXPECT_EQ(r.value, duration(2s));
  }
  // 4 s after the grant, well past TTL + scan: only the renewals kept the key.
  EXPECT_TRUE(get_one(key("a")));
}

TEST_P(consensus_store_conformance, keep_alive_after_expiry_is_lease_not_found) {
  const auto lease = grant(2s);
  put(key("a"), "1", lease.id);
  env_->let_time_pass(2s + 600ms);
  EXPECT_EQ(keep_alive(lease.id).ec, make_error_code(errc::lease_not_found));
  EXPECT_FALSE(get_one(key("a")));
  auto r = txn({{}, {put_op{key("b"), "1", lease.id}}, {}});
  EXPECT_EQ(r.ec, make_error_code(errc::lease_not_found));
  EXPECT_EQ(revoke(lease.id).ec, make_error_code(errc::lease_not_found));
}

TEST_P(consensus_store_conformance, revoke_deletes_its_keys_in_one_revision) {
  const auto lease = grant(30s);
  put(key("a"), "1", lease.id);
  const revision last = put(key("b"), "1", lease.id);
  auto log = watch(all(), last + 1);
  auto r = revoke(lease.id);
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_GT(r.value, last);
  ASSERT_TRUE(wait_for_events(*log, 2));
  ASSERT_EQ(log->batches.size(), 1u);
  for (const auto& e : log->events()) {
    EXPECT_EQ(e.type, watch_event::kind::del);
    EXPECT_EQ(e.kv.mod_revision, r.value);
  }
  EXPECT_TRUE(get(all()).kvs.empty());
  EXPECT_EQ(keep_alive(lease.id).ec, make_error_code(errc::lease_not_found));
  EXPECT_EQ(revoke(lease.id).ec, make_error_code(errc::lease_not_found));
}

// -- watches ------------------------------------------------------------------------------------

TEST_P(consensus_store_conformance, watch_from_a_past_revision_replays_whole_revisions_in_order) {
  const revision r1 = put(key("a"), "1");
  const revision r2 = put(key("b"), "1");
  auto both = txn({{}, {put_op{key("c"), "1", 0}, put_op{key("d"), "1", 0}}, {}});
  ASSERT_FALSE(both.ec);
  const revision r3 = both.value.header_revision;
  auto del = txn({{}, {delete_op{key_range::single(key("a"))}}, {}});
  ASSERT_FALSE(del.ec);
  const revision r4 = del.value.header_revision;
  put(key("outside"), "1");  // not under the watched range below

  auto log = watch(key_range{key("a"), key("e")}, r1);
  ASSERT_TRUE(wait_for_events(*log, 5));
  ASSERT_FALSE(log->ended);
  const auto events = log->events();
  ASSERT_EQ(events.size(), 5u);
  const std::vector<std::pair<std::string, revision>> expected = {
      {key("a"), r1}, {key("b"), r2}, {key("c"), r3}, {key("d"), r3}, {key("a"), r4}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(events[i].kv.key, expected[i].first) << i;
    EXPECT_EQ(events[i].kv.mod_revision, expected[i].second) << i;
  }
  EXPECT_EQ(events[0].type, watch_event::kind::put);
  EXPECT_EQ(events[0].kv.value, "1");
  EXPECT_EQ(events[0].kv.create_revision, r1);
  EXPECT_EQ(events[4].type, watch_event::kind::del);
  // Whole revisions: no revision is split across batches.
  std::set<revision> seen;
  for (const auto& b : log->batches) {
    std::set<revision> here;
    for (const auto& e : b.events) here.insert(e.kv.mod_revision);
    for (revision rev : here)
      EXPECT_TRUE(seen.insert(rev).second) << "revision " << rev << " split";
  }

  // Then live changes follow.
  const revision r5 = put(key("b"), "2");
  ASSERT_TRUE(wait_for_events(*log, 6));
  EXPECT_EQ(log->events().back().kv.mod_revision, r5);
  EXPECT_EQ(log->events().back().kv.version, 2);

  // A watch of one key sees only that key.
  auto one = watch(key_range::single(key("b")), r1);
  ASSERT_TRUE(wait_for_events(*one, 2));
  EXPECT_EQ(one->event_count(), 2u);
}

TEST_P(consensus_store_conformance, watch_from_a_future_revision_starts_there) {
  // A real etcd is shared with the tests running beside this one, so their writes may take
  // revisions between ours: the start revision can fall on any of our puts below, or between them.
  const revision now = put(key("a"), "0");
  const revision start = now + 3;
  auto log = watch(all(), start);
  std::vector<revision> ours;
  for (int i = 1; i <= 3; ++i) ours.push_back(put(key("a"), std::to_string(i)));
  auto from_start = [&] {
    std::vector<revision> out;
    for (revision r : ours)
      if (r >= start) out.push_back(r);
    return out;
  };
  ASSERT_GE(from_start().size(), 1u);  // the third put is at now + 3 or later
  ASSERT_TRUE(wait_for_events(*log, from_start().size()));
  ours.push_back(put(key("a"), "4"));  // and a live change after the replay
  const auto expected = from_start();
  ASSERT_TRUE(wait_for_events(*log, expected.size()));
  std::vector<revision> seen;
  for (const auto& e : log->events()) seen.push_back(e.kv.mod_revision);
  EXPECT_EQ(seen, expected) << "nothing before the start revision, everything from it";
}

TEST_P(consensus_store_conformance, watch_below_the_compacted_history_fails_with_compacted) {
  const revision r1 = put(key("a"), "1");
  put(key("a"), "2");
  const revision r3 = put(key("a"), "3");
  if (auto why = env_->compact(r3)) GTEST_SKIP() << *why;
  auto old = watch(all(), r1);
  ASSERT_TRUE(env_->run_until([&] { return old->ended.has_value(); }, 10s));
  EXPECT_EQ(*old->ended, make_error_code(errc::compacted));
  // Re-read, then watch from the read's revision + 1.
  const revision now = get(all()).header_revision;
  auto fresh = watch(all(), now + 1);
  const revision r4 = put(key("a"), "4");
  ASSERT_TRUE(wait_for_events(*fresh, 1));
  EXPECT_EQ(fresh->events().front().kv.mod_revision, r4);
}

// -- usage: the election pattern ------------------------------------------------------------------

TEST_P(consensus_store_conformance, election_lowest_create_revision_wins_and_fences_the_deposed) {
  auto node_a = env_->make_store();
  auto node_b = env_->make_store();
  const std::string election = key("election/");
  const std::string data = key("data");

  // Campaign: create our key if absent, else read it; our token is its create revision.
  auto campaign = [&](consensus_store& s, lease_id lease) {
    const std::string mine = election + std::to_string(lease);
    auto r = txn(s, {{compare::missing(mine)},
                     {put_op{mine, "candidate", lease}, range_op{key_range::single(mine)}},
                     {range_op{key_range::single(mine)}}});
    EXPECT_FALSE(r.ec);
    EXPECT_EQ(r.value.ranges.size(), 1u);
    return std::pair{mine, r.value.ranges.at(0).at(0).create_revision};
  };
  auto leader = [&](consensus_store& s) {
    auto r = get(s, key_range::prefix(election));
    auto first = std::min_element(r.kvs.begin(), r.kvs.end(), [](const auto& x, const auto& y) {
      return x.create_revision < y.create_revision;
    });
    return first == r.kvs.end() ? std::string() : first->key;
  };
  // Every write of a leader is guarded by its own key's create revision.
  auto guarded_write = [&](consensus_store& s, const std::pair<std::string, revision>& token,
                           const std::string& value) {
    auto r = txn(
        s,
        {{compare::create_revision_is(token.first, token.second)}, {put_op{data, value, 0}}, {}});
    EXPECT_FALSE(r.ec);
    return r.value.succeeded;
  };

  const auto lease_a = grant(*node_a, 2s);
  const auto lease_b = grant(*node_b, 2s);
  const auto token_a = campaign(*node_a, lease_a.id);
  const auto token_b = campaign(*node_b, lease_b.id);
  EXPECT_LT(token_a.second, token_b.second);
  EXPECT_EQ(leader(*node_a), token_a.first);
  EXPECT_EQ(leader(*node_b), token_a.first);
  // Campaigning again keeps the same token.
  EXPECT_EQ(campaign(*node_a, lease_a.id).second, token_a.second);
  EXPECT_TRUE(guarded_write(*node_a, token_a, "from a"));

  // B waits for A's key to go; A stops renewing (paused, partitioned), B keeps renewing.
  auto a_gone = watch(*node_b, key_range::single(token_a.first), token_a.second + 1);
  for (int i = 0; i < 6 && a_gone->event_count() == 0; ++i) {
    env_->let_time_pass(1s);
    ASSERT_FALSE(keep_alive(*node_b, lease_b.id).ec);
  }
  ASSERT_TRUE(wait_for_events(*a_gone, 1, 2s));
  EXPECT_EQ(a_gone->events().front().type, watch_event::kind::del);

  // B re-reads its own key (the check etcd 3.4's Campaign lacks) and leads.
  auto own = get(*node_b, key_range::single(token_b.first));
  ASSERT_EQ(own.kvs.size(), 1u);
  EXPECT_EQ(own.kvs[0].create_revision, token_b.second);
  EXPECT_EQ(leader(*node_b), token_b.first);
  EXPECT_TRUE(guarded_write(*node_b, token_b, "from b"));
  // The deposed A, whatever its clock says, cannot write.
  EXPECT_FALSE(guarded_write(*node_a, token_a, "stale a"));
  auto final_value = get(*node_a, key_range::single(data));
  ASSERT_EQ(final_value.kvs.size(), 1u);
  EXPECT_EQ(final_value.kvs[0].value, "from b");
}

}  // namespace troupe::cluster::conformance
