// Copies the remoting's own counts into the registry on each collect (see the header).
#include <troupe/observability/remote_metrics.hpp>

#include "observability/counter_advance.hpp"

#include <cstdint>
#include <set>
#include <string_view>

namespace troupe::observability {
namespace {

using detail::advance;

constexpr std::size_t max_peers = 1000;

/// A node-wide counter without labels.
counter& total(metrics_registry& r, std::string_view name, std::string_view help) {
  return r.counter_family(name, help).with({});
}

/// The node-wide counts, each exported as an unlabelled counter.
struct node_total {
  std::string_view name;
  std::string_view help;
  std::uint64_t cluster::remote_stats::*count;
};

constexpr node_total node_totals[] = {
    {"troupe_remote_messages_sent_total", "Messages sent to other nodes",
     &cluster::remote_stats::messages_sent},
    {"troupe_remote_messages_received_total", "Messages received from other nodes",
     &cluster::remote_stats::messages_received},
    {"troupe_remote_bytes_sent_total", "Bytes written to other nodes' streams",
     &cluster::remote_stats::bytes_sent},
    {"troupe_remote_bytes_received_total", "Bytes read from other nodes' streams",
     &cluster::remote_stats::bytes_received},
    {"troupe_remote_frames_sent_total", "Frames written to other nodes, control frames included",
     &cluster::remote_stats::frames_sent},
    {"troupe_remote_frames_received_total", "Frames read from other nodes, control frames included",
     &cluster::remote_stats::frames_received},
    {"troupe_remote_frames_refused_total",
     "Malformed or oversized frames (each closed its connection)",
     &cluster::remote_stats::frames_refused},
    {"troupe_remote_undecodable_messages_total",
     "Messages that arrived and went to dead letters undecoded",
     &cluster::remote_stats::undecodable},
    {"troupe_remote_queue_overflows_total", "Messages dropped because a peer's queue was full",
     &cluster::remote_stats::queue_overflows},
    {"troupe_remote_handshakes_refused_total", "Handshakes refused by this node or its peers",
     &cluster::remote_stats::handshakes_refused},
    {"troupe_remote_peers_lost_total", "Peers declared lost (unreachable, restarted or left)",
     &cluster::remote_stats::peers_lost},
    {"troupe_remote_peers_unreachable_total",
     "Connections dropped for silence or failed handshakes",
     &cluster::remote_stats::peers_unreachable},
};

}  // namespace

remote_metrics::remote_metrics(metrics_registry& registry, cluster::remote_node& remote)
    : registry_(registry), remote_(remote) {
  hook_ = registry_.add_collect_hook([this] { refresh(); });
}

remote_metrics::~remote_metrics() { registry_.remove_collect_hook(hook_); }

void remote_metrics::refresh() {
  std::lock_guard lock(mutex_);
  auto& r = registry_;
  const auto now = remote_.stats();
  for (const auto& t : node_totals) {
    advance(total(r, t.name, t.help), last_.*t.count, now.*t.count);
  }

  auto& bytes = r.counter_family("troupe_remote_peer_bytes_sent_total", "Bytes written to the peer",
                                 {"peer"}, max_peers);
  auto& bytes_in = r.counter_family("troupe_remote_peer_bytes_received_total",
                                    "Bytes read from the peer", {"peer"}, max_peers);
  auto& frames_out =
      r.counter_family("troupe_remote_peer_frames_sent_total",
                       "Frames written to the peer, control frames included", {"peer"}, max_peers);
  auto& frames_in =
      r.counter_family("troupe_remote_peer_frames_received_total",
                       "Frames read from the peer, control frames included", {"peer"}, max_peers);
  auto& connections =
      r.counter_family("troupe_remote_peer_connections_total",
                       "Connections to the peer that completed a handshake", {"peer"}, max_peers);
  auto& queued = r.gauge_family("troupe_remote_peer_queued_messages",
                                "Messages waiting to be written to the peer", {"peer"}, max_peers);
  auto& queued_bytes =
      r.gauge_family("troupe_remote_peer_queued_bytes",
                     "Bytes of the peer's waiting messages already encoded", {"peer"}, max_peers);
  auto& connected = r.gauge_family("troupe_remote_peer_connected",
                                   "1 while a connection to the peer is up", {"peer"}, max_peers);
  std::set<std::string> seen;
  for (const auto& p : remote_.peers()) {
    const std::string peer = cluster::to_string(p.address);
    seen.insert(peer);
    auto& last = last_peers_[peer];
    advance(bytes.with({peer}), last.bytes_sent, p.bytes_sent);
    advance(bytes_in.with({peer}), last.bytes_received, p.bytes_received);
    advance(frames_out.with({peer}), last.frames_sent, p.frames_sent);
    advance(frames_in.with({peer}), last.frames_received, p.frames_received);
    advance(connections.with({peer}), last.connections, p.connections);
    queued.with({peer}).set(static_cast<double>(p.queued_messages));
    queued_bytes.with({peer}).set(static_cast<double>(p.queued_bytes));
    connected.with({peer}).set(p.connected ? 1.0 : 0.0);
  }
  // A peer the remoting forgot stops being exported. Its last counts stay: remove() keeps a
  // counter's value, and it comes back with it if the peer does.
  for (auto it = exported_.begin(); it != exported_.end();) {
    if (seen.contains(*it)) {
      ++it;
      continue;
    }
    const std::string_view peer = *it;
    bytes.remove({peer});
    bytes_in.remove({peer});
    frames_out.remove({peer});
    frames_in.remove({peer});
    connections.remove({peer});
    queued.remove({peer});
    queued_bytes.remove({peer});
    connected.remove({peer});
    it = exported_.erase(it);
  }
  exported_.merge(seen);
}

}  // namespace troupe::observability
