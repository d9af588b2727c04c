#include "cluster/tcp/transport_state.hpp"

#include "cluster/tcp/tcp_log.hpp"
#include "cluster/tcp/tls_context.hpp"

#include <algorithm>

namespace troupe::cluster::tcp {

namespace {

// Drops the entries of finished streams and operations when the list is full, before it would
// grow: the list stays proportional to what is alive, at an amortized O(1) per entry.
template <class T>
void add_weak(std::vector<std::weak_ptr<T>>& list, const std::shared_ptr<T>& item) {
  if (list.size() == list.capacity()) {
    std::erase_if(list, [](const std::weak_ptr<T>& w) { return w.expired(); });
  }
  list.push_back(item);
}

template <class Option>
void set_option(boost::asio::ip::tcp::socket& socket, const Option& option, const char* name) {
  boost::system::error_code ec;
  socket.set_option(option, ec);
  if (ec) log_socket_option_failed(name, ec.message());
}

}  // namespace

transport_state::transport_state(boost::asio::any_io_executor executor, tcp_options options)
    : executor_(std::move(executor)), options_(std::move(options)) {
  if (options_.tls) tls_ = make_tls_context(*options_.tls);
}

void transport_state::track(const std::shared_ptr<abortable>& op) {
  if (shut_down()) {
    op->abort();
    return;
  }
  add_weak(operations_, op);
}

void transport_state::remember(const std::shared_ptr<stream>& s) {
  add_weak(streams_, s);
  if (shut_down()) s->close();
}

std::shared_ptr<stream> transport_state::adopt(boost::asio::ip::tcp::socket socket) {
  auto s = make_plain_stream(std::move(socket), options_.read_chunk_size);
  remember(s);
  return s;
}

std::shared_ptr<stream> transport_state::adopt(tls_socket socket) {
  auto s = make_tls_stream(std::move(socket), options_.read_chunk_size, tls_);
  remember(s);
  return s;
}

void transport_state::abort_all() {
  // Aborting may finish other entries: work on copies.
  auto operations = std::move(operations_);
  operations_.clear();
  for (auto& w : operations) {
    if (auto op = w.lock()) op->abort();
  }
  auto streams = std::move(streams_);
  streams_.clear();
  for (auto& w : streams) {
    if (auto s = w.lock()) s->close();
  }
}

void transport_state::configure(boost::asio::ip::tcp::socket& socket) const {
  set_option(socket, boost::asio::ip::tcp::no_delay(true), "TCP_NODELAY");
  if (options_.send_buffer_size) {
    set_option(socket,
               boost::asio::socket_base::send_buffer_size(
                   static_cast<int>(std::min<std::size_t>(*options_.send_buffer_size, INT32_MAX))),
               "SO_SNDBUF");
  }
  if (options_.receive_buffer_size) {
    set_option(socket,
               boost::asio::socket_base::receive_buffer_size(static_cast<int>(
                   std::min<std::size_t>(*options_.receive_buffer_size, INT32_MAX))),
               "SO_RCVBUF");
  }
}

}  // namespace troupe::cluster::tcp
