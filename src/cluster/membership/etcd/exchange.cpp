#include "cluster/membership/etcd/exchange.hpp"

#include <troupe/cluster/errc.hpp>

// Beast only parses the reply; the I/O is a plain socket and a timer, so that none of Beast's
// composed operations (a large share of a TU's compile time under ASan) is instantiated.
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/stream_parser.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>

namespace troupe::cluster::etcd {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using steady = std::chrono::steady_clock;

class http_exchange final : public exchange, public std::enable_shared_from_this<http_exchange> {
 public:
  http_exchange(const asio::any_io_executor& executor, std::shared_ptr<endpoint_set> endpoints,
                std::string target, std::string body, bool streaming, object_handler on_object,
                done_handler on_done)
      : strand_(asio::make_strand(executor)),
        socket_(strand_),
        timer_(strand_),
        endpoints_(std::move(endpoints)),
        target_(std::move(target)),
        body_(std::move(body)),
        streaming_(streaming),
        on_object_(std::move(on_object)),
        on_done_(std::move(on_done)) {
    first_ = endpoints_->preferred.load(std::memory_order_relaxed) % endpoints_->endpoints.size();
    deadline_ = steady::now() + endpoints_->request_timeout;
  }

  void start() {
    asio::post(strand_, [self = shared_from_this()] { self->connect_next(); });
  }

  void cancel() noexcept override {
    cancelled_.store(true, std::memory_order_release);
    try {
      asio::post(strand_, [self = shared_from_this()] { self->finish({}); });
    } catch (...) {
      // Posting allocates; without memory the exchange ends at its deadline instead.
    }
  }

 private:
  [[nodiscard]] bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

  [[nodiscard]] duration remaining() const { return deadline_ - steady::now(); }

  // Closes the socket at `when` (failing the pending operation) unless re-armed or disarmed first.
  void arm(steady::time_point when) {
    const auto generation = ++generation_;
    timer_.expires_at(when);
    timer_.async_wait([self = shared_from_this(), generation](boost::system::error_code ec) {
      if (ec || generation != self->generation_ || self->finished_) return;
      boost::system::error_code ignored;
      self->socket_.close(ignored);
    });
  }

  void disarm() {
    ++generation_;
    timer_.cancel();
  }

  void connect_next() {
    if (finished_) return;
    if (cancelled()) return finish({});
    const auto count = endpoints_->endpoints.size();
    if (tried_ == count || remaining() <= duration::zero()) return finish(errc::store_unavailable);
    const auto index = (first_ + tried_) % count;
    ++tried_;
    const auto& e = endpoints_->endpoints[index];
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(e.address, ec);
    if (ec) return connect_next();
    arm(steady::now() + std::min(endpoints_->connect_timeout, remaining()));
    socket_.async_connect(tcp::endpoint(address, e.port),
                          [self = shared_from_this(), index](boost::system::error_code error) {
                            self->on_connect(error, index);
                          });
  }

  void on_connect(boost::system::error_code ec, std::size_t index) {
    if (finished_) return;
    if (cancelled()) return finish({});
    if (ec) {
      // Refused, unreachable or too slow: the next endpoint, on a fresh socket.
      boost::system::error_code ignored;
      socket_.close(ignored);
      move_past(index);
      return connect_next();
    }
    index_ = index;
    endpoints_->preferred.store(index, std::memory_order_relaxed);
    const auto& e = endpoints_->endpoints[index];
    request_ =
        "POST " + target_ + " HTTP/1.1\r\nHost: " + e.address + ":" + std::to_string(e.port) +
        "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body_.size()) +
        "\r\n\r\n" + body_;
    arm(deadline_);
    asio::async_write(socket_, asio::buffer(request_),
                      [self = shared_from_this()](boost::system::error_code error, std::size_t) {
                        self->on_write(error);
                      });
  }

  void on_write(boost::system::error_code ec) {
    if (finished_) return;
    if (cancelled()) return finish({});
    if (ec) return fail();
    parser_.emplace();
    parser_->body_limit(boost::none);
    // Chunks (a streamed reply) go straight to the JSON parser's input, not into the body.
    on_chunk_ = [this](std::uint64_t, beast::string_view data, boost::system::error_code&) {
      pending_.append(data.data(), data.size());
      return data.size();
    };
    parser_->on_chunk_body(on_chunk_);
    read();
  }

  void read() {
    socket_.async_read_some(asio::buffer(chunk_),
                            [self = shared_from_this()](boost::system::error_code ec,
                                                        std::size_t n) { self->on_read(ec, n); });
  }

