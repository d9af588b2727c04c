#include "node.hpp"

#include <troupe/cluster/cluster_messages.hpp>
#include <troupe/cluster/tcp_transport.hpp>
#include <troupe/persistence/persistence_extension.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/sharding/coordination/allocation_strategy.hpp>

#include <chrono>
#include <future>
#include <stdexcept>
#include <utility>
#include <variant>

namespace cluster_demo {

namespace tc = troupe::cluster;
using namespace std::chrono_literals;

namespace {

std::shared_ptr<tc::message_registry> messages() {
  auto registry = std::make_shared<tc::message_registry>();
  tc::add_cluster_messages(*registry);
  registry->add<cart_command>("demo.cart_command")
      .add<item_acked>("demo.item_acked")
      .add<cart_contents>("demo.cart_contents");
  return registry;
}

tc::cluster_node_options options_for(const std::string& name, const node_parts& parts) {
  auto options = tc::cluster_node_options{}
                     .with_cluster_name(parts.cluster_name)
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
  options.on_fenced = parts.on_fenced;
  return options;
}

}  // namespace

demo_node::demo_node(std::string name, node_parts parts)
    : name_(std::move(name)),
      system_(troupe::system_config{}.with_name(name_).with_workers(2)),
      remote_(system_, tc::remote_options{}
                           .with_cluster_name(parts.cluster_name)
                           .with_bind({"127.0.0.1", 0})
                           .with_registry(messages())
                           .with_transport([](boost::asio::any_io_executor ex) {
                             return std::make_shared<tc::tcp_transport>(ex, tc::tcp_options{});
                           })),
      store_(std::move(parts.store)) {
  auto options = troupe::sharding::sharding_options<cart_command>::create()
                     .with_type_name("cart")
                     .with_extract_entity_id([](const cart_command& c) {
                       return std::visit([](const auto& m) { return m.cart; }, c);
                     })
                     .with_num_shards(parts.shards);
  if (parts.journal) {
    auto& persistence = troupe::persistence::get(system_);
    persistence.codecs().add<item_added>("demo.item_added").add<cart_state>("demo.cart_state");
    // One plugin for every node of a process: in one process the nodes share the SQLite file's
    // writer; with a process per node each opens the file (WAL lets them share it).
    persistence.set_default_plugin(parts.journal);
    options.with_entity<cart>(name_, parts.activations);
  } else {
    options.with_proxy();
  }
  auto& sharding = troupe::sharding::cluster_sharding::get(system_);
  cluster_ = tc::cluster_node::join(system_, sharding, remote_, store_, options_for(name_, parts),
                                    parts.clock);
  auto joined = cluster_->joined();
  if (joined.wait_for(30s) != std::future_status::ready) {
    throw std::runtime_error("node " + name_ + " did not join the cluster within 30 s");
  }
  joined.get();
  carts_ = sharding.start(std::move(options));
}

demo_node::~demo_node() {
  cluster_.reset();
  remote_.shutdown();
  system_.terminate();
  system_.await_termination();
}

void demo_node::kill(tc::in_process_etcd& etcd) {
  etcd.set_reachable(*store_, false);
  remote_.shutdown();
}

std::string demo_node::address() const {
  const std::string full = to_string(remote_.self());
  return full.substr(0, full.find('#'));  // without the incarnation
}

}  // namespace cluster_demo
