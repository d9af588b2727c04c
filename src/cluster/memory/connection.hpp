#pragma once
// One in-memory stream: its two ends and the writes travelling between them. Each end has an
// inbox of writes on their way to it, each with the time it is due; a pump running on that
// end's executor hands them to its read handler first in, first out, each no sooner than it is
// due, and a timer wakes it for the next one. A write thus waits for those ahead of it: a
// stream stays in order under random delays, while different streams may overtake each other.
//
// Ends of a close, as TCP has them: the closer's handler gets operation_aborted at once; the
// peer reads what was already sent, then eof (the close travels behind the data, and is lost
// like data when the link is blocked: the peer then stays open until it writes after the
// partition heals, which resets it, or it closes by itself). disconnect() resets both ends.
//
// A partition that holds writes (partition_kind::holds_writes) stops an end's pump instead:
// what the other end wrote, before or during the partition, and its close, wait in order and
// flow once the link heals.

#include <troupe/cluster/node_address.hpp>
#include <troupe/cluster/transport.hpp>
#include <troupe/core/clock.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <array>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>

namespace troupe::cluster::detail {

class link_state;

class connection : public std::enable_shared_from_this<connection> {
 public:
  /// Index of an end: the side that connected and the side that accepted.
  enum side : int { connector = 0, acceptor = 1 };

  /// Where one end lives.
  struct end_point {
    boost::asio::any_io_executor executor;
    node_address address;
    /// The link from this end's address to the other end's.
    std::shared_ptr<link_state> outgoing;
  };

  /// Delays are measured on `clock`.
  connection(end_point connecting, end_point accepting, std::shared_ptr<troupe::clock> clock);

  /// stream::start of end `s`; a second call is ignored.
  void start(side s, stream::read_handler on_data, stream::done_handler on_closed);
  /// stream::async_write of end `s`: `done` runs on its executor once the network has the bytes.
  void write(side s, byte_buffer bytes, stream::done_handler done);
  /// stream::close of end `s`. With `notify` false (the end's owner is gone) its handlers are
  /// dropped without running.
  void close(side s, bool notify);
  /// Ends both ends with connection_reset, discarding what is on the way.
  void reset();

  [[nodiscard]] const node_address& address(side s) const noexcept {
    return ends_[s].where.address;
  }
  /// True when the two ends are at `a` and `b`, in either order.
  [[nodiscard]] bool joins(const node_address& a, const node_address& b) const noexcept;
  [[nodiscard]] std::string describe(side s) const;

 private:
  struct handler_pair {
    stream::read_handler on_data;
    stream::done_handler on_closed;
  };
  struct inbound {
    time_point due;
    byte_buffer bytes;
    bool end_of_stream = false;  // the peer's close, behind its last write
  };
  struct end {
    end_point where;
    std::deque<inbound> inbox;
    std::shared_ptr<const handler_pair> handlers;  // set by start() until the end is over
    std::error_code ended;                         // why the end is over; empty while open
    bool started = false;
    bool pump_scheduled = false;  // a pump is posted, waiting on a timer, or running
    bool end_of_stream_coming = false;
  };

  static side other(side s) noexcept { return s == connector ? acceptor : connector; }

  using handlers_ptr = std::shared_ptr<const handler_pair>;

  // All *_locked members need mutex_ held.
  /// Ends `s` and posts its on_closed, or (notify false) returns its handlers for the caller
  /// to drop after unlocking: they may own a stream of this very connection, whose destructor
  /// takes the mutex.
  [[nodiscard]] handlers_ptr end_locked(side s, std::error_code why, bool notify);
  void enqueue_locked(side to, inbound item);
  void schedule_pump_locked(side s);
  /// Whether what comes to `s` waits for a partition that holds writes to heal.
  [[nodiscard]] bool held_locked(side s) const;
  void pump(side s);
  /// A delayed write fell due: pump `s` on its executor, if the end still reads.
  void pump_later(side s);

  const std::shared_ptr<troupe::clock> clock_;
  std::mutex mutex_;
  std::array<end, 2> ends_;
};

}  // namespace troupe::cluster::detail
