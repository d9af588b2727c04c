#include "core/pending_asks.hpp"

#include "core/system_impl.hpp"

#include <cstdint>

namespace troupe::detail {

pending_asks::~pending_asks() {
  // Closed by terminate() before the system goes; drop what a system never terminated left.
  for (auto& s : stripes_) {
    while (s.head != nullptr) {
      pending_ask* a = s.head;
      s.head = a->next_;
      a->listed_ = false;
      a->release();
    }
  }
}

pending_asks::stripe& pending_asks::stripe_of(const pending_ask& ask) noexcept {
  const auto h = reinterpret_cast<std::uintptr_t>(&ask) >> 6;
  return stripes_[h % stripes_.size()];
}

bool pending_asks::add(pending_ask& ask) noexcept {
  stripe& s = stripe_of(ask);
  std::lock_guard lock(s.mutex);
  if (s.closed) return false;
  ask.add_ref();
  ask.prev_ = nullptr;
  ask.next_ = s.head;
  if (s.head != nullptr) s.head->prev_ = &ask;
  s.head = &ask;
  ask.listed_ = true;
  return true;
}

intrusive_ptr<pending_ask> pending_asks::remove(pending_ask& ask) noexcept {
  stripe& s = stripe_of(ask);
  std::lock_guard lock(s.mutex);
  if (!ask.listed_) return nullptr;  // terminate() took it, or it was never listed
  if (ask.prev_ != nullptr) {
    ask.prev_->next_ = ask.next_;
  } else {
    s.head = ask.next_;
  }
  if (ask.next_ != nullptr) ask.next_->prev_ = ask.prev_;
  ask.prev_ = ask.next_ = nullptr;
  ask.listed_ = false;
  return {&ask, adopt};
}

void pending_asks::close_and_fail_all() noexcept {
  pending_ask* taken = nullptr;  // chained through next_, each with the registry's reference
  for (auto& s : stripes_) {
    std::lock_guard lock(s.mutex);
    s.closed = true;
    while (s.head != nullptr) {
      pending_ask* a = s.head;
      s.head = a->next_;
      a->listed_ = false;  // a remove() from here on leaves the links to us
      a->prev_ = nullptr;
      a->next_ = taken;
      taken = a;
    }
  }
  // Unlocked: completing an ask runs (or posts) its handler, which may ask again.
  while (taken != nullptr) {
    intrusive_ptr<pending_ask> a(taken, adopt);
    taken = a->next_;
    a->next_ = nullptr;
    a->fail_on_shutdown();
  }
}

intrusive_ptr<ref_counted> keep_system_alive(system_impl* system) noexcept {
  return intrusive_ptr<ref_counted>(system);
}

bool list_ask(system_impl* system, pending_ask& ask) noexcept { return system->asks().add(ask); }

void delist_ask(system_impl* system, pending_ask& ask) noexcept {
  // The returned reference is dropped here, after remove() has let go of the lock.
  (void)system->asks().remove(ask);
}

}  // namespace troupe::detail
