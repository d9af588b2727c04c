#include "cluster/clock_timer.hpp"

#include <boost/asio/post.hpp>

#include <mutex>
#include <utility>

namespace troupe::cluster::detail {

/// One armed wait, shared by the timer and the clock's callback: whichever comes first (the
/// callback posting the handler, or cancel dropping it) takes the handler, under the mutex.
struct clock_timer::wait {
  std::mutex mutex;
  std::function<void()> fn;
  boost::asio::any_io_executor executor;
};

clock_timer::clock_timer(troupe::clock& clock, boost::asio::any_io_executor executor)
    : clock_(clock), executor_(std::move(executor)) {}

clock_timer::~clock_timer() { cancel(); }

void clock_timer::wait_for(duration d, std::function<void()> fn) {
  cancel();
  auto w = std::make_shared<wait>();
  w->fn = std::move(fn);
  w->executor = executor_;
  armed_ = w;
  id_ = clock_.schedule_after(d, [w = std::move(w)] {
    std::lock_guard lock(w->mutex);
    // Posting under the lock: once cancel() has returned, nothing is posted any more, so the
    // owner may destroy the executor's context right after cancelling.
    if (w->fn) boost::asio::post(w->executor, std::exchange(w->fn, nullptr));
  });
}

void clock_timer::cancel() noexcept {
  if (!armed_) return;
  clock_.cancel(id_);
  std::function<void()> dropped;  // destroyed unlocked: it may hold the timer's owner
  {
    std::lock_guard lock(armed_->mutex);
    dropped = std::exchange(armed_->fn, nullptr);
  }
  armed_.reset();
  id_ = 0;
}

}  // namespace troupe::cluster::detail
