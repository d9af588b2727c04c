#include "runtime_log.hpp"

#include <spdlog/details/log_msg.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace cluster_demo {

namespace {

class console_sink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  console_sink(console& out, demo_clock::time_point t0) : out_(&out), t0_(t0) {}
  void detach() {
    std::lock_guard lock(mutex_);
    out_ = nullptr;
  }
  /// A line another process logged, printed as if logged here.
  void relay(const std::string& text, bool error) {
    std::lock_guard lock(mutex_);
    print(text, error);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    print(std::string(msg.payload.data(), msg.payload.size()), msg.level >= spdlog::level::err);
  }
  void flush_() override {}

 private:
  void print(const std::string& text, bool error) {
    if (out_ == nullptr) return;
    const auto now = demo_clock::now();
    while (!recent_.empty() && now - recent_.front().first > std::chrono::seconds(1)) {
      recent_.pop_front();
    }
    for (const auto& [at, seen] : recent_) {
      if (seen == text) return;
    }
    recent_.emplace_back(now, text);
    const char* level = error ? "error" : "warning";
    out_->line("  " + since(t0_, now) + "  (runtime " + level + ") " + text);
  }

  console* out_;
  demo_clock::time_point t0_;
  std::deque<std::pair<demo_clock::time_point, std::string>> recent_;
};

std::shared_ptr<console_sink>& the_sink() {
  static std::shared_ptr<console_sink> sink;
  return sink;
}

}  // namespace

void route_runtime_log(console& out, demo_clock::time_point t0) {
  the_sink() = std::make_shared<console_sink>(out, t0);
  auto logger = std::make_shared<spdlog::logger>("troupe", the_sink());
  logger->set_level(spdlog::level::warn);
  try {
    spdlog::register_logger(std::move(logger));
  } catch (const spdlog::spdlog_ex&) {
    // The runtime logged before this: its own logger (to stderr) stays.
  }
}

void silence_runtime_log() {
  if (the_sink()) the_sink()->detach();
}

void relay_runtime_line(const std::string& line) {
  auto sink = the_sink();
  if (!sink) return;
  const bool error = line.rfind("error ", 0) == 0;
  const std::size_t space = line.find(' ');
  sink->relay(space == std::string::npos ? line : line.substr(space + 1), error);
}

namespace {

/// A node process's runtime lines, to its stdout for the driver (one write(2) per line).
class parent_sink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::string text(msg.payload.data(), msg.payload.size());
    for (char& c : text) {
      if (c == '\n') c = ' ';
    }
    const std::string line = std::string("log ") +
                             (msg.level >= spdlog::level::err ? "error " : "warning ") + text +
                             "\n";
    if (::write(1, line.data(), line.size()) < 0) return;  // the driver is gone
  }
  void flush_() override {}
};

}  // namespace

void route_runtime_log_to_parent() {
  auto logger = std::make_shared<spdlog::logger>("troupe", std::make_shared<parent_sink>());
  logger->set_level(spdlog::level::warn);
  try {
    spdlog::register_logger(std::move(logger));
  } catch (const spdlog::spdlog_ex&) {
  }
}

}  // namespace cluster_demo
