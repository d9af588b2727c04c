// ctest-labels: concurrency
#include <troupe/cluster/errc.hpp>
#include <troupe/cluster/memory_network.hpp>
#include <troupe/cluster/wire/frame.hpp>

#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace troupe::cluster {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// -- waiting with deadlines ----------------------------------------------------------------------

/// `d` scaled by TROUPE_TEST_TIMEFACTOR (default 1), for sanitizers and loaded machines.
clock_type::duration dilated(clock_type::duration d) {
  const char* f = std::getenv("TROUPE_TEST_TIMEFACTOR");
  const double factor = f != nullptr && std::atof(f) > 0 ? std::atof(f) : 1.0;
  return std::chrono::duration_cast<clock_type::duration>(d * factor);
}

/// Polls `condition` until it holds (true) or `timeout` passes (false).
template <class Condition>
bool eventually(Condition condition, clock_type::duration timeout = 10s) {
  const auto deadline = clock_type::now() + dilated(timeout);
  while (!condition()) {
    if (clock_type::now() >= deadline) return false;
    std::this_thread::sleep_for(200us);
  }
  return true;
}

std::error_code asio_code(boost::asio::error::basic_errors e) {
  return boost::asio::error::make_error_code(e);
}
std::error_code eof() { return boost::asio::error::make_error_code(boost::asio::error::eof); }

byte_buffer bytes_of(std::string_view text) {
  byte_buffer b;
  for (char c : text) b.push_back(static_cast<std::byte>(c));
  return b;
}

// -- a node: its own io_context, thread and transport ------------------------------------------

/// One node of a test: a transport listening at an address, run by its own thread. Accepted
/// streams are kept, not started: a test starts them (e.g. through a `recorder`).
class test_node {
 public:
  test_node(memory_network& network, const node_address& at)
      : guard_(boost::asio::make_work_guard(io_)),
        transport_(network.make_transport(io_.get_executor())),
        thread_([this] { io_.run(); }) {
    address_ = transport_->listen(at, [this](std::shared_ptr<stream> s) {
      std::lock_guard lock(mutex_);
      accepted_.push_back(std::move(s));
    });
  }
  ~test_node() {
    guard_.reset();
    io_.stop();
    thread_.join();
  }
  test_node(const test_node&) = delete;
  test_node& operator=(const test_node&) = delete;

  [[nodiscard]] const node_address& address() const { return address_; }
  transport& net() { return *transport_; }
  boost::asio::io_context& io() { return io_; }
  /// Drops the transport (it shuts down) while the thread still runs.
  void destroy_transport() { transport_.reset(); }

  std::size_t accepted_count() {
    std::lock_guard lock(mutex_);
    return accepted_.size();
  }
  /// The `n`th accepted stream (0-based), waiting for it.
  std::shared_ptr<stream> accepted(std::size_t n) {
    EXPECT_TRUE(eventually([&] { return accepted_count() > n; })) << "no accept #" << n;
    std::lock_guard lock(mutex_);
    return n < accepted_.size() ? accepted_[n] : nullptr;
  }

  /// Takes the `n`th accepted stream out of the node, so the test holds the only reference.
  std::shared_ptr<stream> take_accepted(std::size_t n) {
    auto s = accepted(n);
    std::lock_guard lock(mutex_);
    accepted_[n].reset();
    return s;
  }

  /// Connects to `peer` and waits for the outcome.
  std::pair<std::error_code, std::shared_ptr<stream>> connect(const node_address& peer) {
    auto result =
        std::make_shared<std::promise<std::pair<std::error_code, std::shared_ptr<stream>>>>();
    auto outcome = result->get_future();
    transport_->connect(peer, [result](std::error_code ec, std::shared_ptr<stream> s) {
      result->set_value({ec, std::move(s)});
    });
    if (outcome.wait_for(dilated(10s)) != std::future_status::ready) {
      ADD_FAILURE() << "connect to " << to_string(peer) << " never completed";
      return {};
    }
    return outcome.get();
  }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::shared_ptr<transport> transport_;
  std::thread thread_;
  node_address address_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<stream>> accepted_;
};

// -- a started stream that records what happens to it ------------------------------------------

