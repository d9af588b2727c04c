// ctest-labels: concurrency
// The management HTTP API against a fake source, over real sockets on 127.0.0.1: each
// endpoint's JSON, the bearer token on POSTs (401 without it, logged without the token), 405,
// 404, 400 on bad path parameters, garbage and oversized requests (answered with a 4xx, and the
// server goes on serving), keep-alive, the connection cap, the read timeout, and a slow source
// that does not stall /health/alive.
#include <troupe/observability/management_server.hpp>
#include <troupe/testkit/log_capture.hpp>
#include <troupe/testkit/test_probe.hpp>

#include "observability/management/routes.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace troupe::observability {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using troupe::testkit::dilated;

constexpr const char* token = "s3cret-token";

// -- the fake source ----------------------------------------------------------------------------

class fake_source final : public management_source {
 public:
  management_result<members_view> members() override {
    return members_view{"c1",
                        "a",
                        {{"a", 11, {"web"}, false, "1.2", "127.0.0.1:2551", "self"},
                         {"b", 12, {}, true, "1.2", "127.0.0.1:2552", "connected"}}};
  }
  management_result<types_view> types() override { return types_view{{"cart", "room"}}; }
  management_result<shards_view> shards(const std::string& type) override {
    if (type != "cart") return management_error{management_errc::not_found, "no type " + type};
    shards_view v{"cart", 8, "b", {}};
    shard_view s0{0, "a", 40, true, true, true, 3, 120, 2.5, {{"cart-7", 96}, {"cart-1", 16}}};
    shard_view s5{5, "b", 41, true, false, false, 0, 0, std::nullopt, {}};
    v.shards = {s0, s5};
    return v;
  }
  management_result<entity_view> entity(const std::string& type, const std::string& id) override {
    {
      std::lock_guard lock(mutex_);
      last_entity_id_ = id;
    }
    if (type != "cart") return management_error{management_errc::not_found, "no type " + type};
    return entity_view{type, id, 6, "b", 41, false, std::nullopt};
  }
  readiness_view readiness() override {
    if (block_readiness_) {
      readiness_entered_ = true;
      (void)released_.wait_for(dilated(10s));
    }
    return ready_.load() ? readiness_view{true, {}}
                         : readiness_view{false, "the region of type 'cart' is not ready"};
  }
  std::optional<std::string> metrics_text() override {
    if (!has_metrics_.load()) return std::nullopt;
    return "# TYPE troupe_up gauge\ntroupe_up 1\n";
  }
  management_result<leave_view> leave() override {
    ++leaves;
    return leave_view{"a", leaves.load() > 1};
  }
  management_result<void> rebalance(const std::string&) override {
    return management_error{management_errc::not_implemented, "no on-demand rebalance"};
  }

  std::string last_entity_id() {
    std::lock_guard lock(mutex_);
    return last_entity_id_;
  }

  std::atomic<bool> ready_{true};
  std::atomic<bool> has_metrics_{true};
  std::atomic<bool> block_readiness_{false};
  std::atomic<bool> readiness_entered_{false};
  std::promise<void> release_readiness_;
  std::shared_future<void> released_ = release_readiness_.get_future().share();
  std::atomic<int> leaves{0};

 private:
  std::mutex mutex_;
  std::string last_entity_id_;
};

// -- a small client with a deadline on every operation -----------------------------------------

struct answer {
  unsigned status = 0;
  std::string content_type;
  std::string body;
  http::response<http::string_body> raw;
  [[nodiscard]] json::value json() const { return json::parse(body); }
  [[nodiscard]] std::string error() const {
    return std::string(json().as_object().at("error").as_string());
  }
};

class client {
 public:
  explicit client(std::uint16_t port) {
    stream_.expires_after(dilated(5s));
    beast::error_code failure;
    stream_.async_connect({asio::ip::make_address("127.0.0.1"), port},
                          [&](beast::error_code ec) { failure = ec; });
    run();
    if (failure) throw beast::system_error(failure);
  }

