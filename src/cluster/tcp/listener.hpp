#pragma once
// The accepting side: binds, accepts until shutdown and, with TLS, runs each server-side
// handshake (bounded by the connect timeout) before the stream is handed to on_accept. A
// connection that fails its handshake is logged and dropped; accepting goes on.

#include <troupe/cluster/node_address.hpp>
#include <troupe/cluster/transport.hpp>

#include "cluster/tcp/transport_state.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <string>

namespace troupe::cluster::tcp {

class listener final : public abortable, public std::enable_shared_from_this<listener> {
 public:
  listener(std::shared_ptr<transport_state> state, transport::accept_handler on_accept);

  /// Binds (SO_REUSEADDR; port 0 picks a free port) and listens; returns the bound address.
  /// Throws cluster_error(transport_failure). Called once, on any thread, before start().
  node_address bind(const node_address& at);
  /// Starts accepting; on the executor.
  void start();
  /// Closes the listening socket; handshakes in flight are aborted by the transport.
  void abort() override;

 private:
  void accept_next();
  void on_accepted(const boost::system::error_code& ec, boost::asio::ip::tcp::socket socket);
  void retry_soon();

  std::shared_ptr<transport_state> state_;
  // Shared with the handshakes in flight, which may finish after this listener is gone.
  std::shared_ptr<transport::accept_handler> on_accept_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_timer_;
  std::string local_;  // the bound address, for logs
  bool aborted_ = false;
};

}  // namespace troupe::cluster::tcp
