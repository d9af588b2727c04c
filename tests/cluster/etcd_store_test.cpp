// ctest-labels: concurrency
// The etcd client (make_etcd_store) against a real etcd 3.4: the JSON it writes and reads, the
// error mapping, timeouts and failover. TROUPE_ETCD_ENDPOINTS names the server
// ("127.0.0.1:2379[,...]"; scripts/test.sh starts one with scripts/etcd.sh); without it the tests
// skip. Every test writes under its own random prefix, so runs and tests never see each other's
// keys. The behaviour both stores share is the conformance suite's
// (tests/cluster/consensus_store_conformance.hpp); these are the client's own.

#include <troupe/cluster/errc.hpp>
#include <troupe/cluster/membership/consensus_store.hpp>
#include <troupe/testkit/test_probe.hpp>

#include "support/etcd_endpoints.hpp"
#include "support/io_thread.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace troupe::cluster {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;

template <class T>
struct answer {
  std::error_code ec;
  T value{};
};

// A loopback port with nothing listening: connections to it are refused.
std::string refused_endpoint() {
  asio::io_context io;
  asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
  const auto port = a.local_endpoint().port();
  a.close();
  return "127.0.0.1:" + std::to_string(port);
}

class etcd_store_test : public ::testing::Test {
 protected:
  void SetUp() override {
    endpoints_ = test::etcd_endpoints();
    io_thread_id_ = io_.call([] { return std::this_thread::get_id(); });
    prefix_ = "/troupe-test/";
    if (endpoints_.empty()) {
      GTEST_SKIP() << "TROUPE_ETCD_ENDPOINTS is not set: start etcd with "
                      "`scripts/etcd.sh start` and export its output as TROUPE_ETCD_ENDPOINTS";
    }
    std::random_device rd;
    prefix_ = "/troupe-test/" + std::to_string(rd()) + std::to_string(rd()) + "/";
    store_ = make(endpoints_);
  }

  std::shared_ptr<consensus_store> make(std::vector<std::string> endpoints,
                                        duration request_timeout = 2s) {
    etcd_store_options options;
    options.endpoints = std::move(endpoints);
    options.request_timeout = request_timeout;
    return make_etcd_store(io_.executor(), std::move(options));
  }

  // Runs `start(handler)` on the executor's thread and waits for its one answer, checking that
  // it came on the store's executor and not inside the call (which would run it on this thread
  // before the call returned).
  template <class T, class Start>
  answer<T> wait(Start start, duration timeout = 10s) {
    auto promise = std::make_shared<std::promise<answer<T>>>();
    auto future = promise->get_future();
    auto inside = std::make_shared<bool>(false);
    io_.call([&] {
      *inside = true;
      start([promise, inside, this](std::error_code ec, T value) {
        EXPECT_FALSE(*inside) << "a handler ran inside the call that started it";
        EXPECT_EQ(std::this_thread::get_id(), io_thread_id_) << "a handler ran off the executor";
        promise->set_value({ec, std::move(value)});
      });
      *inside = false;
    });
    if (future.wait_for(testkit::dilated(timeout)) != std::future_status::ready) {
      ADD_FAILURE() << "no answer within " << std::chrono::duration<double>(timeout).count()
                    << " s";
      return {make_error_code(std::errc::timed_out), {}};
    }
    return future.get();
  }

  answer<txn_result> txn(txn_request request, consensus_store* store = nullptr) {
    auto* s = store != nullptr ? store : store_.get();
    return wait<txn_result>([&](auto h) { s->txn(std::move(request), std::move(h)); });
  }
  answer<txn_result> put(const std::string& key, std::string value, lease_id lease = 0) {
    txn_request r;
    r.success.push_back(put_op{prefix_ + key, std::move(value), lease});
    return txn(std::move(r));
  }
  answer<range_result> range(key_range r, consensus_store* store = nullptr) {
    auto* s = store != nullptr ? store : store_.get();
    return wait<range_result>([&](auto h) { s->range(std::move(r), std::move(h)); });
  }
  answer<lease_grant> grant(duration ttl) {
    return wait<lease_grant>([&](auto h) { store_->grant_lease(ttl, std::move(h)); });
  }
  answer<duration> keep_alive(lease_id lease) {
    return wait<duration>([&](auto h) { store_->keep_alive(lease, std::move(h)); });
  }
  answer<revision> revoke(lease_id lease) {
    return wait<revision>([&](auto h) { store_->revoke_lease(lease, std::move(h)); });
  }
  key_range all() { return key_range::prefix(prefix_); }

