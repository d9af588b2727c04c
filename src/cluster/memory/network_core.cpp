#include "cluster/memory/network_core.hpp"

#include <troupe/cluster/errc.hpp>

#include "cluster/memory/connection.hpp"
#include "cluster/memory/link_state.hpp"

#include <algorithm>

namespace troupe::cluster::detail {

std::shared_ptr<link_state> network_core::link(const node_address& from, const node_address& to) {
  std::lock_guard lock(mutex_);
  auto& l = links_[{from, to}];
  if (!l) l = std::make_shared<link_state>(seed_, from, to);
  return l;
}

std::shared_ptr<link_state> network_core::find_link(const node_address& from,
                                                    const node_address& to) const {
  std::lock_guard lock(mutex_);
  auto it = links_.find({from, to});
  return it == links_.end() ? nullptr : it->second;
}

void network_core::for_each_link(const std::function<void(link_state&)>& f) {
  std::vector<std::shared_ptr<link_state>> all;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, l] : links_) all.push_back(l);
  }
  for (const auto& l : all) f(*l);
}

std::uint16_t network_core::free_port_locked(const std::string& host) {
  // One counter for every host, so assigned ports are unique in the whole network.
  for (int tries = 0; tries <= 0xffff - first_assigned_port; ++tries) {
    const std::uint16_t port = next_port_;
    next_port_ = next_port_ == 0xffff ? first_assigned_port : static_cast<std::uint16_t>(port + 1);
    if (auto it = listeners_.find({host, port}); it == listeners_.end() || it->second.expired()) {
      return port;
    }
  }
  throw cluster_error(errc::transport_failure, "no free port left for " + host);
}

node_address network_core::bind(const node_address& at, std::weak_ptr<memory_transport> owner) {
  std::lock_guard lock(mutex_);
  node_address bound = at;
  if (bound.port == 0) bound.port = free_port_locked(bound.host);
  auto& slot = listeners_[bound];
  if (!slot.expired()) {
    throw cluster_error(errc::transport_failure,
                        "cannot listen at " + to_string(bound) + ": address already in use");
  }
  slot = std::move(owner);
  return bound;
}

void network_core::unbind(const node_address& at, const std::weak_ptr<memory_transport>& owner) {
  std::lock_guard lock(mutex_);
  auto it = listeners_.find(at);
  // Compared by control block, not lock(): the owner may be in its destructor, and locking
  // another transport here could run that one's destructor under the mutex.
  if (it != listeners_.end() && !it->second.owner_before(owner) &&
      !owner.owner_before(it->second)) {
    listeners_.erase(it);
  }
}

std::shared_ptr<memory_transport> network_core::listener_at(const node_address& at) const {
  std::lock_guard lock(mutex_);
  auto it = listeners_.find(at);
  return it == listeners_.end() ? nullptr : it->second.lock();
}

node_address network_core::ephemeral_address() {
  std::lock_guard lock(mutex_);
  node_address a{"ephemeral", 0};
  a.port = free_port_locked(a.host);
  return a;
}

void network_core::add_connection(const std::shared_ptr<connection>& c) {
  std::lock_guard lock(mutex_);
  if (connections_.size() >= prune_at_) {
    std::erase_if(connections_, [](const auto& w) { return w.expired(); });
    prune_at_ = std::max<std::size_t>(64, connections_.size() * 2);
  }
  connections_.push_back(c);
}

std::vector<std::shared_ptr<connection>> network_core::connections_between(const node_address& a,
                                                                           const node_address& b) {
  std::vector<std::weak_ptr<connection>> all;
  {
    std::lock_guard lock(mutex_);
    all = connections_;
  }
  // Locked outside the mutex: dropping a connection may run handlers' destructors.
  std::vector<std::shared_ptr<connection>> found;
  for (const auto& w : all) {
    if (auto c = w.lock(); c && c->joins(a, b)) found.push_back(std::move(c));
  }
  return found;
}

std::chrono::nanoseconds network_core::connect_timeout() const {
  std::lock_guard lock(mutex_);
  return connect_timeout_;
}

void network_core::connect_timeout(std::chrono::nanoseconds timeout) {
  std::lock_guard lock(mutex_);
  connect_timeout_ = timeout;
}

}  // namespace troupe::cluster::detail
