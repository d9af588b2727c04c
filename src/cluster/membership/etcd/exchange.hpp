#pragma once
// One HTTP/1.1 POST to etcd's JSON gateway and the JSON objects of its reply, read as they come
// (a unary reply is one object, a stream one object per message). It connects to the preferred
// endpoint and, on a connection failure, to the next, within one deadline. This header keeps
// Beast out of its includers (Asio and Beast compile slowly).

#include <troupe/core/clock.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/json/object.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

namespace troupe::cluster::etcd {

/// Where etcd is, shared by a store and its running exchanges.
struct endpoint_set {
  struct endpoint {
    std::string address;  ///< numeric IPv4 or IPv6
    std::uint16_t port = 0;
  };
  std::vector<endpoint> endpoints;
  /// The endpoint the next exchange tries first: the last one that answered, moved on when one
  /// fails.
  std::atomic<std::size_t> preferred{0};
  duration connect_timeout{};
  duration request_timeout{};
};

/// Parses "host:port", "[v6]:port" or "http://host:port" (host numeric, or localhost); throws
/// cluster_error(errc::invalid_address) for anything else.
endpoint_set::endpoint parse_endpoint(const std::string& text);

/// Gets each JSON object of the reply; returns true to read on, false to end the exchange.
using object_handler = std::function<bool(boost::json::object&)>;
/// Runs once when the exchange ends, unless it was cancelled: no error when the object handler
/// ended it, errc::store_unavailable when the connection failed, timed out or ended first.
using done_handler = std::function<void(std::error_code)>;

class exchange {
 public:
  virtual ~exchange() = default;
  /// Closes the connection; no handler runs once the exchange has seen the cancel.
  virtual void cancel() noexcept = 0;
};

/// Starts POST `target` with `body`. The whole exchange must finish within the set's request
/// timeout, except a `streaming` one, which has no deadline once its first object arrived.
/// Handlers run on a strand of `executor`, never inside this call.
std::shared_ptr<exchange> start_exchange(const boost::asio::any_io_executor& executor,
                                         std::shared_ptr<endpoint_set> endpoints,
                                         std::string target, std::string body, bool streaming,
                                         object_handler on_object, done_handler on_done);

}  // namespace troupe::cluster::etcd
