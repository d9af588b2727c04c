#pragma once
// One connect: resolve the peer (numeric hosts skip the resolver), connect, and with TLS run
// the client side of the handshake, verifying the server's certificate against the cluster CA.
// One deadline (the connect timeout) bounds all of it. `done` runs once, on the executor, unless
// the transport shuts down first.

#include <troupe/cluster/errc.hpp>
#include <troupe/cluster/node_address.hpp>
#include <troupe/cluster/transport.hpp>

#include "cluster/tcp/stream_factory.hpp"
#include "cluster/tcp/transport_state.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <optional>
#include <string>

namespace troupe::cluster::tcp {

class connect_attempt final : public abortable,
                              public std::enable_shared_from_this<connect_attempt> {
 public:
  connect_attempt(std::shared_ptr<transport_state> state, node_address peer,
                  transport::connect_handler done);

  /// Starts; on the executor.
  void start();
  void abort() override;

 private:
  using error_code = boost::system::error_code;

  void on_resolved(const error_code& ec,
                   const boost::asio::ip::tcp::resolver::results_type& endpoints);
  void on_connected(const error_code& ec);
  void on_handshake(const error_code& ec);
  void on_deadline();
  /// Reports a failure: logs it and hands `code` to done.
  void fail(errc code, const std::string& reason);
  void succeed(std::shared_ptr<stream> s);
  void close_socket();

  std::shared_ptr<transport_state> state_;
  node_address peer_;
  transport::connect_handler done_;
  boost::asio::ip::tcp::resolver resolver_;
  boost::asio::ip::tcp::socket socket_;
  std::optional<tls_socket> tls_;  // the socket moves in here for the handshake
  boost::asio::steady_timer deadline_;
  bool finished_ = false;
  bool timed_out_ = false;
};

}  // namespace troupe::cluster::tcp