  /// Sends a request and reads its answer; an error (closed, timed out) as its code.
  std::optional<answer> request(http::verb verb, const std::string& target,
                                const std::string& authorization = {}, bool keep_alive = true) {
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1");
    if (!authorization.empty()) req.set(http::field::authorization, authorization);
    req.keep_alive(keep_alive);
    req.prepare_payload();
    stream_.expires_after(dilated(5s));
    http::async_write(stream_, req, [&](beast::error_code ec, std::size_t) { last_ = ec; });
    run();
    if (last_) return std::nullopt;
    return read();
  }

  /// Sends raw bytes (garbage, an oversized header) and reads whatever answer comes.
  std::optional<answer> raw(const std::string& bytes) {
    stream_.expires_after(dilated(5s));
    asio::async_write(stream_, asio::buffer(bytes),
                      [&](beast::error_code ec, std::size_t) { last_ = ec; });
    run();
    if (last_) return std::nullopt;
    return read();
  }

  /// Reads an answer; nullopt (with error()) when the server closed or the deadline passed.
  std::optional<answer> read(troupe::duration deadline = 5s) {
    http::response<http::string_body> res;
    stream_.expires_after(dilated(deadline));
    http::async_read(stream_, buffer_, res, [&](beast::error_code ec, std::size_t) { last_ = ec; });
    run();
    if (last_) return std::nullopt;
    answer a;
    a.status = res.result_int();
    a.content_type = std::string(res[http::field::content_type]);
    a.body = res.body();
    a.raw = std::move(res);
    return a;
  }

  [[nodiscard]] beast::error_code error() const { return last_; }

 private:
  void run() {
    io_.restart();
    io_.run();
  }
  asio::io_context io_;
  beast::tcp_stream stream_{io_};
  beast::flat_buffer buffer_;
  beast::error_code last_;
};

// -- the fixture --------------------------------------------------------------------------------

class ManagementServer : public ::testing::Test {
 protected:
  void start(management_options options = {}) {
    options.port = 0;
    if (options.bearer_token.empty() && with_token_) options.bearer_token = token;
    server_ = management_server::start(source_, std::move(options));
  }
  void SetUp() override { start(); }

  answer get(const std::string& target) {
    client c(server_->port());
    auto a = c.request(http::verb::get, target);
    if (!a) throw beast::system_error(c.error());
    return *a;
  }
  answer post(const std::string& target, const std::string& authorization) {
    client c(server_->port());
    auto a = c.request(http::verb::post, target, authorization);
    if (!a) throw beast::system_error(c.error());
    return *a;
  }

  troupe::testkit::log_capture logs_;  // before the server: it outlives the server's threads
  std::shared_ptr<fake_source> source_ = std::make_shared<fake_source>();
  bool with_token_ = true;
  std::unique_ptr<management_server> server_;
};

// -- endpoints ----------------------------------------------------------------------------------

TEST_F(ManagementServer, ListensOnLoopbackOnTheBoundPort) {
  EXPECT_EQ(server_->address(), "127.0.0.1");
  EXPECT_NE(server_->port(), 0);
  EXPECT_EQ(management_options{}.address, "127.0.0.1") << "loopback unless configured";
}

TEST_F(ManagementServer, ListsTheMembersAsJson) {
  const answer a = get("/cluster/members");
  ASSERT_EQ(a.status, 200u) << a.body;
  EXPECT_EQ(a.content_type, "application/json");
  const auto v = a.json();
  EXPECT_EQ(v.at("cluster"), "c1");
  EXPECT_EQ(v.at("self"), "a");
  const auto& members = v.at("members").as_array();
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(members[0].at("node"), "a");
  EXPECT_EQ(members[0].at("incarnation"), 11);
  EXPECT_EQ(members[0].at("roles").as_array().size(), 1u);
  EXPECT_EQ(members[0].at("reachability"), "self");
  EXPECT_EQ(members[1].at("leaving"), true);
  EXPECT_EQ(members[1].at("address"), "127.0.0.1:2552");
}

