#pragma once
// Running work on a transport's executor without a needless hop: the node layer calls streams
// from the executor's own thread almost always, and a post would cost a queue round trip (and,
// across threads, a wake-up) per write.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include <memory>
#include <utility>

namespace troupe::cluster::tcp {

/// True when the calling thread is running `executor` (an io_context executor, work-tracked or
/// not, or a strand of one); false for any other executor, which then always gets a post.
inline bool running_in_this_thread(const boost::asio::any_io_executor& executor) noexcept {
  using plain = boost::asio::io_context::executor_type;
  using tracked = boost::asio::io_context::basic_executor_type<std::allocator<void>, 4>;
  if (const auto* e = executor.target<plain>()) return e->running_in_this_thread();
  if (const auto* e = executor.target<tracked>()) return e->running_in_this_thread();
  if (const auto* e = executor.target<boost::asio::strand<plain>>()) {
    return e->running_in_this_thread();
  }
  return false;
}

/// Runs `f` at once when called on `executor`'s thread, else posts it there. Only for the
/// transport's own steps: a user's handler is never run inline inside the call that caused it.
template <class F>
void run_on(const boost::asio::any_io_executor& executor, F&& f) {
  if (running_in_this_thread(executor)) {
    std::forward<F>(f)();
  } else {
    boost::asio::post(executor, std::forward<F>(f));
  }
}

}  // namespace troupe::cluster::tcp
