// The one-shot commands: one request each, then the server's JSON or a table.
#include "troupectl/commands.hpp"

#include "troupectl/json_fields.hpp"
#include "troupectl/render.hpp"

#include <boost/json/serialize.hpp>

namespace troupectl {

namespace json = boost::json;

namespace {

void print_json(const context& c, const json::value& v) { c.out << json::serialize(v) << '\n'; }

std::string joined(const json::value& v, const char* key) {
  const auto* f = field(v, key);
  if (f == nullptr || !f->is_array() || f->as_array().empty()) return "-";
  std::string out;
  for (const auto& item : f->as_array()) {
    if (!out.empty()) out += ',';
    out += item.is_string() ? std::string(item.as_string()) : json::serialize(item);
  }
  return out;
}

const json::array& items(const json::value& v, const char* key) {
  static const json::array none;
  const auto* f = field(v, key);
  return f != nullptr && f->is_array() ? f->as_array() : none;
}

}  // namespace

void members(const context& c) {
  const json::value v = c.api.get_json("/cluster/members");
  if (c.json) return print_json(c, v);
  c.out << "cluster " << text(v, "cluster") << ", answered by " << text(v, "self") << '\n';
  table t({"NODE", "ADDRESS", "REACHABILITY", "ROLES", "VERSION", "INCARNATION", "LEAVING"});
  for (const auto& m : items(v, "members")) {
    t.add({text(m, "node"), text(m, "address"), text(m, "reachability"), joined(m, "roles"),
           text(m, "app_version"), text(m, "incarnation"), text(m, "leaving")});
  }
  t.print(c.out);
}

void shards(const context& c, const std::string& type) {
  const json::value v = c.api.get_json("/cluster/shards/" + percent_encode(type));
  if (c.json) return print_json(c, v);
  c.out << "type " << text(v, "type") << ": " << text(v, "num_shards") << " shards, "
        << items(v, "shards").size() << " allocated, coordinator " << text(v, "coordinator", "-")
        << '\n';
  table t({"SHARD", "OWNER", "EPOCH", "ENTITIES", "MESSAGES", "MSG/S"});
  for (const auto& s : items(v, "shards")) {
    std::string owner = text(s, "owner");
    if (owner.empty()) owner = "(none)";
    if (text(s, "owner_is_member") == "no") owner += " (not a member)";
    t.add({text(s, "shard"), owner, text(s, "epoch"), text(s, "entities"), text(s, "messages"),
           format_rate(number(s, "messages_per_second"))});
  }
  t.print(c.out);
}

void where(const context& c, const std::string& type, const std::string& id) {
  const json::value v =
      c.api.get_json("/cluster/entities/" + percent_encode(type) + "/" + percent_encode(id));
  if (c.json) return print_json(c, v);
  std::string owner = text(v, "owner");
  if (owner.empty()) owner = "(none: the shard has no home yet)";
  std::string active = text(v, "active", "unknown (its shard is not on this node)");
  table t({"FIELD", "VALUE"});
  t.add({"type", text(v, "type")});
  t.add({"id", text(v, "id")});
  t.add({"shard", text(v, "shard")});
  t.add({"owner", owner});
  t.add({"epoch", text(v, "epoch")});
  t.add({"active", active});
  t.add({"path", text(v, "path")});
  t.print(c.out);
}

void rebalance(const context& c, const std::string& type) {
  const json::value v = c.api.post_json("/cluster/rebalance/" + percent_encode(type));
  if (c.json) return print_json(c, v);
  c.out << "rebalance of type " << type << " requested (" << text(v, "status", "accepted") << ")\n";
}

}  // namespace troupectl
