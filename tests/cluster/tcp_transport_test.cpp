// ctest-labels: concurrency
// The TCP transport on 127.0.0.1, plain and with mutual TLS: bytes both ways, ordered frames,
// closing, shutdown; and TLS refusals (a rogue CA, no certificate, no TLS at all, silence), each
// logged and contained. The executor runs on its own thread, as in a node; every wait has a
// deadline, and every test ends by checking that shutdown left no work behind.
#include <troupe/cluster/errc.hpp>
#include <troupe/cluster/tcp_transport.hpp>
#include <troupe/cluster/wire/frame.hpp>
#include <troupe/testkit/log_capture.hpp>
#include <troupe/testkit/test_probe.hpp>

#include "cluster/support/io_thread.hpp"
#include "cluster/support/stream_probe.hpp"
#include "cluster/support/test_certs.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdlib.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace troupe::cluster {
namespace {

using namespace std::chrono_literals;
using test::accept_queue;
using test::bytes_of;
using test::cert_file;
using test::certs;
using test::connect_and_wait;
using test::node_files;
using test::stream_probe;
using test::text_of;
using test::write_and_wait;
using testing::HasSubstr;
namespace asio = boost::asio;
using ip_tcp = asio::ip::tcp;

const node_address loopback{"127.0.0.1", 0};

std::error_code asio_code(asio::error::basic_errors e) { return boost::system::error_code(e); }
std::error_code asio_code(asio::error::misc_errors e) { return boost::system::error_code(e); }

// -- certificates -------------------------------------------------------------------------------

// -- peers --------------------------------------------------------------------------------------

/// Sends back everything it reads, one write at a time (coalescing what arrives meanwhile), from
/// inside its handlers on the executor: the in-thread path of async_write.
class echo_peer : public std::enable_shared_from_this<echo_peer> {
 public:
  static void attach(const std::shared_ptr<stream>& s) {
    auto peer = std::make_shared<echo_peer>(s);
    s->start([peer](std::span<const std::byte> data) { peer->echo(data); },
             [peer](std::error_code) { peer->stream_.reset(); });
  }
  explicit echo_peer(std::shared_ptr<stream> s) : stream_(std::move(s)) {}

 private:
  void echo(std::span<const std::byte> data) {
    pending_.insert(pending_.end(), data.begin(), data.end());
    flush();
  }
  void flush() {
    if (writing_ || pending_.empty() || !stream_) return;
    writing_ = true;
    stream_->async_write(std::exchange(pending_, {}), [self = shared_from_this()](auto ec) {
      self->writing_ = false;
      if (!ec) self->flush();
    });
  }

  std::shared_ptr<stream> stream_;
  byte_buffer pending_;
  bool writing_ = false;
};

/// Writes `total` frames carrying their sequence numbers, in writes of 1 to 61 frames, each write
/// issued from the previous one's done on the executor, as the node layer does.
class frame_writer : public std::enable_shared_from_this<frame_writer> {
 public:
  frame_writer(std::shared_ptr<stream> s, std::uint32_t total)
      : stream_(std::move(s)), total_(total) {}

  void write_next() {
    if (next_ == total_) {
      finished_ = true;
      return;
    }
    byte_buffer batch;
    const std::uint32_t n = std::min(total_ - next_, 1 + (next_ * 7) % 61);
    for (std::uint32_t i = 0; i < n; ++i, ++next_) {
      wire::append_frame(batch, wire::frame_kind::message,
                         [seq = next_](byte_buffer& b) { append_payload(b, seq); });
    }
    ++writes_;
    stream_->async_write(std::move(batch), [self = shared_from_this()](std::error_code ec) {
      if (ec) self->failed_ = true;
      ++self->done_;
      if (!ec) self->write_next();
    });
  }

