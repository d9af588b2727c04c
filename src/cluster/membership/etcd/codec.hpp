#pragma once
// The JSON of etcd 3.4's /v3/ gateway: request bodies from the store's types, and replies back
// into them. Keys and values are base64, int64 fields are strings, and fields with their zero or
// default value are left out (a failed txn has no "succeeded", a PUT event no "type", a dead
// lease's keepalive reply no "TTL"). Errors come as {"error": "...", "code": <gRPC code>}, or in a
// stream as {"error": {"grpc_code": ...}}. Nothing here does I/O.

#include <troupe/cluster/membership/consensus_store.hpp>

#include <boost/json/object.hpp>

#include <string>
#include <system_error>

namespace troupe::cluster::etcd {

std::string encode_range(const key_range& range);
std::string encode_txn(const txn_request& request);
std::string encode_grant(duration ttl);
/// The body of keepalive and revoke: {"ID": "<lease>"}.
std::string encode_lease_id(lease_id lease);
std::string encode_watch(const key_range& range, revision start);

/// The error a reply carries (gRPC code mapped to errc), or no error.
std::error_code reply_error(const boost::json::object& reply);

std::error_code decode_range(const boost::json::object& reply, range_result& out);
std::error_code decode_txn(const boost::json::object& reply, txn_result& out);
std::error_code decode_grant(const boost::json::object& reply, lease_grant& out);
/// A keepalive stream message: its TTL, or errc::lease_not_found when it has none.
std::error_code decode_keep_alive(const boost::json::object& message, duration& ttl);
std::error_code decode_revoke(const boost::json::object& reply, revision& out);

/// One message of a watch stream, decoded.
struct watch_message {
  /// The watch was created (the first message); nothing to deliver.
  bool created = false;
  /// Events or a progress notice to deliver, when not `created` and no error.
  watch_batch batch;
};
/// errc::compacted when the watch was cancelled for compacted history, store_unavailable when it
/// was cancelled for another reason.
std::error_code decode_watch(const boost::json::object& message, watch_message& out);

}  // namespace troupe::cluster::etcd