TEST_F(ManagementServer, ListsTheShardsOfATypeWithOwnersEpochsAndFigures) {
  const answer a = get("/cluster/shards/cart");
  ASSERT_EQ(a.status, 200u) << a.body;
  const auto v = a.json();
  EXPECT_EQ(v.at("type"), "cart");
  EXPECT_EQ(v.at("num_shards"), 8);
  EXPECT_EQ(v.at("coordinator"), "b");
  const auto& shards = v.at("shards").as_array();
  ASSERT_EQ(shards.size(), 2u);
  EXPECT_EQ(shards[0].at("shard"), 0);
  EXPECT_EQ(shards[0].at("owner"), "a");
  EXPECT_EQ(shards[0].at("epoch"), 40);
  EXPECT_EQ(shards[0].at("entities"), 3);
  EXPECT_EQ(shards[0].at("messages"), 120);
  EXPECT_EQ(shards[0].at("messages_per_second"), 2.5);
  const auto& hot = shards[0].at("hot_keys").as_array();
  ASSERT_EQ(hot.size(), 2u);
  EXPECT_EQ(hot[0].at("id"), "cart-7");
  EXPECT_EQ(hot[0].at("count"), 96);
  EXPECT_TRUE(shards[1].at("hot_keys").is_null()) << "hot ids of a remote shard are unknown here";
  EXPECT_EQ(shards[1].at("owner"), "b");
  EXPECT_TRUE(shards[1].at("entities").is_null()) << "figures of a remote shard are unknown here";
  EXPECT_TRUE(shards[1].at("messages_per_second").is_null());

  const answer missing = get("/cluster/shards/room");
  EXPECT_EQ(missing.status, 404u);
  EXPECT_EQ(missing.error(), "no type room");
}

TEST_F(ManagementServer, ListsTheStartedTypes) {
  const answer a = get("/cluster/types");
  ASSERT_EQ(a.status, 200u) << a.body;
  const auto v = a.json();
  const auto& types = v.at("types").as_array();
  ASSERT_EQ(types.size(), 2u);
  EXPECT_EQ(types[0], "cart");
  EXPECT_EQ(types[1], "room");
  EXPECT_EQ(post("/cluster/types", std::string("Bearer ") + token).status, 405u);
}

TEST_F(ManagementServer, ServesTheDashboardAndItsFilesWithTheirContentTypes) {
  for (const char* page :
       {"/dashboard", "/dashboard/", "/dashboard/index.html", "/dashboard?type=cart"}) {
    const answer a = get(page);
    ASSERT_EQ(a.status, 200u) << page;
    EXPECT_EQ(a.content_type, "text/html; charset=utf-8") << page;
    EXPECT_NE(a.body.find("<title>Troupe dashboard</title>"), std::string::npos) << page;
    EXPECT_NE(a.body.find("/dashboard/dashboard.js"), std::string::npos) << "names its script";
  }
  const answer js = get("/dashboard/dashboard.js");
  ASSERT_EQ(js.status, 200u);
  EXPECT_EQ(js.content_type, "text/javascript; charset=utf-8");
  EXPECT_NE(js.body.find("/cluster/shards/"), std::string::npos);
  const answer css = get("/dashboard/dashboard.css");
  ASSERT_EQ(css.status, 200u);
  EXPECT_EQ(css.content_type, "text/css; charset=utf-8");

  for (const char* missing : {"/dashboard/nope.js", "/dashboard/..%2Findex.html", "/dashboard/a/b",
                              "/dashboard/index.html/"}) {
    const answer a = get(missing);
    EXPECT_EQ(a.status, 404u) << missing;
    EXPECT_EQ(a.content_type, "application/json") << missing;
  }
  const answer posted = post("/dashboard", std::string("Bearer ") + token);
  EXPECT_EQ(posted.status, 405u);
  EXPECT_EQ(posted.raw[http::field::allow], "GET");
}

TEST_F(ManagementServer, LocatesAnEntityByItsDecodedIdAndNamesItsEscapedPath) {
  const answer a = get("/cluster/entities/cart/user%2F42");
  ASSERT_EQ(a.status, 200u) << a.body;
  EXPECT_EQ(source_->last_entity_id(), "user/42");
  const auto v = a.json();
  EXPECT_EQ(v.at("id"), "user/42");
  EXPECT_EQ(v.at("shard"), 6);
  EXPECT_EQ(v.at("owner"), "b");
  EXPECT_EQ(v.at("epoch"), 41);
  EXPECT_EQ(v.at("local"), false);
  EXPECT_TRUE(v.at("active").is_null());
  EXPECT_EQ(v.at("path"), "region-cart/shard-6/entity-user~002F42");

  const answer unicode = get("/cluster/entities/cart/%C3%A9t%C3%A9");
  ASSERT_EQ(unicode.status, 200u) << unicode.body;
  EXPECT_EQ(source_->last_entity_id(), "\xC3\xA9t\xC3\xA9");
}

