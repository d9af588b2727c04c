#include "node.hpp"

#include <troupe/cluster/cluster_messages.hpp>
#include <troupe/cluster/tcp_transport.hpp>
#include <troupe/persistence/persistence_extension.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/sharding/coordination/allocation_strategy.hpp>

#include <chrono>
#include <utility>
#include <variant>

namespace cluster_demo {

namespace tc = troupe::cluster;
using namespace std::chrono_literals;

namespace {

constexpr const char* cluster_name = "shop";

std::shared_ptr<tc::message_registry> messages() {
  auto registry = std::make_shared<tc::message_registry>();
  tc::add_cluster_messages(*registry);
  registry->add<cart_command>("demo.cart_command")
      .add<item_acked>("demo.item_acked")
      .add<cart_contents>("demo.cart_contents");
  return registry;
}

tc::cluster_node_options options_for(const std::string& name) {
  auto options = tc::cluster_node_options{}
                     .with_cluster_name(cluster_name)
                     .with_node(name)
                     .with_lease_ttl(2s)  // a crashed node's shards move 2-2.5 s after it dies
                     .with_rebalance_interval(1s)
                     .with_handoff_timeout(5s);
  options.retry = 200ms;
  // Least-shards evens the shard counts out, a few shards per rebalance round, so a joining
  // node fills up in waves that can be watched.
  options.strategy = [](const auto&) {
    return troupe::sharding::coordination::make_least_shards_strategy();
  };
  return options;
}

}  // namespace

demo_node::demo_node(std::string name, const cluster_parts& parts)
    : name_(std::move(name)),
      etcd_(parts.etcd),
      system_(troupe::system_config{}.with_name(name_).with_workers(2)),
      remote_(system_, tc::remote_options{}
                           .with_cluster_name(cluster_name)
                           .with_bind({"127.0.0.1", 0})
                           .with_registry(messages())
                           .with_transport([](boost::asio::any_io_executor ex) {
                             return std::make_shared<tc::tcp_transport>(ex, tc::tcp_options{});
                           })),
      store_(parts.etcd.client(parts.io.executor())) {
  auto& persistence = troupe::persistence::get(system_);
  persistence.codecs().add<item_added>("demo.item_added").add<cart_state>("demo.cart_state");
  // One plugin for every node: in one process the nodes can share the SQLite file's writer (in
  // production each process opens the file, or they share a PostgreSQL).
  persistence.set_default_plugin(parts.journal);
  auto& sharding = troupe::sharding::cluster_sharding::get(system_);
  cluster_ =
      tc::cluster_node::join(system_, sharding, remote_, store_, options_for(name_), parts.clock);
  cluster_->joined().get();
  carts_ = sharding.start(troupe::sharding::sharding_options<cart_command>::create()
                              .with_type_name("cart")
                              .with_entity<cart>(name_, &parts.activations)
                              .with_extract_entity_id([](const cart_command& c) {
                                return std::visit([](const auto& m) { return m.cart; }, c);
                              })
                              .with_num_shards(parts.shards));
}

demo_node::~demo_node() {
  cluster_.reset();
  remote_.shutdown();
  system_.terminate();
  system_.await_termination();
}

void demo_node::kill() {
  etcd_.set_reachable(*store_, false);
  remote_.shutdown();
}

std::string demo_node::address() const {
  const std::string full = to_string(remote_.self());
  return full.substr(0, full.find('#'));  // without the incarnation
}

}  // namespace cluster_demo
