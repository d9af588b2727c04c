#pragma once
// The duplicate-activation check across processes. Each node process appends a line per cart
// start and stop ("start <cart> <ns>", "stop <cart> <ns>") and one when it fences itself
// ("fence - <ns>") to a file of its own, stamped with the steady clock (CLOCK_MONOTONIC, which
// every process on one machine shares), one write(2) per line so that a kill -9 loses no line
// already written. The driver merges the files at the end.

#include "activations.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

namespace cluster_demo {

/// A node's log; the node name is implied by the file.
class activation_log final : public activation_observer {
 public:
  /// Opens (appends to) `file`; throws std::runtime_error when it cannot.
  explicit activation_log(const std::filesystem::path& file);
  ~activation_log();
  activation_log(const activation_log&) = delete;
  activation_log& operator=(const activation_log&) = delete;

  void enter(const std::string& cart, const std::string& node) override;
  void leave(const std::string& cart, const std::string& node) override;
  /// The node fenced itself: from now on its entities handle nothing.
  void fenced();

 private:
  void record(const char* what, const std::string& cart);
  int fd_;
};

/// The steady clock now, in ns since its epoch (as the logs stamp it).
[[nodiscard]] std::int64_t steady_ns();

/// Merges the logs of `nodes` (node name -> file). An activation ends at its stop line, at its
/// node's fence line, or for the node `killed` at `killed_ns`; one still open ends never. An
/// activation that begins while its cart is active on another node is a duplicate.
[[nodiscard]] activation_counts merge_activation_logs(
    const std::map<std::string, std::filesystem::path>& nodes, const std::string& killed,
    std::int64_t killed_ns);

}  // namespace cluster_demo
