#include "core/config_parser.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>

namespace troupe::detail {

namespace {

using kind = config_node::kind;

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Resolves substitutions, concatenations and merges in place, from the root down.
class resolver {
 public:
  explicit resolver(config_node_ptr root) : root_(std::move(root)) {}

  // The resolved value of `node`, or nullptr when an optional substitution left it unset.
  config_node_ptr resolve(const config_node_ptr& node, const std::string& key) {
    if (node->state == 2) {
      if (node->unset) return nullptr;
      return node->resolved ? node->resolved : node;
    }
    if (node->state == 1) fail(*node, key, "substitution cycle: the value refers to itself");
    if (nesting_ >= max_resolve_depth) {
      fail(*node, key,
           "substitutions nested too deep: more than " + std::to_string(max_resolve_depth) +
               " levels to resolve");
    }
    const nested guard(nesting_);
    node->state = 1;
    config_node_ptr result = node;
    switch (node->type) {
      case kind::object: {
        for (auto it = node->fields.begin(); it != node->fields.end();) {
          auto value = resolve(it->second, child_key(key, it->first));
          if (value) {
            it->second = std::move(value);
            ++it;
          } else {
            it = node->fields.erase(it);
          }
        }
        set_height(*node, key);
        break;
      }
      case kind::array: {
        std::vector<config_node_ptr> items;
        for (const auto& item : node->items) {
          if (auto value = resolve(item, key)) items.push_back(std::move(value));
        }
        node->items = std::move(items);
        set_height(*node, key);
        break;
      }
      case kind::substitution:
        result = substitute(*node, key);
        break;
      case kind::concatenation: {
        result = std::make_shared<config_node>();
        result->type = kind::string;
        result->origin = node->origin;
        result->line = node->line;
        result->state = 2;
        for (const auto& part : node->items) {
          const auto value = resolve(part, key);
          if (!value) continue;
          if (value->type == kind::object || value->type == kind::array) {
            fail(*node, key, "cannot concatenate " + describe(*value) + " with a string");
          }
          result->text += value->type == kind::null ? "null" : value->text;
        }
        break;
      }
      case kind::merge: {
        result = nullptr;
        for (const auto& layer : node->items) {
          auto value = resolve(layer, key);
          if (!value) continue;
          if (result && result->type == kind::object && value->type == kind::object) {
            result = merge_resolved(result, value);
          } else {
            result = std::move(value);
          }
        }
        break;
      }
      default:
        break;
    }
    node->state = 2;
    node->unset = result == nullptr;
    if (result != node) node->resolved = result;
    return result;
  }

 private:
  // Counts one level of resolve() for as long as it lives.
  struct nested {
    explicit nested(int& depth) : depth_(depth) { ++depth_; }
    ~nested() { --depth_; }
    nested(const nested&) = delete;
    nested& operator=(const nested&) = delete;
    int& depth_;
  };

  // A substitution can put a whole tree inside another (`b = { x = ${a} }`, `c = { x = ${b} }`,
  // ...), deeper than any text the parser accepts: bound it here, as each container is done.
  static void set_height(config_node& node, const std::string& key) {
    int below = 0;
    for (const auto& [name, value] : node.fields) below = std::max(below, value->height);
    for (const auto& item : node.items) below = std::max(below, item->height);
    node.height = below + 1;
    if (node.height > max_config_depth) {
      fail(node, key,
           "objects and lists nested deeper than " + std::to_string(max_config_depth) +
               " levels after substitution");
    }
  }

  static std::string child_key(const std::string& key, const std::string& name) {
    return key.empty() ? join_path({name}) : key + "." + join_path({name});
  }

  config_node_ptr substitute(const config_node& node, const std::string& key) {
    if (!node.include_prefix.empty()) {
      if (auto value = lookup(concat(node.include_prefix, node.path))) return value;
    }
    if (auto value = lookup(node.path)) return value;
    if (const char* env = std::getenv(node.text.c_str())) {
      auto value = std::make_shared<config_node>();
      value->type = kind::string;
      value->text = env;
      value->origin = node.origin;
      value->line = node.line;
      value->state = 2;
      return value;
    }
    if (node.optional) return nullptr;
    fail(node, key,
         "cannot resolve ${" + node.text + "}: no such key and no environment variable " +
             node.text);
  }

  config_node_ptr lookup(const std::vector<std::string>& path) {
    config_node_ptr current = root_;
    std::vector<std::string> walked;
    for (const auto& segment : path) {
      if (current->type != kind::object) {
        current = resolve(current, join_path(walked));
        if (!current || current->type != kind::object) return nullptr;
      }
      const auto it = current->fields.find(segment);
      if (it == current->fields.end()) return nullptr;
      current = it->second;
      walked.push_back(segment);
    }
    return resolve(current, join_path(path));
  }

  config_node_ptr root_;
  int nesting_ = 0;
};

}  // namespace

config_node_ptr resolve_config(const config_node_ptr& root) {
  resolver r(root);
  return r.resolve(root, "");
}

}  // namespace troupe::detail
