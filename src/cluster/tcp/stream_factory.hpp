#pragma once
// Turning a connected socket into a transport stream: one maker per socket type, each in its own
// translation unit (the TLS one is the heavy one to compile).

#include <troupe/cluster/transport.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>

#include <cstddef>
#include <memory>
#include <string>

namespace troupe::cluster::tcp {

using tls_socket = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;

/// A stream over a connected plain socket; it reads once started.
std::shared_ptr<stream> make_plain_stream(boost::asio::ip::tcp::socket socket,
                                          std::size_t read_chunk_size);

/// A stream over a TLS socket whose handshake succeeded; keeps `context` alive with it.
std::shared_ptr<stream> make_tls_stream(tls_socket socket, std::size_t read_chunk_size,
                                        std::shared_ptr<boost::asio::ssl::context> context);

/// "127.0.0.1:40312", "[::1]:40312".
std::string to_string(const boost::asio::ip::tcp::endpoint& endpoint);

/// "tcp 127.0.0.1:40312 -> 127.0.0.1:25520 (tls)": this side first.
std::string describe_connection(const boost::asio::ip::tcp::socket& socket, bool tls);

}  // namespace troupe::cluster::tcp
