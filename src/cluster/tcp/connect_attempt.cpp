#include "cluster/tcp/connect_attempt.hpp"

#include <troupe/cluster/errc.hpp>

#include "cluster/tcp/tcp_log.hpp"
#include "cluster/tcp/tls_context.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>

#include <array>
#include <string>

namespace troupe::cluster::tcp {

namespace asio = boost::asio;
using ip_tcp = asio::ip::tcp;

connect_attempt::connect_attempt(std::shared_ptr<transport_state> state, node_address peer,
                                 transport::connect_handler done)
    : state_(std::move(state)),
      peer_(std::move(peer)),
      done_(std::move(done)),
      resolver_(state_->executor()),
      socket_(state_->executor()),
      deadline_(state_->executor()) {}

void connect_attempt::start() {
  state_->track(shared_from_this());
  if (finished_) return;  // the transport is shut down
  deadline_.expires_after(state_->options().connect_timeout);
  deadline_.async_wait([self = shared_from_this()](const error_code& ec) {
    if (!ec) self->on_deadline();
  });
  error_code ec;
  auto address = asio::ip::make_address(peer_.host, ec);
  if (!ec) {
    // A numeric host needs no resolver (whose lookups run on a helper thread).
    const std::array<ip_tcp::endpoint, 1> endpoints{ip_tcp::endpoint(address, peer_.port)};
    asio::async_connect(socket_, endpoints,
                        [self = shared_from_this()](const error_code& e, const ip_tcp::endpoint&) {
                          self->on_connected(e);
                        });
    return;
  }
  resolver_.async_resolve(
      peer_.host, std::to_string(peer_.port), ip_tcp::resolver::numeric_service,
      [self = shared_from_this()](const error_code& e, const ip_tcp::resolver::results_type& r) {
        self->on_resolved(e, r);
      });
}

void connect_attempt::on_resolved(const error_code& ec, const ip_tcp::resolver::results_type& r) {
  if (finished_) return;
  if (ec || timed_out_) {
    fail(errc::node_unreachable, timed_out_ ? "" : "cannot resolve the host: " + ec.message());
    return;
  }
  // Tries each address in turn (e.g. ::1, then 127.0.0.1 for "localhost").
  asio::async_connect(socket_, r,
                      [self = shared_from_this()](const error_code& e, const ip_tcp::endpoint&) {
                        self->on_connected(e);
                      });
}

void connect_attempt::on_connected(const error_code& ec) {
  if (finished_) return;
  if (ec || timed_out_) {
    fail(errc::node_unreachable, timed_out_ ? "" : ec.message());
    return;
  }
  state_->configure(socket_);
  if (!state_->tls()) {
    succeed(state_->adopt(std::move(socket_)));
    return;
  }
  tls_.emplace(std::move(socket_), *state_->tls());
  tls_->async_handshake(
      asio::ssl::stream_base::client,
      [self = shared_from_this()](const error_code& e) { self->on_handshake(e); });
}

void connect_attempt::on_handshake(const error_code& ec) {
  if (finished_) return;
  if (ec || timed_out_) {
    if (timed_out_) {
      fail(errc::node_unreachable, "");
    } else {
      fail(errc::handshake_refused, tls_failure_reason(ec, tls_->native_handle()));
    }
    return;
  }
  succeed(state_->adopt(std::move(*tls_)));
}

void connect_attempt::on_deadline() {
  if (finished_) return;
  timed_out_ = true;
  // The step in flight then completes with operation_aborted and reports the timeout.
  resolver_.cancel();
  close_socket();
}

void connect_attempt::abort() {
  if (finished_) return;
  finished_ = true;
  done_ = nullptr;  // after shutdown no connect handler runs
  deadline_.cancel();
  resolver_.cancel();
  close_socket();
}

void connect_attempt::fail(errc code, const std::string& reason) {
  finished_ = true;
  deadline_.cancel();
  close_socket();
  const std::string why =
      timed_out_
          ? "timed out after " + std::to_string(state_->options().connect_timeout.count()) + " ms"
          : reason;
  log_connect_failed(peer_, why, code == errc::handshake_refused);
  auto done = std::move(done_);
  done_ = nullptr;
  if (done && !state_->shut_down()) done(make_error_code(code), nullptr);
}

void connect_attempt::succeed(std::shared_ptr<stream> s) {
  finished_ = true;
  deadline_.cancel();
  auto done = std::move(done_);
  done_ = nullptr;
  if (done && !state_->shut_down()) done(std::error_code(), std::move(s));
}

void connect_attempt::close_socket() {
  error_code ignored;
  if (tls_) {
    tls_->lowest_layer().close(ignored);
  } else {
    socket_.close(ignored);
  }
}

}  // namespace troupe::cluster::tcp
