#include "cluster/membership/lease_keeper.hpp"

#include <troupe/cluster/errc.hpp>

#include <boost/asio/post.hpp>

#include <stdexcept>
#include <utility>

namespace troupe::cluster {

std::string_view to_string(fence_reason reason) noexcept {
  switch (reason) {
    case fence_reason::deadline_passed:
      return "deadline passed";
    case fence_reason::no_ttl:
      return "renewal answered without a TTL";
    case fence_reason::lease_not_found:
      return "lease not found";
    case fence_reason::grant_failed:
      return "lease grant failed";
    case fence_reason::revoked:
      return "lease revoked (left)";
    case fence_reason::stopped:
      return "stopped";
  }
  return "unknown";
}

std::shared_ptr<lease_keeper> lease_keeper::start(std::shared_ptr<consensus_store> store,
                                                  std::shared_ptr<troupe::clock> clock,
                                                  lease_keeper_options options,
                                                  granted_callback on_granted,
                                                  fence_callback on_fence) {
  if (!store || !clock) throw std::invalid_argument("lease_keeper: store and clock are required");
  if (options.ttl < std::chrono::seconds(2)) {
    throw std::invalid_argument("lease_keeper: the TTL must be at least 2 s (etcd's minimum)");
  }
  // The deadline must fall after the first renewal (at TTL/3) can have been answered, or every
  // lease would fence on its own schedule.
  if (options.margin <= duration::zero() || options.margin * 3 >= options.ttl * 2) {
    throw std::invalid_argument("lease_keeper: the margin must be in (0, 2/3 TTL)");
  }
  auto keeper = std::make_shared<lease_keeper>(token{}, std::move(store), std::move(clock), options,
                                               std::move(on_fence));
  keeper->grant(std::move(on_granted));
  return keeper;
}

lease_keeper::lease_keeper(token, std::shared_ptr<consensus_store> store,
                           std::shared_ptr<troupe::clock> clock, lease_keeper_options options,
                           fence_callback on_fence)
    : store_(std::move(store)),
      clock_(std::move(clock)),
      options_(options),
      on_fence_(std::move(on_fence)),
      standing_(options_.standing ? options_.standing
                                  : std::make_shared<troupe::detail::node_standing>(clock_)) {}

lease_keeper::~lease_keeper() { cancel_timers(); }

bool lease_keeper::fenced() const noexcept {
  return fenced_.load(std::memory_order_acquire) || standing_->lost();
}

std::optional<fence_reason> lease_keeper::reason() const {
  std::lock_guard lock(mutex_);
  return reason_;
}

std::optional<time_point> lease_keeper::deadline() const {
  std::lock_guard lock(mutex_);
  return deadline_;
}

void lease_keeper::grant(granted_callback on_granted) {
  const time_point sent = clock_->now();
  std::weak_ptr<lease_keeper> weak = weak_from_this();
  store_->grant_lease(options_.ttl, [weak, sent, cb = std::move(on_granted)](
                                        std::error_code ec, lease_grant g) mutable {
    if (auto self = weak.lock()) self->on_grant(ec, g, sent, std::move(cb));
  });
}

void lease_keeper::on_grant(std::error_code ec, lease_grant g, time_point sent,
                            granted_callback cb) {
  {
    std::unique_lock lock(mutex_);
    if (ec || g.id == 0 || g.ttl <= duration::zero()) {
      if (!ec) ec = make_error_code(errc::lease_not_found);
      fence(lock, fence_reason::grant_failed);
    } else if (fenced_.load(std::memory_order_relaxed)) {
      // Stopped while the grant was on its way: the lease runs out unused.
      lease_.store(g.id, std::memory_order_release);
    } else {
      lease_.store(g.id, std::memory_order_release);
      // The grant is the first renewal: etcd started the TTL no earlier than it was sent.
      extend(sent, g.ttl);
      schedule_renewal(sent + options_.ttl / 3);
    }
  }
  if (cb) cb(ec, ec ? 0 : g.id);
}

void lease_keeper::schedule_renewal(time_point at) {
  std::weak_ptr<lease_keeper> weak = weak_from_this();
  auto executor = store_->executor();
  // Clock callbacks only enqueue: the renewal runs on the store's executor.
  renew_timer_ = clock_->schedule_at(at, [weak, executor] {
    boost::asio::post(executor, [weak] {
      if (auto self = weak.lock()) self->renew_due();
    });
  });
}

void lease_keeper::renew_due() {
  std::unique_lock lock(mutex_);
  renew_timer_ = 0;
  if (fenced_.load(std::memory_order_relaxed)) return;
  if (in_flight_) {
    renewal_due_ = true;  // at most one in flight: send when the current one is answered
    return;
  }
  send_renewal(lock);
}

void lease_keeper::send_renewal(std::unique_lock<std::mutex>& lock) {
  const time_point sent = clock_->now();
  in_flight_ = true;
  renewal_due_ = false;
  schedule_renewal(sent + options_.ttl / 3);
  const lease_id id = lease_.load(std::memory_order_relaxed);
  std::weak_ptr<lease_keeper> weak = weak_from_this();
  lock.unlock();
  store_->keep_alive(id, [weak, sent](std::error_code ec, duration ttl) {
    if (auto self = weak.lock()) self->on_renewal(ec, ttl, sent);
  });
  lock.lock();
}

void lease_keeper::on_renewal(std::error_code ec, duration ttl, time_point sent) {
  std::unique_lock lock(mutex_);
  in_flight_ = false;
  if (fenced_.load(std::memory_order_relaxed)) return;
  // An answer that arrives after the deadline changes nothing: the node has already stopped
  // acting (fenced() said so), and a fenced node never resumes.
  if (deadline_ && clock_->now() >= *deadline_ && !options_.plant_no_self_fence) {
    fence(lock, fence_reason::deadline_passed);
    return;
  }
  if (ec == errc::lease_not_found) {
    fence(lock, fence_reason::lease_not_found);
    return;
  }
  if (!ec && ttl <= duration::zero()) {
    fence(lock, fence_reason::no_ttl);
    return;
  }
  // Any other error (store unavailable, timeout) proves nothing; the deadline stands and the
  // next renewal goes out on schedule.
  if (!ec) {
    extend(sent, ttl);
    if (options_.on_renewed) options_.on_renewed(clock_->now() - sent);
  }
  if (renewal_due_) send_renewal(lock);
}

void lease_keeper::extend(time_point sent, duration ttl) {
  const time_point d = sent + ttl - options_.margin;
  if (deadline_ && d <= *deadline_) return;
  deadline_ = d;
  if (options_.plant_no_self_fence) return;
  standing_->set_deadline(d);
  if (fence_timer_ != 0) clock_->cancel(fence_timer_);
  std::weak_ptr<lease_keeper> weak = weak_from_this();
  auto executor = store_->executor();
  fence_timer_ = clock_->schedule_at(d, [weak, executor] {
    boost::asio::post(executor, [weak] {
      auto self = weak.lock();
      if (!self) return;
      std::unique_lock lock(self->mutex_);
      self->fence_timer_ = 0;
      if (!self->fenced_.load(std::memory_order_relaxed) && self->deadline_ &&
          self->clock_->now() >= *self->deadline_) {
        self->fence(lock, fence_reason::deadline_passed);
      }
    });
  });
}

void lease_keeper::fence(std::unique_lock<std::mutex>& lock, fence_reason why) {
  (void)lock;
  if (fenced_.exchange(true, std::memory_order_acq_rel)) return;
  reason_ = why;
  deadline_.reset();
  // Given back by choice while it still held (a graceful leave): the node's regions go on
  // passing on what other nodes send it. Past the deadline already, it lapsed.
  if (why == fence_reason::revoked && !standing_->lost()) {
    standing_->give_back();
  } else {
    standing_->expire();
  }
  cancel_timers();
  if (auto cb = std::move(on_fence_)) {
    on_fence_ = nullptr;
    // The callback may call back into the keeper; run it outside this call and its lock.
    boost::asio::post(store_->executor(), [cb = std::move(cb), why] { cb(why); });
  }
}

void lease_keeper::cancel_timers() {
  if (renew_timer_ != 0) clock_->cancel(renew_timer_);
  if (fence_timer_ != 0) clock_->cancel(fence_timer_);
  renew_timer_ = 0;
  fence_timer_ = 0;
}

void lease_keeper::revoke(std::function<void(std::error_code)> done) {
  lease_id id;
  {
    std::unique_lock lock(mutex_);
    fence(lock, fence_reason::revoked);
    id = lease_.load(std::memory_order_relaxed);
  }
  if (id == 0) {
    if (done) boost::asio::post(store_->executor(), [done = std::move(done)] { done({}); });
    return;
  }
  store_->revoke_lease(id, [done = std::move(done)](std::error_code ec, revision) {
    if (done) done(ec);
  });
}

void lease_keeper::stop() {
  std::unique_lock lock(mutex_);
  fence(lock, fence_reason::stopped);
}

}  // namespace troupe::cluster