  /// Sequence number (4 bytes, little-endian) and `seq % 37` filler bytes.
  static void append_payload(byte_buffer& b, std::uint32_t seq) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::byte>((seq >> (8 * i)) & 0xff));
    b.insert(b.end(), seq % 37, std::byte{0x5a});
  }

  [[nodiscard]] bool finished() const { return finished_; }
  [[nodiscard]] bool failed() const { return failed_; }
  [[nodiscard]] bool all_writes_done() const { return done_ == writes_; }

 private:
  std::shared_ptr<stream> stream_;
  std::uint32_t total_;
  std::uint32_t next_ = 0;
  std::atomic<std::uint32_t> writes_{0};
  std::atomic<std::uint32_t> done_{0};
  std::atomic<bool> finished_{false};
  std::atomic<bool> failed_{false};
};

/// Decodes frames from a stream and checks that they come in sequence.
class frame_checker {
 public:
  void attach(const std::shared_ptr<stream>& s) {
    s->start(
        [this](std::span<const std::byte> data) {
          if (!decoder_.feed(data, [this](const wire::frame_view& f) { check(f); })) {
            broken_ = true;
          }
        },
        [](std::error_code) {});
  }
  [[nodiscard]] std::uint32_t decoded() const { return decoded_; }
  [[nodiscard]] bool broken() const { return broken_; }

 private:
  void check(const wire::frame_view& f) {
    std::uint32_t seq = 0;
    for (int i = 0; i < 4 && static_cast<std::size_t>(i) < f.payload.size(); ++i) {
      seq |= static_cast<std::uint32_t>(f.payload[static_cast<std::size_t>(i)]) << (8 * i);
    }
    if (seq != decoded_.load() || f.payload.size() != 4 + seq % 37) broken_ = true;
    ++decoded_;
  }

  wire::frame_decoder decoder_;  // used on the executor only
  std::atomic<std::uint32_t> decoded_{0};
  std::atomic<bool> broken_{false};
};

// -- fixture ------------------------------------------------------------------------------------

enum class security { plain, tls };

class TcpTransportBase : public testing::Test {
 protected:
  std::unique_ptr<tcp_transport> make(std::optional<tls_options> tls,
                                      tcp_options options = tcp_options()) {
    if (tls) options.with_tls(*tls);
    return std::make_unique<tcp_transport>(io_.executor(), options);
  }

  /// Shuts every transport down and checks that the executor then has nothing left to do.
  void finish(std::initializer_list<tcp_transport*> transports) {
    for (auto* t : transports) t->shutdown();
    EXPECT_TRUE(io_.drain()) << "work was left on the executor after shutdown";
  }

  testkit::log_capture logs_;  // before io_, whose thread logs
  test::io_thread io_;
};

class TcpTransport : public TcpTransportBase, public testing::WithParamInterface<security> {
 protected:
  /// A transport as a node of the parameter's kind: plain, or TLS with a cluster certificate.
  std::unique_ptr<tcp_transport> make_node(const std::string& node,
                                           tcp_options options = tcp_options()) {
    if (GetParam() == security::plain) return make(std::nullopt, options);
    return make(node_files(node), options);
  }
};

class TcpTransportPlain : public TcpTransportBase {};
class TcpTransportTls : public TcpTransportBase {};

// -- plain and TLS ------------------------------------------------------------------------------

TEST_P(TcpTransport, EchoesBytesBothWays) {
  auto server = make_node("node-a");
  accept_queue accepted;
  const auto at = server->listen(loopback, accepted.handler());
  EXPECT_EQ(at.host, "127.0.0.1");
  ASSERT_NE(at.port, 0);
  auto client = make_node("node-b");

  auto connected = connect_and_wait(*client, at);
  ASSERT_FALSE(connected.error) << connected.error.message();
  auto served = accepted.pop();
  ASSERT_NE(served, nullptr);
  echo_peer::attach(served);
  auto probe = stream_probe::attach(connected.stream);

  EXPECT_FALSE(write_and_wait(*connected.stream, bytes_of("hello, ")));
  EXPECT_FALSE(write_and_wait(*connected.stream, bytes_of("node")));
  EXPECT_EQ(text_of(probe->wait_for_bytes(11)), "hello, node");

  const std::string suffix = GetParam() == security::tls ? " \\(tls\\)" : "";
  EXPECT_THAT(connected.stream->describe(),
              testing::MatchesRegex("tcp 127\\.0\\.0\\.1:[0-9]+ -> 127\\.0\\.0\\.1:" +
                                    std::to_string(at.port) + suffix));
  EXPECT_THAT(served->describe(),
              testing::MatchesRegex("tcp 127\\.0\\.0\\.1:" + std::to_string(at.port) +
                                    " -> 127\\.0\\.0\\.1:[0-9]+" + suffix));
  finish({client.get(), server.get()});
}