  void on_read(boost::system::error_code ec, std::size_t n) {
    if (finished_) return;
    if (cancelled()) return finish({});
    if (ec) return fail();  // also the end of the connection before the handler was satisfied
    unparsed_.append(chunk_.data(), n);
    if (!parse()) return fail();
    // A reply with a Content-Length (unary calls) arrives in the body instead.
    auto& body = parser_->get().body();
    pending_ += body;
    body.clear();
    if (!consume()) return;
    if (parser_->is_done()) return fail();  // the reply ended before the handler was satisfied
    read();
  }

  // Runs what has arrived through the HTTP parser; false on malformed HTTP.
  bool parse() {
    std::size_t at = 0;
    while (at < unparsed_.size() && !parser_->is_done()) {
      boost::system::error_code ec;
      const auto used =
          parser_->put(asio::buffer(unparsed_.data() + at, unparsed_.size() - at), ec);
      at += used;
      if (ec == http::error::need_more) break;
      if (ec) return false;
      if (used == 0) break;
    }
    unparsed_.erase(0, at);
    return true;
  }

  // Feeds what has arrived to the JSON parser and hands over every complete object; false when
  // the exchange has ended.
  bool consume() {
    std::size_t at = 0;
    for (;;) {
      at = pending_.find_first_not_of(" \t\r\n", at);
      if (at == std::string::npos) break;
      boost::system::error_code jec;
      at += json_.write_some(pending_.data() + at, pending_.size() - at, jec);
      if (jec) {
        fail();
        return false;
      }
      if (!json_.done()) break;
      auto value = json_.release();
      json_.reset();
      auto* object = value.if_object();
      if (object == nullptr) {
        fail();
        return false;
      }
      if (!got_object_ && streaming_) disarm();  // a created stream has no deadline
      got_object_ = true;
      if (!on_object_(*object)) {
        finish({});
        return false;
      }
      if (cancelled()) {
        finish({});
        return false;
      }
    }
    pending_.clear();
    return true;
  }

  // Moves the preferred endpoint past `index`, so that the next exchange starts elsewhere.
  void move_past(std::size_t index) {
    auto expected = index;
    endpoints_->preferred.compare_exchange_strong(
        expected, (index + 1) % endpoints_->endpoints.size(), std::memory_order_relaxed);
  }

  // A failure after the request may have been sent: the caller cannot know whether it applied.
  void fail() {
    move_past(index_);
    finish(errc::store_unavailable);
  }

  void finish(std::error_code ec) {
    if (finished_) return;
    finished_ = true;
    disarm();
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    auto done = std::move(on_done_);
    on_object_ = nullptr;
    on_done_ = nullptr;
    if (!cancelled() && done) done(ec);
  }

  asio::strand<asio::any_io_executor> strand_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  std::uint64_t generation_ = 0;
  std::shared_ptr<endpoint_set> endpoints_;
  std::string target_;
  std::string body_;
  bool streaming_;
  object_handler on_object_;
  done_handler on_done_;
  std::string request_;
  std::array<char, 8192> chunk_{};
  std::string unparsed_;
  std::optional<http::response_parser<http::string_body>> parser_;
  std::function<std::size_t(std::uint64_t, beast::string_view, boost::system::error_code&)>
      on_chunk_;
  std::string pending_;
  json::stream_parser json_;
  steady::time_point deadline_;
  std::size_t first_ = 0;
  std::size_t tried_ = 0;
  std::size_t index_ = 0;
  bool got_object_ = false;
  bool finished_ = false;
  std::atomic<bool> cancelled_{false};
};

}  // namespace

endpoint_set::endpoint parse_endpoint(const std::string& text) {
  auto bad = [&] {
    return cluster_error(errc::invalid_address,
                         "etcd endpoint '" + text + "' is not host:port with a numeric host");
  };
  std::string_view rest = text;
  if (rest.starts_with("http://")) rest.remove_prefix(7);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  const auto colon = rest.rfind(':');
  if (colon == std::string_view::npos) throw bad();
  auto host = rest.substr(0, colon);
  const auto port_text = rest.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  std::uint16_t port = 0;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc{} || end != port_text.data() + port_text.size() || port == 0) throw bad();
  std::string address = host == "localhost" ? std::string("127.0.0.1") : std::string(host);
  boost::system::error_code parse_error;
  asio::ip::make_address(address, parse_error);
  if (parse_error) throw bad();
  return {std::move(address), port};
}

std::shared_ptr<exchange> start_exchange(const asio::any_io_executor& executor,
                                         std::shared_ptr<endpoint_set> endpoints,
                                         std::string target, std::string body, bool streaming,
                                         object_handler on_object, done_handler on_done) {
  auto e = std::make_shared<http_exchange>(executor, std::move(endpoints), std::move(target),
                                           std::move(body), streaming, std::move(on_object),
                                           std::move(on_done));
  e->start();
  return e;
}

}  // namespace troupe::cluster::etcd
