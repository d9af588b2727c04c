#include "progress.hpp"

#include "report.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace cluster_demo {

progress::progress(console& out, const load& l, demo_clock::time_point t0, bool quiet)
    : out_(out), load_(l), t0_(t0) {
  if (!quiet) thread_ = std::thread([this] { run(); });
}

void progress::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  out_.clear_status();
}

void progress::run() {
  const auto every = out_.live() ? std::chrono::milliseconds(250) : std::chrono::seconds(1);
  auto last = demo_clock::now();
  std::int64_t last_acked = load_.acked();
  while (!stop_.load()) {
    std::this_thread::sleep_for(every);
    const auto now = demo_clock::now();
    const std::int64_t acked = load_.acked();
    const double rate = static_cast<double>(acked - last_acked) / seconds(last, now);
    last = now;
    last_acked = acked;
    std::string text = "  " + since(t0_, now) + "  [" + name_of(load_.current_phase()) + "]  " +
                       grouped(static_cast<std::int64_t>(rate)) + " acked/s   acked " +
                       grouped(acked) + "   failed " + grouped(load_.failed());
    if (load_.current_phase() == phase::kill && load_.killed_carts_waiting() > 0) {
      text += "   carts of c waiting " + grouped(load_.killed_carts_waiting());
    }
    if (out_.live()) {
      out_.status(text);
    } else {
      out_.line(text);
    }
  }
}

}  // namespace cluster_demo
