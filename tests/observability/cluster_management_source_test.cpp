// ctest-labels: concurrency
// The management source over a real cluster of two nodes (the in-memory network and the
// in-process model of etcd): members lists both, a type's shards name their owners and epochs,
// where-is names the shard and owner of an id (and whether it runs, where the node can tell),
// readiness follows the regions, and the same answers come over HTTP.
#include <troupe/cluster/cluster_messages.hpp>
#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/cluster/memory_network.hpp>
#include <troupe/cluster/remote_node.hpp>
#include <troupe/core/metrics.hpp>
#include <troupe/observability/cluster_management_source.hpp>
#include <troupe/observability/management_server.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/sharding/shard_id.hpp>
#include <troupe/testkit/test_probe.hpp>

#include "cluster/support/io_thread.hpp"
#include "observability/support/visited_member.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/describe/class.hpp>
#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace troupe::observability {
namespace {

using namespace std::chrono_literals;
using sharding::cluster_sharding;
using sharding::sharding_options;
using troupe::testkit::await_condition;
using troupe::testkit::dilated;

using test::member;

constexpr std::uint32_t num_shards = 8;
using test::visit;

class ClusterManagementSource : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = std::make_unique<member>(net_, etcd_, io_, "a", count_, num_shards);
    b_ = std::make_unique<member>(net_, etcd_, io_, "b", count_, num_shards);
    await_condition([&] { return a_->node->ready("visited") && b_->node->ready("visited"); }, 5s,
                    "both regions ready");
    await_condition(
        [&] {
          return std::max(a_->node->hosting_regions("visited"),
                          b_->node->hosting_regions("visited")) == 2;
        },
        5s, "the leading coordinator places shards on both regions");
    for (int i = 0; i < 32; ++i) a_->region.tell(visit{"user-" + std::to_string(i)});
    await_condition([&] { return count_->load() == 32; }, 10s, "every visit delivered");
    source_ =
        make_cluster_management_source(a_->node, cluster_sharding::get(a_->system), &metrics_);
  }
  void TearDown() override {
    source_.reset();
    b_.reset();
    a_.reset();
  }

  cluster::memory_network net_{7};
  cluster::test::io_thread io_;
  std::shared_ptr<troupe::clock> clock_ = make_steady_clock();
  cluster::in_process_etcd etcd_{clock_};
  std::shared_ptr<std::atomic<int>> count_ = std::make_shared<std::atomic<int>>(0);
  metrics_registry metrics_;
  std::unique_ptr<member> a_;
  std::unique_ptr<member> b_;
  std::shared_ptr<management_source> source_;
};

TEST_F(ClusterManagementSource, ListsBothMembersAndNamesItself) {
  const auto members = source_->members();
  ASSERT_TRUE(members) << members.error().message;
  EXPECT_EQ(members->self, "a");
  ASSERT_EQ(members->members.size(), 2u);
  EXPECT_EQ(members->members[0].node, "a");
  EXPECT_EQ(members->members[0].reachability, "self");
  EXPECT_EQ(members->members[1].node, "b");
  EXPECT_GT(members->members[1].incarnation, 0);
}

TEST_F(ClusterManagementSource, NamesTheOwnerAndEpochOfEveryShardOnBothNodes) {
  const auto shards = source_->shards("visited");
  ASSERT_TRUE(shards) << shards.error().message;
  EXPECT_EQ(shards->num_shards, num_shards);
  EXPECT_FALSE(shards->coordinator.empty());
  std::set<std::string> owners;
  std::uint64_t messages = 0;
  for (const auto& s : shards->shards) {
    EXPECT_TRUE(s.owner == "a" || s.owner == "b") << s.shard << ": " << s.owner;
    EXPECT_GT(s.epoch, 0) << s.shard;
    EXPECT_EQ(s.local, s.owner == "a") << s.shard;
    owners.insert(s.owner);
    if (s.local) messages += s.messages;
    EXPECT_FALSE(s.messages_per_second) << "no earlier read to measure a rate from";
  }
  EXPECT_EQ(owners, (std::set<std::string>{"a", "b"}));
  EXPECT_GT(messages, 0u) << "a hosts shards that got visits";

  const auto again = source_->shards("visited");
  ASSERT_TRUE(again);
  for (const auto& s : again->shards) {
    if (s.local) {
      EXPECT_TRUE(s.messages_per_second) << "a second read gives a rate";
    }
  }
  const auto unknown = source_->shards("nope");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, management_errc::not_found);
}

TEST_F(ClusterManagementSource, ListsItsTypesAndNamesTheHotIdOfALocalShard) {
  const auto types = source_->types();
  ASSERT_TRUE(types);
  EXPECT_EQ(types->types, std::vector<std::string>{"visited"});

  std::string hot;
  for (int i = 0; i < 32 && hot.empty(); ++i) {
    const auto e = source_->entity("visited", "user-" + std::to_string(i));
    if (e && e->local) hot = e->id;
  }
  ASSERT_FALSE(hot.empty()) << "a hosts some of the 32 ids";
  for (int i = 0; i < 640; ++i) a_->region.tell(visit{hot});
  await_condition([&] { return count_->load() == 32 + 640; }, 10s, "the hot visits delivered");
  const auto shards = source_->shards("visited");
  ASSERT_TRUE(shards) << shards.error().message;
  for (const auto& s : shards->shards) {
    if (!s.local) {
      EXPECT_TRUE(s.hot_keys.empty()) << s.shard << ": hot ids are known where the shard runs";
    } else if (s.shard == sharding::shard_of(hot, num_shards)) {
      ASSERT_FALSE(s.hot_keys.empty());
      EXPECT_EQ(s.hot_keys.front().first, hot);
      EXPECT_GT(s.hot_keys.front().second, 0u);
      EXPECT_LE(s.hot_keys.size(), 3u);
    }
  }
}

