// The management API's routes: path segments are percent-decoded one by one (so an id may carry
// an encoded '/'), then matched; a known path with another method is 405, a POST is checked for
// its bearer token before its parameters, and parameters are validated before the source sees
// them.
#include "observability/management/routes.hpp"

#include <troupe/core/actor.hpp>
#include <troupe/observability/prometheus_text.hpp>

#include "observability/management/dashboard_assets.hpp"
#include "observability/management/json_views.hpp"

#include <boost/json/object.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

namespace troupe::observability::management {

namespace json = boost::json;

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// Whether `s` is well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t extra = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0xC2 && c <= 0xDF) {
      extra = 1;
      cp = c & 0x1FU;
    } else if (c >= 0xE0 && c <= 0xEF) {
      extra = 2;
      cp = c & 0x0FU;
    } else if (c >= 0xF0 && c <= 0xF4) {
      extra = 3;
      cp = c & 0x07U;
    } else {
      return false;
    }
    if (i + extra >= s.size()) return false;
    for (std::size_t k = 1; k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0U) != 0x80U) return false;
      cp = (cp << 6U) | (cc & 0x3FU);
    }
    if ((extra == 2 && cp < 0x800) || (extra == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += extra + 1;
  }
  return true;
}

bool has_control_byte(std::string_view s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F) return true;
  }
  return false;
}

/// Why `value` cannot be a path parameter named `what`; empty when it can.
std::string invalid_parameter(std::string_view what, std::string_view value, std::size_t max) {
  if (value.empty()) return std::string(what) + " is empty";
  if (value.size() > max) {
    return std::string(what) + " is longer than " + std::to_string(max) + " bytes";
  }
  if (!valid_utf8(value)) return std::string(what) + " is not valid UTF-8";
  if (has_control_byte(value)) return std::string(what) + " contains a control character";
  return {};
}

/// A type name as the cluster keys take it: no '/', '#' (nor newline, a control byte).
std::string invalid_type(std::string_view type, std::size_t max) {
  std::string why = invalid_parameter("the type name", type, max);
  if (why.empty() && type.find_first_of("/#") != std::string_view::npos) {
    why = "the type name contains '/' or '#'";
  }
  return why;
}

unsigned status_of(management_errc code) {
  switch (code) {
    case management_errc::not_found:
      return 404;
    case management_errc::unavailable:
      return 503;
    case management_errc::not_implemented:
      return 501;
    case management_errc::conflict:
      return 409;
    case management_errc::internal:
      break;
  }
  return 500;
}

reply json_reply(unsigned status, const json::value& v) {
  return {status, "application/json", to_text(v), {}};
}

template <class T>
reply answer(const management_result<T>& r, unsigned ok_status = 200) {
  if (!r) return error_reply(status_of(r.error().code), r.error().message);
  return json_reply(ok_status, to_json(*r));
}

reply method_not_allowed(std::string_view allowed) {
  reply r = error_reply(405, "method not allowed; use " + std::string(allowed));
  r.headers.emplace_back("Allow", std::string(allowed));
  return r;
}

/// The token of an `Authorization: Bearer <token>` header (scheme case-insensitive); empty when
/// the header is missing or of another scheme.
std::string_view bearer_of(std::string_view authorization) {
  constexpr std::string_view scheme = "bearer";
  if (authorization.size() <= scheme.size()) return {};
  for (std::size_t i = 0; i < scheme.size(); ++i) {
    const char c = authorization[i];
    if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c) != scheme[i]) return {};
  }
  std::string_view rest = authorization.substr(scheme.size());
  if (rest.front() != ' ' && rest.front() != '\t') return {};
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t')) rest.remove_suffix(1);
  return rest;
}

/// Refuses a POST without the configured token (401), logging who asked and for what, never
/// the token; nullopt when the token matches.
std::optional<reply> refuse_unauthorized(std::string_view authorization,
                                         const management_options& options, std::string_view path,
                                         std::string_view peer) {
  const std::string_view given = bearer_of(authorization);
  std::string why;
  if (options.bearer_token.empty()) {
    why = "no bearer token is configured: management POST endpoints are disabled";
  } else if (given.empty()) {
    why = "missing bearer token";
  } else if (!same_token(given, options.bearer_token)) {
    why = "wrong bearer token";
  } else {
    return std::nullopt;
  }
  troupe::logger()->warn("management: refused POST {} from {}: {}", path, peer, why);
  reply r = error_reply(401, why);
  r.headers.emplace_back("WWW-Authenticate", "Bearer");
  return r;
}

routed immediate(reply r) { return routed{std::move(r), {}}; }

/// The content type of a dashboard file, from its extension.
std::string_view content_type_of(std::string_view name) {
  const auto ends_with = [&](std::string_view ext) { return name.ends_with(ext); };
  if (ends_with(".html")) return "text/html; charset=utf-8";
  if (ends_with(".js")) return "text/javascript; charset=utf-8";
  if (ends_with(".css")) return "text/css; charset=utf-8";
  return "application/octet-stream";
}

/// The embedded dashboard file `name`, or 404.
reply dashboard_file(std::string_view name) {
  for (const auto& f : dashboard_files()) {
    if (f.name == name)
      return {200, std::string(content_type_of(name)), std::string(f.content), {}};
  }
  return error_reply(404, "no such dashboard file");
}

}  // namespace

reply error_reply(unsigned status, std::string_view message) {
  return json_reply(status, json::object{{"error", message}});
}

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int hi = hex_value(text[i + 1]);
    const int lo = hex_value(text[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>((hi << 4) | lo));
    i += 2;
  }
  return out;
}

