// The management API's views as JSON objects (Boost.JSON); nothing here reads the cluster.
#include "observability/management/json_views.hpp"

#include <troupe/sharding/entity_path.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

namespace troupe::observability::management {

namespace json = boost::json;

namespace {

json::array strings(const std::vector<std::string>& items) {
  json::array out;
  for (const auto& s : items) out.emplace_back(s);
  return out;
}

}  // namespace

json::value to_json(const members_view& v) {
  json::array members;
  for (const auto& m : v.members) {
    members.emplace_back(json::object{
        {"node", m.node},
        {"incarnation", m.incarnation},
        {"roles", strings(m.roles)},
        {"leaving", m.leaving},
        {"app_version", m.app_version},
        {"address", m.address},
        {"reachability", m.reachability},
    });
  }
  return json::object{{"cluster", v.cluster}, {"self", v.self}, {"members", std::move(members)}};
}

json::value to_json(const types_view& v) { return json::object{{"types", strings(v.types)}}; }

json::value to_json(const shards_view& v) {
  json::array shards;
  for (const auto& s : v.shards) {
    json::object o{
        {"shard", s.shard}, {"owner", s.owner},
        {"epoch", s.epoch}, {"owner_is_member", s.owner_is_member},
        {"local", s.local},
    };
    // Figures only this node's region knows; null rather than a misleading 0 elsewhere.
    if (s.local) {
      o["resident"] = s.resident;
      o["entities"] = s.entities;
      o["messages"] = s.messages;
      json::array hot;
      for (const auto& [id, count] : s.hot_keys) {
        hot.emplace_back(json::object{{"id", id}, {"count", count}});
      }
      o["hot_keys"] = std::move(hot);
    } else {
      o["resident"] = nullptr;
      o["entities"] = nullptr;
      o["messages"] = nullptr;
      o["hot_keys"] = nullptr;
    }
    if (s.messages_per_second) {
      o["messages_per_second"] = *s.messages_per_second;
    } else {
      o["messages_per_second"] = nullptr;
    }
    shards.emplace_back(std::move(o));
  }
  return json::object{{"type", v.type},
                      {"num_shards", v.num_shards},
                      {"coordinator", v.coordinator},
                      {"shards", std::move(shards)}};
}

json::value to_json(const entity_view& v) {
  std::string path = sharding::region_name(v.type);
  path += '/';
  path += sharding::shard_child_name(v.shard);
  path += '/';
  sharding::append_entity_child_name(path, v.id);
  json::object o{
      {"type", v.type},   {"id", v.id},       {"shard", v.shard}, {"owner", v.owner},
      {"epoch", v.epoch}, {"local", v.local}, {"path", path},
  };
  if (v.active) {
    o["active"] = *v.active;
  } else {
    o["active"] = nullptr;
  }
  return o;
}

json::value to_json(const readiness_view& v) {
  if (v.ready) return json::object{{"status", "ready"}};
  return json::object{{"status", "not ready"}, {"error", v.reason}};
}

json::value to_json(const leave_view& v) {
  return json::object{
      {"status", "leaving"}, {"node", v.node}, {"already_leaving", v.already_leaving}};
}

std::string to_text(const json::value& v) {
  std::string out = json::serialize(v);
  out += '\n';
  return out;
}

}  // namespace troupe::observability::management
