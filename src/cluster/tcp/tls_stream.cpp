#include "cluster/tcp/socket_stream.hpp"
#include "cluster/tcp/stream_factory.hpp"

namespace troupe::cluster::tcp {

std::shared_ptr<stream> make_tls_stream(tls_socket socket, std::size_t read_chunk_size,
                                        std::shared_ptr<boost::asio::ssl::context> context) {
  auto description = describe_connection(socket.next_layer(), true);
  return std::make_shared<socket_stream<tls_socket>>(std::move(socket), std::move(description),
                                                     read_chunk_size, std::move(context));
}

}  // namespace troupe::cluster::tcp
