#pragma once
// What the in-memory network shares between its transports: who listens where, the directed
// links with their faults, and the live connections (for disconnect). One mutex guards it; it
// is never held while calling into a transport or a connection, so lock order stays simple
// (transport -> network, connection -> link).

#include <troupe/cluster/node_address.hpp>
#include <troupe/core/clock.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace troupe::cluster::detail {

class connection;
class link_state;
class memory_transport;

class network_core {
 public:
  network_core(std::uint64_t seed, std::shared_ptr<troupe::clock> clock)
      : seed_(seed), clock_(std::move(clock)) {}

  [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
  /// What delays and connect timeouts are measured on.
  [[nodiscard]] const std::shared_ptr<troupe::clock>& clock() const noexcept { return clock_; }

  /// The link `from` -> `to`, made on first use.
  std::shared_ptr<link_state> link(const node_address& from, const node_address& to);
  /// The link if it was ever used, else nullptr.
  [[nodiscard]] std::shared_ptr<link_state> find_link(const node_address& from,
                                                      const node_address& to) const;
  /// Calls `f` on every link (without the mutex held).
  void for_each_link(const std::function<void(link_state&)>& f);

  /// Registers `owner` as the listener at `at` (port 0: a free port) and returns the address;
  /// throws cluster_error(errc::transport_failure) when it is taken.
  node_address bind(const node_address& at, std::weak_ptr<memory_transport> owner);
  /// Removes the listener at `at` if it is `owner`.
  void unbind(const node_address& at, const std::weak_ptr<memory_transport>& owner);
  /// The transport listening at `at`, or nullptr.
  [[nodiscard]] std::shared_ptr<memory_transport> listener_at(const node_address& at) const;
  /// A fresh address for a transport that connects before it listens.
  node_address ephemeral_address();

  void add_connection(const std::shared_ptr<connection>& c);
  /// The live connections between `a` and `b`, in either direction.
  std::vector<std::shared_ptr<connection>> connections_between(const node_address& a,
                                                               const node_address& b);

  [[nodiscard]] std::chrono::nanoseconds connect_timeout() const;
  void connect_timeout(std::chrono::nanoseconds timeout);

 private:
  // Ports handed out for port 0 and ephemeral addresses: the range an OS would use.
  static constexpr std::uint16_t first_assigned_port = 49152;

  std::uint16_t free_port_locked(const std::string& host);

  const std::uint64_t seed_;
  const std::shared_ptr<troupe::clock> clock_;
  mutable std::mutex mutex_;
  std::map<std::pair<node_address, node_address>, std::shared_ptr<link_state>> links_;
  std::map<node_address, std::weak_ptr<memory_transport>> listeners_;
  std::vector<std::weak_ptr<connection>> connections_;
  std::size_t prune_at_ = 64;
  std::uint16_t next_port_ = first_assigned_port;
  std::chrono::nanoseconds connect_timeout_ = std::chrono::milliseconds(200);
};

}  // namespace troupe::cluster::detail