  test::io_thread io_;
  std::thread::id io_thread_id_;
  std::vector<std::string> endpoints_;
  std::string prefix_;
  std::shared_ptr<consensus_store> store_;
};

// The cases that need no etcd (a stand-in gateway or no server at all) run without one too.
class etcd_client_test : public etcd_store_test {
 protected:
  void SetUp() override {
    io_thread_id_ = io_.call([] { return std::this_thread::get_id(); });
    prefix_ = "/troupe-test/";
  }
};

// Collects what a watch delivers, and waits for it.
class watch_log {
 public:
  consensus_store::watch_handler handler() {
    return [this](std::error_code ec, watch_batch batch) {
      std::lock_guard lock(mutex_);
      if (ec) {
        error_ = ec;
      } else {
        batches_.push_back(std::move(batch));
      }
      changed_.notify_all();
    };
  }
  // Waits until `n` events have arrived (or an error); returns them.
  std::vector<watch_event> events(std::size_t n, duration timeout = 10s) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, testkit::dilated(timeout), [&] { return error_ || count() >= n; });
    std::vector<watch_event> out;
    for (const auto& b : batches_) out.insert(out.end(), b.events.begin(), b.events.end());
    return out;
  }
  std::error_code error(duration timeout = 10s) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, testkit::dilated(timeout), [&] { return bool(error_); });
    return error_;
  }
  std::vector<watch_batch> batches() {
    std::lock_guard lock(mutex_);
    return batches_;
  }

 private:
  std::size_t count() const {
    std::size_t n = 0;
    for (const auto& b : batches_) n += b.events.size();
    return n;
  }
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<watch_batch> batches_;
  std::error_code error_;
};

// A stand-in for etcd's gateway on loopback: accepts one connection, reads the request, writes
// `reply` (a whole HTTP response, or its beginning) and then closes the connection, or keeps it
// open until destroyed. For what a real etcd will not do on demand here: compacted history
// (compacting would disturb other tests sharing the server), progress notices, a lost stream.
class fake_gateway {
 public:
  fake_gateway(std::string reply, bool close_after)
      : acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}),
        thread_([this, reply = std::move(reply), close_after] { serve(reply, close_after); }) {}
  ~fake_gateway() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    stopped_.notify_all();
    thread_.join();
  }
  fake_gateway(const fake_gateway&) = delete;
  fake_gateway& operator=(const fake_gateway&) = delete;

  [[nodiscard]] std::string endpoint() const {
    return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }

  /// A chunked streaming reply holding `messages`, one chunk each.
  static std::string stream(const std::vector<std::string>& messages) {
    std::string out =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (const auto& m : messages) {
      const auto line = m + "\n";
      std::ostringstream size;
      size << std::hex << line.size();
      out += size.str() + "\r\n" + line + "\r\n";
    }
    return out;
  }

 private:
  void serve(const std::string& reply, bool close_after) {
    asio::ip::tcp::socket socket(io_);
    boost::system::error_code ec;
    acceptor_.accept(socket, ec);
    if (ec) return;
    std::array<char, 4096> buffer{};
    socket.read_some(asio::buffer(buffer), ec);  // the request (small: one read on loopback)
    asio::write(socket, asio::buffer(reply), ec);
    if (!close_after) {
      std::unique_lock lock(mutex_);
      stopped_.wait(lock, [&] { return stop_; });
    }
    socket.close(ec);
  }

  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  std::mutex mutex_;
  std::condition_variable stopped_;
  bool stop_ = false;
  std::thread thread_;
};

TEST_F(etcd_store_test, put_then_range_reads_keys_in_order_with_their_revisions) {
  const auto b = put("b", "2");
  ASSERT_FALSE(b.ec) << b.ec.message();
  EXPECT_TRUE(b.value.succeeded);
  const auto a = put("a", std::string("\0\xff binary", 9));
  ASSERT_FALSE(a.ec) << a.ec.message();
  // Other tests share this etcd (ctest -j2), so revisions only grow; they need not be adjacent.
  EXPECT_GT(a.value.header_revision, b.value.header_revision);

  const auto r = range(all());
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_GE(r.value.header_revision, a.value.header_revision);
  ASSERT_EQ(r.value.kvs.size(), 2U);
  EXPECT_EQ(r.value.kvs[0].key, prefix_ + "a");
  EXPECT_EQ(r.value.kvs[0].value, std::string("\0\xff binary", 9));
  EXPECT_EQ(r.value.kvs[0].create_revision, a.value.header_revision);
  EXPECT_EQ(r.value.kvs[0].mod_revision, a.value.header_revision);
  EXPECT_EQ(r.value.kvs[0].version, 1);
  EXPECT_EQ(r.value.kvs[0].lease, 0);
  EXPECT_EQ(r.value.kvs[1].key, prefix_ + "b");

  const auto one = range(key_range::single(prefix_ + "b"));
  ASSERT_FALSE(one.ec);
  ASSERT_EQ(one.value.kvs.size(), 1U);
  EXPECT_EQ(one.value.kvs[0].value, "2");
  const auto none = range(key_range::single(prefix_ + "missing"));
  ASSERT_FALSE(none.ec);
  EXPECT_TRUE(none.value.kvs.empty());
}

