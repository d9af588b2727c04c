// Replies of etcd's JSON gateway, into the store's types. Every field may be missing (zero or
// default values are left out); a field of the wrong shape is a malformed reply, reported as
// errc::store_unavailable since the client cannot tell what the server did.
#include <troupe/cluster/errc.hpp>

#include "cluster/membership/etcd/base64.hpp"
#include "cluster/membership/etcd/codec.hpp"

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <charconv>
#include <chrono>
#include <string_view>

namespace troupe::cluster::etcd {
namespace {

namespace json = boost::json;

struct malformed {};

// An int64 field: a string (protobuf's JSON mapping) or, leniently, a number; 0 when missing.
std::int64_t int_field(const json::object& o, std::string_view name) {
  const auto* v = o.if_contains(name);
  if (v == nullptr) return 0;
  if (const auto* s = v->if_string()) {
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), n);
    if (ec != std::errc{} || end != s->data() + s->size()) throw malformed{};
    return n;
  }
  if (const auto* i = v->if_int64()) return *i;
  if (const auto* u = v->if_uint64()) return static_cast<std::int64_t>(*u);
  throw malformed{};
}

std::string bytes_field(const json::object& o, std::string_view name) {
  const auto* v = o.if_contains(name);
  if (v == nullptr) return {};
  const auto* s = v->if_string();
  if (s == nullptr) throw malformed{};
  auto decoded = base64_decode(std::string_view(s->data(), s->size()));
  if (!decoded) throw malformed{};
  return std::move(*decoded);
}

bool bool_field(const json::object& o, std::string_view name) {
  const auto* v = o.if_contains(name);
  if (v == nullptr) return false;
  const auto* b = v->if_bool();
  if (b == nullptr) throw malformed{};
  return *b;
}

// An object field; an empty object when missing.
const json::object& object_field(const json::object& o, std::string_view name) {
  static const json::object empty;
  const auto* v = o.if_contains(name);
  if (v == nullptr) return empty;
  const auto* obj = v->if_object();
  if (obj == nullptr) throw malformed{};
  return *obj;
}

const json::array& array_field(const json::object& o, std::string_view name) {
  static const json::array empty;
  const auto* v = o.if_contains(name);
  if (v == nullptr) return empty;
  const auto* a = v->if_array();
  if (a == nullptr) throw malformed{};
  return *a;
}

const json::object& as_object(const json::value& v) {
  const auto* o = v.if_object();
  if (o == nullptr) throw malformed{};
  return *o;
}

revision header_revision(const json::object& reply) {
  return int_field(object_field(reply, "header"), "revision");
}

key_value decode_kv(const json::object& o) {
  key_value kv;
  kv.key = bytes_field(o, "key");
  kv.value = bytes_field(o, "value");
  kv.create_revision = int_field(o, "create_revision");
  kv.mod_revision = int_field(o, "mod_revision");
  kv.version = int_field(o, "version");
  kv.lease = int_field(o, "lease");
  return kv;
}

std::vector<key_value> decode_kvs(const json::object& o) {
  std::vector<key_value> kvs;
  const auto& a = array_field(o, "kvs");
  kvs.reserve(a.size());
  for (const auto& v : a) kvs.push_back(decode_kv(as_object(v)));
  return kvs;
}

// gRPC status codes etcd answers with (google.golang.org/grpc/codes).
std::error_code from_grpc_code(std::int64_t code) {
  switch (code) {
    case 3:  // InvalidArgument: too many operations, duplicate key, key not provided
      return errc::invalid_store_request;
    case 5:  // NotFound: the only one the KV and lease calls give is "requested lease not found"
      return errc::lease_not_found;
    case 11:  // OutOfRange: "required revision has been compacted"
      return errc::compacted;
    default:  // Unavailable, DeadlineExceeded, no leader, ...
      return errc::store_unavailable;
  }
}

template <class F>
std::error_code guarded(const json::object& reply, F&& decode) {
  try {
    if (auto ec = reply_error(reply)) return ec;
    decode();
    return {};
  } catch (const malformed&) {
    return errc::store_unavailable;
  }
}

// A streamed message is {"result": {...}} or {"error": {...}}.
const json::object& stream_result(const json::object& message) {
  return object_field(message, "result");
}

}  // namespace

std::error_code reply_error(const json::object& reply) {
  const auto* error = reply.if_contains("error");
  if (error == nullptr) return {};
  try {
    if (const auto* nested = error->if_object())
      return from_grpc_code(int_field(*nested, "grpc_code"));
    return from_grpc_code(int_field(reply, "code"));
  } catch (const malformed&) {
    return errc::store_unavailable;
  }
}

std::error_code decode_range(const json::object& reply, range_result& out) {
  return guarded(reply, [&] {
    out.header_revision = header_revision(reply);
    out.kvs = decode_kvs(reply);
  });
}

std::error_code decode_txn(const json::object& reply, txn_result& out) {
  return guarded(reply, [&] {
    out.header_revision = header_revision(reply);
    out.succeeded = bool_field(reply, "succeeded");
    out.ranges.clear();
    for (const auto& v : array_field(reply, "responses")) {
      const auto& response = as_object(v);
      if (const auto* r = response.if_contains("response_range")) {
        out.ranges.push_back(decode_kvs(as_object(*r)));
      }
    }
  });
}

std::error_code decode_grant(const json::object& reply, lease_grant& out) {
  return guarded(reply, [&] {
    out.id = int_field(reply, "ID");
    out.ttl = std::chrono::seconds(int_field(reply, "TTL"));
    if (out.id == 0) throw malformed{};
  });
}

std::error_code decode_keep_alive(const json::object& message, duration& ttl) {
  bool alive = false;
  auto ec = guarded(message, [&] {
    const auto seconds = int_field(stream_result(message), "TTL");
    alive = seconds > 0;
    ttl = std::chrono::seconds(seconds);
  });
  if (!ec && !alive) return errc::lease_not_found;
  return ec;
}

std::error_code decode_revoke(const json::object& reply, revision& out) {
  return guarded(reply, [&] { out = header_revision(reply); });
}

std::error_code decode_watch(const json::object& message, watch_message& out) {
  std::error_code cancelled;
  auto ec = guarded(message, [&] {
    const auto& result = stream_result(message);
    if (int_field(result, "compact_revision") > 0) {
      cancelled = errc::compacted;
      return;
    }
    if (bool_field(result, "canceled")) {
      cancelled = errc::store_unavailable;
      return;
    }
    out.created = bool_field(result, "created");
    out.batch.header_revision = header_revision(result);
    out.batch.events.clear();
    for (const auto& v : array_field(result, "events")) {
      const auto& e = as_object(v);
      watch_event event;
      const auto* type = e.if_contains("type");
      if (type != nullptr) {
        const auto* s = type->if_string();
        if (s == nullptr) throw malformed{};
        if (*s == "DELETE") {
          event.type = watch_event::kind::del;
        } else if (*s != "PUT") {
          throw malformed{};
        }
      }
      event.kv = decode_kv(object_field(e, "kv"));
      out.batch.events.push_back(std::move(event));
    }
  });
  return ec ? ec : cancelled;
}

}  // namespace troupe::cluster::etcd