/// Where every recorder of a test appends the chunks it receives, in arrival order.
struct arrival_log {
  std::mutex mutex;
  std::vector<std::string> chunks;
};

/// Starts a stream and records its chunks, their arrival times and how it ended. The handlers
/// share the state, not the recorder, so they may run after the recorder is gone.
class recorder {
 public:
  explicit recorder(std::shared_ptr<stream> s, std::shared_ptr<arrival_log> log = nullptr)
      : stream_(std::move(s)), state_(std::make_shared<state>()) {
    state_->log = std::move(log);
    stream_->start(
        [st = state_](std::span<const std::byte> data) {
          std::string chunk(reinterpret_cast<const char*>(data.data()), data.size());
          std::lock_guard lock(st->mutex);
          st->text += chunk;
          st->arrivals.push_back(clock_type::now());
          if (st->log) {
            std::lock_guard log_lock(st->log->mutex);
            st->log->chunks.push_back(chunk);
          }
        },
        [st = state_](std::error_code ec) {
          std::lock_guard lock(st->mutex);
          if (st->closed) st->closed_twice = true;
          st->closed = ec;
        });
  }

  /// Writes `text` as one write and waits until the network took it; returns the outcome.
  std::error_code write(std::string_view text) {
    auto done = std::make_shared<std::promise<std::error_code>>();
    auto outcome = done->get_future();
    stream_->async_write(bytes_of(text), [done](std::error_code ec) { done->set_value(ec); });
    if (outcome.wait_for(dilated(10s)) != std::future_status::ready) {
      ADD_FAILURE() << "write never completed";
      return {};
    }
    return outcome.get();
  }
  void close() { stream_->close(); }
  stream& raw() { return *stream_; }

  std::string text() {
    std::lock_guard lock(state_->mutex);
    return state_->text;
  }
  std::vector<clock_type::time_point> arrivals() {
    std::lock_guard lock(state_->mutex);
    return state_->arrivals;
  }
  std::optional<std::error_code> closed() {
    std::lock_guard lock(state_->mutex);
    return state_->closed;
  }
  bool closed_twice() {
    std::lock_guard lock(state_->mutex);
    return state_->closed_twice;
  }
  /// Waits until the text ends with `suffix`.
  bool receives(const std::string& suffix) {
    return eventually([&] {
      auto t = text();
      return t.size() >= suffix.size() &&
             t.compare(t.size() - suffix.size(), suffix.size(), suffix) == 0;
    });
  }
  /// Waits until the stream ended; returns why.
  std::optional<std::error_code> wait_closed() {
    eventually([&] { return closed().has_value(); });
    return closed();
  }

 private:
  struct state {
    std::mutex mutex;
    std::string text;
    std::vector<clock_type::time_point> arrivals;
    std::optional<std::error_code> closed;
    bool closed_twice = false;
    std::shared_ptr<arrival_log> log;
  };
  std::shared_ptr<stream> stream_;
  std::shared_ptr<state> state_;
};

/// Two nodes "a" and "b", with b connected to a: `at_b` is b's end, `at_a` the accepted one.
struct connected_pair {
  explicit connected_pair(std::uint64_t seed = 7)
      : network(std::make_shared<memory_network>(seed)),
        a(*network, {"a", 1}),
        b(*network, {"b", 2}) {
    auto [ec, s] = b.connect(a.address());
    EXPECT_FALSE(ec) << ec.message();
    at_b = std::make_unique<recorder>(s);
    at_a = std::make_unique<recorder>(a.accepted(0));
  }

  std::shared_ptr<memory_network> network;
  test_node a;
  test_node b;
  std::unique_ptr<recorder> at_b;
  std::unique_ptr<recorder> at_a;
};

// -- streams -------------------------------------------------------------------------------------

