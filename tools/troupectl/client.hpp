#pragma once
/// A synchronous HTTP/1.1 client for one node's management API: one connection per request,
/// every request bounded by one deadline, and the answer's status turned into troupectl's exit
/// codes (exit_code.hpp) so commands never look at raw statuses.

#include "troupectl/exit_code.hpp"

#include <boost/json/value.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace troupectl {

/// An answer as it came: status, content type and body.
struct http_answer {
  unsigned status = 0;
  std::string content_type;
  std::string body;
};

/// `text` percent-encoded as one path segment: everything but the unreserved characters of
/// RFC 3986, so an id with '/', '%' or spaces stays one segment.
[[nodiscard]] std::string percent_encode(std::string_view text);

class client {
 public:
  /// `url` is `http://host[:port][/prefix]`; anything else throws failure(usage).
  client(std::string url, std::chrono::milliseconds timeout, std::string token = {});

  /// GET `path`; throws failure(unreachable) when the node does not answer in time.
  [[nodiscard]] http_answer get(std::string_view path) const;
  /// POST `path` with the bearer token (none when it is empty).
  [[nodiscard]] http_answer post(std::string_view path) const;

  /// GET or POST, then require a 2xx JSON answer: any other status throws the failure its
  /// code maps to, with the server's error message.
  [[nodiscard]] boost::json::value get_json(std::string_view path) const;
  [[nodiscard]] boost::json::value post_json(std::string_view path) const;

  /// The URL as given, for messages.
  [[nodiscard]] const std::string& url() const noexcept { return url_; }

 private:
  [[nodiscard]] http_answer request(bool post, std::string_view path) const;
  [[nodiscard]] boost::json::value checked(const http_answer& a, std::string_view path) const;

  std::string url_;
  std::string host_;
  std::string port_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
  std::string token_;
};

}  // namespace troupectl
