#include "in_process_cluster.hpp"

#include <troupe/persistence/sqlite_plugin.hpp>

#include <algorithm>
#include <future>
#include <system_error>
#include <thread>
#include <utility>

namespace cluster_demo {

in_process_cluster::in_process_cluster(std::uint32_t shards) : shards_(shards) {}

in_process_cluster::~in_process_cluster() { close(); }

std::string in_process_cluster::intro() const {
  return "Nodes a, b and c form a cluster in this process (TCP on 127.0.0.1, etcd modelled\n"
         "in-process). Under load, node d joins, node b leaves gracefully and node c is killed;\n"
         "then every cart is read back and checked against what was acknowledged.\n\n";
}

void in_process_cluster::open(console& out, demo_clock::time_point t0) {
  journal_ = troupe::persistence::open_sqlite_plugin({.file = dir_.path / "carts.db"});
  out.line("  " + since(t0) + "  journal: " + (dir_.path / "carts.db").string());
}

std::string in_process_cluster::start(const std::string& name) {
  node_parts parts;
  parts.store = etcd_.client(io_.executor());
  parts.clock = clock_;
  parts.journal = journal_;
  parts.activations = &activations_;
  parts.shards = shards_;
  nodes_[name] = std::make_unique<demo_node>(name, std::move(parts));
  return nodes_[name]->address();
}

bool in_process_cluster::wait_regions(std::size_t regions, std::chrono::milliseconds limit) {
  const auto give_up = demo_clock::now() + limit;
  while (!std::any_of(nodes_.begin(), nodes_.end(), [&](const auto& n) {
    return n.second->cluster().hosting_regions("cart") == regions;
  })) {
    if (demo_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

troupe::actor_ref<cart_command> in_process_cluster::front() { return nodes_.at("a")->carts(); }

troupe::cluster::cluster_node& in_process_cluster::reader() { return nodes_.at("a")->cluster(); }

std::optional<std::string> in_process_cluster::leave(const std::string& name,
                                                     std::chrono::milliseconds limit) {
  // Shared with the callback: it may come after this gave up waiting.
  auto left = std::make_shared<std::promise<std::error_code>>();
  nodes_.at(name)->cluster().leave([left](std::error_code ec) { left->set_value(ec); });
  auto done = left->get_future();
  if (done.wait_for(limit) != std::future_status::ready) return std::nullopt;
  const std::error_code ec = done.get();
  return ec ? " (the lease revoke failed: " + ec.message() + ")" : std::string();
}

std::string in_process_cluster::stop(const std::string& name) {
  nodes_.erase(name);
  return {};
}

std::string in_process_cluster::kill_text() const {
  return "node c loses etcd and the network at once; it never says goodbye";
}

void in_process_cluster::kill(const std::string& name) { nodes_.at(name)->kill(etcd_); }

activation_counts in_process_cluster::activations() {
  return {activations_.activations(), activations_.duplicates(), activations_.examples()};
}

void in_process_cluster::close() { nodes_.clear(); }

}  // namespace cluster_demo