TEST_P(TcpTransport, DeliversTenThousandFramesInOrderAndCompletesEveryWrite) {
  auto server = make_node("node-a");
  accept_queue accepted;
  const auto at = server->listen(loopback, accepted.handler());
  auto client = make_node("node-b");
  auto connected = connect_and_wait(*client, at);
  ASSERT_FALSE(connected.error) << connected.error.message();
  auto served = accepted.pop();
  ASSERT_NE(served, nullptr);

  frame_checker checker;
  checker.attach(served);
  constexpr std::uint32_t total = 10'000;
  auto writer = std::make_shared<frame_writer>(connected.stream, total);
  io_.call([&] { writer->write_next(); });

  testkit::await_condition([&] { return checker.decoded() == total || checker.broken(); }, 30s,
                           "all frames decoded");
  EXPECT_FALSE(checker.broken()) << "a frame came out of order or malformed";
  EXPECT_EQ(checker.decoded(), total);
  testkit::await_condition([&] { return writer->finished() && writer->all_writes_done(); }, 5s,
                           "every write completed");
  EXPECT_FALSE(writer->failed());
  finish({client.get(), server.get()});
}

TEST_P(TcpTransport, CompletesAWriteLargerThanTheSocketBuffers) {
  auto server = make_node("node-a");
  accept_queue accepted;
  const auto at = server->listen(loopback, accepted.handler());
  auto client = make_node("node-b", tcp_options().with_send_buffer_size(64 * 1024));
  auto connected = connect_and_wait(*client, at);
  ASSERT_FALSE(connected.error) << connected.error.message();
  auto served = accepted.pop();
  ASSERT_NE(served, nullptr);
  auto probe = stream_probe::attach(served);

  byte_buffer big(8U << 20U);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::byte>(i * 31 % 251);
  const auto expected = big;
  EXPECT_FALSE(write_and_wait(*connected.stream, std::move(big), 30s));
  EXPECT_TRUE(probe->wait_for_bytes(expected.size(), 30s) == expected);
  finish({client.get(), server.get()});
}

TEST_P(TcpTransport, ClosingEndsBothSidesOnceEach) {
  auto server = make_node("node-a");
  accept_queue accepted;
  const auto at = server->listen(loopback, accepted.handler());
  auto client = make_node("node-b");
  auto connected = connect_and_wait(*client, at);
  ASSERT_FALSE(connected.error) << connected.error.message();
  auto served = accepted.pop();
  ASSERT_NE(served, nullptr);
  auto server_side = stream_probe::attach(served);
  auto client_side = stream_probe::attach(connected.stream);

  connected.stream->close();
  connected.stream->close();  // idempotent
  EXPECT_EQ(client_side->wait_closed(), asio_code(asio::error::operation_aborted));
  EXPECT_EQ(server_side->wait_closed(), asio_code(asio::error::eof));

  // A write after the end fails, through its handler and never inline.
  EXPECT_EQ(write_and_wait(*connected.stream, bytes_of("late")),
            asio_code(asio::error::operation_aborted));
  EXPECT_EQ(write_and_wait(*served, bytes_of("late")), asio_code(asio::error::not_connected));
  io_.barrier();
  EXPECT_EQ(client_side->closed_count(), 1);
  EXPECT_EQ(server_side->closed_count(), 1);
  finish({client.get(), server.get()});
}

