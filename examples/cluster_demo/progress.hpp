#pragma once
// The live status line while the load runs: elapsed time, acknowledged asks per second and in
// all, failed asks, the phase, and during the kill how many of the dead node's carts still wait.
// Rewritten in place four times a second on a terminal, printed once a second otherwise.

#include "console.hpp"
#include "load.hpp"

#include <atomic>
#include <thread>

namespace cluster_demo {

class progress {
 public:
  /// Starts printing unless `quiet`.
  progress(console& out, const load& l, demo_clock::time_point t0, bool quiet);
  ~progress() { stop(); }
  progress(const progress&) = delete;
  progress& operator=(const progress&) = delete;
  void stop();

 private:
  void run();

  console& out_;
  const load& load_;
  demo_clock::time_point t0_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace cluster_demo