TEST_F(etcd_store_test, txn_runs_the_branch_its_compares_choose) {
  // Create-if-absent: the success branch the first time, the failure branch (a read) after.
  auto create = [&] {
    txn_request r;
    r.compares.push_back(compare::missing(prefix_ + "k"));
    r.success.push_back(put_op{prefix_ + "k", "first", 0});
    r.failure.push_back(range_op{key_range::single(prefix_ + "k")});
    return txn(std::move(r));
  };
  const auto first = create();
  ASSERT_FALSE(first.ec) << first.ec.message();
  EXPECT_TRUE(first.value.succeeded);
  EXPECT_TRUE(first.value.ranges.empty());
  const auto second = create();
  ASSERT_FALSE(second.ec);
  EXPECT_FALSE(second.value.succeeded);
  ASSERT_EQ(second.value.ranges.size(), 1U);
  ASSERT_EQ(second.value.ranges[0].size(), 1U);
  EXPECT_EQ(second.value.ranges[0][0].value, "first");
  EXPECT_EQ(second.value.ranges[0][0].mod_revision, first.value.header_revision);
  // Nothing written: the key kept its revision (checked above); the store's own revision may
  // have moved with other tests' writes to this shared etcd.
  EXPECT_GE(second.value.header_revision, first.value.header_revision);

  // Every target and relation, each holding (success) and not (failure).
  const revision rev = first.value.header_revision;
  auto check = [&](compare c, bool expected) {
    txn_request r;
    r.compares.push_back(c);
    r.success.push_back(range_op{key_range::single(prefix_ + "k")});
    const auto t = txn(std::move(r));
    ASSERT_FALSE(t.ec) << t.ec.message();
    EXPECT_EQ(t.value.succeeded, expected)
        << "target " << int(c.what) << " relation " << int(c.rel) << " number " << c.number;
    EXPECT_EQ(t.value.ranges.size(), expected ? 1U : 0U);
  };
  const auto key = prefix_ + "k";
  check(compare::mod_revision_is(key, rev), true);
  check(compare::mod_revision_is(key, rev - 1), false);
  check(compare::create_revision_is(key, rev), true);
  check(compare::value_is(key, "first"), true);
  check(compare::value_is(key, "other"), false);
  check({key, compare::target::version, compare::relation::greater, 0, {}}, true);
  check({key, compare::target::version, compare::relation::less, 1, {}}, false);
  check({key, compare::target::mod_revision, compare::relation::not_equal, rev, {}}, false);
  check({key, compare::target::lease, compare::relation::equal, 0, {}}, true);
  check(compare::missing(key), false);

  // A guarded write in the success branch, and a delete.
  txn_request move;
  move.compares.push_back(compare::mod_revision_is(key, rev));
  move.success.push_back(put_op{key, "second", 0});
  move.success.push_back(put_op{prefix_ + "other", "x", 0});
  const auto moved = txn(std::move(move));
  ASSERT_FALSE(moved.ec);
  EXPECT_TRUE(moved.value.succeeded);
  EXPECT_GT(moved.value.header_revision, rev);
  const auto after = range(key_range::single(key));
  ASSERT_EQ(after.value.kvs.size(), 1U);
  EXPECT_EQ(after.value.kvs[0].version, 2);
  EXPECT_EQ(after.value.kvs[0].create_revision, rev);
  EXPECT_EQ(after.value.kvs[0].mod_revision, moved.value.header_revision);

  txn_request del;
  del.success.push_back(delete_op{all()});
  const auto deleted = txn(std::move(del));
  ASSERT_FALSE(deleted.ec);
  EXPECT_GT(deleted.value.header_revision, moved.value.header_revision);
  EXPECT_TRUE(range(all()).value.kvs.empty());
}

