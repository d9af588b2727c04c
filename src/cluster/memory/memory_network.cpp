#include "troupe/cluster/memory_network.hpp"

#include "cluster/memory/connection.hpp"
#include "cluster/memory/link_state.hpp"
#include "cluster/memory/memory_transport.hpp"
#include "cluster/memory/network_core.hpp"

#include <stdexcept>

namespace troupe::cluster {

memory_network::memory_network(std::uint64_t seed) : memory_network(seed, make_steady_clock()) {}

memory_network::memory_network(std::uint64_t seed, std::shared_ptr<troupe::clock> clock)
    : core_(std::make_shared<detail::network_core>(seed, std::move(clock))) {}

memory_network::~memory_network() = default;

std::shared_ptr<transport> memory_network::make_transport(boost::asio::any_io_executor ex) {
  return std::make_shared<detail::memory_transport>(core_, std::move(ex));
}

void memory_network::drop(const node_address& from, const node_address& to, double probability) {
  core_->link(from, to)->drop(probability);
}

void memory_network::delay(const node_address& from, const node_address& to,
                           std::chrono::nanoseconds min, std::chrono::nanoseconds max) {
  core_->link(from, to)->delay(min, max);
}

void memory_network::partition(const node_address& a, const node_address& b,
                               partition_direction direction, partition_kind kind) {
  const bool hold = kind == partition_kind::holds_writes;
  if (direction != partition_direction::b_to_a) core_->link(a, b)->block(hold);
  if (direction != partition_direction::a_to_b) core_->link(b, a)->block(hold);
}

void memory_network::heal(const node_address& a, const node_address& b) {
  for (const auto& l : {core_->find_link(a, b), core_->find_link(b, a)}) {
    if (l) l->heal();
  }
}

void memory_network::heal_all() {
  core_->for_each_link([](detail::link_state& l) { l.heal(); });
}

void memory_network::disconnect(const node_address& a, const node_address& b) {
  for (const auto& c : core_->connections_between(a, b)) c->reset();
}

std::chrono::nanoseconds memory_network::connect_timeout() const {
  return core_->connect_timeout();
}

void memory_network::connect_timeout(std::chrono::nanoseconds timeout) {
  if (timeout.count() < 0) throw std::invalid_argument("connect timeout must not be negative");
  core_->connect_timeout(timeout);
}

link_stats memory_network::stats(const node_address& from, const node_address& to) const {
  auto l = core_->find_link(from, to);
  return l ? l->stats() : link_stats{};
}

std::uint64_t memory_network::seed() const noexcept { return core_->seed(); }

}  // namespace troupe::cluster
