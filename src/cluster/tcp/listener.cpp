#include "cluster/tcp/listener.hpp"

#include <troupe/cluster/errc.hpp>

#include "cluster/tcp/server_handshake.hpp"
#include "cluster/tcp/stream_factory.hpp"
#include "cluster/tcp/tcp_log.hpp"

#include <boost/asio/ip/address.hpp>

#include <chrono>
#include <string>

namespace troupe::cluster::tcp {

namespace asio = boost::asio;
using ip_tcp = asio::ip::tcp;

listener::listener(std::shared_ptr<transport_state> state, transport::accept_handler on_accept)
    : state_(std::move(state)),
      on_accept_(std::make_shared<transport::accept_handler>(std::move(on_accept))),
      acceptor_(state_->executor()),
      retry_timer_(state_->executor()) {}

node_address listener::bind(const node_address& at) {
  auto fail = [&](const std::string& why) {
    throw cluster_error(errc::transport_failure,
                        "tcp: cannot listen on " + to_string(at) + ": " + why);
  };
  boost::system::error_code ec;
  ip_tcp::endpoint endpoint;
  auto address = asio::ip::make_address(at.host, ec);
  if (!ec) {
    endpoint = ip_tcp::endpoint(address, at.port);
  } else {
    // A name (or "" for every interface): resolve it here, on the caller's thread.
    ip_tcp::resolver resolver(state_->executor());
    auto results =
        resolver.resolve(at.host, std::to_string(at.port),
                         ip_tcp::resolver::passive | ip_tcp::resolver::numeric_service, ec);
    if (ec) fail(ec.message());
    if (results.empty()) fail("the host resolves to no address");
    endpoint = results.begin()->endpoint();
  }
  if (acceptor_.open(endpoint.protocol(), ec)) fail(ec.message());
  if (acceptor_.set_option(ip_tcp::acceptor::reuse_address(true), ec)) fail(ec.message());
  if (acceptor_.bind(endpoint, ec)) fail(ec.message());
  if (acceptor_.listen(ip_tcp::acceptor::max_listen_connections, ec)) fail(ec.message());
  auto bound = acceptor_.local_endpoint(ec);
  if (ec) fail(ec.message());
  local_ = to_string(bound);
  return node_address{at.host.empty() ? bound.address().to_string() : at.host, bound.port()};
}

void listener::start() {
  state_->track(shared_from_this());
  if (!aborted_) accept_next();
}

void listener::abort() {
  aborted_ = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  retry_timer_.cancel();
}

void listener::accept_next() {
  acceptor_.async_accept(
      [self = shared_from_this()](const boost::system::error_code& ec, ip_tcp::socket socket) {
        self->on_accepted(ec, std::move(socket));
      });
}

void listener::on_accepted(const boost::system::error_code& ec, ip_tcp::socket socket) {
  if (aborted_ || state_->shut_down()) return;
  if (ec == asio::error::connection_aborted) {
    accept_next();  // the client gave up before we accepted: nothing to report
    return;
  }
  if (ec) {
    log_accept_failed(local_, ec.message());
    retry_soon();
    return;
  }
  state_->configure(socket);
  if (state_->tls()) {
    std::make_shared<server_handshake>(state_, on_accept_, std::move(socket), local_)->start();
  } else {
    auto s = state_->adopt(std::move(socket));
    if (!state_->shut_down()) (*on_accept_)(std::move(s));
  }
  if (!aborted_) accept_next();  // on_accept may have shut the transport down
}

// Out of descriptors or memory: accepting again at once would spin, so wait a little.
void listener::retry_soon() {
  retry_timer_.expires_after(std::chrono::milliseconds(100));
  retry_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec && !self->aborted_) self->accept_next();
  });
}

}  // namespace troupe::cluster::tcp