TEST_F(etcd_store_test, refused_requests_map_to_their_errors) {
  // Unknown lease, in a put and in keepalive and revoke.
  const auto bad_put = put("k", "v", 0x7eadbeef1234);
  EXPECT_EQ(bad_put.ec, errc::lease_not_found) << bad_put.ec.message();
  EXPECT_EQ(keep_alive(0x7eadbeef1234).ec, errc::lease_not_found);
  EXPECT_EQ(revoke(0x7eadbeef1234).ec, errc::lease_not_found);

  // More operations than etcd's --max-txn-ops, and a key written twice.
  txn_request many;
  for (std::size_t i = 0; i <= max_txn_ops; ++i) {
    many.success.push_back(put_op{prefix_ + std::to_string(i), "v", 0});
  }
  EXPECT_EQ(txn(std::move(many)).ec, errc::invalid_store_request);
  txn_request twice;
  twice.success.push_back(put_op{prefix_ + "k", "1", 0});
  twice.success.push_back(put_op{prefix_ + "k", "2", 0});
  EXPECT_EQ(txn(std::move(twice)).ec, errc::invalid_store_request);
  // Nothing of it was applied.
  EXPECT_TRUE(range(all()).value.kvs.empty());

  // Exactly the limit is fine.
  txn_request limit;
  for (std::size_t i = 0; i < max_txn_ops; ++i) {
    limit.success.push_back(put_op{prefix_ + std::to_string(i), "v", 0});
  }
  const auto at_limit = txn(std::move(limit));
  EXPECT_FALSE(at_limit.ec) << at_limit.ec.message();
  EXPECT_EQ(range(all()).value.kvs.size(), max_txn_ops);
}

