#include "freezable_proxy.hpp"

#include "bench_support.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <utility>

namespace troupe::bench {

namespace {

using tcp = boost::asio::ip::tcp;

/// One proxied connection: two pumps, each reading one side and writing the other, until either
/// side closes or the proxy freezes (then both sockets stay open and idle: the proxy keeps the
/// connection).
struct connection : std::enable_shared_from_this<connection> {
  connection(tcp::socket c, tcp::socket s, std::shared_ptr<std::atomic<bool>> f)
      : client(std::move(c)), server(std::move(s)), frozen(std::move(f)) {}

  void start() {
    pump(client, server, to_server);
    pump(server, client, to_client);
  }

  void pump(tcp::socket& from, tcp::socket& to, std::array<char, 16384>& buffer) {
    from.async_read_some(
        boost::asio::buffer(buffer), [self = shared_from_this(), &from, &to, &buffer](
                                         boost::system::error_code ec, std::size_t n) {
          if (ec || self->frozen->load()) {
            if (ec && !self->frozen->load()) self->close();
            return;  // frozen: neither side hears anything more
          }
          boost::asio::async_write(
              to, boost::asio::buffer(buffer.data(), n),
              [self, &from, &to, &buffer](boost::system::error_code wec, std::size_t) {
                if (wec) {
                  self->close();
                  return;
                }
                self->pump(from, to, buffer);
              });
        });
  }

  void close() {
    boost::system::error_code ignored;
    client.close(ignored);
    server.close(ignored);
  }

  tcp::socket client;
  tcp::socket server;
  std::shared_ptr<std::atomic<bool>> frozen;
  std::array<char, 16384> to_server{};
  std::array<char, 16384> to_client{};
};

tcp::endpoint parse_target(const std::string& target) {
  const auto colon = target.rfind(':');
  if (colon == std::string::npos) throw bench_failure("proxy target '" + target + "' has no port");
  std::string host = target.substr(0, colon);
  if (host.starts_with("http://")) host = host.substr(7);
  return {boost::asio::ip::make_address(host),
          static_cast<unsigned short>(std::stoi(target.substr(colon + 1)))};
}

}  // namespace

freezable_proxy::freezable_proxy(const std::string& target)
    : acceptor_(io_, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)),
      target_(parse_target(target)) {
  accept();
  thread_ = std::thread([this] { io_.run(); });
}

freezable_proxy::~freezable_proxy() {
  boost::asio::post(io_, [this] {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
  });
  io_.stop();
  thread_.join();
}

std::string freezable_proxy::endpoint() const {
  return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
}

void freezable_proxy::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket client) {
    if (ec) return;
    if (!frozen_->load()) {
      tcp::socket server(io_);
      boost::system::error_code cec;
      server.connect(target_, cec);  // loopback: immediate
      if (!cec) {
        auto c = std::make_shared<connection>(std::move(client), std::move(server), frozen_);
        c->start();
        connections_.push_back(std::move(c));
      }
    } else {
      // Frozen: the kernel accepted it anyway; it stays open and silent.
      connections_.push_back(
          std::make_shared<connection>(std::move(client), tcp::socket(io_), frozen_));
    }
    accept();
  });
}

}  // namespace troupe::bench
