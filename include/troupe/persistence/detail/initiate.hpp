#pragma once
/// The bridge from the public `async_*` templates (any completion token) to the virtual `do_*`
/// functions plugins implement (type-erased handlers). The request is validated first, so a
/// plugin sees only well-formed requests and a malformed one fails without reaching it.

#include <troupe/persistence/detail/completion.hpp>
#include <troupe/persistence/records.hpp>

#include <boost/asio/async_result.hpp>

#include <exception>
#include <utility>

namespace troupe::persistence::detail {

/// Starts an operation completing with `void(std::exception_ptr, T)`:
/// `start(request, completion<T>)` hands a validated request to the plugin.
template <class T, class Token, class Request, class Start>
auto initiate(Token&& token, Request request, Start start) {
  return boost::asio::async_initiate<Token, void(std::exception_ptr, T)>(
      [](auto handler, Request req, Start go) {
        try {
          validate(req);
        } catch (...) {
          pending<decltype(handler)>(std::move(handler)).complete(std::current_exception(), T{});
          return;
        }
        go(std::move(req), completion<T>(std::move(handler)));
      },
      token, std::move(request), std::move(start));
}

/// Starts an operation completing with `void(std::exception_ptr)`.
template <class Token, class Request, class Start>
auto initiate_void(Token&& token, Request request, Start start) {
  return boost::asio::async_initiate<Token, void(std::exception_ptr)>(
      [](auto handler, Request req, Start go) {
        try {
          validate(req);
        } catch (...) {
          pending<decltype(handler)>(std::move(handler)).complete(std::current_exception());
          return;
        }
        go(std::move(req), void_completion(std::move(handler)));
      },
      token, std::move(request), std::move(start));
}

}  // namespace troupe::persistence::detail