TEST_F(etcd_store_test, a_lease_keeps_its_keys_while_renewed_and_drops_them_when_it_expires) {
  const auto g = grant(1s);  // below etcd's minimum: raised to 2 s
  ASSERT_FALSE(g.ec) << g.ec.message();
  EXPECT_NE(g.value.id, 0);
  EXPECT_EQ(g.value.ttl, 2s);
  ASSERT_FALSE(put("member", "me", g.value.id).ec);
  EXPECT_EQ(range(all()).value.kvs.at(0).lease, g.value.id);

  const auto renewed = keep_alive(g.value.id);
  ASSERT_FALSE(renewed.ec) << renewed.ec.message();
  EXPECT_EQ(renewed.value, 2s);

  // Without renewals the lease expires (TTL 2 s; etcd scans every 500 ms) and takes its key.
  const auto deadline = std::chrono::steady_clock::now() + testkit::dilated(10s);
  bool gone = false;
  while (!gone && std::chrono::steady_clock::now() < deadline) {
    const auto r = range(all());
    ASSERT_FALSE(r.ec);
    gone = r.value.kvs.empty();
    if (!gone) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(gone) << "the leased key outlived its lease";
  // A dead lease's keepalive reply has no TTL.
  EXPECT_EQ(keep_alive(g.value.id).ec, errc::lease_not_found);
}

TEST_F(etcd_store_test, revoking_a_lease_deletes_its_keys_in_one_revision) {
  const auto g = grant(10s);
  ASSERT_FALSE(g.ec);
  EXPECT_EQ(g.value.ttl, 10s);
  ASSERT_FALSE(put("a", "1", g.value.id).ec);
  ASSERT_FALSE(put("b", "2", g.value.id).ec);
  ASSERT_FALSE(put("c", "3").ec);
  const auto start = range(all()).value.header_revision + 1;
  watch_log log;
  auto w = store_->watch(all(), start, log.handler());

  const auto r = revoke(g.value.id);
  ASSERT_FALSE(r.ec) << r.ec.message();
  const auto left = range(all());
  ASSERT_EQ(left.value.kvs.size(), 1U);
  EXPECT_EQ(left.value.kvs[0].key, prefix_ + "c");
  EXPECT_EQ(keep_alive(g.value.id).ec, errc::lease_not_found);

  const auto events = log.events(2);
  ASSERT_EQ(events.size(), 2U);
  for (const auto& e : events) {
    EXPECT_EQ(e.type, watch_event::kind::del);
    EXPECT_EQ(e.kv.mod_revision, r.value);
  }
}

TEST_F(etcd_store_test, a_watch_delivers_puts_and_deletes_in_order_from_its_start_revision) {
  const auto first = put("a", "1");
  ASSERT_FALSE(first.ec);
  ASSERT_FALSE(put("a", "2").ec);
  txn_request del;
  del.success.push_back(delete_op{key_range::single(prefix_ + "a")});
  const auto deleted = txn(std::move(del));
  ASSERT_FALSE(deleted.ec);

  // From a past revision: the history since then, in order.
  watch_log log;
  auto w = store_->watch(all(), first.value.header_revision, log.handler());
  // And what happens after the watch started.
  ASSERT_FALSE(put("b", "3").ec);

  const auto events = log.events(4);
  ASSERT_EQ(events.size(), 4U) << (log.error() ? log.error().message() : "");
  EXPECT_EQ(events[0].type, watch_event::kind::put);
  EXPECT_EQ(events[0].kv.value, "1");
  EXPECT_EQ(events[0].kv.mod_revision, first.value.header_revision);
  EXPECT_EQ(events[1].kv.value, "2");
  EXPECT_EQ(events[1].kv.version, 2);
  EXPECT_EQ(events[2].type, watch_event::kind::del);
  EXPECT_EQ(events[2].kv.key, prefix_ + "a");
  EXPECT_EQ(events[2].kv.mod_revision, deleted.value.header_revision);
  EXPECT_EQ(events[3].kv.key, prefix_ + "b");
  for (std::size_t i = 1; i < events.size(); ++i) {
    EXPECT_GT(events[i].kv.mod_revision, events[i - 1].kv.mod_revision);
  }
  for (const auto& b : log.batches()) {
    ASSERT_FALSE(b.events.empty());
    EXPECT_GE(b.header_revision, b.events.back().kv.mod_revision);
  }
  EXPECT_FALSE(log.error(0s));
}

TEST_F(etcd_store_test, a_cancelled_watch_delivers_nothing_more) {
  const auto start = put("x", "0");
  ASSERT_FALSE(start.ec);
  watch_log cancelled;
  auto w = store_->watch(key_range::single(prefix_ + "k"), start.value.header_revision + 1,
                         cancelled.handler());
  ASSERT_FALSE(put("k", "1").ec);
  ASSERT_EQ(cancelled.events(1).size(), 1U);
  w->cancel();
  ASSERT_FALSE(put("k", "2").ec);
  // A second watch sees the second put; by then the first would have too, had it run on.
  watch_log control;
  auto w2 = store_->watch(key_range::single(prefix_ + "k"), start.value.header_revision + 1,
                          control.handler());
  ASSERT_EQ(control.events(2).size(), 2U);
  io_.barrier();
  EXPECT_EQ(cancelled.events(1, 0s).size(), 1U);
  EXPECT_FALSE(cancelled.error(0s));
  w2.reset();  // destroying cancels too
}

TEST_F(etcd_client_test, a_watch_reports_compaction_progress_and_a_lost_stream) {
  const std::string header = R"("header":{"revision":"9"})";
  {
    // Compacted: the watch ends with errc::compacted (the caller reads again and re-watches).
    fake_gateway gateway(fake_gateway::stream({R"({"result":{)" + header + R"(,"created":true}})",
                                               R"({"result":{)" + header +
                                                   R"(,"compact_revision":"7","canceled":true}})"}),
                         false);
    auto store = make({gateway.endpoint()});
    watch_log log;
    auto w = store->watch(all(), 3, log.handler());
    EXPECT_EQ(log.error(), errc::compacted);
    EXPECT_TRUE(log.batches().empty());
  }
  {
    // A progress notice (no events) is a batch without events; then the connection drops.
    fake_gateway gateway(
        fake_gateway::stream(
            {R"({"result":{)" + header + R"(,"created":true}})", R"({"result":{)" + header + "}}",
             R"({"result":{"header":{"revision":"10"},"events":[{"kv":{"key":"YQ==","mod_revision":"10"},"type":"DELETE"}]}})"}),
        true);
    auto store = make({gateway.endpoint()});
    watch_log log;
    auto w = store->watch(all(), 3, log.handler());
    EXPECT_EQ(log.error(), errc::store_unavailable);
    const auto batches = log.batches();
    ASSERT_EQ(batches.size(), 2U);
    EXPECT_EQ(batches[0].header_revision, 9);
    EXPECT_TRUE(batches[0].events.empty());
    ASSERT_EQ(batches[1].events.size(), 1U);
    EXPECT_EQ(batches[1].events[0].type, watch_event::kind::del);
    EXPECT_EQ(batches[1].events[0].kv.key, "a");
  }
  {
    // An error inside the stream, as grpc-gateway writes it.
    fake_gateway gateway(
        fake_gateway::stream(
            {R"({"error":{"grpc_code":11,"http_code":400,"message":"compacted"}})"}),
        false);
    auto store = make({gateway.endpoint()});
    watch_log log;
    auto w = store->watch(all(), 3, log.handler());
    EXPECT_EQ(log.error(), errc::compacted);
  }
}

TEST_F(etcd_client_test, a_malformed_reply_is_store_unavailable) {
  for (const std::string body : {R"({"kvs":[{"key":"not base64!"}]})",
                                 R"({"header":{"revision":"x"}})", "[1,2]", "not json"}) {
    fake_gateway gateway(
        "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body,
        false);
    auto store = make({gateway.endpoint()});
    EXPECT_EQ(range(all(), store.get()).ec, errc::store_unavailable) << body;
  }
}

TEST_F(etcd_client_test,
       a_refused_endpoint_is_unavailable_at_once_and_a_silent_one_at_the_timeout) {
  auto refused = make({refused_endpoint()}, 30s);
  // Refused: no waiting for the 30 s request timeout.
  EXPECT_EQ(range(all(), refused.get()).ec, errc::store_unavailable);

  // A listener that accepts connections (the kernel does) and never answers.
  asio::io_context io;
  asio::ip::tcp::acceptor silent(io, {asio::ip::make_address("127.0.0.1"), 0});
  const auto endpoint = "127.0.0.1:" + std::to_string(silent.local_endpoint().port());
  auto store = make({endpoint}, 300ms);
  EXPECT_EQ(range(all(), store.get()).ec, errc::store_unavailable);
  watch_log log;
  auto w = store->watch(all(), 1, log.handler());
  EXPECT_EQ(log.error(), errc::store_unavailable);
}

TEST_F(etcd_store_test, requests_fail_over_to_the_next_endpoint) {
  // A refused endpoint first: the request goes on to the next one.
  auto store = make({refused_endpoint(), endpoints_.front()});
  ASSERT_FALSE(put("k", "v").ec);
  const auto r = range(all(), store.get());
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.value.kvs.size(), 1U);

  // A silent endpoint first: that request times out (it may have been applied), and the next
  // one starts at the next endpoint.
  asio::io_context io;
  asio::ip::tcp::acceptor silent(io, {asio::ip::make_address("127.0.0.1"), 0});
  auto slow = make(
      {"127.0.0.1:" + std::to_string(silent.local_endpoint().port()), endpoints_.front()}, 300ms);
  EXPECT_EQ(range(all(), slow.get()).ec, errc::store_unavailable);
  const auto again = range(all(), slow.get());
  ASSERT_FALSE(again.ec) << again.ec.message();
  EXPECT_EQ(again.value.kvs.size(), 1U);
}

