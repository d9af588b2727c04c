#pragma once
// What troupe_bench_cluster's cases share: the etcd endpoints a run is given, and a thread that
// runs the etcd clients' handlers.

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace troupe::bench {

/// "a,b,c" as {"a", "b", "c"} (empty parts dropped).
inline std::vector<std::string> split_endpoints(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    if (comma != 0) out.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

/// The etcd endpoints in TROUPE_ETCD_ENDPOINTS; empty when it is unset.
inline std::vector<std::string> etcd_endpoints_from_env() {
  const char* given = std::getenv("TROUPE_ETCD_ENDPOINTS");
  return split_endpoints(given == nullptr ? "" : given);
}

/// The steady clock now, in ns: the stamps the cluster cases compare across threads and logs.
inline std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// An io_context run by its own thread until stop() or this goes.
struct io_runner {
  io_runner() : guard(io.get_executor()), thread([this] { io.run(); }) {}
  ~io_runner() { stop(); }
  /// Ends the thread; the io_context (and what holds its strands) stays until this goes.
  void stop() {
    guard.reset();
    io.stop();
    if (thread.joinable()) thread.join();
  }
  io_runner(const io_runner&) = delete;
  io_runner& operator=(const io_runner&) = delete;

  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard;
  std::thread thread;
};

}  // namespace troupe::bench