bool same_token(std::string_view given, std::string_view expected) noexcept {
  // Every byte of `expected` is compared whatever the earlier ones gave, so the time says
  // nothing of how long a prefix matched.
  volatile unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0U;
    diff = static_cast<unsigned char>(diff | (g ^ static_cast<unsigned char>(expected[i])));
  }
  return diff == 0;
}

reply run_call(const std::function<reply(management_source&)>& call,
               management_source& source) noexcept {
  try {
    return call(source);
  } catch (const std::exception& e) {
    troupe::logger()->error("management: the source failed: {}", e.what());
  } catch (...) {
    troupe::logger()->error("management: the source failed with an unknown exception");
  }
  try {
    return error_reply(500, "the node failed to answer (see its log)");
  } catch (...) {
    return reply{500, "application/json", {}, {}};
  }
}

routed route(std::string_view method, std::string_view target, std::string_view authorization,
             const management_options& options, std::string_view peer) {
  if (target.empty() || target.front() != '/') {
    return immediate(error_reply(400, "the request target must be an absolute path"));
  }
  std::string_view path = target.substr(0, target.find('?'));
  std::vector<std::string> segments;
  for (std::string_view rest = path.substr(1);;) {
    const auto slash = rest.find('/');
    auto decoded = percent_decode(rest.substr(0, slash));
    if (!decoded) return immediate(error_reply(400, "bad percent-encoding in the path"));
    segments.push_back(std::move(*decoded));
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  const bool get = method == "GET";
  const bool post = method == "POST";
  const std::size_t n = segments.size();
  const auto is = [&](std::size_t i, std::string_view s) { return i < n && segments[i] == s; };

  if (n == 2 && is(0, "health") && is(1, "alive")) {
    if (!get) return immediate(method_not_allowed("GET"));
    return immediate(json_reply(200, json::object{{"status", "alive"}}));
  }
  if (n == 2 && is(0, "health") && is(1, "ready")) {
    if (!get) return immediate(method_not_allowed("GET"));
    return {std::nullopt, [](management_source& s) {
              const readiness_view r = s.readiness();
              return json_reply(r.ready ? 200 : 503, to_json(r));
            }};
  }
  if (n == 1 && is(0, "metrics")) {
    if (!get) return immediate(method_not_allowed("GET"));
    return {std::nullopt, [](management_source& s) {
              auto text = s.metrics_text();
              if (!text) return error_reply(404, "this node has no metrics registry");
              return reply{200, std::string(prometheus_text_content_type), std::move(*text), {}};
            }};
  }
  if (is(0, "dashboard") && n <= 2) {
    if (!get) return immediate(method_not_allowed("GET"));
    // "/dashboard" and "/dashboard/" are the page; the page names its files absolutely, so
    // both resolve them alike.
    const bool page = n == 1 || segments[1].empty();
    return immediate(dashboard_file(page ? "index.html" : segments[1]));
  }
  if (!is(0, "cluster")) return immediate(error_reply(404, "no such endpoint"));

  if (n == 2 && is(1, "members")) {
    if (!get) return immediate(method_not_allowed("GET"));
    return {std::nullopt, [](management_source& s) { return answer(s.members()); }};
  }
  if (n == 2 && is(1, "types")) {
    if (!get) return immediate(method_not_allowed("GET"));
    return {std::nullopt, [](management_source& s) { return answer(s.types()); }};
  }
  if (n == 3 && is(1, "shards")) {
    if (!get) return immediate(method_not_allowed("GET"));
    if (auto why = invalid_type(segments[2], options.max_id_length); !why.empty()) {
      return immediate(error_reply(400, why));
    }
    return {std::nullopt,
            [type = segments[2]](management_source& s) { return answer(s.shards(type)); }};
  }
  if (n == 4 && is(1, "entities")) {
    if (!get) return immediate(method_not_allowed("GET"));
    if (auto why = invalid_type(segments[2], options.max_id_length); !why.empty()) {
      return immediate(error_reply(400, why));
    }
    if (auto why = invalid_parameter("the entity id", segments[3], options.max_id_length);
        !why.empty()) {
      return immediate(error_reply(400, why));
    }
    return {std::nullopt, [type = segments[2], id = segments[3]](management_source& s) {
              return answer(s.entity(type, id));
            }};
  }
  if (n == 2 && is(1, "leave")) {
    if (!post) return immediate(method_not_allowed("POST"));
    if (auto refused = refuse_unauthorized(authorization, options, path, peer)) {
      return immediate(std::move(*refused));
    }
    return {std::nullopt, [](management_source& s) {
              auto r = s.leave();
              if (r) troupe::logger()->warn("management: leave of node '{}' requested", r->node);
              return answer(r, 202);
            }};
  }
  if (n == 3 && is(1, "rebalance")) {
    if (!post) return immediate(method_not_allowed("POST"));
    if (auto refused = refuse_unauthorized(authorization, options, path, peer)) {
      return immediate(std::move(*refused));
    }
    if (auto why = invalid_type(segments[2], options.max_id_length); !why.empty()) {
      return immediate(error_reply(400, why));
    }
    return {std::nullopt, [type = segments[2]](management_source& s) {
              auto r = s.rebalance(type);
              if (!r) return error_reply(status_of(r.error().code), r.error().message);
              troupe::logger()->info("management: rebalance of type '{}' requested", type);
              return json_reply(202, json::object{{"status", "rebalancing"}, {"type", type}});
            }};
  }
  return immediate(error_reply(404, "no such endpoint"));
}

}  // namespace troupe::observability::management
