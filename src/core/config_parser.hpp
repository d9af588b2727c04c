#pragma once
/// The HOCON reader behind troupe::config: the tree it builds, the parser (with includes) and
/// the resolution of substitutions. Private to the core.

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::detail {

/// The deepest nesting of objects and lists a config may have (the root object is level 1),
/// also after substitutions; deeper text is a config_error, so no recursion over the tree
/// (parsing, resolution, merging, destruction) can exhaust the stack.
inline constexpr int max_config_depth = 64;
/// How deep resolution may recurse: the nesting plus chains of substitutions (`a = ${b}`,
/// `b = ${c}`, ...).
inline constexpr int max_resolve_depth = 4 * max_config_depth;

struct config_node;
using config_node_ptr = std::shared_ptr<config_node>;

/// One value of the tree. After resolution only object, array, string, number, boolean and null
/// remain; substitution, concatenation and merge exist only while parsing.
struct config_node {
  enum class kind {
    object,
    array,
    string,
    number,
    boolean,
    null,
    /// ${path} or ${?path}; `text` is the path as written, `path` its segments.
    substitution,
    /// Parts joined into one string, at least one of them a substitution (`items`).
    concatenation,
    /// Layers of one key, later ones winning, kept until their substitutions resolve (`items`).
    merge,
  };

  kind type = kind::null;
  /// Scalars: the value (numbers and booleans as written). Substitutions: the path as written.
  std::string text;
  std::map<std::string, config_node_ptr, std::less<>> fields;
  /// Array items; the parts of a concatenation; the layers of a merge.
  std::vector<config_node_ptr> items;
  /// Substitutions: ${?...}, and the object path of the include the substitution came from.
  bool optional = false;
  std::vector<std::string> path;
  std::vector<std::string> include_prefix;
  /// Where the value was defined.
  std::shared_ptr<const std::string> origin;
  int line = 0;
  /// Resolution: 0 not started, 1 in progress (re-entry is a cycle), 2 done. A done node
  /// resolved to `resolved`, or to itself when that is null (never a pointer to itself: that
  /// would be a reference cycle), or to nothing when `unset`.
  int state = 0;
  bool unset = false;
  /// Objects and lists: the levels of containers from this node down (1 for `{a = 1}`), known
  /// once resolved; scalars 0.
  int height = 0;
  config_node_ptr resolved;
};

/// Parses and resolves a whole document; the result is an object.
config_node_ptr parse_config(std::string_view text, const std::string& origin);
/// Same for a file; a missing or unreadable file is an error.
config_node_ptr parse_config_file(const std::string& path);

/// Resolves substitutions, concatenations and merges of a parsed root object, in place; the
/// result holds only objects, lists and scalars. Throws config_error on an unresolved
/// substitution, a cycle, or an object or list inside a string concatenation.
config_node_ptr resolve_config(const config_node_ptr& root);

/// `base` with `over` on top: objects merge key by key (new nodes; neither input changes),
/// anything else in `over` wins.
config_node_ptr merge_resolved(const config_node_ptr& base, const config_node_ptr& over);

/// Splits a dotted path into segments; a quoted segment may hold dots. Throws config_error on
/// an empty segment or an unterminated quote. The empty path has no segments.
std::vector<std::string> split_path(std::string_view path);
/// The inverse of split_path: joins segments, quoting those that need it.
std::string join_path(const std::vector<std::string>& segments);

/// "file:line" of a node.
std::string where(const config_node& node);
/// How a value reads in an error message: "soon" quoted, 42, true, null, an object, a list.
std::string describe(const config_node& node);

/// Throws config_error "origin:line: key: message" (the key part only when `key` is not empty).
[[noreturn]] void fail(const std::string& origin, int line, std::string_view key,
                       std::string_view message);
[[noreturn]] void fail(const config_node& node, std::string_view key, std::string_view message);

}  // namespace troupe::detail
