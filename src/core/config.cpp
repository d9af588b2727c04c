#include "troupe/core/config.hpp"

#include "core/config_parser.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <system_error>
#include <utility>

namespace troupe {

namespace detail {

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> segments;
  if (path.empty()) return segments;
  const auto bad = [&](std::string_view why) {
    throw config_error("invalid config path '" + std::string(path) + "': " + std::string(why));
  };
  std::size_t i = 0;
  for (;;) {
    std::string segment;
    bool started = false;
    while (i < path.size() && path[i] != '.') {
      if (path[i] == '"') {
        ++i;
        while (i < path.size() && path[i] != '"') {
          if (path[i] == '\\' && i + 1 < path.size()) ++i;
          segment += path[i++];
        }
        if (i == path.size()) bad("unterminated quote");
        ++i;
      } else {
        segment += path[i++];
      }
      started = true;
    }
    if (!started) bad("empty segment");
    segments.push_back(std::move(segment));
    if (i == path.size()) return segments;
    ++i;  // '.'
    if (i == path.size()) bad("ends with '.'");
  }
}

std::string join_path(const std::vector<std::string>& segments) {
  std::string out;
  for (const auto& segment : segments) {
    if (!out.empty()) out += '.';
    const bool plain = !segment.empty() && std::all_of(segment.begin(), segment.end(), [](char c) {
      return c != '.' && c != '"' && c != '\\' && c != ' ' && c != '\t' && c != '\n';
    });
    if (plain) {
      out += segment;
      continue;
    }
    out += '"';
    for (const char c : segment) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out;
}

std::string where(const config_node& node) {
  std::string out = node.origin ? *node.origin : std::string("<unknown>");
  if (node.line > 0) out += ":" + std::to_string(node.line);
  return out;
}

std::string describe(const config_node& node) {
  switch (node.type) {
    case config_node::kind::object:
      return "an object";
    case config_node::kind::array:
      return "a list";
    case config_node::kind::string:
      return "\"" + node.text + "\"";
    case config_node::kind::null:
      return "null";
    default:
      return node.text;
  }
}

void fail(const std::string& origin, int line, std::string_view key, std::string_view message) {
  std::string what = origin;
  if (line > 0) what += ":" + std::to_string(line);
  what += ": ";
  if (!key.empty()) {
    what += key;
    what += ": ";
  }
  what += message;
  throw config_error(std::move(what));
}

void fail(const config_node& node, std::string_view key, std::string_view message) {
  fail(node.origin ? *node.origin : std::string("<unknown>"), node.line, key, message);
}

config_node_ptr merge_resolved(const config_node_ptr& base, const config_node_ptr& over) {
  if (base == over || base->type != config_node::kind::object ||
      over->type != config_node::kind::object) {
    return over;
  }
  auto out = std::make_shared<config_node>();
  out->type = config_node::kind::object;
  out->origin = over->origin;
  out->line = over->line;
  out->state = 2;
  out->fields = base->fields;
  for (const auto& [key, value] : over->fields) {
    auto [it, inserted] = out->fields.try_emplace(key, value);
    if (!inserted) it->second = merge_resolved(it->second, value);
  }
  // Never deeper than the deeper input, which resolution bounded.
  for (const auto& [key, value] : out->fields) out->height = std::max(out->height, value->height);
  ++out->height;
  return out;
}

}  // namespace detail

namespace {

using detail::config_node;
using kind = config_node::kind;

bool is_scalar(const config_node& node) {
  return node.type != kind::object && node.type != kind::array;
}

std::shared_ptr<const config_node> empty_root() {
  auto root = std::make_shared<config_node>();
  root->type = kind::object;
  root->origin = std::make_shared<const std::string>("<empty>");
  root->state = 2;
  return root;
}

// Nanoseconds per duration unit (HOCON's names, case-sensitive); nullopt for an unknown unit.
std::optional<std::int64_t> unit_nanos(std::string_view unit) {
  struct entry {
    std::string_view name;
    std::int64_t nanos;
  };
  constexpr std::int64_t us = 1'000;
  constexpr std::int64_t ms = 1'000'000;
  constexpr std::int64_t s = 1'000'000'000;
  static constexpr entry units[] = {
      {"", ms},  // a bare number is milliseconds
      {"ns", 1},
      {"nano", 1},
      {"nanos", 1},
      {"nanosecond", 1},
      {"nanoseconds", 1},
      {"us", us},
      {"micro", us},
      {"micros", us},
      {"microsecond", us},
      {"microseconds", us},
      {"ms", ms},
      {"milli", ms},
      {"millis", ms},
      {"millisecond", ms},
      {"milliseconds", ms},
      {"s", s},
      {"second", s},
      {"seconds", s},
      {"m", 60 * s},
      {"minute", 60 * s},
      {"minutes", 60 * s},
      {"h", 3600 * s},
      {"hour", 3600 * s},
      {"hours", 3600 * s},
      {"d", 86400 * s},
      {"day", 86400 * s},
      {"days", 86400 * s},
  };
  for (const auto& e : units) {
    if (e.name == unit) return e.nanos;
  }
  return std::nullopt;
}

enum class duration_status { ok, invalid, negative, too_large };

// "<number>[ ]<unit>" with a non-negative decimal number; no unit means milliseconds.
duration_status parse_duration(std::string_view text, duration& out) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  bool negative = false;
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  const std::size_t int_end = i;
  if (int_end == 0) return duration_status::invalid;
  std::size_t frac_end = int_end;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    if (i == int_end + 1) return duration_status::invalid;
    frac_end = i;
  }
  const std::string_view number = text.substr(0, frac_end);
  std::string_view unit = text.substr(frac_end);
  while (!unit.empty() && (unit.front() == ' ' || unit.front() == '\t')) unit.remove_prefix(1);
  const auto nanos_per_unit = unit_nanos(unit);
  if (!nanos_per_unit) return duration_status::invalid;
  if (negative && number.find_first_not_of("0.") != std::string_view::npos) {
    return duration_status::negative;
  }
  constexpr auto max = std::numeric_limits<duration::rep>::max();
  if (frac_end == int_end) {
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    std::int64_t nanos = 0;
    if (ec != std::errc{} || __builtin_mul_overflow(value, *nanos_per_unit, &nanos)) {
      return duration_status::too_large;
    }
    out = std::chrono::duration_cast<duration>(std::chrono::nanoseconds(nanos));
    return duration_status::ok;
  }
  double value = 0;
  std::from_chars(number.data(), number.data() + number.size(), value);
  const long double nanos = std::roundl(static_cast<long double>(value) * *nanos_per_unit);
  if (nanos >= static_cast<long double>(max)) return duration_status::too_large;
  out = std::chrono::duration_cast<duration>(
      std::chrono::nanoseconds(static_cast<std::int64_t>(nanos)));
  return duration_status::ok;
}

}  // namespace

