#pragma once
/// The remoting's figures as metrics: what a remote_node already counts (remote_node::stats()
/// and peers()), copied into a metrics_registry each time it is collected.
///
///     troupe::observability::remote_metrics metrics(registry, remote);
///
/// troupe_remote_messages_sent_total / _received_total    messages to and from other nodes
/// troupe_remote_bytes_sent_total / _received_total       bytes written to and read from streams
/// troupe_remote_frames_sent_total / _received_total      frames, control frames included
/// troupe_remote_frames_refused_total                     malformed or oversized frames
/// troupe_remote_undecodable_messages_total               arrived and dead-lettered undecoded
/// troupe_remote_queue_overflows_total                    dropped over a peer's queue bound
/// troupe_remote_handshakes_refused_total                 by this node or its peers
/// troupe_remote_peers_lost_total                         peers declared lost
/// troupe_remote_peers_unreachable_total                  connections dropped for silence
/// troupe_remote_peer_bytes_sent_total{peer}              bytes written to that peer
/// troupe_remote_peer_bytes_received_total{peer}          bytes read from it after its handshake
/// troupe_remote_peer_frames_sent_total{peer} / _received_total{peer}   frames to and from it
/// troupe_remote_peer_connections_total{peer}             handshakes completed (1 + reconnects)
/// troupe_remote_peer_queued_messages{peer}               waiting to be written to it now
/// troupe_remote_peer_queued_bytes{peer}                  of those, the bytes already encoded
/// troupe_remote_peer_connected{peer}                     1 while a connection is up, else 0
///
/// `peer` is the peer's "host:port"; at most 1,000 peers are exported (one overflow child
/// stands for the rest).

#include <troupe/cluster/remote_node.hpp>
#include <troupe/core/metrics.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>

namespace troupe::observability {

class remote_metrics {
 public:
  /// Hooks into `registry`; both must outlive this object.
  remote_metrics(metrics_registry& registry, cluster::remote_node& remote);
  /// Unhooks; a collect under way finishes first.
  ~remote_metrics();
  remote_metrics(const remote_metrics&) = delete;
  remote_metrics& operator=(const remote_metrics&) = delete;

  /// Reads the remoting now (collect() calls it).
  void refresh();

 private:
  struct peer_counts {
    std::uint64_t bytes_sent = 0;
    std::uint64_t bytes_received = 0;
    std::uint64_t frames_sent = 0;
    std::uint64_t frames_received = 0;
    std::uint64_t connections = 0;
  };

  metrics_registry& registry_;
  cluster::remote_node& remote_;
  std::mutex mutex_;
  cluster::remote_stats last_;
  std::map<std::string, peer_counts> last_peers_;
  std::set<std::string> exported_;
  std::uint64_t hook_ = 0;
};

}  // namespace troupe::observability