TEST_P(TcpTransport, ShutdownClosesLiveStreamsAndStopsListening) {
  auto server = make_node("node-a");
  accept_queue accepted;
  const auto at = server->listen(loopback, accepted.handler());
  auto client = make_node("node-b");
  auto connected = connect_and_wait(*client, at);
  ASSERT_FALSE(connected.error) << connected.error.message();
  auto served = accepted.pop();
  ASSERT_NE(served, nullptr);
  auto server_side = stream_probe::attach(served);
  auto client_side = stream_probe::attach(connected.stream);

  server->shutdown();
  server->shutdown();  // idempotent
  EXPECT_EQ(server_side->wait_closed(), asio_code(asio::error::operation_aborted));
  const auto client_end = client_side->wait_closed();
  ASSERT_TRUE(client_end.has_value()) << "the peer of a shut-down transport must see the end";
  EXPECT_TRUE(*client_end == asio_code(asio::error::eof) ||
              *client_end == asio_code(asio::error::connection_reset))
      << client_end->message();

  // The transport may go away while its executor runs; nobody listens there any more.
  server.reset();
  EXPECT_EQ(connect_and_wait(*client, at).error, errc::node_unreachable);
  EXPECT_EQ(accepted.count(), 1);
  finish({client.get()});
}

TEST_P(TcpTransport, AfterShutdownNoAcceptOrConnectHandlerRuns) {
  auto t = make_node("node-a");
  t->shutdown();
  EXPECT_THROW(t->listen(loopback, [](auto) {}), cluster_error);

  std::atomic<bool> called{false};
  t->connect(node_address{"127.0.0.1", 9}, [&](auto, auto) { called = true; });
  io_.barrier();  // the connect was posted before: it has run and found the transport shut down
  EXPECT_FALSE(called);
  finish({t.get()});
}

INSTANTIATE_TEST_SUITE_P(Security, TcpTransport, testing::Values(security::plain, security::tls),
                         [](const testing::TestParamInfo<security>& param) {
                           return param.param == security::plain ? "Plain" : "Tls";
                         });

// -- plain TCP ----------------------------------------------------------------------------------

