#pragma once
/// What the node layer needs from a network: byte streams to peers. Two implementations: TCP
/// (optionally TLS) and the in-memory test network with fault injection. Both carry the same
/// encoded frames, so every test exercises the real codec path.
///
/// Threading: a transport and its streams run every callback on the transport's executor
/// (single-threaded), never inline inside the call that caused it. Their methods may be called
/// from any thread.

#include <troupe/cluster/node_address.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <vector>

namespace troupe::cluster {

/// Bytes as they cross the network.
using byte_buffer = std::vector<std::byte>;

/// One connection to a peer: ordered bytes in both directions. The in-memory network may drop,
/// delay or cut what flows, as a real network can; it only ever drops whole writes, so a
/// reader's frame decoder never sees half a frame followed by another frame's bytes.
class stream {
 public:
  using read_handler = std::function<void(std::span<const std::byte>)>;
  using done_handler = std::function<void(std::error_code)>;

  virtual ~stream() = default;
  stream() = default;
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  /// Starts reading: `on_data` gets what arrives, in order, in chunks of any size; `on_closed`
  /// runs once when the stream ends (peer closed, error, or close() here), after which no
  /// handler runs again. Call once.
  virtual void start(read_handler on_data, done_handler on_closed) = 0;
  /// Writes all of `bytes` (whole frames), then calls `done` with the outcome. At most one
  /// write at a time: the caller coalesces what it has into one buffer meanwhile.
  virtual void async_write(byte_buffer bytes, done_handler done) = 0;
  /// Closes both directions. Idempotent.
  virtual void close() = 0;
  /// For logs, e.g. "tcp 127.0.0.1:40312 -> 127.0.0.1:25520 (tls)".
  [[nodiscard]] virtual std::string describe() const = 0;
};

class transport {
 public:
  using accept_handler = std::function<void(std::shared_ptr<stream>)>;
  using connect_handler = std::function<void(std::error_code, std::shared_ptr<stream>)>;

  virtual ~transport() = default;
  transport() = default;
  transport(const transport&) = delete;
  transport& operator=(const transport&) = delete;

  /// Listens at `at` (port 0: a free port) and hands every accepted stream (after TLS
  /// verification, when configured) to `on_accept`. Returns the bound address; throws
  /// cluster_error(errc::transport_failure) when it cannot bind.
  virtual node_address listen(const node_address& at, accept_handler on_accept) = 0;
  /// Opens a stream to `peer`; `done` runs once, with a stream or an error.
  virtual void connect(const node_address& peer, connect_handler done) = 0;
  /// Stops listening and closes every stream it opened or accepted. Idempotent.
  virtual void shutdown() = 0;
  /// Where this transport runs its callbacks.
  [[nodiscard]] virtual boost::asio::any_io_executor executor() const = 0;
};

}  // namespace troupe::cluster