TEST(MemoryNetwork, BytesFlowBothWaysInOrder) {
  connected_pair p;
  EXPECT_FALSE(p.at_b->write("hel"));
  EXPECT_FALSE(p.at_b->write("lo "));
  EXPECT_FALSE(p.at_b->write("world"));
  EXPECT_FALSE(p.at_a->write("pong"));
  EXPECT_TRUE(p.at_a->receives("hello world")) << p.at_a->text();
  EXPECT_TRUE(p.at_b->receives("pong")) << p.at_b->text();
  EXPECT_EQ(p.at_a->text(), "hello world");
  EXPECT_EQ(p.network->stats({"b", 2}, {"a", 1}).delivered, 3U);
  EXPECT_EQ(p.network->stats({"a", 1}, {"b", 2}).delivered, 1U);
  EXPECT_EQ(p.at_b->raw().describe(), "memory b:2 -> a:1");
}

TEST(MemoryNetwork, TenThousandFramesThroughAFrameDecoderArriveInOrder) {
  constexpr std::uint32_t frames = 10'000;
  memory_network network(11);
  test_node a(network, {"a", 1});
  test_node b(network, {"b", 2});
  auto [ec, sender] = b.connect(a.address());
  ASSERT_FALSE(ec);

  struct decoded {
    wire::frame_decoder decoder{64};
    std::atomic<std::uint32_t> count{0};
    std::atomic<bool> out_of_order{false};
  };
  auto got = std::make_shared<decoded>();
  a.accepted(0)->start(
      [got](std::span<const std::byte> data) {
        const bool ok = got->decoder.feed(data, [&](const wire::frame_view& f) {
          std::uint32_t n = 0;
          std::memcpy(&n, f.payload.data(), std::min(f.payload.size(), sizeof n));
          if (f.payload.size() != sizeof n || n != got->count) got->out_of_order = true;
          ++got->count;
        });
        if (!ok) got->out_of_order = true;
      },
      [](std::error_code) {});
  sender->start([](std::span<const std::byte>) {}, [](std::error_code) {});

  // One frame per write, each issued from the previous one's completion (one write at a time),
  // on the sender's executor as the node layer does it.
  struct frame_writer : std::enable_shared_from_this<frame_writer> {
    std::shared_ptr<stream> out;
    void write(std::uint32_t n) {
      if (n == frames) return;
      byte_buffer frame;
      wire::append_frame(frame, wire::frame_kind::message, [n](byte_buffer& b) {
        const auto* p = reinterpret_cast<const std::byte*>(&n);
        b.insert(b.end(), p, p + sizeof n);
      });
      out->async_write(std::move(frame), [self = shared_from_this(), n](std::error_code e) {
        if (!e) self->write(n + 1);
      });
    }
  };
  auto writer = std::make_shared<frame_writer>();
  writer->out = sender;
  boost::asio::post(b.io(), [writer] { writer->write(0); });

  EXPECT_TRUE(eventually([&] { return got->count == frames; }, 60s)) << got->count;
  EXPECT_FALSE(got->out_of_order);
}

TEST(MemoryNetwork, CloseDeliversWhatWasWrittenThenEofToThePeer) {
  connected_pair p;
  EXPECT_FALSE(p.at_a->write("refused: wrong cluster"));
  p.at_a->close();
  EXPECT_EQ(p.at_a->wait_closed(), asio_code(boost::asio::error::operation_aborted));
  EXPECT_EQ(p.at_b->wait_closed(), eof());
  EXPECT_EQ(p.at_b->text(), "refused: wrong cluster");
  EXPECT_EQ(p.at_a->write("late"), asio_code(boost::asio::error::operation_aborted));
  p.at_a->close();  // idempotent
  p.at_b->close();
  EXPECT_TRUE(eventually([&] { return p.at_b->closed() == eof(); }));
  EXPECT_FALSE(p.at_a->closed_twice());
  EXPECT_FALSE(p.at_b->closed_twice());
}

TEST(MemoryNetwork, ConnectToAnUnknownAddressFailsAsUnreachable) {
  memory_network network(1);
  test_node a(network, {"a", 1});
  auto [ec, s] = a.connect({"nowhere", 9});
  EXPECT_EQ(ec, make_error_code(errc::node_unreachable));
  EXPECT_EQ(s, nullptr);
}

