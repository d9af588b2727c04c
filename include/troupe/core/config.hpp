#pragma once
/// Configuration: an immutable tree read from a HOCON subset (docs/configuration.md).
///
/// Callers layer configs with `with_fallback`, the winner first:
///   auto cfg = code_config.with_fallback(file_config).with_fallback(defaults);
/// Every error is a `troupe::config_error` whose message names the file, the line and the key:
///   app.conf:12: troupe.sharding.passivation-idle: expected a duration, got "soon"

#include <troupe/core/clock.hpp>
#include <troupe/core/errc.hpp>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

namespace detail {
struct config_node;
}  // namespace detail

/// A configuration that cannot be read: bad syntax, a missing include, an unresolved
/// substitution, a value of the wrong type or an unknown key. The code is errc::invalid_config.
class config_error : public error {
 public:
  explicit config_error(std::string what) : error(errc::invalid_config, std::move(what)) {}
};

/// An immutable configuration tree. Copies are cheap (they share the tree) and a config may be
/// read from any number of threads.
///
/// Paths are dotted (`troupe.sharding.number-of-shards`); a segment holding a dot is quoted
/// (`a."b.c"`). The empty path names the config itself. A key set to `null` counts as missing.
class config {
 public:
  /// The empty config (same as `empty()`).
  config();

  /// Parses HOCON text. `origin` names the text in error messages and `origin_of`; includes are
  /// resolved relative to its directory, or to the working directory when it starts with '<'.
  static config parse_string(std::string_view text, std::string origin = "<string>");
  /// Parses a HOCON file; its path (as given) is the origin.
  static config parse_file(const std::string& path);
  /// A config with no keys.
  static config empty();

  /// True when `dotted_path` holds a value other than null.
  [[nodiscard]] bool has(std::string_view dotted_path) const;

  /// Typed getters: nullopt when the path is missing (or null); config_error when the value is
  /// there but of the wrong type. Strings convert to numbers and booleans when they parse as one.
  [[nodiscard]] std::optional<std::string> get_string(std::string_view path) const;
  [[nodiscard]] std::optional<std::int64_t> get_int(std::string_view path) const;
  /// true/false, on/off, yes/no.
  [[nodiscard]] std::optional<bool> get_bool(std::string_view path) const;
  [[nodiscard]] std::optional<double> get_double(std::string_view path) const;
  /// A non-negative number with an optional unit ("2 minutes", "500ms", "5 s"); a bare number
  /// is milliseconds.
  [[nodiscard]] std::optional<duration> get_duration(std::string_view path) const;
  /// A list of scalars, each read as a string.
  [[nodiscard]] std::optional<std::vector<std::string>> get_string_list(
      std::string_view path) const;

  /// The object at `path`; the empty config when it is missing. Errors raised through the
  /// result name keys by their full path. Throws config_error when the value is not an object.
  [[nodiscard]] config at(std::string_view path) const;
  /// The direct children that hold a value, sorted.
  [[nodiscard]] std::vector<std::string> keys() const;
  /// "file:line" where the value at `path` was defined; empty when it is missing.
  [[nodiscard]] std::string origin_of(std::string_view path) const;

  /// This config, with `fallback` filling what it lacks: on the same key this one wins, and
  /// two objects merge key by key.
  [[nodiscard]] config with_fallback(const config& fallback) const;

  /// Throws config_error, naming the key, its file and its line, when the object at `path` has
  /// a key outside `known`. Does nothing when `path` is missing.
  void check_known_keys(std::string_view path, std::initializer_list<std::string_view> known) const;

 private:
  config(std::shared_ptr<const detail::config_node> root, std::string prefix);

  /// The value at `path`, or nullptr (missing or null); throws when a step is not an object.
  [[nodiscard]] const detail::config_node* find(std::string_view path) const;
  /// `path` prefixed with this config's position in the tree it came from.
  [[nodiscard]] std::string full_path(std::string_view path) const;

  std::shared_ptr<const detail::config_node> root_;
  std::string prefix_;
};

}  // namespace troupe
