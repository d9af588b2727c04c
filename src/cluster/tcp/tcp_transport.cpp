#include "troupe/cluster/tcp_transport.hpp"

#include <troupe/cluster/errc.hpp>

#include "cluster/tcp/connect_attempt.hpp"
#include "cluster/tcp/executor_thread.hpp"
#include "cluster/tcp/listener.hpp"
#include "cluster/tcp/transport_state.hpp"

#include <boost/asio/post.hpp>

namespace troupe::cluster {

tcp_transport::tcp_transport(boost::asio::any_io_executor executor, tcp_options options)
    : state_(std::make_shared<tcp::transport_state>(std::move(executor), std::move(options))) {}

tcp_transport::~tcp_transport() { shutdown(); }

node_address tcp_transport::listen(const node_address& at, accept_handler on_accept) {
  if (state_->shut_down()) {
    throw cluster_error(errc::transport_failure,
                        "tcp: cannot listen on " + to_string(at) + ": the transport is shut down");
  }
  auto l = std::make_shared<tcp::listener>(state_, std::move(on_accept));
  auto bound = l->bind(at);
  tcp::run_on(state_->executor(), [l] { l->start(); });
  return bound;
}

void tcp_transport::connect(const node_address& peer, connect_handler done) {
  auto attempt = std::make_shared<tcp::connect_attempt>(state_, peer, std::move(done));
  // Always through the queue: even a failure at once must not run `done` inside this call.
  boost::asio::post(state_->executor(), [attempt] { attempt->start(); });
}

void tcp_transport::shutdown() {
  if (!state_->mark_shut_down()) return;
  tcp::run_on(state_->executor(), [state = state_] { state->abort_all(); });
}

boost::asio::any_io_executor tcp_transport::executor() const { return state_->executor(); }

}  // namespace troupe::cluster