TEST_F(ManagementServer, AnswersAliveAndReadyOrNotReadyWithTheReason) {
  EXPECT_EQ(get("/health/alive").status, 200u);
  EXPECT_EQ(get("/health/alive").json().at("status"), "alive");
  EXPECT_EQ(get("/health/ready").status, 200u);
  source_->ready_ = false;
  const answer a = get("/health/ready");
  EXPECT_EQ(a.status, 503u);
  EXPECT_EQ(a.json().at("status"), "not ready");
  EXPECT_EQ(a.error(), "the region of type 'cart' is not ready");
}

TEST_F(ManagementServer, ServesMetricsAsPrometheusText) {
  const answer a = get("/metrics");
  ASSERT_EQ(a.status, 200u);
  EXPECT_EQ(a.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(a.body, "# TYPE troupe_up gauge\ntroupe_up 1\n");
  source_->has_metrics_ = false;
  EXPECT_EQ(get("/metrics").status, 404u);
}

// -- the bearer token ---------------------------------------------------------------------------

TEST_F(ManagementServer, RefusesPostsWithoutTheTokenAndLogsItWithoutTheToken) {
  const answer none = post("/cluster/leave", "");
  EXPECT_EQ(none.status, 401u);
  EXPECT_EQ(none.error(), "missing bearer token");
  EXPECT_EQ(none.raw[http::field::www_authenticate], "Bearer");
  const answer wrong = post("/cluster/leave", "Bearer s3cret-tokeX");
  EXPECT_EQ(wrong.status, 401u);
  EXPECT_EQ(wrong.error(), "wrong bearer token");
  EXPECT_EQ(post("/cluster/leave", "Basic czNjcmV0LXRva2Vu").status, 401u);
  EXPECT_EQ(post("/cluster/leave", std::string("Bearer ") + token + "x").status, 401u);
  EXPECT_EQ(post("/cluster/rebalance/cart", "").status, 401u);
  EXPECT_EQ(source_->leaves.load(), 0);
  EXPECT_NE(logs_.wait_for_line({"refused POST /cluster/leave", "wrong bearer token"}), "");
  EXPECT_EQ(logs_.text().find("s3cret"), std::string::npos) << logs_.text();
}

TEST_F(ManagementServer, LeavesAndAnswersRebalanceWithTheToken) {
  const std::string bearer = std::string("Bearer ") + token;
  const answer leave = post("/cluster/leave", bearer);
  EXPECT_EQ(leave.status, 202u) << leave.body;
  EXPECT_EQ(leave.json().at("node"), "a");
  EXPECT_EQ(leave.json().at("already_leaving"), false);
  EXPECT_EQ(post("/cluster/leave", "bearer  " + std::string(token)).json().at("already_leaving"),
            true)
      << "the scheme is case-insensitive";
  EXPECT_EQ(source_->leaves.load(), 2);
  const answer rebalance = post("/cluster/rebalance/cart", bearer);
  EXPECT_EQ(rebalance.status, 501u);
  EXPECT_EQ(rebalance.error(), "no on-demand rebalance");
  EXPECT_EQ(post("/cluster/rebalance/a%23b", bearer).status, 400u);
}

TEST(ManagementServerWithoutToken, RefusesEveryPost) {
  auto source = std::make_shared<fake_source>();
  auto server = management_server::start(source, management_options{}.with_port(0));
  client c(server->port());
  auto a = c.request(http::verb::post, "/cluster/leave", "Bearer ");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, 401u);
  a = c.request(http::verb::post, "/cluster/leave", "Bearer anything");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, 401u);
  EXPECT_EQ(source->leaves.load(), 0);
}

// -- bad requests -------------------------------------------------------------------------------

