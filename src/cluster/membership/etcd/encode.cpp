// Request bodies for etcd's JSON gateway.
#include "cluster/membership/etcd/base64.hpp"
#include "cluster/membership/etcd/codec.hpp"

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

#include <chrono>
#include <string>
#include <type_traits>

namespace troupe::cluster::etcd {
namespace {

namespace json = boost::json;

// int64 fields go as strings (protobuf's JSON mapping).
json::string number(std::int64_t n) { return json::string(std::to_string(n)); }

json::object range_fields(const key_range& range) {
  json::object o;
  o["key"] = base64_encode(range.key);
  if (!range.end.empty()) o["range_end"] = base64_encode(range.end);
  return o;
}

const char* target_name(compare::target t) {
  switch (t) {
    case compare::target::version:
      return "VERSION";
    case compare::target::create_revision:
      return "CREATE";
    case compare::target::mod_revision:
      return "MOD";
    case compare::target::value:
      return "VALUE";
    case compare::target::lease:
      return "LEASE";
  }
  return "VERSION";
}

const char* relation_name(compare::relation r) {
  switch (r) {
    case compare::relation::equal:
      return "EQUAL";
    case compare::relation::not_equal:
      return "NOT_EQUAL";
    case compare::relation::less:
      return "LESS";
    case compare::relation::greater:
      return "GREATER";
  }
  return "EQUAL";
}

// The oneof member of Compare that holds the operand.
const char* operand_name(compare::target t) {
  switch (t) {
    case compare::target::version:
      return "version";
    case compare::target::create_revision:
      return "create_revision";
    case compare::target::mod_revision:
      return "mod_revision";
    case compare::target::value:
      return "value";
    case compare::target::lease:
      return "lease";
  }
  return "version";
}

json::object encode_compare(const compare& c) {
  json::object o;
  o["key"] = base64_encode(c.key);
  o["target"] = target_name(c.what);
  o["result"] = relation_name(c.rel);
  if (c.what == compare::target::value) {
    o["value"] = base64_encode(c.value);
  } else {
    o[operand_name(c.what)] = number(c.number);
  }
  return o;
}

json::object encode_op(const txn_op& op) {
  json::object o;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, put_op>) {
          json::object put;
          put["key"] = base64_encode(v.key);
          put["value"] = base64_encode(v.value);
          if (v.lease != 0) put["lease"] = number(v.lease);
          o["request_put"] = std::move(put);
        } else if constexpr (std::is_same_v<T, delete_op>) {
          o["request_delete_range"] = range_fields(v.range);
        } else {
          o["request_range"] = range_fields(v.range);
        }
      },
      op);
  return o;
}

json::array encode_ops(const std::vector<txn_op>& ops) {
  json::array a;
  a.reserve(ops.size());
  for (const auto& op : ops) a.emplace_back(encode_op(op));
  return a;
}

}  // namespace

std::string encode_range(const key_range& range) { return json::serialize(range_fields(range)); }

std::string encode_txn(const txn_request& request) {
  json::object o;
  json::array compares;
  compares.reserve(request.compares.size());
  for (const auto& c : request.compares) compares.emplace_back(encode_compare(c));
  o["compare"] = std::move(compares);
  o["success"] = encode_ops(request.success);
  o["failure"] = encode_ops(request.failure);
  return json::serialize(o);
}

std::string encode_grant(duration ttl) {
  // Whole seconds, rounded up: never ask for less than the caller wants.
  const auto seconds = std::chrono::ceil<std::chrono::seconds>(ttl).count();
  json::object o;
  o["TTL"] = number(seconds);
  return json::serialize(o);
}

std::string encode_lease_id(lease_id lease) {
  json::object o;
  o["ID"] = number(lease);
  return json::serialize(o);
}

std::string encode_watch(const key_range& range, revision start) {
  json::object create = range_fields(range);
  create["start_revision"] = number(start);
  // Progress notices let a quiet watch learn that it is still current.
  create["progress_notify"] = true;
  json::object o;
  o["create_request"] = std::move(create);
  return json::serialize(o);
}

}  // namespace troupe::cluster::etcd
