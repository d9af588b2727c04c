#pragma once
/// The in-memory test network: several nodes in one process, each with its own transport and
/// single-threaded executor, exchanging the same bytes TCP would carry, with faults injected per
/// directed link (loss, delay, one- or two-way partitions, connection resets).
///
/// Determinism: every random choice of a link (`from` -> `to`) comes from a PRNG seeded with the
/// network's seed and the two addresses, and is drawn in the order of that link's writes. With
/// the same seed, the same fault settings and the same sequence of writes on a link, the same
/// writes are dropped and delayed by the same amounts, however the writes of other links
/// interleave with them. Delays run on the network's clock: on the real one, what a delay
/// decides is fixed, when the receiver's executor runs is not; on a manual clock whose driver
/// also runs the executors (a simulation), the whole exchange replays.

#include <troupe/cluster/node_address.hpp>
#include <troupe/cluster/transport.hpp>
#include <troupe/core/clock.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <memory>

namespace troupe::cluster {

namespace detail {
class network_core;
}

/// Which directions of a pair of addresses a partition blocks.
enum class partition_direction {
  both,    // nothing passes either way; new connections between them fail
  a_to_b,  // writes from a to b are lost, b to a still arrive
  b_to_a,  // writes from b to a are lost, a to b still arrive
};

/// What a partition does to the writes that cross it.
enum class partition_kind {
  /// Lost, each whole write, while the streams stay open: a link that drops packets no
  /// transport retransmits (the receiver may see a gap in a live stream).
  loses_writes,
  /// Held, in order, and delivered once the partition heals, as TCP retransmits what a cut
  /// link swallowed; writes on their way when it began wait too. A close waits the same way.
  holds_writes,
};

/// What happened to the writes of one directed link so far.
struct link_stats {
  /// Writes handed to the receiver's read handler.
  std::uint64_t delivered = 0;
  /// Writes lost to drop() or a partition (whole writes, never part of one).
  std::uint64_t dropped = 0;
};

/// Nodes connected through memory, with fault injection; see the file comment. Thread-safe:
/// every method may be called from any thread at any time. Hold it in a shared_ptr when several
/// nodes share it; transports and streams only keep weak references to it, so destroying it
/// while they run is safe (connects then fail, existing streams keep their last faults).
class memory_network {
 public:
  /// A network whose random choices all derive from `seed` (log it to replay a run).
  explicit memory_network(std::uint64_t seed);
  /// The same, with delays and connect timeouts on `clock` (a simulation's manual clock)
  /// instead of a real clock of its own.
  memory_network(std::uint64_t seed, std::shared_ptr<troupe::clock> clock);
  ~memory_network();
  memory_network(const memory_network&) = delete;
  memory_network& operator=(const memory_network&) = delete;

  /// A transport for one node; the callbacks of it and its streams run on `ex`, which must be
  /// single-threaded. A transport is known on the network by the first address it listens at
  /// (its streams' links start there); one that connects before listening gets an ephemeral
  /// address {"ephemeral", port}. Destroying it shuts it down.
  [[nodiscard]] std::shared_ptr<transport> make_transport(boost::asio::any_io_executor ex);

  // -- faults, per directed link; each applies to writes made after it is set ----------------

  /// Loses each write from `from` to `to` with `probability` (0 clears, 1 loses every write).
  void drop(const node_address& from, const node_address& to, double probability);
  /// Delivers each write from `from` to `to` after a random delay in [min, max] (0, 0 clears).
  /// Writes of one stream still arrive in order; writes of different streams may overtake.
  void delay(const node_address& from, const node_address& to, std::chrono::nanoseconds min,
             std::chrono::nanoseconds max);
  /// Blocks `direction` between `a` and `b`, adding to what is already blocked. Writes in a
  /// blocked direction are silently lost, a close's end-of-stream too, or with
  /// partition_kind::holds_writes held until the heal; existing streams stay open (the node
  /// layer notices by missed heartbeats). A connect between a fully blocked pair fails with
  /// errc::node_unreachable after connect_timeout(). A link blocked both ways loses writes
  /// while any of its partitions does.
  void partition(const node_address& a, const node_address& b,
                 partition_direction direction = partition_direction::both,
                 partition_kind kind = partition_kind::loses_writes);
  /// Clears every fault (partition, drop, delay) between `a` and `b`, both directions.
  void heal(const node_address& a, const node_address& b);
  /// Clears every fault of every link.
  void heal_all();
  /// Resets every stream between `a` and `b` at once: both ends get on_closed with
  /// connection_reset, and bytes still on their way are lost.
  void disconnect(const node_address& a, const node_address& b);

  /// How long a connect across a full partition waits for an answer before failing.
  [[nodiscard]] std::chrono::nanoseconds connect_timeout() const;
  /// Sets it (default 200 ms).
  void connect_timeout(std::chrono::nanoseconds timeout);

  /// Writes delivered and dropped on the link `from` -> `to` so far.
  [[nodiscard]] link_stats stats(const node_address& from, const node_address& to) const;
  /// The seed this network was made with.
  [[nodiscard]] std::uint64_t seed() const noexcept;

 private:
  std::shared_ptr<detail::network_core> core_;
};

}  // namespace troupe::cluster
