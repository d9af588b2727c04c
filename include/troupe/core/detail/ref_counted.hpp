#pragma once
/// Intrusive reference counting: one atomic in the object, a pointer-sized handle.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace troupe::detail {

/// Base of intrusively counted objects; starts with one reference owned by its creator.
class ref_counted {
 public:
  ref_counted() = default;
  ref_counted(const ref_counted&) = delete;
  ref_counted& operator=(const ref_counted&) = delete;

  void add_ref() const noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() const noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  [[nodiscard]] std::uint32_t use_count() const noexcept {
    return refs_.load(std::memory_order_relaxed);
  }

 protected:
  virtual ~ref_counted() = default;

 private:
  mutable std::atomic<std::uint32_t> refs_{1};
};

struct adopt_t {};
/// Tag: take over the creator's reference instead of adding one.
inline constexpr adopt_t adopt{};

/// Owning handle to a ref_counted object.
template <class T>
class intrusive_ptr {
 public:
  intrusive_ptr() noexcept = default;
  intrusive_ptr(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor)
  explicit intrusive_ptr(T* p) noexcept : p_(p) {
    if (p_) p_->add_ref();
  }
  intrusive_ptr(T* p, adopt_t) noexcept : p_(p) {}
  intrusive_ptr(const intrusive_ptr& o) noexcept : intrusive_ptr(o.p_) {}
  intrusive_ptr(intrusive_ptr&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  template <class U>
  intrusive_ptr(const intrusive_ptr<U>& o) noexcept : intrusive_ptr(o.get()) {}  // NOLINT
  template <class U>
  intrusive_ptr(intrusive_ptr<U>&& o) noexcept : p_(o.detach()) {}  // NOLINT
  ~intrusive_ptr() {
    if (p_) p_->release();
  }
  intrusive_ptr& operator=(intrusive_ptr o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }

  [[nodiscard]] T* get() const noexcept { return p_; }
  T* operator->() const noexcept { return p_; }
  T& operator*() const noexcept { return *p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  /// Gives up ownership without releasing.
  T* detach() noexcept { return std::exchange(p_, nullptr); }
  void reset() noexcept { intrusive_ptr().swap(*this); }
  void swap(intrusive_ptr& o) noexcept { std::swap(p_, o.p_); }

  friend bool operator==(const intrusive_ptr& a, const intrusive_ptr& b) noexcept {
    return a.p_ == b.p_;
  }

 private:
  T* p_ = nullptr;
};

}  // namespace troupe::detail
