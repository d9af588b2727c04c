// troupectl's commands run in-process through run(), against a real management server on
// 127.0.0.1 over a fake source: tables and --json, an id that needs escaping, a leave followed
// until its shards have moved, the token, and each failure's exit code and message.
#include <troupe/observability/management_server.hpp>

#include "troupectl/json_fields.hpp"
#include "troupectl/run.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace troupectl {
namespace {

namespace json = boost::json;
namespace obs = troupe::observability;

constexpr const char* token = "s3cret";

// -- the fake source: node "a" of two; after a leave, each read of the shards moves one of a's
// shards to "b".

class fake_source final : public obs::management_source {
 public:
  obs::management_result<obs::members_view> members() override {
    obs::members_view v{"c1",
                        "a",
                        {{"a", 11, {"web", "api"}, false, "1.2", "127.0.0.1:2551", "self"},
                         {"b", 12, {}, false, "1.2", "127.0.0.1:2552", "connected"}}};
    std::lock_guard lock(mutex_);
    if (leaving_ && gone_after_leave_) v.members.erase(v.members.begin());
    return v;
  }
  obs::management_result<obs::types_view> types() override { return obs::types_view{{"cart"}}; }
  obs::management_result<obs::shards_view> shards(const std::string& type) override {
    if (type != "cart")
      return obs::management_error{obs::management_errc::not_found, "no type " + type};
    std::lock_guard lock(mutex_);
    if (leaving_ && !stuck_ && owned_by_a_ > 0) --owned_by_a_;
    obs::shards_view v{"cart", 8, "b", {}};
    for (troupe::sharding::shard_id s = 0; s < 4; ++s) {
      const bool on_a = s < owned_by_a_;
      obs::shard_view view{s,     on_a ? "a" : "b", 40 + s,       true, on_a, on_a,
                           2 + s, 100 * (s + 1),    std::nullopt, {}};
      if (on_a) view.messages_per_second = 10.0 * (s + 1);
      v.shards.push_back(view);
    }
    return v;
  }
  obs::management_result<obs::entity_view> entity(const std::string& type,
                                                  const std::string& id) override {
    if (type != "cart")
      return obs::management_error{obs::management_errc::not_found, "no type " + type};
    std::lock_guard lock(mutex_);
    last_id_ = id;
    return obs::entity_view{type, id, 6, "b", 41, false, std::nullopt};
  }
  obs::readiness_view readiness() override { return {true, {}}; }
  std::optional<std::string> metrics_text() override { return std::nullopt; }
  obs::management_result<obs::leave_view> leave() override {
    std::lock_guard lock(mutex_);
    const bool already = leaving_;
    leaving_ = true;
    return obs::leave_view{"a", already};
  }
  obs::management_result<void> rebalance(const std::string& type) override {
    if (type != "cart")
      return obs::management_error{obs::management_errc::not_found, "no type " + type};
    if (fail_rebalance_) {
      return obs::management_error{obs::management_errc::not_implemented, "no on-demand rebalance"};
    }
    return {};
  }

  std::string last_id() {
    std::lock_guard lock(mutex_);
    return last_id_;
  }
  bool fail_rebalance_ = false;
  /// After a leave, "a" drops out of the members at once.
  bool gone_after_leave_ = false;
  /// After a leave, "a" keeps its shards.
  bool stuck_ = false;

 private:
  std::mutex mutex_;
  bool leaving_ = false;
  std::uint32_t owned_by_a_ = 3;
  std::string last_id_;
};

struct outcome {
  int code = -1;
  std::string out;
  std::string err;
};

class troupectl_run : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("TROUPECTL_TOKEN");
    server_ = obs::management_server::start(
        source_, obs::management_options{}.with_port(0).with_bearer_token(token));
    url_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }

  /// troupectl --url <the server> <args...>
  outcome troupectl(std::vector<std::string> args, const std::string& url = {}) {
    args.insert(args.begin(), {"troupectl", "--url", url.empty() ? url_ : url});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    std::ostringstream out;
    std::ostringstream err;
    const int code = run(static_cast<int>(argv.size()), argv.data(), out, err);
    return {code, out.str(), err.str()};
  }

  std::shared_ptr<fake_source> source_ = std::make_shared<fake_source>();
  std::unique_ptr<obs::management_server> server_;
  std::string url_;
};

// -- reading -------------------------------------------------------------------------------------

