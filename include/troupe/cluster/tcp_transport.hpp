#pragma once
/// The TCP transport: streams over TCP sockets (TCP_NODELAY always on), optionally inside
/// mutually authenticated TLS. With TLS, a peer is accepted when its certificate chains to the
/// cluster CA, on both sides: the identity of a node is "holds a key whose certificate the
/// cluster CA signed" (as in Akka's mutual TLS with a private CA). Host names are not checked,
/// since nodes are addressed by IP and the CA is private to the cluster.
///
/// Threading: give it a single-threaded executor (an io_context run by one thread). Every
/// callback runs there; its methods may be called from any thread.
///
/// After shutdown() no accept or connect handler runs again; a stream's pending write
/// completion and its on_closed still run (with operation_aborted). The transport may be
/// destroyed after shutdown() while the executor still runs.

#include <troupe/cluster/transport.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace troupe::cluster {

/// PEM files that make a node a member of a TLS cluster.
struct tls_options {
  /// The cluster CA's certificate: a peer is trusted when its certificate chains to it.
  std::string ca_file;
  /// This node's certificate (or chain, leaf first), signed by the cluster CA; presented to
  /// peers on both sides of a connection.
  std::string cert_file;
  /// This node's private key (unencrypted PEM), matching cert_file.
  std::string key_file;
};

/// How a tcp_transport opens and runs its sockets.
struct tcp_options {
  /// Mutual TLS with these files; plain TCP when unset.
  std::optional<tls_options> tls;
  /// SO_SNDBUF in bytes; the kernel's default when unset.
  std::optional<std::size_t> send_buffer_size;
  /// SO_RCVBUF in bytes; the kernel's default when unset.
  std::optional<std::size_t> receive_buffer_size;
  /// Bounds resolving, connecting and the TLS handshake of one connect, and the server side of a
  /// TLS handshake (a peer that connects and stays silent is dropped after it).
  std::chrono::milliseconds connect_timeout{5000};
  /// The most bytes one read takes from a socket (a stream reads whatever is available, up to
  /// this); also the size of each stream's read buffer.
  std::size_t read_chunk_size = 64 * 1024;

  tcp_options& with_tls(tls_options files) {
    tls = std::move(files);
    return *this;
  }
  tcp_options& with_send_buffer_size(std::size_t bytes) {
    send_buffer_size = bytes;
    return *this;
  }
  tcp_options& with_receive_buffer_size(std::size_t bytes) {
    receive_buffer_size = bytes;
    return *this;
  }
  tcp_options& with_connect_timeout(std::chrono::milliseconds timeout) {
    connect_timeout = timeout;
    return *this;
  }
  tcp_options& with_read_chunk_size(std::size_t bytes) {
    read_chunk_size = bytes;
    return *this;
  }
};

namespace tcp {
class transport_state;
}

/// The transport nodes use in production: TCP, or TCP inside mutually authenticated TLS.
class tcp_transport final : public transport {
 public:
  /// Runs every callback on `executor`. With TLS it loads the files at once and throws
  /// cluster_error(errc::transport_failure), naming the file, when one is missing, unreadable or
  /// invalid, or when the key does not match the certificate.
  tcp_transport(boost::asio::any_io_executor executor, tcp_options options);
  /// Shuts down (see shutdown()); handlers still in flight keep what they need alive.
  ~tcp_transport() override;

  /// Binds with SO_REUSEADDR and accepts until shutdown(). With TLS, a connection is handed to
  /// `on_accept` only after its handshake verified the peer's certificate; a failed handshake
  /// is logged (warning) and the connection dropped. Throws cluster_error(transport_failure)
  /// when it cannot bind, or after shutdown().
  node_address listen(const node_address& at, accept_handler on_accept) override;
  /// Resolves `peer`, connects within the connect timeout and, with TLS, verifies the peer's
  /// certificate. Fails with errc::node_unreachable (cannot resolve, refused, timed out) or
  /// errc::handshake_refused (TLS failed); the details are logged. Note that with TLS 1.3 a
  /// server checks the client's certificate after the client finished its handshake: a client
  /// the server refuses may see a stream that closes at once instead of a failed connect.
  void connect(const node_address& peer, connect_handler done) override;
  /// Stops accepting, abandons connects in flight and closes every stream. Idempotent.
  void shutdown() override;
  [[nodiscard]] boost::asio::any_io_executor executor() const override;

 private:
  std::shared_ptr<tcp::transport_state> state_;
};

}  // namespace troupe::cluster