TEST(MemoryNetwork, ListenAssignsFreePortsAndRefusesATakenAddress) {
  memory_network network(1);
  test_node a(network, {"a", 0});
  test_node b(network, {"a", 0});
  EXPECT_NE(a.address().port, 0);
  EXPECT_NE(a.address(), b.address());
  try {
    a.net().listen(b.address(), [](std::shared_ptr<stream>) {});
    ADD_FAILURE() << "expected cluster_error";
  } catch (const cluster_error& e) {
    EXPECT_EQ(e.value(), errc::transport_failure);
  }
}

TEST(MemoryNetwork, ShutdownClosesStreamsAndStopsListening) {
  connected_pair p;
  p.b.net().shutdown();
  EXPECT_EQ(p.at_b->wait_closed(), asio_code(boost::asio::error::operation_aborted));
  EXPECT_EQ(p.at_a->wait_closed(), eof());
  auto [ec, s] = p.a.connect(p.b.address());
  EXPECT_EQ(ec, make_error_code(errc::node_unreachable));
  p.b.net().shutdown();  // idempotent
}

// -- faults ----------------------------------------------------------------------------------

TEST(MemoryNetwork, DropOneLosesEveryWriteAndDropZeroNone) {
  connected_pair p;
  const node_address a{"a", 1};
  const node_address b{"b", 2};
  p.network->drop(b, a, 1.0);
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(p.at_b->write("x"));  // lost, yet "sent"
  p.network->drop(b, a, 0.0);
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(p.at_b->write("y"));
  // In order within the stream: once the last y arrived, any x would have come before it.
  EXPECT_TRUE(eventually([&] { return p.at_a->text().size() >= 100; }));
  EXPECT_EQ(p.at_a->text(), std::string(100, 'y'));
  EXPECT_EQ(p.network->stats(b, a).delivered, 100U);
  EXPECT_EQ(p.network->stats(b, a).dropped, 100U);
  EXPECT_FALSE(p.at_a->closed());
}

/// The writes `0;` ... `999;` from b to a with half of them dropped: what arrived.
std::string delivered_with_half_dropped(std::uint64_t seed) {
  connected_pair p(seed);
  p.network->drop({"b", 2}, {"a", 1}, 0.5);
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(p.at_b->write(std::to_string(i) + ";"));
  p.network->drop({"b", 2}, {"a", 1}, 0);
  EXPECT_FALSE(p.at_b->write("end"));
  EXPECT_TRUE(p.at_a->receives("end"));
  const auto stats = p.network->stats({"b", 2}, {"a", 1});
  EXPECT_EQ(stats.delivered + stats.dropped, 1001U);
  return p.at_a->text();
}

TEST(MemoryNetwork, DropHalfWithTheSameSeedDeliversTheSameWritesInEveryRun) {
  const auto first = delivered_with_half_dropped(2024);
  const auto second = delivered_with_half_dropped(2024);
  const auto other_seed = delivered_with_half_dropped(2025);
  EXPECT_EQ(first, second);
  EXPECT_NE(first, other_seed);
  const auto delivered = std::count(first.begin(), first.end(), ';');
  EXPECT_GT(delivered, 400);
  EXPECT_LT(delivered, 600);
}

TEST(MemoryNetwork, DelayDeliversNoSoonerThanTheMinimumAndInOrder) {
  connected_pair p;
  p.network->delay({"b", 2}, {"a", 1}, 20ms, 40ms);
  std::vector<clock_type::time_point> sent;
  std::string expected;
  for (int i = 0; i < 30; ++i) {
    sent.push_back(clock_type::now());
    expected += std::to_string(i) + ";";
    EXPECT_FALSE(p.at_b->write(std::to_string(i) + ";"));
  }
  ASSERT_TRUE(p.at_a->receives("29;"));
  EXPECT_EQ(p.at_a->text(), expected);
  const auto arrived = p.at_a->arrivals();
  ASSERT_EQ(arrived.size(), sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) EXPECT_GE(arrived[i] - sent[i], 20ms) << i;
}