TEST_F(ManagementServer, AnswersAnotherMethodWith405AndAnUnknownPathWith404) {
  client c(server_->port());
  auto a = c.request(http::verb::post, "/cluster/members");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, 405u);
  EXPECT_EQ(a->raw[http::field::allow], "GET");
  a = c.request(http::verb::get, "/cluster/leave");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, 405u);
  EXPECT_EQ(a->raw[http::field::allow], "POST");
  a = c.request(http::verb::delete_, "/health/alive");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, 405u);
  for (const char* path : {"/", "/nope", "/cluster", "/cluster/members/x", "/cluster/shards",
                           "/health/alive/", "/cluster/entities/cart"}) {
    a = c.request(http::verb::get, path);
    ASSERT_TRUE(a) << path;
    EXPECT_EQ(a->status, 404u) << path;
    EXPECT_FALSE(a->json().at("error").as_string().empty()) << path;
  }
}

TEST_F(ManagementServer, RejectsBadPathParametersWith400) {
  client c(server_->port());
  const std::string overlong(257, 'x');
  for (const std::string& path : std::vector<std::string>{
           "/cluster/entities/cart/bad%zzid", "/cluster/entities/cart/bad%4",
           "/cluster/entities/cart/%", "/cluster/entities/cart/" + overlong,
           "/cluster/entities/cart/a%00b", "/cluster/entities/cart/a%0Ab",
           "/cluster/entities/cart/%FF%FE", "/cluster/entities/cart/%C0%AF",
           "/cluster/entities/cart/%ED%A0%80", "/cluster/shards/a%23b", "/cluster/shards/a%2Fb",
           "/cluster/shards/" + overlong, "/cluster/entities/a%23b/id", "/cluster/entities//id",
           "/cluster/shards/"}) {
    auto a = c.request(http::verb::get, path);
    ASSERT_TRUE(a) << path;
    EXPECT_EQ(a->status, 400u) << path << ": " << a->body;
    EXPECT_FALSE(a->error().empty()) << path;
  }
  EXPECT_EQ(get("/cluster/entities/cart/" + std::string(256, 'x')).status, 200u)
      << "the longest id allowed";
}

TEST_F(ManagementServer, AnswersAGarbageRequestLineWith400AndServesTheNextClient) {
  for (const std::string& garbage :
       {std::string("GARBAGE\r\n\r\n"), std::string("GET /health/alive HTTP/x.y\r\n\r\n"),
        std::string("\x01\x02\x03 / HTTP/1.1\r\n\r\n"), std::string("GET  HTTP/1.1\r\n\r\n"),
        std::string("GET /health/alive HTTP/1.1\r\nContent-Length: nope\r\n\r\n")}) {
    client c(server_->port());
    auto a = c.raw(garbage);
    // The request is read whole before the answer, so the answer arrives before the close.
    ASSERT_TRUE(a) << garbage << ": " << c.error().message();
    EXPECT_GE(a->status, 400u) << garbage;
    EXPECT_LT(a->status, 500u) << garbage;
    EXPECT_FALSE(a->error().empty());
    EXPECT_FALSE(c.read(2s)) << "the connection closes after a request that does not parse";
  }
  EXPECT_EQ(get("/health/alive").status, 200u);
}

TEST_F(ManagementServer, AnswersAnOversizedHeaderWith431AndServesTheNextClient) {
  client c(server_->port());
  auto a = c.raw("GET /health/alive HTTP/1.1\r\nHost: x\r\nX-Big: " +
                 std::string(std::size_t{16} * 1024, 'a') + "\r\n\r\n");
  // The server drains what it did not read before it closes, so the answer is not reset away.
  ASSERT_TRUE(a) << c.error().message();
  EXPECT_EQ(a->status, 431u) << a->body;
  EXPECT_EQ(get("/health/alive").status, 200u);
}

TEST_F(ManagementServer, RefusesARequestBodyBeyondItsLimitWith413) {
  client c(server_->port());
  auto a = c.raw("POST /cluster/leave HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n");
  // The server drains what it did not read before it closes, so the answer is not reset away.
  ASSERT_TRUE(a) << c.error().message();
  EXPECT_EQ(a->status, 413u) << a->body;
  EXPECT_EQ(source_->leaves.load(), 0);
  EXPECT_EQ(get("/health/alive").status, 200u);
}

