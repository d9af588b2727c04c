#pragma once
/// Checks that a simulated run stays simulated: while a guard lives, every thread the runtime
/// starts and every read of the real clock through the runtime is recorded, and so is any
/// thread of the process that did not exist when the guard was made (whoever started it). A
/// simulation fails its run when violations() is not empty.

#include <troupe/core/detail/real_time_use.hpp>

#include <filesystem>
#include <set>
#include <string>
#include <system_error>
#include <vector>

namespace troupe::testkit {

class simulation_guard {
 public:
  simulation_guard() : threads_at_start_(threads()) { detail::begin_real_time_recording(); }
  ~simulation_guard() { detail::end_real_time_recording(); }
  simulation_guard(const simulation_guard&) = delete;
  simulation_guard& operator=(const simulation_guard&) = delete;

  /// What broke the simulation so far, one line each ("the steady clock's timer thread: 2",
  /// "a thread started since the guard: tid 1234"); empty when nothing did.
  [[nodiscard]] std::vector<std::string> violations() const {
    std::vector<std::string> out;
    for (const auto& [what, n] : detail::real_time_uses()) {
      out.push_back(what + ": " + std::to_string(n));
    }
    for (const long tid : threads()) {
      if (!threads_at_start_.contains(tid)) {
        out.push_back("a thread started since the guard: tid " + std::to_string(tid));
      }
    }
    return out;
  }

 private:
  /// The process's threads now (Linux: /proc/self/task).
  static std::set<long> threads() {
    std::set<long> tids;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
      tids.insert(std::stol(e.path().filename().string()));
    }
    return tids;
  }

  std::set<long> threads_at_start_;
};

}  // namespace troupe::testkit
