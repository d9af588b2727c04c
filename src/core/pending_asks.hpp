#pragma once
/// INTERNAL. The asks of a system still waiting for their reply, in striped intrusive lists (no
/// allocation per ask, little contention between workers). terminate() closes the registry and
/// fails every ask in it with errc::system_terminated; an ask started afterwards fails at once.

#include <troupe/core/detail/pending_ask.hpp>

#include <array>
#include <mutex>

namespace troupe::detail {

class pending_asks {
 public:
  pending_asks() = default;
  pending_asks(const pending_asks&) = delete;
  pending_asks& operator=(const pending_asks&) = delete;
  ~pending_asks();

  /// Lists `ask` (taking a reference); false once the registry is closed.
  bool add(pending_ask& ask) noexcept;
  /// Delists `ask`; the registry's reference is returned, to be dropped outside the lock.
  intrusive_ptr<pending_ask> remove(pending_ask& ask) noexcept;
  /// Refuses new asks and fails every listed one with errc::system_terminated.
  void close_and_fail_all() noexcept;

 private:
  struct stripe {
    std::mutex mutex;
    pending_ask* head = nullptr;
    bool closed = false;
  };
  stripe& stripe_of(const pending_ask& ask) noexcept;

  std::array<stripe, 16> stripes_;
};

}  // namespace troupe::detail
