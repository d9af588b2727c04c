#include <troupe/cluster/node_address.hpp>

#include <charconv>

namespace troupe::cluster {

std::string to_string(const node_address& a) {
  bool v6 = a.host.find(':') != std::string::npos;
  return (v6 ? "[" + a.host + "]" : a.host) + ":" + std::to_string(a.port);
}

std::string to_string(const node_id& n) {
  return to_string(n.address) + "#" + std::to_string(n.incarnation);
}

std::optional<node_address> parse_node_address(std::string_view text) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  std::string_view port = text.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return std::nullopt;
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return std::nullopt;  // a bare IPv6 host is ambiguous
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc{} || end != port.data() + port.size() || value == 0 || value > 65535) {
    return std::nullopt;
  }
  return node_address{std::string(host), static_cast<std::uint16_t>(value)};
}

}  // namespace troupe::cluster
