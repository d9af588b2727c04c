#pragma once
// The server side of one TLS handshake: the client must present a certificate that chains to
// the cluster CA. Bounded by the connect timeout, so a client that connects and stays silent
// cannot hold a socket forever. Success hands the stream to the listener's on_accept; failure
// is logged with the client's address and OpenSSL's reason, and the socket dropped.

#include <troupe/cluster/transport.hpp>

#include "cluster/tcp/stream_factory.hpp"
#include "cluster/tcp/transport_state.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <string>

namespace troupe::cluster::tcp {

class server_handshake final : public abortable,
                               public std::enable_shared_from_this<server_handshake> {
 public:
  server_handshake(std::shared_ptr<transport_state> state,
                   std::shared_ptr<transport::accept_handler> on_accept,
                   boost::asio::ip::tcp::socket socket, std::string local);

  /// Starts the handshake and its deadline; on the executor.
  void start();
  void abort() override;

 private:
  void on_handshake(const boost::system::error_code& ec);
  void close_socket();

  std::shared_ptr<transport_state> state_;
  std::shared_ptr<transport::accept_handler> on_accept_;
  tls_socket socket_;
  boost::asio::steady_timer deadline_;
  std::string local_;
  std::string remote_;
  bool finished_ = false;
  bool timed_out_ = false;
};

}  // namespace troupe::cluster::tcp
