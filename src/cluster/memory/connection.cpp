#include "cluster/memory/connection.hpp"

#include "cluster/memory/link_state.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <utility>

namespace troupe::cluster::detail {

namespace {

// The codes a TCP socket reports, as std::error_code like the rest of the transport interface.
std::error_code aborted() {
  return boost::asio::error::make_error_code(boost::asio::error::operation_aborted);
}
std::error_code end_of_file() {
  return boost::asio::error::make_error_code(boost::asio::error::eof);
}
std::error_code reset_by_peer() {
  return boost::asio::error::make_error_code(boost::asio::error::connection_reset);
}
std::error_code broken_pipe() {
  return boost::asio::error::make_error_code(boost::asio::error::broken_pipe);
}

// How often an end whose incoming link holds writes looks whether the partition healed.
constexpr std::chrono::milliseconds held_recheck{10};

void complete(const boost::asio::any_io_executor& ex, stream::done_handler done,
              std::error_code ec) {
  if (done) boost::asio::post(ex, [done = std::move(done), ec] { done(ec); });
}

}  // namespace

connection::connection(end_point connecting, end_point accepting,
                       std::shared_ptr<troupe::clock> clock)
    : clock_(std::move(clock)) {
  ends_[connector].where = std::move(connecting);
  ends_[acceptor].where = std::move(accepting);
}

bool connection::joins(const node_address& a, const node_address& b) const noexcept {
  const auto& x = address(connector);
  const auto& y = address(acceptor);
  return (x == a && y == b) || (x == b && y == a);
}

std::string connection::describe(side s) const {
  return "memory " + to_string(address(s)) + " -> " + to_string(address(other(s)));
}

void connection::start(side s, stream::read_handler on_data, stream::done_handler on_closed) {
  std::lock_guard lock(mutex_);
  auto& e = ends_[s];
  if (e.started) return;
  e.started = true;
  auto h =
      std::make_shared<const handler_pair>(handler_pair{std::move(on_data), std::move(on_closed)});
  if (e.ended) {
    // It ended before anyone listened: say so now, once.
    boost::asio::post(e.where.executor, [h, why = e.ended] { h->on_closed(why); });
    return;
  }
  e.handlers = std::move(h);
  schedule_pump_locked(s);
}

void connection::write(side s, byte_buffer bytes, stream::done_handler done) {
  std::error_code result;
  {
    std::lock_guard lock(mutex_);
    auto& self = ends_[s];
    auto& peer = ends_[other(s)];
    if (self.ended) {
      result = self.ended == aborted() ? aborted() : broken_pipe();
    } else if (peer.ended) {
      if (self.end_of_stream_coming) {
        // The peer's close is on its way here: its socket is gone, the bytes vanish.
      } else if (self.where.outgoing->blocked()) {
        self.where.outgoing->count_loss();
      } else {
        // The peer closed and its end-of-stream was lost: the peer answers these bytes with a
        // reset, as a TCP stack answers data for a socket it no longer has.
        result = reset_by_peer();
        (void)end_locked(s, result, true);
      }
    } else if (auto v = self.where.outgoing->next_write(); !v.lost) {
      enqueue_locked(other(s), inbound{clock_->now() + v.delay, std::move(bytes)});
    }
  }
  complete(ends_[s].where.executor, std::move(done), result);
}

void connection::close(side s, bool notify) {
  handlers_ptr dropped;  // released after the lock
  std::lock_guard lock(mutex_);
  auto& self = ends_[s];
  if (self.ended) return;
  dropped = end_locked(s, aborted(), notify);
  auto& peer = ends_[other(s)];
  const auto& out = *self.where.outgoing;
  if (!peer.ended && (!out.blocked() || out.holding())) {
    peer.end_of_stream_coming = true;
    enqueue_locked(other(s), inbound{clock_->now(), {}, true});
  }
}

void connection::reset() {
  std::lock_guard lock(mutex_);
  for (side s : {connector, acceptor}) {
    if (!ends_[s].ended) (void)end_locked(s, reset_by_peer(), true);
  }
}

connection::handlers_ptr connection::end_locked(side s, std::error_code why, bool notify) {
  auto& e = ends_[s];
  e.ended = why;
  e.inbox.clear();
  e.end_of_stream_coming = false;
  auto h = std::move(e.handlers);
  e.handlers.reset();
  if (!notify || !h) return h;
  boost::asio::post(e.where.executor, [h = std::move(h), why] { h->on_closed(why); });
  return nullptr;
}

void connection::enqueue_locked(side to, inbound item) {
  ends_[to].inbox.push_back(std::move(item));
  schedule_pump_locked(to);
}

void connection::schedule_pump_locked(side s) {
  auto& e = ends_[s];
  if (e.pump_scheduled || !e.handlers || e.inbox.empty()) return;
  e.pump_scheduled = true;
  auto due = e.inbox.front().due;
  // A partition that holds writes: look again a little later (the link does not know its
  // streams, so the heal cannot wake them).
  if (held_locked(s)) due = std::max(due, clock_->now() + held_recheck);
  auto self = shared_from_this();
  if (due <= clock_->now()) {
    boost::asio::post(e.where.executor, [self = std::move(self), s] { self->pump(s); });
    return;
  }
  clock_->schedule_at(due, [weak = std::weak_ptr<connection>(self), s] {
    if (auto c = weak.lock()) c->pump_later(s);
  });
}

bool connection::held_locked(side s) const { return ends_[other(s)].where.outgoing->holding(); }

void connection::pump_later(side s) {
  std::lock_guard lock(mutex_);
  auto& e = ends_[s];
  // Posting under the lock: an end whose owner closed it may have no executor any more, and
  // its close takes this lock first.
  if (!e.handlers) {
    e.pump_scheduled = false;
    return;
  }
  boost::asio::post(e.where.executor, [self = shared_from_this(), s] { self->pump(s); });
}

void connection::pump(side s) {
  std::unique_lock lock(mutex_);
  auto& e = ends_[s];
  while (e.handlers && !e.inbox.empty() && e.inbox.front().due <= clock_->now() &&
         !held_locked(s)) {
    inbound item = std::move(e.inbox.front());
    e.inbox.pop_front();
    if (item.end_of_stream) {
      (void)end_locked(s, end_of_file(), true);
      break;
    }
    ends_[other(s)].where.outgoing->count_delivery();
    // Call out without the lock: the handler may write, close or start another stream.
    auto h = e.handlers;
    lock.unlock();
    h->on_data(item.bytes);
    h.reset();  // without the lock, for the reason end_locked gives
    lock.lock();
  }
  e.pump_scheduled = false;
  schedule_pump_locked(s);
}

}  // namespace troupe::cluster::detail
