#pragma once
/// Lenient reads of the API's JSON: a missing or null field gives a default instead of an
/// exception, so an older or newer node's answer still prints.

#include "troupectl/render.hpp"

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

/// A shard's hot keys as "key (rate), ..." when it carries `hot_keys` (strings, or objects with
/// a `key` or `id` and a figure); "-" otherwise.
inline std::string hot_keys_text(const boost::json::value& shard) {
  const auto* keys = field(shard, "hot_keys");
  if (keys == nullptr || !keys->is_array()) return "-";
  std::string out;
  for (const auto& k : keys->as_array()) {
    if (!out.empty()) out += ", ";
    if (k.is_string()) {
      out += std::string(k.as_string());
      continue;
    }
    out += text(k, "key", text(k, "id", "?"));
    for (const char* figure : {"messages_per_second", "rate", "messages", "count"}) {
      if (const double n = number(k, figure); n >= 0) {
        out += " (" + format_rate(n) + ")";
        break;
      }
    }
  }
  return out.empty() ? "-" : out;
}

}  // namespace troupectl
