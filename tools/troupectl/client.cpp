// One request per connection: resolve, connect, write, read, all under one deadline that the
// Beast stream enforces, run to completion on a private io_context.
#include "troupectl/client.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/parse.hpp>

#include <cstddef>
#include <string>

namespace troupectl {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;

namespace {

bool unreserved(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

/// The `error` of a JSON error body, or the body itself (cut short) when it is not one.
std::string server_message(const http_answer& a) {
  boost::system::error_code ec;
  const json::value v = json::parse(a.body, ec);
  if (!ec && v.is_object()) {
    if (const auto* e = v.as_object().if_contains("error"); e != nullptr && e->is_string()) {
      return std::string(e->as_string());
    }
  }
  std::string text = a.body.substr(0, 200);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text.empty() ? "(no message)" : text;
}

}  // namespace

std::string percent_encode(std::string_view text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (unreserved(c)) {
      out.push_back(c);
    } else {
      const auto b = static_cast<unsigned char>(c);
      out.push_back('%');
      out.push_back(hex[b >> 4U]);
      out.push_back(hex[b & 0x0FU]);
    }
  }
  return out;
}

client::client(std::string url, std::chrono::milliseconds timeout, std::string token)
    : url_(std::move(url)), timeout_(timeout), token_(std::move(token)) {
  constexpr std::string_view scheme = "http://";
  std::string_view rest = url_;
  if (rest.substr(0, scheme.size()) != scheme) {
    throw failure(usage, "--url must start with http:// (got '" + url_ + "')");
  }
  rest.remove_prefix(scheme.size());
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) prefix_ = std::string(rest.substr(slash));
  while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
  // "[::1]:8558", "host:8558" or "host".
  std::string_view port = "80";
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) throw failure(usage, "--url has a bad IPv6 address");
    host_ = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') throw failure(usage, "--url has a bad port");
      port = authority.substr(close + 2);
    }
  } else {
    const auto colon = authority.rfind(':');
    host_ = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (host_.empty()) throw failure(usage, "--url names no host (got '" + url_ + "')");
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != port.npos) {
    throw failure(usage, "--url has a bad port (got '" + url_ + "')");
  }
  port_ = std::string(port);
}

http_answer client::get(std::string_view path) const { return request(false, path); }

http_answer client::post(std::string_view path) const { return request(true, path); }

json::value client::get_json(std::string_view path) const { return checked(get(path), path); }

json::value client::post_json(std::string_view path) const { return checked(post(path), path); }

http_answer client::request(bool post, std::string_view path) const {
  asio::io_context io;
  beast::tcp_stream stream(io);
  const auto unanswered = [&](const beast::error_code& ec) {
    const bool late = ec == beast::error::timeout;
    return failure(unreachable,
                   "node " + url_ + (late ? " did not answer within " : " is unreachable: ") +
                       (late ? std::to_string(timeout_.count()) + " ms" : ec.message()));
  };

  beast::error_code ec;
  asio::ip::tcp::resolver resolver(io);
  const auto endpoints = resolver.resolve(host_, port_, ec);
  if (ec) throw unanswered(ec);

  stream.expires_after(timeout_);
  stream.async_connect(endpoints, [&](beast::error_code e, const auto&) { ec = e; });
  io.run();
  if (ec) throw unanswered(ec);

  http::request<http::string_body> req{post ? http::verb::post : http::verb::get,
                                       prefix_ + std::string(path), 11};
  req.set(http::field::host, host_);
  req.set(http::field::user_agent, "troupectl");
  req.set(http::field::accept, "application/json");
  if (post && !token_.empty()) req.set(http::field::authorization, "Bearer " + token_);
  req.keep_alive(false);
  req.prepare_payload();
  http::async_write(stream, req, [&](beast::error_code e, std::size_t) { ec = e; });
  io.restart();
  io.run();
  if (ec) throw unanswered(ec);

  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::async_read(stream, buffer, res, [&](beast::error_code e, std::size_t) { ec = e; });
  io.restart();
  io.run();
  if (ec) throw unanswered(ec);
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);

  return {res.result_int(), std::string(res[http::field::content_type]), std::move(res.body())};
}

json::value client::checked(const http_answer& a, std::string_view path) const {
  const std::string where = url_ + std::string(path);
  if (a.status >= 200 && a.status < 300) {
    boost::system::error_code ec;
    json::value v = json::parse(a.body, ec);
    if (ec)
      throw failure(other_failure, where + " answered " + std::to_string(a.status) +
                                       " with a body that is not JSON");
    return v;
  }
  const std::string message = server_message(a);
  const std::string status = std::to_string(a.status);
  if (a.status == 401 || a.status == 403) {
    throw failure(refused, "token refused by " + url_ + " (" + status + "): " + message +
                               "; pass --token or set TROUPECTL_TOKEN");
  }
  if (a.status == 404) throw failure(not_found, "not found (404): " + message);
  if (a.status >= 500) throw failure(server_error, "server error " + status + ": " + message);
  throw failure(other_failure, where + " answered " + status + ": " + message);
}

}  // namespace troupectl
