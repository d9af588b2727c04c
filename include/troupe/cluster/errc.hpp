#pragma once
/// Error codes of the cluster layer (transport, handshake, remote delivery), and the exception
/// that carries one of them with the context.

#include <troupe/core/errc.hpp>

#include <string>
#include <system_error>

namespace troupe::cluster {

enum class errc {
  /// The peer node is unreachable: connection lost or refused, heartbeats missed, partitioned.
  node_unreachable = 1,
  /// The peer restarted: it has a new incarnation, so the old one's actors are gone.
  node_restarted,
  /// The handshake was refused: other cluster name or protocol version, or a bad certificate.
  handshake_refused,
  /// A frame was malformed or larger than the maximum frame size.
  bad_frame,
  /// A message type has no manifest registered, or a manifest no decoder.
  unknown_manifest,
  /// A message's bytes could not be decoded.
  decode_error,
  /// The per-peer queue for a node not yet connected was full.
  peer_queue_full,
  /// The transport could not bind, connect or set up TLS (bad certificate files, ...).
  transport_failure,
  /// A remote address or actor path is malformed.
  invalid_address,
  /// The consensus store (etcd) did not answer in time or the connection to it was lost; a write
  /// may or may not have been applied.
  store_unavailable,
  /// A lease has expired or was revoked.
  lease_not_found,
  /// A watch asked for history the store has compacted away: read again, then watch.
  compacted,
  /// A request the store refuses as malformed: too many operations, a key written twice, an
  /// empty key.
  invalid_store_request,
  /// The node is no member of the cluster any more: its lease ran out, it left or was evicted.
  node_left,
};

const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

/// The exception the cluster layer throws: a troupe::error, so `catch (const troupe::error&)`
/// catches it with every other layer's.
class cluster_error : public troupe::error {
 public:
  cluster_error(errc code, std::string what)
      : troupe::error(make_error_code(code), std::move(what)) {}
  /// The cluster code (hides troupe::error::value, which names only core codes).
  [[nodiscard]] errc value() const noexcept { return static_cast<errc>(code().value()); }
};

}  // namespace troupe::cluster

template <>
struct std::is_error_code_enum<troupe::cluster::errc> : std::true_type {};