// -- connections --------------------------------------------------------------------------------

TEST_F(ManagementServer, AnswersTwoRequestsOnOneKeptAliveConnection) {
  client c(server_->port());
  auto first = c.request(http::verb::get, "/cluster/members");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200u);
  EXPECT_TRUE(first->raw.keep_alive());
  auto second = c.request(http::verb::get, "/cluster/shards/cart", {}, false);
  ASSERT_TRUE(second) << c.error().message();
  EXPECT_EQ(second->status, 200u);
  EXPECT_FALSE(second->raw.keep_alive());
  EXPECT_FALSE(c.read(2s)) << "closed after a request without keep-alive";
}

TEST_F(ManagementServer, RefusesAConnectionBeyondTheCapWith503) {
  server_.reset();
  start(management_options{}.with_max_connections(1));
  client first(server_->port());
  ASSERT_TRUE(first.request(http::verb::get, "/health/alive"));  // the server holds it now
  client second(server_->port());
  auto refused = second.read();
  ASSERT_TRUE(refused) << second.error().message();
  EXPECT_EQ(refused->status, 503u);
  EXPECT_EQ(refused->error(), "too many connections");
  auto still = first.request(http::verb::get, "/health/alive", {}, false);
  ASSERT_TRUE(still);
  EXPECT_EQ(still->status, 200u);
  troupe::testkit::await_condition(
      [&] {
        client third(server_->port());
        auto a = third.request(http::verb::get, "/health/alive");
        return a && a->status == 200u;
      },
      5s, "a slot is free again once the first connection closed");
}

TEST_F(ManagementServer, ClosesAConnectionThatStaysSilentBeyondTheReadTimeout) {
  server_.reset();
  start(management_options{}.with_read_timeout(200ms));
  client c(server_->port());
  const auto began = std::chrono::steady_clock::now();
  EXPECT_FALSE(c.read(5s));
  EXPECT_NE(c.error(), beast::error::timeout) << "the server closed it, not the client's deadline";
  EXPECT_LT(std::chrono::steady_clock::now() - began, dilated(4s));
}

TEST_F(ManagementServer, KeepsAnsweringAliveWhileASourceCallIsSlow) {
  server_.reset();
  source_->block_readiness_ = true;
  start();
  client slow(server_->port());
  std::thread waiting([&] { (void)slow.request(http::verb::get, "/health/ready"); });
  troupe::testkit::await_condition([&] { return source_->readiness_entered_.load(); }, 5s,
                                   "the slow call began");
  EXPECT_EQ(get("/health/alive").status, 200u);
  EXPECT_EQ(get("/cluster/members").status, 200u) << "the pool has a second thread";
  source_->release_readiness_.set_value();
  waiting.join();
}

TEST(ManagementServerStart, RefusesANullSourceAndABadAddress) {
  EXPECT_THROW((void)management_server::start(nullptr), std::invalid_argument);
  EXPECT_THROW((void)management_server::start(std::make_shared<fake_source>(),
                                              management_options{}.with_address("not-an-ip")),
               std::invalid_argument);
}

// -- the pieces ---------------------------------------------------------------------------------

TEST(ManagementRoutes, DecodesPercentEscapesAndRejectsBrokenOnes) {
  EXPECT_EQ(management::percent_decode("a%2Fb%2fc+d"), "a/b/c+d");
  EXPECT_EQ(management::percent_decode(""), "");
  EXPECT_FALSE(management::percent_decode("%"));
  EXPECT_FALSE(management::percent_decode("%2"));
  EXPECT_FALSE(management::percent_decode("%G0"));
}

TEST(ManagementRoutes, ComparesTokensWhole) {
  EXPECT_TRUE(management::same_token("abc", "abc"));
  EXPECT_FALSE(management::same_token("abd", "abc"));
  EXPECT_FALSE(management::same_token("ab", "abc"));
  EXPECT_FALSE(management::same_token("abcd", "abc"));
  EXPECT_FALSE(management::same_token("", "abc"));
}

}  // namespace
}  // namespace troupe::observability
