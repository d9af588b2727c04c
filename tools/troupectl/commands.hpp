#pragma once
/// The commands of troupectl, each a function over a client: they print to `out` (a table, or
/// JSON with --json), progress to `err`, and fail by throwing troupectl::failure.

#include "troupectl/client.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace troupectl {

struct context {
  const client& api;
  bool json = false;
  std::ostream& out;
  std::ostream& err;
};

/// GET /cluster/members.
void members(const context& c);
/// GET /cluster/shards/<type>.
void shards(const context& c, const std::string& type);
/// GET /cluster/entities/<type>/<id>, the id percent-encoded.
void where(const context& c, const std::string& type, const std::string& id);
/// POST /cluster/rebalance/<type>.
void rebalance(const context& c, const std::string& type);

struct leave_options {
  std::string node;
  /// The types whose shards the progress bar counts; none: wait only for the node to go.
  std::vector<std::string> types;
  std::chrono::milliseconds wait{std::chrono::seconds(60)};
  std::chrono::milliseconds poll{std::chrono::milliseconds(500)};
};
/// Checks that the node at --url is `node`, POSTs /cluster/leave, then shows on `err` how many
/// of its shards it still owns until it owns none or has left the members (within `wait`).
void leave(const context& c, const leave_options& o);

struct top_options {
  std::string type;
  std::chrono::milliseconds interval{std::chrono::seconds(2)};
  /// Rounds to print; 0: until `stop` is set (Ctrl-C).
  unsigned iterations = 0;
  std::size_t limit = 10;
  /// Clear the terminal before each round (only when `out` is one).
  bool clear_screen = false;
  const std::atomic<bool>* stop = nullptr;
};
/// The hottest shards of a type by message rate, with their hot keys when the JSON has them.
void top(const context& c, const top_options& o);

}  // namespace troupectl
