#pragma once
// A node of the observability tests' in-process clusters: an actor system with its remoting on
// the memory network, joined to the in-process etcd model, with the sharded type "visited"
// (entities that count their visits) started.

#include <troupe/cluster/cluster_messages.hpp>
#include <troupe/cluster/cluster_node.hpp>
#include <troupe/cluster/membership/in_process_store.hpp>
#include <troupe/cluster/memory_network.hpp>
#include <troupe/cluster/remote_node.hpp>
#include <troupe/sharding/cluster_sharding.hpp>

#include "cluster/support/io_thread.hpp"

#include <boost/describe/class.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace troupe::observability::test {

struct visit {
  std::string id;
};
BOOST_DESCRIBE_STRUCT(visit, (), (id))

class visited final : public troupe::actor<visit> {
 public:
  explicit visited(std::shared_ptr<std::atomic<int>> count) : count_(std::move(count)) {}

 private:
  void receive(visit&) override { ++*count_; }
  std::shared_ptr<std::atomic<int>> count_;
};

/// One node, joined, with "visited" started over `num_shards` shards.
struct member {
  member(cluster::memory_network& net, cluster::in_process_etcd& etcd, cluster::test::io_thread& io,
         const std::string& name, std::shared_ptr<std::atomic<int>> count, std::uint32_t num_shards)
      : system(system_config{}.with_name(name).with_workers(2)) {
    using namespace std::chrono_literals;
    auto registry = std::make_shared<cluster::message_registry>();
    cluster::add_cluster_messages(*registry);
    registry->add<visit>("test.observability.visit");
    remote = std::make_unique<cluster::remote_node>(
        system, cluster::remote_options{}
                    .with_registry(registry)
                    .with_transport([&net](boost::asio::any_io_executor ex) {
                      return net.make_transport(std::move(ex));
                    })
                    .with_bind({name, 2550})
                    .with_heartbeat(100ms, 600ms)
                    .with_reconnect_backoff(20ms, 200ms));
    auto options = cluster::cluster_node_options{}.with_node(name).with_lease_ttl(2s);
    options.retry = 50ms;
    auto& sharding = sharding::cluster_sharding::get(system);
    node = cluster::cluster_node::join(system, sharding, *remote, etcd.client(io.executor()),
                                       std::move(options));
    node->joined().get();
    region = sharding.start(sharding::sharding_options<visit>::create()
                                .with_type_name("visited")
                                .with_entity<visited>(std::move(count))
                                .with_extract_entity_id([](const visit& v) { return v.id; })
                                .with_num_shards(num_shards));
  }
  ~member() {
    node.reset();
    remote->shutdown();
    remote.reset();
    system.terminate();
    system.await_termination();
  }
  member(const member&) = delete;
  member& operator=(const member&) = delete;

  actor_system system;
  std::unique_ptr<cluster::remote_node> remote;
  std::shared_ptr<cluster::cluster_node> node;
  actor_ref<visit> region;
};

}  // namespace troupe::observability::test
