#pragma once
// Conversions between the stores' values and PostgreSQL's: unsigned numbers to bigint, arrays
// as text literals, bytea, and the checks that turn a damaged row into errc::corrupt_record.

#include <troupe/persistence/errc.hpp>
#include <troupe/persistence/records.hpp>

#include <pqxx/binarystring>
#include <pqxx/field>
#include <pqxx/row>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace troupe::persistence::pg {

inline constexpr std::uint64_t max_bigint = std::numeric_limits<std::int64_t>::max();

/// A number for a bigint column; larger ones are refused (PostgreSQL has no unsigned types).
inline long long bigint(std::uint64_t v) {
  if (v > max_bigint) {
    throw persistence_error(errc::invalid_request,
                            "number " + std::to_string(v) + " is too large for PostgreSQL");
  }
  return static_cast<long long>(v);
}

/// A bound of a range, where "larger than any stored number" is the same as the largest.
inline long long clamp(std::uint64_t v) {
  return static_cast<long long>(v > max_bigint ? max_bigint : v);
}

/// A text[] literal: {"a","b\"c"}.
std::string text_array(const std::vector<std::string>& items);
/// A bigint[] literal: {1,2,3}.
std::string bigint_array(const std::vector<long long>& items);
/// bytea in hex input form: \x0a1b...
std::string bytea_hex(const bytes& b);
/// A bytea parameter.
inline pqxx::binarystring bytea(const bytes& b) { return {b.data(), b.size()}; }

/// A column that must be a number in [min, max].
std::uint64_t number(const pqxx::field& f, const char* what, std::uint64_t min = 0,
                     std::uint64_t max = max_bigint);
/// Columns type_name, version, payload starting at `first`.
serialized read_serialized(const pqxx::row& r, int first);

}  // namespace troupe::persistence::pg