config::config() : root_(empty_root()) {}

config::config(std::shared_ptr<const config_node> root, std::string prefix)
    : root_(std::move(root)), prefix_(std::move(prefix)) {}

config config::parse_string(std::string_view text, std::string origin) {
  return config(detail::parse_config(text, origin), {});
}

config config::parse_file(const std::string& path) {
  return config(detail::parse_config_file(path), {});
}

config config::empty() { return config(); }

std::string config::full_path(std::string_view path) const {
  if (prefix_.empty()) return std::string(path);
  if (path.empty()) return prefix_;
  return prefix_ + "." + std::string(path);
}

const config_node* config::find(std::string_view path) const {
  const config_node* current = root_.get();
  std::vector<std::string> walked;
  for (auto& segment : detail::split_path(path)) {
    if (current->type == kind::null) return nullptr;
    if (current->type != kind::object) {
      detail::fail(*current, full_path(detail::join_path(walked)),
                   "expected an object, got " + detail::describe(*current));
    }
    const auto it = current->fields.find(segment);
    if (it == current->fields.end()) return nullptr;
    current = it->second.get();
    walked.push_back(std::move(segment));
  }
  return current->type == kind::null ? nullptr : current;
}

bool config::has(std::string_view dotted_path) const { return find(dotted_path) != nullptr; }

namespace {

[[noreturn]] void wrong_type(const config_node& node, const std::string& key,
                             std::string_view expected) {
  detail::fail(node, key, "expected " + std::string(expected) + ", got " + detail::describe(node));
}

}  // namespace

