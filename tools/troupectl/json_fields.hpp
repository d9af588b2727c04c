#pragma once
/// Lenient reads of the API's JSON: a missing or null field gives a default instead of an
/// exception, so an older or newer node's answer still prints.

#include <boost/json/value.hpp>

#include <string>

namespace troupectl {

/// The field `key` of `v` (an object), or nullptr.
inline const boost::json::value* field(const boost::json::value& v, const char* key) {
  const auto* o = v.if_object();
  return o == nullptr ? nullptr : o->if_contains(key);
}

/// A field as text: a string as is, a number or bool printed, null or missing as `absent`.
inline std::string text(const boost::json::value& v, const char* key,
                        const std::string& absent = "-") {
  const auto* f = field(v, key);
  if (f == nullptr || f->is_null()) return absent;
  if (f->is_string()) return std::string(f->as_string());
  if (f->is_bool()) return f->as_bool() ? "yes" : "no";
  if (f->is_int64()) return std::to_string(f->as_int64());
  if (f->is_uint64()) return std::to_string(f->as_uint64());
  if (f->is_double()) return std::to_string(f->as_double());
  return absent;
}

/// A numeric field as a double, or `absent` when it is missing, null or not a number.
inline double number(const boost::json::value& v, const char* key, double absent = -1) {
  const auto* f = field(v, key);
  if (f == nullptr || !f->is_number()) return absent;
  return f->to_number<double>();
}

}  // namespace troupectl
