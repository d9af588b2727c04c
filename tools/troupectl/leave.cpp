// leave: refuse unless the node at --url is the one named (a leave always leaves the node that
// receives it), count its shards, ask it to leave, then follow its shards as they move away.
#include "troupectl/commands.hpp"
#include "troupectl/json_fields.hpp"
#include "troupectl/render.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <thread>

namespace troupectl {

namespace json = boost::json;

namespace {

using steady = std::chrono::steady_clock;

/// Whether `node` is among the members the node at --url lists.
bool is_member(const json::value& members, const std::string& node) {
  const auto* list = field(members, "members");
  if (list == nullptr || !list->is_array()) return false;
  for (const auto& m : list->as_array()) {
    if (text(m, "node", "") == node) return true;
  }
  return false;
}

/// Shards of `types` whose owner is `node`.
std::size_t owned_by(const client& api, const std::vector<std::string>& types,
                     const std::string& node) {
  std::size_t n = 0;
  for (const auto& type : types) {
    const json::value v = api.get_json("/cluster/shards/" + percent_encode(type));
    const auto* list = field(v, "shards");
    if (list == nullptr || !list->is_array()) continue;
    for (const auto& s : list->as_array()) {
      if (text(s, "owner", "") == node) ++n;
    }
  }
  return n;
}

}  // namespace

void leave(const context& c, const leave_options& o) {
  const std::string self = text(c.api.get_json("/cluster/members"), "self", "");
  if (self != o.node) {
    throw failure(other_failure, "refusing to leave: the node at " + c.api.url() + " is '" + self +
                                     "', not '" + o.node +
                                     "' (a leave always leaves the node that receives it; "
                                     "point --url at " +
                                     o.node + ")");
  }
  const std::size_t before = owned_by(c.api, o.types, o.node);
  const json::value started = c.api.post_json("/cluster/leave");
  const bool already = text(started, "already_leaving", "no") == "yes";
  c.err << "leave of " << o.node << (already ? " already under way" : " started") << '\n';

  const auto start = steady::now();
  const auto deadline = start + o.wait;
  std::size_t left = before;
  std::string outcome;
  for (;;) {
    try {
      if (!is_member(c.api.get_json("/cluster/members"), o.node)) {
        left = 0;
        outcome = "left the members";
      } else {
        left = owned_by(c.api, o.types, o.node);
        if (left == 0 && !o.types.empty()) outcome = "owns no shards";
      }
    } catch (const failure& f) {
      // A node that has left usually stops, and its API with it.
      if (f.code() != unreachable) throw;
      left = 0;
      outcome = "stopped answering (a node that has left usually stops)";
    }
    c.err << '\r' << progress_bar(left, before, 30, "shards still on " + o.node) << std::flush;
    if (!outcome.empty() || steady::now() >= deadline) break;
    std::this_thread::sleep_for(std::min<steady::duration>(o.poll, deadline - steady::now()));
  }
  c.err << '\n';
  const double seconds = std::chrono::duration<double>(steady::now() - start).count();

  if (c.json) {
    c.out << json::serialize(json::object{{"node", o.node},
                                          {"already_leaving", already},
                                          {"done", !outcome.empty()},
                                          {"outcome", outcome},
                                          {"shards_before", before},
                                          {"shards_left", left},
                                          {"seconds", seconds}})
          << '\n';
  }
  if (outcome.empty()) {
    throw failure(other_failure, "node " + o.node + " still owns " + std::to_string(left) +
                                     " shard(s) after " + std::to_string(o.wait.count()) +
                                     " ms (--wait); the leave goes on");
  }
  if (!c.json) c.out << "node " << o.node << " " << outcome << '\n';
}

}  // namespace troupectl
