// One management connection: read a request (header and body bounded, within the read
// timeout), route it, call the source on the pool when the route needs it, write the reply, and
// go on while the client keeps the connection alive. A request that does not parse gets a 4xx
// and the connection closes; nothing a client sends ends the server.
#include <troupe/core/actor.hpp>

#include "observability/management/routes.hpp"
#include "observability/management/server_state.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <array>
#include <chrono>
#include <functional>
#include <string>
#include <tuple>
#include <utility>

namespace troupe::observability::management {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

/// A POST needs no body: one this long at most is read and ignored.
constexpr std::size_t max_body_bytes = 4096;
/// What a refused request may still send after its answer before the connection closes.
constexpr std::size_t max_drained_bytes = std::size_t{64} * 1024;
constexpr auto drain_time = std::chrono::seconds(1);

using source_call = std::function<reply(management_source&)>;

/// Runs `call` on the state's pool and resumes on the connection's executor with its reply.
asio::awaitable<reply> call_on_pool(server_state* state, source_call call) {
  auto executor = co_await asio::this_coro::executor;
  co_return co_await asio::async_initiate<decltype(asio::use_awaitable), void(reply)>(
      [state, executor](auto handler, source_call c) {
        asio::post(state->pool, [state, executor, handler = std::move(handler),
                                 c = std::move(c)]() mutable {
          reply r = run_call(c, *state->source);
          asio::post(executor, [handler = std::move(handler), r = std::move(r)]() mutable {
            std::move(handler)(std::move(r));
          });
        });
      },
      asio::use_awaitable, std::move(call));
}

/// The status for a request that failed to parse.
unsigned status_of_parse_error(const beast::error_code& ec) {
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow) return 431;
  if (ec == http::error::body_limit) return 413;
  return 400;
}

/// The read ended with the connection: the client left, went silent, or the server stops.
bool connection_ended(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == beast::error::timeout ||
         ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::operation_aborted || ec == asio::error::broken_pipe;
}

http::response<http::string_body> to_response(reply r, unsigned version, bool keep_alive) {
  http::response<http::string_body> res{static_cast<http::status>(r.status), version};
  res.set(http::field::server, "troupe-management");
  res.set(http::field::content_type, r.content_type);
  res.set(http::field::cache_control, "no-store");
  for (auto& [name, value] : r.headers) res.set(name, value);
  res.body() = std::move(r.body);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

std::string peer_of(const asio::ip::tcp::socket& socket) {
  beast::error_code ec;
  const auto endpoint = socket.remote_endpoint(ec);
  if (ec) return "an unknown peer";
  return endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
}

/// Ends a connection whose request was refused unread: closing a socket with bytes still
/// unread makes the kernel reset it, and the client might lose the answer before reading it.
/// So half-close, and discard what the client still sends (bounded in bytes and time).
/// `stream` is the caller's, which awaits this to the end.
asio::awaitable<void> drain_and_close(beast::tcp_stream* stream) {
  beast::error_code ec;
  stream->socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  stream->expires_after(drain_time);
  std::array<char, 4096> scratch{};
  for (std::size_t drained = 0; !ec && drained < max_drained_bytes;) {
    std::size_t n = 0;
    std::tie(ec, n) = co_await stream->async_read_some(asio::buffer(scratch),
                                                       asio::as_tuple(asio::use_awaitable));
    drained += n;
  }
  stream->close();
}

}  // namespace

asio::awaitable<void> serve_connection(asio::ip::tcp::socket socket, server_state* state,
                                       connection_slot slot) {
  (void)slot;
  const std::string peer = peer_of(socket);
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer(state->options.max_header_bytes + max_body_bytes);
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(state->options.max_header_bytes));
    parser.body_limit(max_body_bytes);
    stream.expires_after(state->options.read_timeout);
    auto [read_error, read_bytes] =
        co_await http::async_read(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
    (void)read_bytes;
    if (read_error && connection_ended(read_error)) break;
    if (read_error) {
      // The stream is out of step with the request boundaries now: answer and close.
      auto res = to_response(
          error_reply(status_of_parse_error(read_error), "bad request: " + read_error.message()),
          11, false);
      stream.expires_after(state->options.read_timeout);
      co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
      co_await drain_and_close(&stream);
      co_return;
    }
    const auto& request = parser.get();
    routed route_to = route(request.method_string(), request.target(),
                            request[http::field::authorization], state->options, peer);
    reply r;
    if (route_to.immediate) {
      r = std::move(*route_to.immediate);
    } else {
      r = co_await call_on_pool(state, std::move(route_to.call));
    }
    const bool keep_alive = request.keep_alive();
    auto res = to_response(std::move(r), request.version(), keep_alive);
    stream.expires_after(state->options.read_timeout);
    auto [write_error, written] =
        co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
    (void)written;
    if (write_error || !keep_alive) break;
  }
  beast::error_code ignored;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

}  // namespace troupe::observability::management
