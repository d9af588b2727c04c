#pragma once
/// The event journal: per persistence id, an append-only sequence of events numbered 1, 2, ...
/// Every operation is asynchronous and completes on the caller's executor; with
/// `boost::asio::use_awaitable` a failure is thrown as persistence_error.
///
///   auto last = co_await journal.async_append({pid, next, events, epoch}, use_awaitable);

#include <troupe/persistence/detail/completion.hpp>
#include <troupe/persistence/detail/initiate.hpp>
#include <troupe/persistence/records.hpp>

#include <string>
#include <utility>
#include <vector>

namespace troupe::persistence {

/// Appends, reads and deletes events. Implementations are thread-safe.
class journal {
 public:
  virtual ~journal() = default;

  /// Appends `r.events` atomically as r.expected_next, r.expected_next + 1, ... Completes with the
  /// last sequence number written, or fails with errc::sequence_conflict when expected_next is
  /// not the highest + 1 (another writer came first: nothing is written), errc::epoch_fenced, or
  /// errc::store_failure.
  template <class Token>
  auto async_append(append_request r, Token&& token) {
    return detail::initiate<sequence_nr>(std::forward<Token>(token), std::move(r),
                                         [this](append_request req, completion<sequence_nr> h) {
                                           do_append(std::move(req), std::move(h));
                                         });
  }

  /// The events from r.from to r.to (both included), at most r.max_count, in sequence order.
  template <class Token>
  auto async_read(read_request r, Token&& token) {
    return detail::initiate<std::vector<event_record>>(
        std::forward<Token>(token), std::move(r),
        [this](read_request req, completion<std::vector<event_record>> h) {
          do_read(std::move(req), std::move(h));
        });
  }

  /// The highest sequence number ever written for the id (0 when none); deleting events does
  /// not lower it.
  template <class Token>
  auto async_highest_sequence_nr(std::string persistence_id, Token&& token) {
    return detail::initiate<sequence_nr>(std::forward<Token>(token), std::move(persistence_id),
                                         [this](std::string pid, completion<sequence_nr> h) {
                                           do_highest_sequence_nr(std::move(pid), std::move(h));
                                         });
  }

  /// Deletes the events up to and including r.to.
  template <class Token>
  auto async_delete_to(delete_events_request r, Token&& token) {
    return detail::initiate_void(std::forward<Token>(token), std::move(r),
                                 [this](delete_events_request req, void_completion h) {
                                   do_delete_to(std::move(req), std::move(h));
                                 });
  }

 protected:
  // What a plugin implements; requests arrive validated. A plugin completes every handler
  // exactly once, through detail::pending, so it runs on the handler's executor.
  virtual void do_append(append_request r, completion<sequence_nr> h) = 0;
  virtual void do_read(read_request r, completion<std::vector<event_record>> h) = 0;
  virtual void do_highest_sequence_nr(std::string persistence_id, completion<sequence_nr> h) = 0;
  virtual void do_delete_to(delete_events_request r, void_completion h) = 0;
};

}  // namespace troupe::persistence
