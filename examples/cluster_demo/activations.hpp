#pragma once
// Where each cart's entity runs, for the duplicate-activation check. A cart tells an
// activation_observer when it starts and when it stops: in one process the activation_registry
// sees every node at once; with one process per node each node writes an activation_log
// (activation_log.hpp) that the driver merges at the end.

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace cluster_demo {

/// Told by every cart when its entity starts (pre_start) and stops (post_stop).
class activation_observer {
 public:
  virtual void enter(const std::string& cart, const std::string& node) = 0;
  virtual void leave(const std::string& cart, const std::string& node) = 0;

 protected:
  ~activation_observer() = default;
};

/// What the duplicate-activation check found.
struct activation_counts {
  std::int64_t activations = 0;
  /// Activations that began while the cart was active on another node.
  std::int64_t duplicates = 0;
  std::vector<std::string> examples;
};

/// Which node runs each cart's entity now, for the whole process (all nodes live in it).
///
/// Approximate in one direction only: an entity enters in pre_start and leaves in post_stop, and
/// post_stop runs a little after the entity handled its last message (a fenced node's entities
/// refuse messages from their lease deadline on, then stop when their region gets its turn). So
/// the registry can see an overlap that did not happen, never miss one that did.
class activation_registry final : public activation_observer {
 public:
  void enter(const std::string& cart, const std::string& node) override {
    std::lock_guard lock(mutex_);
    auto& holders = active_[cart];
    if (!holders.empty()) {
      ++duplicates_;
      if (examples_.size() < 3) {
        examples_.push_back(cart + " started on " + node + " while active on " + holders.front());
      }
    }
    holders.push_back(node);
    ++activations_;
  }
  void leave(const std::string& cart, const std::string& node) override {
    std::lock_guard lock(mutex_);
    auto it = active_.find(cart);
    if (it == active_.end()) return;
    auto& holders = it->second;
    for (auto h = holders.begin(); h != holders.end(); ++h) {
      if (*h == node) {
        holders.erase(h);
        break;
      }
    }
    if (holders.empty()) active_.erase(it);
  }
  [[nodiscard]] std::int64_t duplicates() const {
    std::lock_guard lock(mutex_);
    return duplicates_;
  }
  [[nodiscard]] std::int64_t activations() const {
    std::lock_guard lock(mutex_);
    return activations_;
  }
  [[nodiscard]] std::vector<std::string> examples() const {
    std::lock_guard lock(mutex_);
    return examples_;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::vector<std::string>> active_;
  std::int64_t duplicates_ = 0;
  std::int64_t activations_ = 0;
  std::vector<std::string> examples_;
};

}  // namespace cluster_demo
