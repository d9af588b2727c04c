#pragma once
// The demo's output: event lines (phases, shard moves) and one live status line. On a terminal
// the status line is rewritten in place (`\r`) and every event line is printed above it; when
// stdout is a file or a pipe the status goes out as a plain line once a second instead, so a log
// stays readable.

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>

namespace cluster_demo {

using demo_clock = std::chrono::steady_clock;

/// Seconds from `t0` to `t`.
inline double seconds(demo_clock::time_point t0, demo_clock::time_point t = demo_clock::now()) {
  return std::chrono::duration<double>(t - t0).count();
}

/// "+12.345s": the time since `t0`.
inline std::string since(demo_clock::time_point t0, demo_clock::time_point t = demo_clock::now()) {
  char text[32];
  std::snprintf(text, sizeof text, "+%.3fs", seconds(t0, t));
  return text;
}

class console {
 public:
  /// `live`: rewrite the status line in place (stdout is a terminal and not --quiet).
  explicit console(bool live) : live_(live) {}

  /// Prints one line, above the status line.
  void line(const std::string& text) {
    std::lock_guard lock(mutex_);
    if (live_ && !status_.empty()) std::fputs("\r\033[K", stdout);
    std::fputs(text.c_str(), stdout);
    std::fputc('\n', stdout);
    if (live_ && !status_.empty()) std::fputs(status_.c_str(), stdout);
    std::fflush(stdout);
  }
  /// Rewrites the status line (a terminal only).
  void status(const std::string& text) {
    if (!live_) return;
    std::lock_guard lock(mutex_);
    status_ = text;
    std::fputs("\r\033[K", stdout);
    std::fputs(status_.c_str(), stdout);
    std::fflush(stdout);
  }
  /// Removes the status line for good.
  void clear_status() {
    if (!live_) return;
    std::lock_guard lock(mutex_);
    if (!status_.empty()) std::fputs("\r\033[K", stdout);
    status_.clear();
    std::fflush(stdout);
  }
  [[nodiscard]] bool live() const { return live_; }

 private:
  bool live_;
  std::mutex mutex_;
  std::string status_;
};

}  // namespace cluster_demo
