#pragma once
/// Error codes of the cluster layer (transport, handshake, remote delivery), and the exception
/// that carries one of them with the context.

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
};

const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

/// The exception the cluster layer throws: an error code plus a message with the context.
class cluster_error : public std::system_error {
 public:
  cluster_error(errc code, std::string what)
      : std::system_error(make_error_code(code)), what_(std::move(what)) {}
  [[nodiscard]] errc value() const noexcept { return static_cast<errc>(code().value()); }
  [[nodiscard]] const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

}  // namespace troupe::cluster

template <>
struct std::is_error_code_enum<troupe::cluster::errc> : std::true_type {};
