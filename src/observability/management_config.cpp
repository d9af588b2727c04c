#include <troupe/observability/management_config.hpp>

#include <cstdint>
#include <string>

namespace troupe::observability {
namespace {

constexpr const char* section = "troupe.management";

std::string key_of(const char* name) { return std::string(section) + "." + name; }

[[noreturn]] void fail(const config& file, const char* name, const std::string& what) {
  const std::string key = key_of(name);
  const std::string where = file.origin_of(key);
  throw config_error((where.empty() ? std::string() : where + ": ") + key + ": " + what);
}

/// A positive integer key no larger than `max`, or nullopt when unset.
std::optional<std::int64_t> positive(const config& file, const char* name, std::int64_t max) {
  auto v = file.get_int(key_of(name));
  if (v && (*v < 1 || *v > max)) {
    fail(file, name, "must be between 1 and " + std::to_string(max));
  }
  return v;
}

}  // namespace

management_config read_management_config(const config& file) {
  file.check_known_keys(
      section, {"enabled", "address", "port", "bearer-token", "max-id-length", "max-header-bytes",
                "max-connections", "read-timeout", "source-threads"});
  management_config c;
  auto& o = c.options;
  c.enabled = file.get_bool(key_of("enabled")).value_or(false);
  if (auto a = file.get_string(key_of("address"))) {
    if (a->empty()) fail(file, "address", "must not be empty");
    o.address = *a;
  }
  if (auto p = file.get_int(key_of("port"))) {
    if (*p < 0 || *p > 65535) fail(file, "port", "must be between 0 and 65535");
    o.port = static_cast<std::uint16_t>(*p);
  }
  if (auto t = file.get_string(key_of("bearer-token"))) o.bearer_token = *t;
  if (auto n = positive(file, "max-id-length", 64 * 1024)) {
    o.max_id_length = static_cast<std::size_t>(*n);
  }
  if (auto n = positive(file, "max-header-bytes", 1024 * 1024)) {
    o.max_header_bytes = static_cast<std::size_t>(*n);
  }
  if (auto n = positive(file, "max-connections", 100'000)) {
    o.max_connections = static_cast<std::size_t>(*n);
  }
  if (auto n = positive(file, "source-threads", 256)) {
    o.source_threads = static_cast<std::size_t>(*n);
  }
  if (auto d = file.get_duration(key_of("read-timeout"))) {
    if (*d <= duration::zero()) fail(file, "read-timeout", "must be positive");
    o.read_timeout = *d;
  }
  return c;
}

}  // namespace troupe::observability
