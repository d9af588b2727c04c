#pragma once
// What a management server's connections share: its options, its source, the I/O context with
// its one thread, the pool that calls the source, and the count of open connections.

#include <troupe/observability/management_server.hpp>
#include <troupe/observability/management_source.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>

namespace troupe::observability::management {

/// Declared in the order that lets the destructor tear it down: the count outlives the
/// I/O context, whose destruction frees the connections' coroutine frames (each frees its slot).
struct server_state {
  server_state(std::shared_ptr<management_source> s, management_options o)
      : options(std::move(o)), source(std::move(s)), pool(options.source_threads) {}

  management_options options;
  std::shared_ptr<management_source> source;
  /// Connections open now (touched on the I/O thread only).
  std::size_t connections = 0;
  boost::asio::io_context io{1};
  boost::asio::thread_pool pool;
  boost::asio::ip::tcp::acceptor acceptor{io};
  std::string address;
  std::uint16_t port = 0;
  std::thread thread;
};

/// One of server_state::connections, held by a connection's coroutine for its whole life (its
/// frame may be freed without ever running, when the server stops first).
class connection_slot {
 public:
  explicit connection_slot(std::size_t& count) noexcept : count_(&count) { ++count; }
  connection_slot(connection_slot&& other) noexcept
      : count_(std::exchange(other.count_, nullptr)) {}
  connection_slot(const connection_slot&) = delete;
  connection_slot& operator=(const connection_slot&) = delete;
  connection_slot& operator=(connection_slot&&) = delete;
  ~connection_slot() {
    if (count_ != nullptr) --*count_;
  }

 private:
  std::size_t* count_;
};

/// Serves one connection until the client closes it, a request fails to parse, or it stays
/// silent for options.read_timeout.
/// `state` outlives the coroutine (the server destroys its frame before the state's count).
boost::asio::awaitable<void> serve_connection(boost::asio::ip::tcp::socket socket,
                                              server_state* state, connection_slot slot);

}  // namespace troupe::observability::management