TEST(MemoryNetwork, WritesOfTwoStreamsWithDelaysCanOvertakeEachOther) {
  auto network = std::make_shared<memory_network>(3);
  test_node a(*network, {"a", 1});
  test_node b(*network, {"b", 2});
  auto log = std::make_shared<arrival_log>();
  auto [ec1, first] = b.connect(a.address());
  auto [ec2, second] = b.connect(a.address());
  ASSERT_FALSE(ec1);
  ASSERT_FALSE(ec2);
  recorder first_at_a(a.accepted(0), log);
  recorder second_at_a(a.accepted(1), log);
  recorder first_at_b(first);
  recorder second_at_b(second);

  network->delay({"b", 2}, {"a", 1}, 300ms, 300ms);
  EXPECT_FALSE(first_at_b.write("slow"));
  network->delay({"b", 2}, {"a", 1}, 1ms, 1ms);
  EXPECT_FALSE(second_at_b.write("fast"));
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(log->mutex);
    return log->chunks.size() == 2;
  }));
  std::lock_guard lock(log->mutex);
  EXPECT_EQ(log->chunks, (std::vector<std::string>{"fast", "slow"}));
}

TEST(MemoryNetwork, AOneWayPartitionLosesOneDirectionUntilHealed) {
  connected_pair p;
  const node_address a{"a", 1};
  const node_address b{"b", 2};
  p.network->partition(a, b, partition_direction::a_to_b);
  EXPECT_FALSE(p.at_a->write("lost"));
  EXPECT_FALSE(p.at_b->write("arrives"));
  EXPECT_TRUE(p.at_a->receives("arrives"));
  EXPECT_EQ(p.network->stats(a, b).dropped, 1U);

  p.network->heal(a, b);
  EXPECT_FALSE(p.at_a->write("back"));
  EXPECT_TRUE(p.at_b->receives("back"));
  EXPECT_EQ(p.at_b->text(), "back");
  EXPECT_FALSE(p.at_a->closed());
  EXPECT_FALSE(p.at_b->closed());
}

TEST(MemoryNetwork, AFullPartitionKeepsStreamsOpenButNewConnectsFail) {
  connected_pair p;
  p.network->connect_timeout(50ms);
  p.network->partition(p.a.address(), p.b.address());
  EXPECT_FALSE(p.at_a->write("lost"));
  EXPECT_FALSE(p.at_b->write("lost"));

  const auto start = clock_type::now();
  auto [ec, s] = p.b.connect(p.a.address());
  EXPECT_EQ(ec, make_error_code(errc::node_unreachable));
  EXPECT_GE(clock_type::now() - start, 50ms);
  EXPECT_EQ(p.a.accepted_count(), 1U);

  p.network->heal_all();
  auto [healed_ec, healed] = p.b.connect(p.a.address());
  EXPECT_FALSE(healed_ec);
  EXPECT_FALSE(p.at_b->write("after"));
  EXPECT_TRUE(p.at_a->receives("after"));
  EXPECT_EQ(p.at_a->text(), "after");
  EXPECT_FALSE(p.at_a->closed());
  EXPECT_FALSE(p.at_b->closed());
}

TEST(MemoryNetwork, ACloseLostInAPartitionResetsThePeerWhenItWritesAfterwards) {
  connected_pair p;
  p.network->partition(p.a.address(), p.b.address(), partition_direction::a_to_b);
  p.at_a->close();
  EXPECT_EQ(p.at_a->wait_closed(), asio_code(boost::asio::error::operation_aborted));
  // b never hears of the close; its next write reaches a socket a no longer has.
  EXPECT_EQ(p.at_b->write("anyone?"), asio_code(boost::asio::error::connection_reset));
  EXPECT_EQ(p.at_b->wait_closed(), asio_code(boost::asio::error::connection_reset));
}

TEST(MemoryNetwork, APartitionThatHoldsWritesDeliversThemInOrderOnceHealed) {
  connected_pair p;
  const node_address a{"a", 1};
  const node_address b{"b", 2};
  p.network->partition(a, b, partition_direction::a_to_b, partition_kind::holds_writes);
  EXPECT_FALSE(p.at_a->write("one "));
  EXPECT_FALSE(p.at_a->write("two"));
  // The other direction flows; by the time its write arrived, a's would have too.
  EXPECT_FALSE(p.at_b->write("back"));
  EXPECT_TRUE(p.at_a->receives("back"));
  EXPECT_EQ(p.at_b->text(), "");

  p.network->heal(a, b);
  EXPECT_FALSE(p.at_a->write(" three"));
  EXPECT_TRUE(p.at_b->receives(" three"));
  EXPECT_EQ(p.at_b->text(), "one two three");
  EXPECT_EQ(p.network->stats(a, b).dropped, 0U);
  EXPECT_FALSE(p.at_a->closed());
  EXPECT_FALSE(p.at_b->closed());
}

