// A watch's delivery queue: one posted handler call per batch, never two at once.
#include "watch_feed.hpp"

#include <boost/asio/post.hpp>

namespace troupe::cluster::in_process {

void watch_feed::deliver(watch_batch batch) { push({}, std::move(batch)); }

void watch_feed::end(std::error_code ec, revision header) {
  watch_batch last;
  last.header_revision = header;
  push(ec, std::move(last));
}

void watch_feed::push(std::error_code ec, watch_batch batch) {
  std::lock_guard lock(mutex_);
  if (ended_ || cancelled_) return;
  if (ec) ended_ = true;
  queue_.emplace_back(ec, std::move(batch));
  if (posted_) return;
  posted_ = true;
  boost::asio::post(executor_, [self = shared_from_this()] { self->run_one(); });
}

void watch_feed::run_one() {
  std::unique_lock lock(mutex_);
  if (cancelled_ || queue_.empty()) {
    posted_ = false;
    return;
  }
  auto [ec, batch] = std::move(queue_.front());
  queue_.pop_front();
  lock.unlock();
  // Called unlocked: the handler may cancel its own watch.
  handler_(ec, std::move(batch));
  lock.lock();
  if (cancelled_ || queue_.empty()) {
    posted_ = false;
    return;
  }
  // One batch per posted call, so watches of many nodes on one executor take turns.
  boost::asio::post(executor_, [self = shared_from_this()] { self->run_one(); });
}

void watch_feed::cancel() noexcept {
  std::deque<std::pair<std::error_code, watch_batch>> dropped;  // destroyed unlocked
  std::lock_guard lock(mutex_);
  cancelled_ = true;
  dropped.swap(queue_);
}

}  // namespace troupe::cluster::in_process