std::optional<std::string> config::get_string(std::string_view path) const {
  const auto* node = find(path);
  if (node == nullptr) return std::nullopt;
  if (!is_scalar(*node)) wrong_type(*node, full_path(path), "a string");
  return node->text;
}

std::optional<std::int64_t> config::get_int(std::string_view path) const {
  const auto* node = find(path);
  if (node == nullptr) return std::nullopt;
  if (node->type == kind::number || node->type == kind::string) {
    const auto& text = node->text;
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc{} && end == text.data() + text.size()) return value;
    if (ec == std::errc::result_out_of_range) {
      wrong_type(*node, full_path(path), "an integer in the 64-bit range");
    }
  }
  wrong_type(*node, full_path(path), "an integer");
}

std::optional<bool> config::get_bool(std::string_view path) const {
  const auto* node = find(path);
  if (node == nullptr) return std::nullopt;
  if (node->type == kind::boolean || node->type == kind::string) {
    const auto& t = node->text;
    if (t == "true" || t == "yes" || t == "on") return true;
    if (t == "false" || t == "no" || t == "off") return false;
  }
  wrong_type(*node, full_path(path), "a boolean (true/false, yes/no, on/off)");
}

std::optional<double> config::get_double(std::string_view path) const {
  const auto* node = find(path);
  if (node == nullptr) return std::nullopt;
  if (node->type == kind::number || node->type == kind::string) {
    const auto& text = node->text;
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc{} && end == text.data() + text.size()) return value;
  }
  wrong_type(*node, full_path(path), "a number");
}

std::optional<duration> config::get_duration(std::string_view path) const {
  const auto* node = find(path);
  if (node == nullptr) return std::nullopt;
  if (node->type == kind::number || node->type == kind::string) {
    duration value{};
    switch (parse_duration(node->text, value)) {
      case duration_status::ok:
        return value;
      case duration_status::negative:
        wrong_type(*node, full_path(path), "a non-negative duration");
      case duration_status::too_large:
        wrong_type(*node, full_path(path), "a duration shorter than 292 years");
      case duration_status::invalid:
        break;
    }
  }
  wrong_type(*node, full_path(path), "a duration");
}

std::optional<std::vector<std::string>> config::get_string_list(std::string_view path) const {
  const auto* node = find(path);
  if (node == nullptr) return std::nullopt;
  if (node->type != kind::array) wrong_type(*node, full_path(path), "a list");
  std::vector<std::string> out;
  out.reserve(node->items.size());
  for (const auto& item : node->items) {
    if (!is_scalar(*item) || item->type == kind::null) {
      wrong_type(*item, full_path(path),
                 "a list of strings, but an item is " + detail::describe(*item) + ";");
    }
    out.push_back(item->text);
  }
  return out;
}

config config::at(std::string_view path) const {
  if (path.empty()) return *this;
  const auto* node = find(path);
  if (node == nullptr) return config(empty_root(), full_path(path));
  if (node->type != kind::object) wrong_type(*node, full_path(path), "an object");
  return config(std::shared_ptr<const config_node>(root_, node), full_path(path));
}

std::vector<std::string> config::keys() const {
  std::vector<std::string> out;
  for (const auto& [key, value] : root_->fields) {
    if (value->type != kind::null) out.push_back(key);
  }
  return out;
}

std::string config::origin_of(std::string_view path) const {
  const auto* node = find(path);
  return node == nullptr ? std::string() : detail::where(*node);
}

config config::with_fallback(const config& fallback) const {
  auto merged = detail::merge_resolved(std::const_pointer_cast<config_node>(fallback.root_),
                                       std::const_pointer_cast<config_node>(root_));
  return config(std::move(merged), prefix_);
}

void config::check_known_keys(std::string_view path,
                              std::initializer_list<std::string_view> known) const {
  const auto* node = find(path);
  if (node == nullptr) return;
  if (node->type != kind::object) wrong_type(*node, full_path(path), "an object");
  for (const auto& [key, value] : node->fields) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (const auto name : known) {
      if (!list.empty()) list += ", ";
      list += name;
    }
    std::string key_path = full_path(path);
    if (!key_path.empty()) key_path += '.';
    key_path += detail::join_path({key});
    detail::fail(*value, key_path,
                 "unknown key" + (list.empty() ? std::string() : " (known keys: " + list + ")"));
  }
}

}  // namespace troupe