TEST_F(troupectl_run, ListsMembersAsAnAlignedTableOrAsTheServersJson) {
  const outcome table = troupectl({"members"});
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("cluster c1, answered by a\n"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("NODE  ADDRESS         REACHABILITY  ROLES    VERSION"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("a     127.0.0.1:2551  self          web,api  1.2"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("b     127.0.0.1:2552  connected     -        1.2"), std::string::npos)
      << table.out;

  const outcome js = troupectl({"members", "--json"});
  ASSERT_EQ(js.code, 0) << js.err;
  const json::value v = json::parse(js.out);
  EXPECT_EQ(v.at("self"), "a");
  EXPECT_EQ(v.at("members").as_array().size(), 2u);
}

TEST_F(troupectl_run, ListsShardsWithOwnersAndRates) {
  const outcome table = troupectl({"shards", "cart"});
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("type cart: 8 shards, 4 allocated, coordinator b"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("SHARD  OWNER  EPOCH  ENTITIES  MESSAGES  MSG/S"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("2      a      42     4         300       30.0"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("3      b      43     -         -         -"), std::string::npos)
      << "a remote shard's figures are unknown here\n"
      << table.out;

  const outcome js = troupectl({"--json", "shards", "cart"});
  ASSERT_EQ(js.code, 0) << js.err;
  EXPECT_EQ(json::parse(js.out).at("shards").as_array().size(), 4u);
}

TEST_F(troupectl_run, WhereEscapesTheIdSoItArrivesWhole) {
  const std::string id = "user/42 x%?#é";
  const outcome table = troupectl({"where", "cart", id});
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_EQ(source_->last_id(), id);
  EXPECT_NE(table.out.find("id      " + id), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("owner   b"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("active  unknown"), std::string::npos) << table.out;

  const outcome js = troupectl({"where", "cart", id, "--json"});
  ASSERT_EQ(js.code, 0) << js.err;
  const json::value v = json::parse(js.out);
  EXPECT_EQ(v.at("id").as_string(), id);
  EXPECT_EQ(v.at("shard"), 6);
}

TEST_F(troupectl_run, TopPrintsTheBusiestShardsForEachRound) {
  const outcome table =
      troupectl({"top", "cart", "--iterations", "2", "--interval", "50ms", "--limit", "2"});
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("(round 1/2)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("(round 2/2)"), std::string::npos) << table.out;
  // The busiest first: shard 2 at 30/s, then shard 1 at 20/s; shard 0 is cut by --limit.
  const auto first = table.out.find("2      a      30.0");
  const auto second = table.out.find("1      a      20.0");
  ASSERT_NE(first, std::string::npos) << table.out;
  ASSERT_NE(second, std::string::npos) << table.out;
  EXPECT_LT(first, second);
  EXPECT_EQ(table.out.find("0      a      10.0"), std::string::npos) << table.out;

  const outcome js = troupectl({"top", "cart", "--iterations=2", "--interval=10ms", "--json"});
  ASSERT_EQ(js.code, 0) << js.err;
  std::istringstream lines(js.out);
  std::string line;
  int round = 0;
  while (std::getline(lines, line)) {
    const json::value v = json::parse(line);
    EXPECT_EQ(v.at("round"), ++round);
    EXPECT_EQ(v.at("shards").as_array().front().at("shard"), 2);
  }
  EXPECT_EQ(round, 2) << js.out;
}

// -- operating -----------------------------------------------------------------------------------

TEST_F(troupectl_run, LeaveShowsTheShardsMovingAwayUntilNoneIsLeft) {
  const outcome o = troupectl(
      {"--token", token, "leave", "a", "--type", "cart", "--interval", "20ms", "--wait", "10s"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.err.find("leave of a started"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("2/3 shards still on a"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("[##############################] 0/3 shards still on a"), std::string::npos)
      << o.err;
  EXPECT_NE(o.out.find("node a owns no shards"), std::string::npos) << o.out;

  const outcome again =
      troupectl({"--token", token, "--json", "leave", "a", "--type", "cart", "--interval", "20ms"});
  ASSERT_EQ(again.code, 0) << again.err;
  const json::value v = json::parse(again.out);
  EXPECT_EQ(v.at("already_leaving"), true);
  EXPECT_EQ(v.at("done"), true);
  EXPECT_EQ(v.at("shards_left"), 0);
}

TEST_F(troupectl_run, LeaveEndsWhenTheNodeHasLeftTheMembers) {
  source_->gone_after_leave_ = true;
  const outcome o = troupectl({"--token", token, "leave", "a", "--interval", "20ms"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "node a left the members\n");
}

TEST_F(troupectl_run, LeaveGivesUpAfterWaitWithTheShardsLeft) {
  source_->stuck_ = true;
  const outcome o = troupectl(
      {"--token", token, "leave", "a", "--type", "cart", "--interval", "20ms", "--wait", "200ms"});
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("3/3 shards still on a"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("node a still owns 3 shard(s) after 200 ms (--wait)"), std::string::npos)
      << o.err;
}

TEST_F(troupectl_run, LeaveNeedsTheToken) {
  const outcome o = troupectl({"leave", "a"});
  EXPECT_EQ(o.code, 4);
  EXPECT_NE(o.err.find("missing bearer token"), std::string::npos) << o.err;
}

TEST_F(troupectl_run, LeaveRefusesWhenTheNodeAtTheUrlIsAnother) {
  const outcome o = troupectl({"--token", token, "leave", "b"});
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("the node at " + url_ + " is 'a', not 'b'"), std::string::npos) << o.err;
}

TEST_F(troupectl_run, RebalanceNeedsTheToken) {
  const outcome refused = troupectl({"rebalance", "cart"});
  EXPECT_EQ(refused.code, 4);
  EXPECT_NE(refused.err.find("token refused by " + url_ + " (401): missing bearer token"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(troupectl({"rebalance", "cart", "--token", "wrong"}).code, 4);

  const outcome done = troupectl({"rebalance", "cart", "--token", token});
  ASSERT_EQ(done.code, 0) << done.err;
  EXPECT_EQ(done.out, "rebalance of type cart requested (rebalancing)\n");

  setenv("TROUPECTL_TOKEN", token, 1);
  const outcome from_env = troupectl({"rebalance", "cart", "--json"});
  unsetenv("TROUPECTL_TOKEN");
  ASSERT_EQ(from_env.code, 0) << from_env.err;
  EXPECT_EQ(json::parse(from_env.out).at("status"), "rebalancing");
}

TEST(troupectl_hot_keys, NamesEachKeyWithItsFigureWhenTheShardCarriesThem) {
  EXPECT_EQ(hot_keys_text(json::parse(R"({"shard":1})")), "-");
  EXPECT_EQ(hot_keys_text(json::parse(R"({"hot_keys":[]})")), "-");
  EXPECT_EQ(hot_keys_text(json::parse(R"({"hot_keys":["u1","u2"]})")), "u1, u2");
  EXPECT_EQ(
      hot_keys_text(json::parse(
          R"({"hot_keys":[{"key":"u1","messages_per_second":12.25},{"id":"u2","count":3}]})")),
      "u1 (12.2), u2 (3.0)");
}

// -- failures and their exit codes ---------------------------------------------------------------

TEST_F(troupectl_run, AnUnknownTypeIsNotFound) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"shards", "room"}, {"where", "room", "x"}, {"top", "room", "--iterations", "1"}}) {
    const outcome o = troupectl(args);
    EXPECT_EQ(o.code, 5) << args.front();
    EXPECT_NE(o.err.find("not found (404): no type room"), std::string::npos) << o.err;
  }
}

TEST_F(troupectl_run, AServerErrorPrintsItsMessage) {
  source_->fail_rebalance_ = true;
  const outcome o = troupectl({"rebalance", "cart", "--token", token});
  EXPECT_EQ(o.code, 6);
  EXPECT_NE(o.err.find("server error 501: no on-demand rebalance"), std::string::npos) << o.err;
}

TEST_F(troupectl_run, AClosedPortIsUnreachableAndNamesTheUrl) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const std::string closed = "http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port());
  acceptor.close();
  const outcome o = troupectl({"members"}, closed);
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("node " + closed + " is unreachable"), std::string::npos) << o.err;
}

TEST_F(troupectl_run, ANodeThatDoesNotAnswerInTimeIsUnreachable) {
  // The kernel accepts the connection into the backlog; nobody ever reads the request.
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor silent(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const std::string url = "http://127.0.0.1:" + std::to_string(silent.local_endpoint().port());
  const outcome o = troupectl({"members", "--timeout", "300ms"}, url);
  EXPECT_EQ(o.code, 3);
  EXPECT_NE(o.err.find("node " + url + " did not answer within 300 ms"), std::string::npos)
      << o.err;
}

TEST_F(troupectl_run, UsageErrorsExitWith2AndHelpWith0) {
  EXPECT_EQ(troupectl({}).code, 2) << "a command is required";
  EXPECT_EQ(troupectl({"shards"}).code, 2) << "the type is required";
  EXPECT_EQ(troupectl({"nope"}).code, 2);
  EXPECT_EQ(troupectl({"members", "--timeout", "soon"}).code, 2);
  EXPECT_EQ(troupectl({"members"}, "https://127.0.0.1:1").code, 2);
  const outcome help = troupectl({"--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("Exit codes:"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("4  token refused"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace troupectl
