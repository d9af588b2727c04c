#pragma once
// Nodes for multi-node tests: each is an actor system with its remoting, all connected by the
// in-memory network (with fault injection) or by real TCP on 127.0.0.1.

#include <troupe/cluster/memory_network.hpp>
#include <troupe/cluster/remote_node.hpp>
#include <troupe/cluster/tcp_transport.hpp>
#include <troupe/core/actor_system.hpp>

#include "test_certs.hpp"

#include <memory>
#include <string>

namespace troupe::cluster::test {

enum class net_kind { memory, tcp, tls };

inline std::string name_of(net_kind k) {
  return k == net_kind::memory ? "memory" : k == net_kind::tcp ? "tcp" : "tls";
}

/// Creates nodes on one network.
class network {
 public:
  explicit network(net_kind kind, std::uint64_t seed = 42)
      : kind_(kind), memory_(std::make_shared<memory_network>(seed)) {}

  [[nodiscard]] transport_factory factory() const {
    if (kind_ == net_kind::memory) {
      return [net = memory_](boost::asio::any_io_executor ex) { return net->make_transport(ex); };
    }
    tcp_options options;
    if (kind_ == net_kind::tls) options.with_tls(node_files("node-a"));
    return [options](boost::asio::any_io_executor ex) {
      return std::make_shared<tcp_transport>(ex, options);
    };
  }

  /// Where the next node listens: a fixed name on the memory network, a free port over TCP.
  node_address next_address() {
    ++count_;
    if (kind_ == net_kind::memory) return {"node-" + std::to_string(count_), 2550};
    return {"127.0.0.1", 0};
  }

  [[nodiscard]] memory_network& memory() const { return *memory_; }
  [[nodiscard]] net_kind kind() const noexcept { return kind_; }

 private:
  net_kind kind_;
  std::shared_ptr<memory_network> memory_;
  int count_ = 0;
};

/// One node: a system and its remoting.
struct node {
  actor_system system;
  std::unique_ptr<remote_node> remote;

  node(network& net, std::shared_ptr<const message_registry> registry, remote_options base = {},
       std::string name = "node")
      : system(system_config{}.with_name(std::move(name)).with_workers(2)) {
    base.with_registry(std::move(registry));
    if (!base.transport) base.with_transport(net.factory());  // a test may wrap the network's
    if (base.bind.port == 0 && base.bind.host == "127.0.0.1") base.with_bind(net.next_address());
    remote = std::make_unique<remote_node>(system, std::move(base));
  }
  ~node() {
    if (remote) remote->shutdown();
    remote.reset();
    system.terminate();
    system.await_termination();
  }
  node(const node&) = delete;
  node& operator=(const node&) = delete;

  [[nodiscard]] node_address address() const { return remote->self().address; }
};

}  // namespace troupe::cluster::test