TEST_F(ClusterManagementSource, LocatesAnEntityOnItsShardsOwner) {
  const auto shards = source_->shards("visited");
  ASSERT_TRUE(shards);
  std::map<sharding::shard_id, std::string> owner_of;
  for (const auto& s : shards->shards) owner_of[s.shard] = s.owner;
  std::set<bool> seen_local;
  for (int i = 0; i < 32; ++i) {
    const std::string id = "user-" + std::to_string(i);
    const auto e = source_->entity("visited", id);
    ASSERT_TRUE(e) << e.error().message;
    EXPECT_EQ(e->shard, sharding::shard_of(id, num_shards)) << id;
    EXPECT_EQ(e->owner, owner_of[e->shard]) << id;
    EXPECT_EQ(e->local, e->owner == "a") << id;
    if (e->local) {
      EXPECT_EQ(e->active, std::optional<bool>(true)) << id << " got a visit";
    } else {
      EXPECT_FALSE(e->active) << id << ": b's entities are not visible from a";
    }
    seen_local.insert(e->local);
  }
  EXPECT_EQ(seen_local.size(), 2u);
  const auto never = source_->entity("visited", "never-visited");
  ASSERT_TRUE(never);
  if (never->local) {
    EXPECT_EQ(never->active, std::optional<bool>(false));
  }
}

TEST_F(ClusterManagementSource, LocatesAnEntityOfATypeWithItsOwnShardExtractor) {
  // "by-room": the room number in the id is the shard, as the type's region routes it.
  auto& sharding = cluster_sharding::get(a_->system);
  auto rooms =
      sharding.start(sharding_options<visit>::create()
                         .with_type_name("by-room")
                         .with_entity<test::visited>(count_)
                         .with_extract_entity_id([](const visit& v) { return v.id; })
                         .with_num_shards(num_shards)
                         .with_extract_shard_id([](const std::string& id) {
                           if (id.rfind("room-", 0) != 0) {
                             throw std::invalid_argument("'" + id + "' names no room");
                           }
                           return static_cast<sharding::shard_id>(std::stoul(id.substr(5)));
                         }));
  await_condition([&] { return a_->node->ready("by-room"); }, 5s, "the by-room region ready");
  rooms.tell(visit{"room-5"});
  await_condition([&] { return count_->load() == 33; }, 10s, "the visit delivered");
  const auto e = source_->entity("by-room", "room-5");
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->shard, 5U);
  EXPECT_EQ(e->owner, "a") << "only a runs by-room";
  EXPECT_EQ(e->active, std::optional<bool>(true));
  const auto bad = source_->entity("by-room", "lobby");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("names no room"), std::string::npos) << bad.error().message;
}

TEST_F(ClusterManagementSource, IsReadyAndPassesARebalanceRequestOnForAStartedTypeOnly) {
  EXPECT_TRUE(source_->readiness().ready) << source_->readiness().reason;
  // That the request moves shards is tests/cluster/cluster_rebalance_request_test.cpp's part.
  EXPECT_TRUE(source_->rebalance("visited"));
  EXPECT_EQ(source_->rebalance("nope").error().code, management_errc::not_found);
  EXPECT_TRUE(source_->metrics_text());
  EXPECT_FALSE(
      make_cluster_management_source(a_->node, cluster_sharding::get(a_->system))->metrics_text());
}

TEST_F(ClusterManagementSource, ServesTheClusterOverHttp) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  auto server = management_server::start(source_, management_options{}.with_port(0));
  boost::asio::io_context io;
  beast::tcp_stream stream(io);
  beast::error_code failure;
  const auto step = [&](auto start_operation) {
    if (failure) return;
    stream.expires_after(dilated(10s));
    start_operation();
    io.restart();
    io.run();
  };
  step([&] {
    stream.async_connect({boost::asio::ip::make_address("127.0.0.1"), server->port()},
                         [&](beast::error_code ec) { failure = ec; });
  });
  http::request<http::string_body> req{http::verb::get, "/cluster/entities/visited/user-1", 11};
  req.set(http::field::host, "127.0.0.1");
  step([&] {
    http::async_write(stream, req, [&](beast::error_code ec, std::size_t) { failure = ec; });
  });
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  step([&] {
    http::async_read(stream, buffer, res, [&](beast::error_code ec, std::size_t) { failure = ec; });
  });
  ASSERT_FALSE(failure) << failure.message();
  ASSERT_EQ(res.result_int(), 200u) << res.body();
  const auto v = boost::json::parse(res.body());
  const auto shard = sharding::shard_of("user-1", num_shards);
  EXPECT_EQ(v.at("shard"), shard);
  EXPECT_EQ(v.at("path").as_string(),
            "region-visited/shard-" + std::to_string(shard) + "/entity-user-1");
}

TEST_F(ClusterManagementSource, LeavesOnceAndIsNoLongerReady) {
  const auto first = source_->leave();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->node, "a");
  EXPECT_FALSE(first->already_leaving);
  EXPECT_TRUE(source_->leave()->already_leaving);
  const auto r = source_->readiness();
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.reason, "the node is leaving the cluster");
  await_condition(
      [&] {
        const auto members = source_->members();
        return !members || members->members.size() == 1 || members->members[0].leaving;
      },
      10s, "a is marked leaving or gone");
}

}  // namespace
}  // namespace troupe::observability