TEST_F(TcpTransportPlain, ConnectToAClosedPortFailsAsUnreachable) {
  std::uint16_t port = 0;
  {
    asio::io_context scratch;
    ip_tcp::acceptor probe(scratch, ip_tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    port = probe.local_endpoint().port();
  }  // closed again: nothing listens on `port`
  auto client = make(std::nullopt);
  EXPECT_EQ(connect_and_wait(*client, node_address{"127.0.0.1", port}).error,
            errc::node_unreachable);
  finish({client.get()});
}

TEST_F(TcpTransportPlain, ConnectResolvesHostNames) {
  auto server = make(std::nullopt);
  accept_queue accepted;
  const auto at = server->listen(loopback, accepted.handler());
  auto client = make(std::nullopt);
  auto connected = connect_and_wait(*client, node_address{"localhost", at.port});
  ASSERT_FALSE(connected.error) << connected.error.message();
  EXPECT_NE(accepted.pop(), nullptr);
  finish({client.get(), server.get()});
}

TEST_F(TcpTransportPlain, ListeningOnAPortInUseThrowsWithTheAddress) {
  auto first = make(std::nullopt);
  const auto at = first->listen(loopback, [](auto) {});
  auto second = make(std::nullopt);
  try {
    second->listen(at, [](auto) {});
    ADD_FAILURE() << "expected cluster_error";
  } catch (const cluster_error& e) {
    EXPECT_EQ(e.value(), errc::transport_failure);
    EXPECT_THAT(e.what(), HasSubstr(to_string(at)));
  }
  finish({first.get(), second.get()});
}

// -- TLS ----------------------------------------------------------------------------------------

/// What a hand-made client saw: the handshake's outcome, then the first read's.
struct raw_outcome {
  boost::system::error_code handshake;
  boost::system::error_code read;
};

/// Connects a hand-made TLS client that trusts the cluster CA but has no certificate itself,
/// handshakes and reads, all within `timeout`.
raw_outcome tls_client_without_certificate(std::uint16_t port, troupe::duration timeout = 10s) {
  asio::io_context io;
  asio::ssl::context context(asio::ssl::context::tls_client);
  context.load_verify_file(cert_file("ca.crt"));
  context.set_verify_mode(asio::ssl::verify_peer);
  asio::ssl::stream<ip_tcp::socket> client(io, context);
  client.lowest_layer().connect(ip_tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  raw_outcome outcome;
  outcome.read = asio::error::timed_out;
  std::array<char, 16> buffer{};
  client.async_handshake(asio::ssl::stream_base::client, [&](boost::system::error_code ec) {
    outcome.handshake = ec;
    if (ec) return;
    client.async_read_some(asio::buffer(buffer),
                           [&](boost::system::error_code e, std::size_t) { outcome.read = e; });
  });
  io.run_for(testkit::dilated(timeout));
  return outcome;
}

TEST_F(TcpTransportTls, RefusesAClientWhoseCertificateARogueCaSigned) {
  auto server = make(node_files("node-a"));
  accept_queue accepted;
  const auto at = server->listen(loopback, accepted.handler());
  // Trusts the cluster CA, so it accepts the server; the server must not accept it.
  auto rogue = make(
      tls_options{cert_file("ca.crt"), cert_file("rogue-node.crt"), cert_file("rogue-node.key")});

  auto connected = connect_and_wait(*rogue, at);
  if (connected.error) {
    EXPECT_EQ(connected.error, errc::handshake_refused);
  } else {
    // TLS 1.3: the client finished before the server checked its certificate; the server's
    // alert then ends the stream.
    auto probe = stream_probe::attach(connected.stream);
    EXPECT_TRUE(probe->wait_closed().has_value()) << "a refused client's stream must end";
  }
  const auto line = logs_.wait_for_line(
      {"warning", "refused a TLS connection from 127.0.0.1:", "certificate verify failed"});
  EXPECT_FALSE(line.empty()) << logs_.text();
  EXPECT_THAT(line, HasSubstr("unable to get local issuer certificate"));
  io_.barrier();
  EXPECT_EQ(accepted.count(), 0);
  finish({rogue.get(), server.get()});
}

TEST_F(TcpTransportTls, ClientRefusesAServerWhoseCertificateARogueCaSigned) {
  auto rogue_server = make(
      tls_options{cert_file("ca.crt"), cert_file("rogue-node.crt"), cert_file("rogue-node.key")});
  accept_queue accepted;
  const auto at = rogue_server->listen(loopback, accepted.handler());
  auto client = make(node_files("node-b"));

  EXPECT_EQ(connect_and_wait(*client, at).error, errc::handshake_refused);
  EXPECT_FALSE(
      logs_.wait_for_line({"warning", "TLS handshake with " + to_string(at), "certificate verify"})
          .empty())
      << logs_.text();
  io_.barrier();
  EXPECT_EQ(accepted.count(), 0);
  finish({client.get(), rogue_server.get()});
}

TEST_F(TcpTransportTls, RefusesAClientWithoutACertificate) {
  auto server = make(node_files("node-a"));
  accept_queue accepted;
  const auto at = server->listen(loopback, accepted.handler());

  const auto outcome = tls_client_without_certificate(at.port);
  EXPECT_TRUE(outcome.handshake || (outcome.read && outcome.read != asio::error::timed_out))
      << "handshake: " << outcome.handshake.message() << ", read: " << outcome.read.message();
  EXPECT_FALSE(
      logs_.wait_for_line({"refused a TLS connection", "peer did not return a certificate"})
          .empty())
      << logs_.text();
  io_.barrier();
  EXPECT_EQ(accepted.count(), 0);
  finish({server.get()});
}

TEST_F(TcpTransportTls, RefusesPlainTcpAndKeepsServingOthers) {
  auto server = make(node_files("node-a"));
  accept_queue accepted;
  const auto at = server->listen(loopback, accepted.handler());
  {
    asio::io_context io;
    ip_tcp::socket raw(io);
    raw.connect(ip_tcp::endpoint(asio::ip::make_address("127.0.0.1"), at.port));
    asio::write(raw, asio::buffer(std::string("GET / HTTP/1.0\r\n\r\n")));
    EXPECT_FALSE(logs_.wait_for_line({"refused a TLS connection from 127.0.0.1:"}).empty())
        << logs_.text();
  }
  auto client = make(node_files("node-b"));
  auto connected = connect_and_wait(*client, at);
  ASSERT_FALSE(connected.error) << connected.error.message();
  auto served = accepted.pop();
  ASSERT_NE(served, nullptr);
  echo_peer::attach(served);
  auto probe = stream_probe::attach(connected.stream);
  EXPECT_FALSE(write_and_wait(*connected.stream, bytes_of("still here")));
  EXPECT_EQ(text_of(probe->wait_for_bytes(10)), "still here");
  EXPECT_EQ(accepted.count(), 1);
  finish({client.get(), server.get()});
}

TEST_F(TcpTransportTls, DropsAClientThatNeverStartsTheHandshake) {
  auto server = make(node_files("node-a"),
                     tcp_options().with_connect_timeout(std::chrono::milliseconds(200)));
  accept_queue accepted;
  const auto at = server->listen(loopback, accepted.handler());

  asio::io_context io;
  ip_tcp::socket silent(io);
  silent.connect(ip_tcp::endpoint(asio::ip::make_address("127.0.0.1"), at.port));
  EXPECT_FALSE(
      logs_.wait_for_line({"refused a TLS connection", "no TLS handshake within 200 ms"}).empty())
      << logs_.text();
  std::array<char, 1> byte{};
  boost::system::error_code read_error = asio::error::timed_out;
  silent.async_read_some(asio::buffer(byte),
                         [&](boost::system::error_code ec, std::size_t) { read_error = ec; });
  io.run_for(testkit::dilated(5s));
  EXPECT_EQ(read_error, asio::error::eof) << read_error.message();
  EXPECT_EQ(accepted.count(), 0);
  finish({server.get()});
}

TEST_F(TcpTransportTls, ConnectTimesOutWhenTheServerNeverAnswersTheHandshake) {
  // A listening socket that never accepts: the kernel completes TCP's handshake, nobody TLS's.
  asio::io_context scratch;
  ip_tcp::acceptor mute(scratch, ip_tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const node_address at{"127.0.0.1", mute.local_endpoint().port()};
  auto client = make(node_files("node-b"),
                     tcp_options().with_connect_timeout(std::chrono::milliseconds(200)));

  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(connect_and_wait(*client, at).error, errc::node_unreachable);
  EXPECT_GE(std::chrono::steady_clock::now() - started, 200ms);
  finish({client.get()});
}

TEST_F(TcpTransportTls, BadFilesThrowAtConstructionNamingTheFile) {
  const std::string missing = (certs() / "missing.crt").string();
  const std::string garbage = (certs() / "garbage.pem").string();
  std::ofstream(garbage) << "not a certificate\n";

  auto expect_failure = [&](const tls_options& files, const std::string& named) {
    try {
      tcp_transport t(io_.executor(), tcp_options().with_tls(files));
      ADD_FAILURE() << "expected cluster_error naming " << named;
    } catch (const cluster_error& e) {
      EXPECT_EQ(e.value(), errc::transport_failure);
      EXPECT_THAT(e.what(), HasSubstr(named));
    }
  };
  auto files = node_files("node-a");
  expect_failure({missing, files.cert_file, files.key_file}, missing);
  expect_failure({files.ca_file, missing, files.key_file}, missing);
  expect_failure({files.ca_file, files.cert_file, missing}, missing);
  expect_failure({garbage, files.cert_file, files.key_file}, garbage);
  expect_failure({files.ca_file, garbage, files.key_file}, garbage);
  expect_failure({files.ca_file, files.cert_file, garbage}, garbage);
  // node-b's key with node-a's certificate.
  expect_failure({files.ca_file, files.cert_file, cert_file("node-b.key")},
                 cert_file("node-b.key"));
  finish({});
}

}  // namespace
}  // namespace troupe::cluster
