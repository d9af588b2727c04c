// ctest-labels: concurrency
// observe_node on a one-node cluster: with `troupe.management.enabled = on` in the node's config
// it serves /metrics, and the exposition carries the families of every layer: sharding (shard
// messages), remoting, and the cluster's own (lease renewals, the coordinator's leadership and
// allocations); with the section absent it starts no server but still records.
#include <troupe/cluster/cluster_messages.hpp>
#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/cluster/memory_network.hpp>
#include <troupe/cluster/remote_node.hpp>
#include <troupe/observability/observe_node.hpp>
#include <troupe/observability/prometheus_text.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/testkit/metric_values.hpp>
#include <troupe/testkit/test_probe.hpp>

#include "cluster/support/io_thread.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/describe/class.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

namespace troupe::observability {
namespace {

using namespace std::chrono_literals;
using sharding::cluster_sharding;
using sharding::sharding_options;
using troupe::testkit::await_condition;
using troupe::testkit::metric_value;

struct ping {
  std::string id;
};
BOOST_DESCRIBE_STRUCT(ping, (), (id))

class pinged final : public troupe::actor<ping> {
  void receive(ping&) override {}
};

/// A one-node cluster whose system reads `config_text`, observed.
struct lone_node {
  explicit lone_node(const std::string& config_text)
      : system(system_config{}.with_name("solo").with_workers(2).with_config(
            config::parse_string(config_text))) {
    auto messages = std::make_shared<cluster::message_registry>();
    cluster::add_cluster_messages(*messages);
    messages->add<ping>("test.observe.ping");
    remote = std::make_unique<cluster::remote_node>(
        system, cluster::remote_options{}
                    .with_registry(messages)
                    .with_transport([this](boost::asio::any_io_executor ex) {
                      return net.make_transport(std::move(ex));
                    })
                    .with_bind({"solo", 2550}));
    registry = std::make_shared<metrics_registry>();
    auto& sharding = cluster_sharding::get(system);
    node = cluster::cluster_node::join(
        system, sharding, *remote, etcd.client(io.executor()),
        cluster::cluster_node_options{}.with_node("solo").with_lease_ttl(2s).with_metrics(
            registry));
    node->joined().get();
    region = sharding.start(sharding_options<ping>::create()
                                .with_type_name("pinged")
                                .with_entity<pinged>()
                                .with_extract_entity_id([](const ping& p) { return p.id; })
                                .with_num_shards(4));
    observed = observe_node(registry, system, sharding, node, *remote);
  }
  ~lone_node() {
    observed = {};
    node.reset();
    remote->shutdown();
    remote.reset();
    system.terminate();
    system.await_termination();
  }

  cluster::memory_network net{3};
  cluster::test::io_thread io;
  cluster::in_process_etcd etcd{make_steady_clock()};
  actor_system system;
  std::unique_ptr<cluster::remote_node> remote;
  std::shared_ptr<metrics_registry> registry;
  std::shared_ptr<cluster::cluster_node> node;
  actor_ref<ping> region;
  observed_node observed;
};

/// GET `target` from 127.0.0.1:`port`: the status and the body.
std::pair<unsigned, std::string> get(std::uint16_t port, const std::string& target) {
  namespace http = boost::beast::http;
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  http::request<http::string_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1");
  http::write(socket, req);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(socket, buffer, res);
  return {res.result_int(), res.body()};
}

TEST(ObserveNode, ServesEveryLayersMetricsWhenTheConfigEnablesTheApi) {
  lone_node n("troupe.management { enabled = on, port = 0 }");
  ASSERT_NE(n.observed.server, nullptr);
  for (int i = 0; i < 20; ++i) n.region.tell(ping{"p-" + std::to_string(i)});
  await_condition(
      [&] {
        return metric_value(n.registry->collect(), "troupe_shard_allocations_total", {"pinged"})
                   .value_or(0) >= 1;
      },
      10s, "the coordinator allocated a shard");
  // The pings reach their entities after the allocation: wait until a shard has counted some.
  await_condition(
      [&] {
        return to_prometheus_text(n.registry->collect()).find("troupe_shard_activations_total{") !=
               std::string::npos;
      },
      10s, "a shard started its first entity");
  const auto [status, text] = get(n.observed.server->port(), "/metrics");
  ASSERT_EQ(status, 200u) << text;
  for (const char* family :
       {"troupe_shard_messages_total", "troupe_remote_messages_sent_total",
        "troupe_lease_renewal_seconds", "troupe_coordinator_leader{type=\"pinged\"} 1",
        "troupe_ask_duration_seconds_bucket{outcome=\"replied\"", "troupe_passivations_total",
        "troupe_shard_activations_total{type=\"pinged\"", "troupe_dead_letters_total",
        "troupe_shard_allocations_total{type=\"pinged\"}"}) {
    EXPECT_NE(text.find(family), std::string::npos) << family << " missing from\n" << text;
  }
}

TEST(ObserveNode, StartsNoServerUnlessEnabledButStillRecords) {
  lone_node n("");
  EXPECT_EQ(n.observed.server, nullptr);
  n.region.tell(ping{"p"});
  await_condition(
      [&] {
        return metric_value(n.registry->collect(), "troupe_coordinator_leader", {"pinged"}) == 1.0;
      },
      10s, "the node leads its type");
}

}  // namespace
}  // namespace troupe::observability
