#pragma once
/// The management HTTP API of a node (HTTP/1.1 on Boost.Beast, JSON through Boost.JSON), off
/// unless the application starts it:
///
///     auto source = troupe::observability::make_cluster_management_source(node, sharding,
///     &registry); auto server = troupe::observability::management_server::start(
///         source, management_options{}.with_port(8558).with_bearer_token(token));
///
/// GET  /dashboard                    the live dashboard (HTML; its files under /dashboard/)
/// GET  /cluster/members              the members, with roles and reachability
/// GET  /cluster/types                the sharded types started on this node
/// GET  /cluster/shards/<type>        per shard: owner, epoch, entities, messages, rate, hot ids
/// GET  /cluster/entities/<type>/<id> the entity's shard and owner, and whether it runs
/// GET  /health/alive                 200 while the server serves
/// GET  /health/ready                 200 when ready, 503 with the reason otherwise
/// GET  /metrics                      Prometheus text (404 without a registry)
/// POST /cluster/leave                a graceful leave (bearer token)
/// POST /cluster/rebalance/<type>     a rebalance of the type (bearer token)
///
/// Path parameters are percent-decoded and validated (400 when invalid); every error is a 4xx
/// or 5xx with a JSON body `{"error": "..."}`. The server runs on one I/O thread of its own and
/// calls its source on a small pool, so a slow source never stalls /health/alive.

#include <troupe/core/clock.hpp>
#include <troupe/observability/management_source.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace troupe::observability {

struct management_options {
  /// The address to listen on; loopback unless the operator opens it on purpose.
  std::string address = "127.0.0.1";
  /// The port; 0 takes any free one (management_server::port() tells which).
  std::uint16_t port = 8558;
  /// The token POST endpoints require as `Authorization: Bearer <token>`; empty refuses every
  /// POST with 401.
  std::string bearer_token;
  /// The longest entity id or type name a path may carry, in bytes after decoding.
  std::size_t max_id_length = 256;
  /// Bytes of the request line and headers, together; a longer header gets 431.
  std::size_t max_header_bytes = std::size_t{8} * 1024;
  /// Connections served at once; one more gets 503 and is closed.
  std::size_t max_connections = 64;
  /// How long a connection may take to send a whole request (and stay idle between two).
  duration read_timeout = std::chrono::seconds(10);
  /// Threads that call the source (its calls may block for seconds).
  std::size_t source_threads = 2;

  management_options& with_address(std::string a) {
    address = std::move(a);
    return *this;
  }
  management_options& with_port(std::uint16_t p) {
    port = p;
    return *this;
  }
  management_options& with_bearer_token(std::string t) {
    bearer_token = std::move(t);
    return *this;
  }
  management_options& with_max_id_length(std::size_t n) {
    max_id_length = n;
    return *this;
  }
  management_options& with_max_connections(std::size_t n) {
    max_connections = n;
    return *this;
  }
  management_options& with_read_timeout(duration d) {
    read_timeout = d;
    return *this;
  }
};

/// A running management server: it listens from start() until it is destroyed.
class management_server {
 public:
  /// Binds and starts serving `source`. Throws boost::system::system_error when the address
  /// cannot be bound, std::invalid_argument for a null source or a bad address.
  [[nodiscard]] static std::unique_ptr<management_server> start(
      std::shared_ptr<management_source> source, management_options options = {});
  /// Stops listening, closes every connection and waits for the source calls under way.
  ~management_server();
  management_server(const management_server&) = delete;
  management_server& operator=(const management_server&) = delete;

  /// The port the server listens on (the bound one when options.port was 0).
  [[nodiscard]] std::uint16_t port() const noexcept;
  /// The address it listens on.
  [[nodiscard]] const std::string& address() const noexcept;

  struct impl;

 private:
  explicit management_server(std::unique_ptr<impl> impl);
  std::unique_ptr<impl> impl_;
};

}  // namespace troupe::observability
