#include "seed_parts.hpp"

#include "bench_support.hpp"

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

namespace troupe::bench::seed {

prepared_workload prepare(const workload_spec& spec) {
  prepared_workload w;
  w.spec = spec;
  w.keys = generate_keys(spec);
  w.names.reserve(static_cast<std::size_t>(spec.keys));
  for (std::int64_t k = 0; k < spec.keys; ++k) {
    w.names.push_back(key_name(static_cast<std::uint32_t>(k)));
  }
  w.key_counts = per_key_counts(w.keys, spec.keys);
  return w;
}

void completion::count_down(std::int64_t k) noexcept {
  if (left_.fetch_sub(k, std::memory_order_acq_rel) != k) return;
  const auto now = steady::now();
  std::lock_guard lock(mutex_);
  done_at_ = now;
  done_ = true;
  cv_.notify_all();  // under the lock: the waiter may destroy us as soon as it sees done_
}

steady::time_point completion::wait(std::chrono::seconds limit) {
  std::unique_lock lock(mutex_);
  if (!cv_.wait_for(lock, limit, [&] { return done_; })) {
    throw bench_failure("timed out after " + std::to_string(limit.count()) + " s with " +
                        std::to_string(left()) + " messages outstanding");
  }
  return done_at_;
}

void hot_recorder::on_batch(steady::time_point start, std::int64_t size) {
  if (stats.batches > 0) {
    stats.steps_us.push_back(std::chrono::duration<double, std::micro>(start - last_start).count());
  }
  last_start = start;
  ++stats.batches;
  stats.messages += size;
  stats.max_batch = std::max(stats.max_batch, size);
}

void hot_recorder::on_message(steady::time_point start, steady::time_point sent) {
  stats.waits_us.push_back(std::chrono::duration<double, std::micro>(start - sent).count());
}

void hot_recorder::on_resumed(steady::time_point now, troupe::duration io) {
  stats.lateness_us.push_back(
      std::chrono::duration<double, std::micro>(now - last_start - io).count());
}

bool io_limiter::try_acquire() {
  std::lock_guard lock(mutex_);
  if (in_use_ >= cap_) return false;
  ++in_use_;
  return true;
}

boost::asio::awaitable<void> io_limiter::wait() {
  co_await boost::asio::async_initiate<const boost::asio::use_awaitable_t<>, void()>(
      [this](auto handler) {
        // Shared so that the waiter fits a copyable std::function.
        auto h = std::make_shared<decltype(handler)>(std::move(handler));
        auto resume = [h] {
          auto ex = boost::asio::get_associated_executor(*h);
          boost::asio::post(ex, std::move(*h));
        };
        std::unique_lock lock(mutex_);
        if (in_use_ < cap_) {  // a slot came free since try_acquire
          ++in_use_;
          lock.unlock();
          resume();
          return;
        }
        waiters_.emplace_back(std::move(resume));
      },
      boost::asio::use_awaitable);
}

void io_limiter::release() {
  std::unique_lock lock(mutex_);
  if (waiters_.empty()) {
    --in_use_;
    return;
  }
  auto next = std::move(waiters_.front());  // the slot passes straight to the next waiter
  waiters_.pop_front();
  lock.unlock();
  next();
}

namespace {
boost::asio::awaitable<void> timer_io(run_shared* s) {
  if (s->asio_timer) {
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, s->io);
    co_await timer.async_wait(boost::asio::use_awaitable);
  } else {
    co_await troupe::sleep_for(s->io);
  }
}
}  // namespace

boost::asio::awaitable<void> await_io(run_shared* s) {
  if (!s->limiter) {
    co_await timer_io(s);
    co_return;
  }
  if (!s->limiter->try_acquire()) co_await s->limiter->wait();
  try {
    co_await timer_io(s);
  } catch (...) {
    s->limiter->release();
    throw;
  }
  s->limiter->release();
}

std::chrono::seconds wait_limit_for(const run_config& c, std::int64_t busiest_count) {
  const double serial_s =
      static_cast<double>(serial_writes(busiest_count, c.batch)) * c.io_ms / 1e3;
  return std::chrono::seconds(60 + static_cast<std::int64_t>(3 * serial_s));
}

std::string check_key(const std::string& key, const std::vector<std::uint32_t>& values,
                      std::int64_t expected) {
  if (static_cast<std::int64_t>(values.size()) != expected) {
    return key + " holds " + std::to_string(values.size()) + " values, " +
           std::to_string(expected) + " were sent";
  }
  for (std::size_t j = 0; j < values.size(); ++j) {
    if (values[j] != j) {
      return key + " holds " + std::to_string(values[j]) + " at position " + std::to_string(j);
    }
  }
  return {};
}

}  // namespace troupe::bench::seed
