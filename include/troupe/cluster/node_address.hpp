#pragma once
/// Where a node listens, and which run of it: a restarted node keeps its address but gets a new
/// incarnation, so peers treat it as a different node (its old actors are gone).

#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace troupe::cluster {

/// Host and port a node listens on ("127.0.0.1", 25520). In the in-memory test network the
/// host is any name.
struct node_address {
  std::string host;
  std::uint16_t port = 0;

  friend auto operator<=>(const node_address&, const node_address&) = default;
};

/// One run of a node: its address and a random incarnation number chosen at start-up.
struct node_id {
  node_address address;
  std::uint64_t incarnation = 0;

  friend auto operator<=>(const node_id&, const node_id&) = default;
};

/// "host:port"; IPv6 hosts in brackets.
std::string to_string(const node_address& a);
/// "host:port#incarnation".
std::string to_string(const node_id& n);
/// Parses "host:port" (or "[v6]:port"); nullopt when malformed or the port is not 1..65535.
std::optional<node_address> parse_node_address(std::string_view text);

}  // namespace troupe::cluster

template <>
struct std::hash<troupe::cluster::node_address> {
  std::size_t operator()(const troupe::cluster::node_address& a) const noexcept {
    return std::hash<std::string>{}(a.host) * 31 + a.port;
  }
};
