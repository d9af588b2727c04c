#pragma once
/// How stores finish an operation: the caller's completion handler runs on the handler's own
/// executor (an actor's executor for a coroutine actor), never inline on a store thread unless the
/// handler has no executor of its own (a plain callback or std::future).

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/system_executor.hpp>

#include <exception>
#include <tuple>
#include <utility>

namespace troupe::persistence {

/// The completion handler of a store operation that yields a T.
template <class T>
using completion = boost::asio::any_completion_handler<void(std::exception_ptr, T)>;
/// The completion handler of a store operation that yields nothing.
using void_completion = boost::asio::any_completion_handler<void(std::exception_ptr)>;

namespace detail {

/// A pending completion: keeps the handler's executor busy (so an io_context does not run out of
/// work) until the operation completes, then runs the handler there.
template <class Handler>
class pending {
 public:
  explicit pending(Handler h)
      : work_(boost::asio::prefer(
            boost::asio::get_associated_executor(h, boost::asio::system_executor()),
            boost::asio::execution::outstanding_work.tracked)),
        handler_(std::move(h)) {}

  template <class... Args>
  void complete(Args... args) && {
    auto ex = std::move(work_);
    boost::asio::dispatch(
        ex, [h = std::move(handler_), args = std::make_tuple(std::move(args)...)]() mutable {
          std::apply([&h](auto&... a) { std::move(h)(std::move(a)...); }, args);
        });
  }

 private:
  using executor_type = std::decay_t<decltype(boost::asio::prefer(
      boost::asio::get_associated_executor(std::declval<Handler&>(),
                                           boost::asio::system_executor()),
      boost::asio::execution::outstanding_work.tracked))>;
  executor_type work_;
  Handler handler_;
};

}  // namespace detail
}  // namespace troupe::persistence
