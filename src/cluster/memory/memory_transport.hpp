#pragma once
// One node's transport on the in-memory network. It keeps weak references to the network and
// to its streams: destroying any of them while the executors run is safe.

#include <troupe/cluster/node_address.hpp>
#include <troupe/cluster/transport.hpp>

#include "cluster/memory/connection.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace troupe::cluster::detail {

class network_core;

class memory_transport final : public transport,
                               public std::enable_shared_from_this<memory_transport> {
 public:
  memory_transport(std::weak_ptr<network_core> network, boost::asio::any_io_executor ex);
  ~memory_transport() override;

  node_address listen(const node_address& at, accept_handler on_accept) override;
  void connect(const node_address& peer, connect_handler done) override;
  void shutdown() override;
  [[nodiscard]] boost::asio::any_io_executor executor() const override { return executor_; }

  /// Takes the accepting end of `c` for the listener at `at` and hands it to that listener's
  /// accept handler on this transport's executor. False when nothing listens at `at` any more.
  bool accept(const node_address& at, const std::shared_ptr<connection>& c);

 private:
  struct listener {
    node_address address;
    std::shared_ptr<const accept_handler> on_accept;
  };

  /// The address this transport's streams start from; std::nullopt after shutdown.
  std::optional<node_address> local_address(network_core& network);
  /// Remembers an end to close at shutdown; false when already shut down.
  bool adopt(const std::shared_ptr<connection>& c, connection::side s);
  void remember_locked(const std::shared_ptr<connection>& c, connection::side s);
  bool is_shut_down();
  void fail_later(connect_handler done, std::error_code ec);

  const std::weak_ptr<network_core> network_;
  const boost::asio::any_io_executor executor_;
  std::mutex mutex_;
  bool shut_down_ = false;
  std::optional<node_address> local_;
  std::vector<listener> listeners_;
  std::vector<std::pair<std::weak_ptr<connection>, connection::side>> ends_;
  std::size_t prune_ends_at_ = 64;
};

}  // namespace troupe::cluster::detail
