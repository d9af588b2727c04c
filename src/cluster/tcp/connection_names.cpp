#include <troupe/cluster/node_address.hpp>

#include "cluster/tcp/stream_factory.hpp"

namespace troupe::cluster::tcp {

std::string to_string(const boost::asio::ip::tcp::endpoint& endpoint) {
  return cluster::to_string(node_address{endpoint.address().to_string(), endpoint.port()});
}

std::string describe_connection(const boost::asio::ip::tcp::socket& socket, bool tls) {
  boost::system::error_code ec;
  auto local = socket.local_endpoint(ec);
  std::string text = "tcp " + (ec ? std::string("?") : to_string(local)) + " -> ";
  auto remote = socket.remote_endpoint(ec);
  text += ec ? std::string("?") : to_string(remote);
  if (tls) text += " (tls)";
  return text;
}

}  // namespace troupe::cluster::tcp
