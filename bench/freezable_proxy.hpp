#pragma once
// A TCP proxy on 127.0.0.1 in front of one server (here: etcd) that can be frozen: from then on
// it forwards nothing in either direction and answers no new connection, but closes nothing, as
// a network that silently stops carrying packets would. Used to cut one node off etcd.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace troupe::bench {

class freezable_proxy {
 public:
  /// Listens on 127.0.0.1 (a free port) and forwards to `target` ("host:port").
  explicit freezable_proxy(const std::string& target);
  ~freezable_proxy();
  freezable_proxy(const freezable_proxy&) = delete;
  freezable_proxy& operator=(const freezable_proxy&) = delete;

  /// "127.0.0.1:<port>": the endpoint to give the node instead of the target.
  [[nodiscard]] std::string endpoint() const;
  /// Stops forwarding, for good.
  void freeze() { frozen_->store(true); }

 private:
  void accept();

  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::ip::tcp::endpoint target_;
  std::shared_ptr<std::atomic<bool>> frozen_ = std::make_shared<std::atomic<bool>>(false);
  /// Every connection, kept open (frozen ones too) until the proxy goes; I/O thread only.
  std::vector<std::shared_ptr<void>> connections_;
  std::thread thread_;
};

}  // namespace troupe::bench
