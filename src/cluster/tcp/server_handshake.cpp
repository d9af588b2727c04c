#include "cluster/tcp/server_handshake.hpp"

#include "cluster/tcp/tcp_log.hpp"
#include "cluster/tcp/tls_context.hpp"

#include <string>

namespace troupe::cluster::tcp {

namespace asio = boost::asio;

server_handshake::server_handshake(std::shared_ptr<transport_state> state,
                                   std::shared_ptr<transport::accept_handler> on_accept,
                                   asio::ip::tcp::socket socket, std::string local)
    : state_(std::move(state)),
      on_accept_(std::move(on_accept)),
      socket_(std::move(socket), *state_->tls()),
      deadline_(state_->executor()),
      local_(std::move(local)) {
  boost::system::error_code ec;
  auto remote = socket_.next_layer().remote_endpoint(ec);
  remote_ = ec ? std::string("an unknown peer") : to_string(remote);
}

void server_handshake::start() {
  state_->track(shared_from_this());
  if (finished_) return;  // aborted by a shutdown meanwhile
  deadline_.expires_after(state_->options().connect_timeout);
  deadline_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->finished_) return;
    self->timed_out_ = true;
    self->close_socket();  // the handshake then completes with operation_aborted
  });
  socket_.async_handshake(
      asio::ssl::stream_base::server,
      [self = shared_from_this()](const boost::system::error_code& ec) { self->on_handshake(ec); });
}

void server_handshake::abort() {
  if (finished_) return;
  finished_ = true;
  deadline_.cancel();
  close_socket();
}

void server_handshake::on_handshake(const boost::system::error_code& ec) {
  if (finished_) return;
  finished_ = true;
  deadline_.cancel();
  if (ec || timed_out_) {
    const std::string reason =
        timed_out_ ? "no TLS handshake within " +
                         std::to_string(state_->options().connect_timeout.count()) + " ms"
                   : tls_failure_reason(ec, socket_.native_handle());
    log_tls_refused(remote_, local_, reason);
    close_socket();
    return;
  }
  if (state_->shut_down()) return;
  auto s = state_->adopt(std::move(socket_));
  if (!state_->shut_down()) (*on_accept_)(std::move(s));
}

void server_handshake::close_socket() {
  boost::system::error_code ignored;
  socket_.lowest_layer().close(ignored);
}

}  // namespace troupe::cluster::tcp
