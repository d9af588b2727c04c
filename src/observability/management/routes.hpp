#pragma once
// The management API's routing: a request's method, target and Authorization header in, either
// the reply at once (404, 405, 400, 401, /health/alive) or the source call that makes it, to be
// run off the I/O thread. No I/O here, so every rule is one function a test can read.

#include <troupe/observability/management_server.hpp>
#include <troupe/observability/management_source.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace troupe::observability::management {

/// An HTTP answer before it is written.
struct reply {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  /// Extra header fields (Allow, WWW-Authenticate).
  std::vector<std::pair<std::string, std::string>> headers;
};

/// `{"error": message}` with `status`.
[[nodiscard]] reply error_reply(unsigned status, std::string_view message);

/// The request's route: `immediate` when no source call is needed, else `call`.
struct routed {
  std::optional<reply> immediate;
  std::function<reply(management_source&)> call;
};

/// What the request asks: `peer` names the client in the log line of a refused POST.
[[nodiscard]] routed route(std::string_view method, std::string_view target,
                           std::string_view authorization, const management_options& options,
                           std::string_view peer);

/// Runs a routed call, turning an exception into a 500 (a source should not throw).
[[nodiscard]] reply run_call(const std::function<reply(management_source&)>& call,
                             management_source& source) noexcept;

/// `text` with every %XX replaced by its byte; nullopt when a '%' is not followed by two hex
/// digits. '+' stays '+' (paths are not form data).
[[nodiscard]] std::optional<std::string> percent_decode(std::string_view text);

/// Whether `given` equals `expected`, in time that depends only on expected's length.
[[nodiscard]] bool same_token(std::string_view given, std::string_view expected) noexcept;

}  // namespace troupe::observability::management
