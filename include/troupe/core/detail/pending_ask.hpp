#pragma once
/// INTERNAL. An ask's promise as its system sees it: every ask still pending is listed, so that
/// terminate() can fail them all at once instead of leaving them to their own timeouts.

#include <troupe/core/detail/actor_target.hpp>
#include <troupe/core/detail/ref_counted.hpp>

namespace troupe::detail {

class system_impl;
class pending_asks;

/// An ask that its system can fail on shutdown.
class pending_ask : public actor_target {
 public:
  /// Fails the ask with errc::system_terminated; a no-op once it has completed.
  virtual void fail_on_shutdown() noexcept = 0;

 private:
  friend class pending_asks;
  // Guarded by the registry's lock: the ask's links while it is listed.
  pending_ask* prev_ = nullptr;
  pending_ask* next_ = nullptr;
  bool listed_ = false;
};

/// A reference that keeps `system`, and with it its registry of asks, alive.
intrusive_ptr<ref_counted> keep_system_alive(system_impl* system) noexcept;

/// Lists `ask` with its system, which keeps a reference to it until it is delisted or failed by
/// terminate(); false when the system is shutting down: the ask must then fail at once with
/// errc::system_terminated.
bool list_ask(system_impl* system, pending_ask& ask) noexcept;

/// Delists a completed ask; a no-op when terminate() has already taken it.
void delist_ask(system_impl* system, pending_ask& ask) noexcept;

}  // namespace troupe::detail
