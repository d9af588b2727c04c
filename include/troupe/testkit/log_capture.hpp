#pragma once
/// Capturing what the runtime logs (the spdlog logger named "troupe"), to check in a test what a
/// failure or a dead letter reported.

#include <troupe/core/actor.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <spdlog/sinks/base_sink.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace troupe::testkit {

namespace detail {
/// Keeps every line as "<level> <message>".
class capture_sink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::vector<std::string> lines() {
    std::lock_guard lock(mutex_);
    return lines_;
  }

  std::string wait_for_line(const std::vector<std::string>& parts, duration timeout) {
    std::unique_lock lock(mutex_);
    std::string found;
    auto match = [&] {
      for (const auto& line : lines_) {
        if (std::all_of(parts.begin(), parts.end(),
                        [&](const std::string& p) { return line.find(p) != std::string::npos; })) {
          found = line;
          return true;
        }
      }
      return false;
    };
    logged_.wait_for(lock, timeout, match);
    return found;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const auto level = spdlog::level::to_string_view(msg.level);
    std::string line(level.data(), level.size());
    line += ' ';
    line.append(msg.payload.data(), msg.payload.size());
    lines_.push_back(std::move(line));
    logged_.notify_all();
  }
  void flush_() override {}

 private:
  std::condition_variable logged_;
  std::vector<std::string> lines_;
};
}  // namespace detail

/// Adds a capturing sink to the runtime's logger for its lifetime. Declare it before the actor
/// system it observes, so that it outlives the system: spdlog's sink list must not change while
/// worker threads log.
class log_capture {
 public:
  log_capture() : sink_(std::make_shared<detail::capture_sink>()) {
    logger_ = troupe::logger();
    logger_->sinks().push_back(sink_);
  }
  ~log_capture() {
    auto& sinks = logger_->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  log_capture(const log_capture&) = delete;
  log_capture& operator=(const log_capture&) = delete;

  /// Every line so far, as "<level> <message>" (e.g. "warning [/user/a] ...").
  [[nodiscard]] std::vector<std::string> lines() const { return sink_->lines(); }
  /// Every line so far, joined by newlines.
  [[nodiscard]] std::string text() const {
    std::string out;
    for (const auto& l : lines()) out += l + '\n';
    return out;
  }
  /// Waits until a line containing every one of `parts` was logged; returns that line, or an
  /// empty string after `timeout` (scaled by TROUPE_TEST_TIMEFACTOR).
  std::string wait_for_line(const std::vector<std::string>& parts,
                            duration timeout = std::chrono::seconds(3)) const {
    return sink_->wait_for_line(parts, dilated(timeout));
  }

 private:
  std::shared_ptr<detail::capture_sink> sink_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace troupe::testkit
