#pragma once
/// INTERNAL. A node's parts of one kind by sharded type name (its runners, its placements),
/// shared by the endpoint actors that hand them messages and the wiring that adds and removes
/// them. Safe from any thread.

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace troupe::cluster {

template <class T>
class named_directory {
 public:
  /// Sets (or, with null, removes) the part of `type`.
  void set(const std::string& type, std::shared_ptr<T> part) {
    std::lock_guard lock(mutex_);
    if (part) {
      parts_[type] = std::move(part);
    } else {
      parts_.erase(type);
    }
  }
  /// The part of `type`, or null.
  [[nodiscard]] std::shared_ptr<T> find(const std::string& type) const {
    std::lock_guard lock(mutex_);
    auto it = parts_.find(type);
    return it == parts_.end() ? nullptr : it->second;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<T>, std::less<>> parts_;
};

}  // namespace troupe::cluster
