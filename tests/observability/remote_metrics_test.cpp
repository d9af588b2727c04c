// ctest-labels: concurrency
// The remoting's counts as metrics: after one node tells another 500 messages over the memory
// network, the sender's registry shows them sent with their bytes and one connection to that
// peer, up, with nothing left queued, and the receiver's shows them received.
#include <troupe/cluster/remote_node.hpp>
#include <troupe/core/metrics.hpp>
#include <troupe/observability/prometheus_text.hpp>
#include <troupe/observability/remote_metrics.hpp>
#include <troupe/testkit/metric_values.hpp>
#include <troupe/testkit/test_probe.hpp>

#include "cluster/support/two_nodes.hpp"

#include <boost/describe/class.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

namespace troupe::observability {
namespace {

using namespace std::chrono_literals;
using troupe::testkit::await_condition;
using troupe::testkit::metric_value;

struct note {
  std::string text;
};
BOOST_DESCRIBE_STRUCT(note, (), (text))

class counting final : public troupe::actor<note> {
 public:
  explicit counting(std::shared_ptr<std::atomic<int>> n) : n_(std::move(n)) {}

 private:
  void receive(note&) override { ++*n_; }
  std::shared_ptr<std::atomic<int>> n_;
};

std::shared_ptr<cluster::message_registry> messages() {
  auto r = std::make_shared<cluster::message_registry>();
  r->add<note>("test.remote_metrics.note");
  return r;
}

TEST(RemoteMetrics, CountMessagesBytesAndConnectionsPerPeer) {
  cluster::test::network net(cluster::test::net_kind::memory);
  cluster::test::node a(net, messages(), {}, "a");
  cluster::test::node b(net, messages(), {}, "b");
  metrics_registry ra;
  metrics_registry rb;
  remote_metrics ma(ra, *a.remote);
  remote_metrics mb(rb, *b.remote);

  auto received = std::make_shared<std::atomic<int>>(0);
  auto sink = b.system.spawn<counting>("sink", received);
  b.remote->expose(sink);
  auto far = a.remote->ref_to<note>(b.address(), "/user/sink");
  for (int i = 0; i < 500; ++i) far.tell(note{"note " + std::to_string(i)});
  await_condition([&] { return received->load() == 500; }, 10s, "every note delivered");

  const std::string peer = cluster::to_string(b.address());
  auto sent = ra.collect();
  EXPECT_EQ(metric_value(sent, "troupe_remote_messages_sent_total"), 500.0);
  const double bytes = metric_value(sent, "troupe_remote_bytes_sent_total").value_or(0);
  EXPECT_GT(bytes, 500.0 * 6) << "at least the texts";
  EXPECT_EQ(metric_value(sent, "troupe_remote_peer_bytes_sent_total", {peer}), bytes)
      << "one peer: all the bytes went to it";
  EXPECT_EQ(metric_value(sent, "troupe_remote_peer_connections_total", {peer}), 1.0);
  EXPECT_EQ(metric_value(sent, "troupe_remote_peer_connected", {peer}), 1.0);
  EXPECT_EQ(metric_value(sent, "troupe_remote_peer_queued_messages", {peer}), 0.0);
  EXPECT_EQ(metric_value(rb.collect(), "troupe_remote_messages_received_total"), 500.0);
  EXPECT_GE(metric_value(rb.collect(), "troupe_remote_bytes_received_total").value_or(0), bytes);

  // Frames: one per message, plus the control frames (at least the handshake out and its
  // accept back). The receiver read every one the sender wrote to it.
  const double frames_out = metric_value(sent, "troupe_remote_frames_sent_total").value_or(0);
  EXPECT_GE(frames_out, 501.0);
  EXPECT_GE(metric_value(sent, "troupe_remote_peer_frames_sent_total", {peer}), frames_out)
      << "one peer: all the frames went to it (a heartbeat may come between the reads)";
  // The handshake's accept: the sender may write its messages before it reads the accept, so
  // the messages' arrival does not mean the accept was read yet.
  await_condition(
      [&] {
        return metric_value(ra.collect(), "troupe_remote_frames_received_total").value_or(0) >= 1.0;
      },
      10s, "the handshake's accept read");
  const std::string sender = cluster::to_string(a.address());
  await_condition(
      [&] {
        return metric_value(rb.collect(), "troupe_remote_frames_received_total").value_or(0) >=
               frames_out;
      },
      10s, "every frame read");
  EXPECT_GE(
      metric_value(rb.collect(), "troupe_remote_peer_frames_received_total", {sender}).value_or(0),
      500.0)
      << "the messages, counted for the peer that sent them";
  EXPECT_GT(
      metric_value(rb.collect(), "troupe_remote_peer_bytes_received_total", {sender}).value_or(0),
      500.0 * 6);

  // Collecting again adds nothing that did not happen.
  EXPECT_EQ(metric_value(ra.collect(), "troupe_remote_messages_sent_total"), 500.0);
  // The exposition carries them.
  const auto text = to_prometheus_text(ra.collect());
  EXPECT_NE(text.find("troupe_remote_peer_bytes_sent_total{peer=\"" + peer + "\"}"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace troupe::observability
