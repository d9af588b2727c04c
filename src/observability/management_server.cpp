// The management server's life: bind, accept on one I/O thread (refusing connections beyond
// the cap with a 503), and stop: close the listener and every connection, then wait for the
// source calls under way. The connections themselves are in management/http_session.cpp.
#include <troupe/core/actor.hpp>
#include <troupe/observability/management_server.hpp>

#include "observability/management/routes.hpp"
#include "observability/management/server_state.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

namespace troupe::observability {

namespace asio = boost::asio;
using asio::ip::tcp;

struct management_server::impl : management::server_state {
  using server_state::server_state;
};

namespace {

/// Logs what ended a coroutine with an exception (none is expected: every I/O reports codes).
void log_failure(const char* what, const std::exception_ptr& failure) {
  if (!failure) return;
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    troupe::logger()->error("management: {} failed: {}", what, e.what());
  } catch (...) {
    troupe::logger()->error("management: {} failed", what);
  }
}

/// Answers a connection beyond the cap with 503 and closes it. The socket is new and its send
/// buffer empty, so a non-blocking write of this short reply goes out whole or not at all.
void refuse_connection(tcp::socket socket) {
  static constexpr char reply[] =
      "HTTP/1.1 503 Service Unavailable\r\n"
      "Content-Type: application/json\r\n"
      "Connection: close\r\n"
      "Content-Length: 33\r\n"
      "\r\n"
      "{\"error\":\"too many connections\"}\n";
  boost::system::error_code ec;
  socket.non_blocking(true, ec);
  asio::write(socket, asio::buffer(reply, sizeof reply - 1), ec);
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

asio::awaitable<void> accept_loop(management::server_state* state) {
  asio::steady_timer pause(state->io);
  for (;;) {
    auto [ec, socket] = co_await state->acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
    if (ec == asio::error::operation_aborted || !state->acceptor.is_open()) co_return;
    if (ec) {
      // Out of descriptors, say: wait a moment rather than spin on the same error.
      troupe::logger()->warn("management: accept failed: {}", ec.message());
      pause.expires_after(std::chrono::milliseconds(100));
      co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
      continue;
    }
    if (state->connections >= state->options.max_connections) {
      refuse_connection(std::move(socket));
      continue;
    }
    asio::co_spawn(state->io,
                   management::serve_connection(std::move(socket), state,
                                                management::connection_slot(state->connections)),
                   [](const std::exception_ptr& e) { log_failure("a connection", e); });
  }
}

}  // namespace

std::unique_ptr<management_server> management_server::start(
    std::shared_ptr<management_source> source, management_options options) {
  if (!source) throw std::invalid_argument("management_server: a source is required");
  if (options.source_threads == 0) options.source_threads = 1;
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(options.address, ec);
  if (ec) {
    throw std::invalid_argument("management_server: '" + options.address +
                                "' is not an IP address");
  }
  const tcp::endpoint endpoint(address, options.port);
  auto state = std::make_unique<impl>(std::move(source), std::move(options));
  state->acceptor.open(endpoint.protocol());
  state->acceptor.set_option(tcp::acceptor::reuse_address(true));
  state->acceptor.bind(endpoint);
  state->acceptor.listen(asio::socket_base::max_listen_connections);
  state->address = state->acceptor.local_endpoint().address().to_string();
  state->port = state->acceptor.local_endpoint().port();
  asio::co_spawn(state->io, accept_loop(state.get()),
                 [](const std::exception_ptr& e) { log_failure("the listener", e); });
  state->thread = std::thread([s = state.get()] {
    try {
      s->io.run();
    } catch (const std::exception& e) {
      troupe::logger()->error("management: the I/O thread stopped: {}", e.what());
    }
  });
  troupe::logger()->info("management: serving http://{}:{}/", state->address, state->port);
  return std::unique_ptr<management_server>(new management_server(std::move(state)));
}

management_server::management_server(std::unique_ptr<impl> impl) : impl_(std::move(impl)) {}

management_server::~management_server() {
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  // Source calls under way finish (each is bounded); their replies go nowhere.
  impl_->pool.stop();
  impl_->pool.join();
  boost::system::error_code ignored;
  impl_->acceptor.close(ignored);
}

std::uint16_t management_server::port() const noexcept { return impl_->port; }

const std::string& management_server::address() const noexcept { return impl_->address; }

}  // namespace troupe::observability
