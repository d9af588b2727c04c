#include "runtime_log.hpp"

#include <spdlog/details/log_msg.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

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

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (out_ == nullptr) return;
    const auto now = demo_clock::now();
    std::string text(msg.payload.data(), msg.payload.size());
    while (!recent_.empty() && now - recent_.front().first > std::chrono::seconds(1)) {
      recent_.pop_front();
    }
    for (const auto& [at, seen] : recent_) {
      if (seen == text) return;
    }
    recent_.emplace_back(now, text);
    const char* level = msg.level >= spdlog::level::err ? "error" : "warning";
    out_->line("  " + since(t0_, now) + "  (runtime " + level + ") " + text);
  }
  void flush_() override {}

 private:
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

}  // namespace cluster_demo
