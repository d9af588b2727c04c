#pragma once
// What the parts of a tcp_transport share: the executor, the options, the TLS context, and what
// shutdown() must stop. Listeners, connects and handshakes hold it by shared_ptr, so the
// transport object itself may go away while they finish.

#include <troupe/cluster/tcp_transport.hpp>

#include "cluster/tcp/stream_factory.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include <atomic>
#include <memory>
#include <vector>

namespace troupe::cluster::tcp {

/// Something in flight that shutdown() stops: a listener, a connect, a server-side handshake.
class abortable {
 public:
  virtual ~abortable() = default;
  /// Stops at once; its handler never runs. Called on the executor.
  virtual void abort() = 0;
};

class transport_state {
 public:
  /// Loads the TLS files when configured (throws cluster_error naming a bad file).
  transport_state(boost::asio::any_io_executor executor, tcp_options options);

  [[nodiscard]] const boost::asio::any_io_executor& executor() const noexcept { return executor_; }
  [[nodiscard]] const tcp_options& options() const noexcept { return options_; }
  /// The TLS context; null for plain TCP.
  [[nodiscard]] const std::shared_ptr<boost::asio::ssl::context>& tls() const noexcept {
    return tls_;
  }

  /// True once shutdown() began; read from any thread, so that no accept or connect handler
  /// runs after shutdown() returned, even before the executor got to the closing.
  [[nodiscard]] bool shut_down() const noexcept {
    return shut_down_.load(std::memory_order_acquire);
  }
  /// Marks the transport shut down; true only for the first call.
  bool mark_shut_down() noexcept { return !shut_down_.exchange(true, std::memory_order_acq_rel); }

  // The rest runs on the executor only.

  /// Remembers `op` (weakly) to abort it at shutdown; aborts it at once when already shut down.
  void track(const std::shared_ptr<abortable>& op);
  /// Wraps a connected socket into a stream and remembers it, to close it at shutdown (at once,
  /// when already shut down).
  std::shared_ptr<stream> adopt(boost::asio::ip::tcp::socket socket);
  /// The same for a TLS socket whose handshake succeeded.
  std::shared_ptr<stream> adopt(tls_socket socket);
  /// Aborts every operation and closes every stream still alive.
  void abort_all();

  /// Sets TCP_NODELAY and the configured buffer sizes; a failure is logged, not fatal.
  void configure(boost::asio::ip::tcp::socket& socket) const;

 private:
  void remember(const std::shared_ptr<stream>& s);

  boost::asio::any_io_executor executor_;
  tcp_options options_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  std::atomic<bool> shut_down_{false};
  std::vector<std::weak_ptr<abortable>> operations_;
  std::vector<std::weak_ptr<stream>> streams_;
};

}  // namespace troupe::cluster::tcp
