#pragma once
// The management API's JSON: one function per view of management_source.hpp. Field names are
// the API's contract (docs/observability.md lists them); keep them snake_case and stable.

#include <troupe/observability/management_source.hpp>

#include <boost/json/value.hpp>

#include <string>

namespace troupe::observability::management {

[[nodiscard]] boost::json::value to_json(const members_view& v);
[[nodiscard]] boost::json::value to_json(const types_view& v);
[[nodiscard]] boost::json::value to_json(const shards_view& v);
/// With `path`: the actor path of the entity under its region, escaped as entity names are.
[[nodiscard]] boost::json::value to_json(const entity_view& v);
[[nodiscard]] boost::json::value to_json(const readiness_view& v);
[[nodiscard]] boost::json::value to_json(const leave_view& v);

/// The serialized text of `v`, with a trailing newline for curl users.
[[nodiscard]] std::string to_text(const boost::json::value& v);

}  // namespace troupe::observability::management