TEST(MemoryNetwork, ACloseHeldInAPartitionReachesThePeerBehindTheDataOnceHealed) {
  connected_pair p;
  const node_address a{"a", 1};
  const node_address b{"b", 2};
  p.network->partition(a, b, partition_direction::both, partition_kind::holds_writes);
  EXPECT_FALSE(p.at_a->write("last words"));
  p.at_a->close();
  EXPECT_EQ(p.at_a->wait_closed(), asio_code(boost::asio::error::operation_aborted));
  EXPECT_FALSE(p.at_b->closed());

  p.network->heal(a, b);
  EXPECT_EQ(p.at_b->wait_closed(), eof());
  EXPECT_EQ(p.at_b->text(), "last words");
}

TEST(MemoryNetwork, DisconnectResetsBothEndsAtOnce) {
  connected_pair p;
  p.network->disconnect(p.a.address(), p.b.address());
  EXPECT_EQ(p.at_a->wait_closed(), asio_code(boost::asio::error::connection_reset));
  EXPECT_EQ(p.at_b->wait_closed(), asio_code(boost::asio::error::connection_reset));
  EXPECT_EQ(p.at_b->write("x"), asio_code(boost::asio::error::broken_pipe));
  // New connections are fine: disconnect is a reset, not a partition.
  auto [ec, s] = p.b.connect(p.a.address());
  EXPECT_FALSE(ec);
}

TEST(MemoryNetwork, FaultArgumentsOutOfRangeAreRefused) {
  memory_network network(1);
  EXPECT_THROW(network.drop({"a", 1}, {"b", 1}, 1.5), std::invalid_argument);
  EXPECT_THROW(network.delay({"a", 1}, {"b", 1}, 5ms, 1ms), std::invalid_argument);
  EXPECT_THROW(network.connect_timeout(-1ms), std::invalid_argument);
}

// -- lifetime --------------------------------------------------------------------------------

TEST(MemoryNetwork, DestroyingTheNetworkWhileNodesRunIsSafe) {
  connected_pair p;
  p.network->delay(p.b.address(), p.a.address(), 5ms, 5ms);
  EXPECT_FALSE(p.at_b->write("in flight"));
  p.network.reset();
  EXPECT_TRUE(p.at_a->receives("in flight"));
  EXPECT_FALSE(p.at_a->write("still flows"));
  EXPECT_TRUE(p.at_b->receives("still flows"));
  auto [ec, s] = p.b.connect(p.a.address());
  EXPECT_EQ(ec, make_error_code(errc::node_unreachable));
}

TEST(MemoryNetwork, DestroyingATransportWithDeliveriesPendingIsSafe) {
  connected_pair p;
  p.network->delay(p.b.address(), p.a.address(), 10ms, 20ms);
  for (int i = 0; i < 50; ++i) EXPECT_FALSE(p.at_b->write("x"));
  p.at_a.reset();
  p.a.destroy_transport();
  EXPECT_EQ(p.at_b->wait_closed(), eof());
}

TEST(MemoryNetwork, DroppingAStreamWhoseHandlerOwnsTheOtherEndReleasesBoth) {
  memory_network network(5);
  test_node a(network, {"a", 1});
  test_node b(network, {"b", 2});
  auto [ec, at_b] = b.connect(a.address());
  ASSERT_FALSE(ec);
  auto at_a = a.take_accepted(0);
  // The handlers die when at_a does, and take the last reference to at_b with them, whose
  // destructor closes the same connection: that must not deadlock.
  at_a->start([keep = at_b](std::span<const std::byte>) {}, [](std::error_code) {});
  std::weak_ptr<stream> watch = at_b;
  at_b.reset();
  at_a.reset();
  EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace troupe::cluster
