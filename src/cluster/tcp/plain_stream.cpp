#include "cluster/tcp/socket_stream.hpp"
#include "cluster/tcp/stream_factory.hpp"

namespace troupe::cluster::tcp {

std::shared_ptr<stream> make_plain_stream(boost::asio::ip::tcp::socket socket,
                                          std::size_t read_chunk_size) {
  auto description = describe_connection(socket, false);
  return std::make_shared<socket_stream<boost::asio::ip::tcp::socket>>(
      std::move(socket), std::move(description), read_chunk_size, nullptr);
}

}  // namespace troupe::cluster::tcp