TEST_F(etcd_client_test, a_malformed_endpoint_is_refused_when_the_store_is_made) {
  for (const std::string bad : {"", "127.0.0.1", "127.0.0.1:http", "127.0.0.1:0", "etcd:2379"}) {
    try {
      make({bad});
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const cluster_error& e) {
      EXPECT_EQ(e.value(), errc::invalid_address) << bad;
    }
  }
  EXPECT_THROW(make({}), cluster_error);
  EXPECT_NO_THROW(make({"http://localhost:2379", "[::1]:2379"}));
}

TEST_F(etcd_store_test, many_requests_from_several_threads_all_get_their_answers) {
  constexpr int threads = 4;
  constexpr int each = 25;
  std::vector<std::thread> workers;
  std::atomic<int> failures{0};
  for (int t = 0; t < threads; ++t) {
    // Straight from each worker thread, not through the executor.
    workers.emplace_back([&, t] {
      for (int i = 0; i < each; ++i) {
        auto done = std::make_shared<std::promise<std::error_code>>();
        auto f = done->get_future();
        txn_request r;
        r.success.push_back(put_op{prefix_ + std::to_string(t) + "/" + std::to_string(i), "v", 0});
        store_->txn(std::move(r),
                    [&failures, done, io = io_thread_id_](std::error_code ec, txn_result) {
                      if (std::this_thread::get_id() != io) ++failures;
                      done->set_value(ec);
                    });
        if (f.wait_for(testkit::dilated(10s)) != std::future_status::ready || f.get()) ++failures;
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(range(all()).value.kvs.size(), std::size_t{threads * each});
}

}  // namespace
}  // namespace troupe::cluster
