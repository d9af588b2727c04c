#pragma once
// INTERNAL. The text pieces of the cluster's keys and values in the consensus store: leases in
// hex, `<node>#<leaseHex>` incarnation names, and values of one `field=value` line each.

#include <troupe/sharding/coordination/cluster_view.hpp>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace troupe::cluster::key_text {

/// A lease id as lower-case hex (how keys name an incarnation).
inline std::string hex(std::int64_t n) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(n));
  return buf;
}

/// The lease id written by hex(); nullopt for anything else (empty, not hex, zero).
inline std::optional<std::int64_t> parse_hex(std::string_view s) {
  unsigned long long n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n, 16);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size() || n == 0) return std::nullopt;
  return static_cast<std::int64_t>(n);
}

/// Parses `<node>#<leaseHex>`, the tail of member and region keys.
inline std::optional<sharding::coordination::member_id> parse_incarnation(std::string_view name) {
  const auto hash = name.rfind('#');
  if (hash == std::string_view::npos || hash == 0) return std::nullopt;
  auto lease = parse_hex(name.substr(hash + 1));
  if (!lease) return std::nullopt;
  return sharding::coordination::member_id{std::string(name.substr(0, hash)), *lease};
}

/// A decimal number with nothing around it (a shard id, a revision); nullopt for anything else.
template <class Int>
std::optional<Int> parse_decimal(std::string_view s) {
  Int n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return n;
}

/// The shard a `<prefix><decimal shard>` key names; nullopt for any other key.
inline std::optional<sharding::shard_id> shard_after(std::string_view prefix,
                                                     std::string_view key) {
  if (!key.starts_with(prefix)) return std::nullopt;
  return parse_decimal<sharding::shard_id>(key.substr(prefix.size()));
}

/// Splits off the next line of `rest`.
inline std::string_view next_line(std::string_view& rest) {
  const auto nl = rest.find('\n');
  std::string_view line = rest.substr(0, nl);
  rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
  return line;
}

}  // namespace troupe::cluster::key_text
