#include "core/config_parser.hpp"

#include <troupe/core/config.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

namespace troupe::detail {

namespace {

namespace fs = std::filesystem;
using kind = config_node::kind;

constexpr std::size_t max_include_depth = 32;

bool is_inline_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

// Characters HOCON keeps out of unquoted strings (besides whitespace and "//").
bool is_forbidden(char c) { return std::strchr("$\"{}[]:=,+#`^?!@*&\\", c) != nullptr; }

bool is_number(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && s[i] == '-') ++i;
  const std::size_t digits = i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == digits) return false;
  if (i < s.size() && s[i] == '.') {
    const std::size_t frac = ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == frac) return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    const std::size_t exp = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == exp) return false;
  }
  return i == s.size();
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

config_node_ptr merge_parsed(config_node_ptr old, config_node_ptr now);

// Adds `value` under `key`: a repeated key's later value wins, objects merge.
void merge_field(config_node& obj, const std::string& key, config_node_ptr value) {
  auto [it, inserted] = obj.fields.try_emplace(key, value);
  if (!inserted) it->second = merge_parsed(it->second, std::move(value));
}

config_node_ptr merge_parsed(config_node_ptr old, config_node_ptr now) {
  if (now->type == kind::object && old->type == kind::object) {
    for (auto& [key, value] : now->fields) merge_field(*old, key, value);
    return old;
  }
  const bool old_pending = old->type == kind::substitution || old->type == kind::merge;
  const bool now_pending = now->type == kind::substitution || now->type == kind::merge;
  // An optional substitution may leave the older value in place, and an object may merge into
  // what a substitution yields: decide after resolution.
  if (!now_pending && !(now->type == kind::object && old_pending)) return now;
  auto stack = old;
  if (old->type != kind::merge) {
    stack = std::make_shared<config_node>();
    stack->type = kind::merge;
    stack->origin = now->origin;
    stack->line = now->line;
    stack->items.push_back(old);
  }
  if (now->type == kind::merge) {
    stack->items.insert(stack->items.end(), now->items.begin(), now->items.end());
  } else {
    stack->items.push_back(now);
  }
  return stack;
}

struct include_stack {
  std::vector<fs::path> files;  // canonical paths of the files being read, outermost first
};

std::string read_file(const std::string& path, const std::string& origin, int line,
                      std::string_view key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(origin, line, key, "cannot read config file " + path + ": " + std::strerror(errno));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

class parser {
 public:
  parser(std::string_view text, std::string origin, fs::path base_dir,
         std::vector<std::string> prefix, include_stack& includes)
      : text_(text),
        origin_(std::make_shared<const std::string>(std::move(origin))),
        base_dir_(std::move(base_dir)),
        prefix_(std::move(prefix)),
        includes_(includes) {}

  // `depth` is the level of the object whose fields the document's root becomes (1 for the
  // outermost document, the including object's level for an include).
  config_node_ptr parse_document(int depth = 1) {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
    skip_all();
    depth_ = depth - 1;
    if (peek() == '{') {
      auto root = parse_object({});
      skip_all();
      if (!at_end()) error({}, std::string("unexpected '") + peek() + "' after the root object");
      return root;
    }
    if (peek() == '[') error({}, "the root of a config must be an object, not a list");
    auto root = make(kind::object);
    depth_ = depth;
    parse_fields(*root, {}, false, line_);
    return root;
  }

 private:
  [[nodiscard]] bool at_end() const { return pos_ >= text_.size(); }
  [[nodiscard]] char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  [[nodiscard]] bool at_comment() const {
    return peek() == '#' || (peek() == '/' && peek(1) == '/');
  }
  [[nodiscard]] bool at_unquoted() const {
    const char c = peek();
    return !at_end() && c != '\n' && !is_inline_space(c) && !is_forbidden(c) && !at_comment();
  }
  void advance() {
    if (text_[pos_] == '\n') ++line_;
    ++pos_;
  }
  // Spaces, then a comment up to (not including) the end of the line.
  void skip_inline() {
    while (!at_end() && is_inline_space(peek())) ++pos_;
    if (at_comment()) {
      while (!at_end() && peek() != '\n') ++pos_;
    }
  }
  void skip_all() {
    for (;;) {
      skip_inline();
      if (peek() != '\n') return;
      advance();
    }
  }

  config_node_ptr make(kind type, int line = 0) const {
    auto node = std::make_shared<config_node>();
    node->type = type;
    node->origin = origin_;
    node->line = line == 0 ? line_ : line;
    return node;
  }

  [[noreturn]] void error(const std::vector<std::string>& key, std::string_view message) const {
    fail(*origin_, line_, join_path(key), message);
  }

  static std::string show(char c) {
    if (c == '\0') return "the end of the file";
    if (c == '\n') return "the end of the line";
    return std::string("'") + c + "'";
  }

  // Fields up to '}' (braced) or the end of the text.
  void parse_fields(config_node& obj, const std::vector<std::string>& path, bool braced,
                    int open_line) {
    for (;;) {
      skip_all();
      if (at_end()) {
        if (braced) {
          fail(*origin_, open_line, join_path(path),
               "unterminated object: '{' has no matching '}'");
        }
        return;
      }
      if (peek() == '}') {
        if (!braced) error(path, "unexpected '}'");
        ++pos_;
        return;
      }
      auto field_key = path;
      if (at_include()) {
        parse_include(obj, path);
      } else {
        field_key = parse_field(obj, path);
      }
      skip_inline();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != '\n' && peek() != '}' && !at_end()) {
        error(field_key, "expected ',' or a new line after the value, got " + show(peek()));
      }
    }
  }

  // Parses `key = value` into `obj`; returns the field's full path.
  std::vector<std::string> parse_field(config_node& obj, const std::vector<std::string>& path) {
    const int key_line = line_;
    const auto key = parse_key(path);
    const auto full = concat(path, key);
    // a.b.c = v opens a level per extra segment (an error names at most the segments that fit).
    const int depth = depth_;
    if (key.size() > 1) {
      const auto shown = std::min(full.size(), static_cast<std::size_t>(max_config_depth) + 1);
      enter({full.begin(), full.begin() + static_cast<std::ptrdiff_t>(shown)},
            static_cast<int>(key.size()) - 1);
    }
    skip_inline();
    config_node_ptr value;
    if (peek() == '{') {
      value = parse_object(full);
    } else if (peek() == '=' || peek() == ':') {
      ++pos_;
      skip_inline();
      value = parse_value(full);
    } else if (peek() == '+' && peek(1) == '=') {
      error(full, "'+=' is not supported");
    } else {
      error(full, "expected '=', ':' or '{' after the key, got " + show(peek()));
    }
    // a.b.c = v is a { b { c = v } }.
    for (std::size_t i = key.size() - 1; i > 0; --i) {
      auto wrapper = make(kind::object, key_line);
      wrapper->fields.emplace(key[i], std::move(value));
      value = std::move(wrapper);
    }
    merge_field(obj, key.front(), std::move(value));
    depth_ = depth;
    return full;
  }

  std::vector<std::string> parse_key(const std::vector<std::string>& path) {
    std::vector<std::string> segments(1);
    bool segment_started = false;
    for (;;) {
      if (peek() == '"') {
        segments.back() += parse_quoted(path);
        segment_started = true;
      } else if (peek() == '.') {
        if (!segment_started) error(path, "empty segment in key");
        ++pos_;
        segments.emplace_back();
        segment_started = false;
      } else if (at_unquoted()) {
        while (at_unquoted() && peek() != '.') segments.back() += text_[pos_++];
        segment_started = true;
      } else {
        break;
      }
    }
    if (!segment_started) {
      if (segments.size() == 1) error(path, "expected a key, got " + show(peek()));
      error(concat(path, segments), "key ends with '.'");
    }
    return segments;
  }

  // A value: an object, a list, or a concatenation of strings, numbers and substitutions on
  // one line.
  config_node_ptr parse_value(const std::vector<std::string>& key) {
    if (peek() == '{') return parse_object(key);
    if (peek() == '[') return parse_array(key);
    const int start_line = line_;
    std::vector<config_node_ptr> parts;
    bool has_substitution = false;
    bool single_unquoted = false;
    for (;;) {
      if (peek() == '"') {
        auto part = make(kind::string);
        part->text = parse_quoted(key);
        parts.push_back(std::move(part));
      } else if (peek() == '$' && peek(1) == '{') {
        parts.push_back(parse_substitution(key));
        has_substitution = true;
      } else if (at_unquoted()) {
        auto part = make(kind::string);
        while (at_unquoted()) part->text += text_[pos_++];
        single_unquoted = parts.empty();
        parts.push_back(std::move(part));
      } else if (peek() == '{' || peek() == '[') {
        error(key, "concatenating an object or a list with other values is not supported");
      } else {
        break;
      }
      const std::size_t space_start = pos_;
      while (!at_end() && is_inline_space(peek())) ++pos_;
      if (peek() == '"' || (peek() == '$' && peek(1) == '{') || at_unquoted() || peek() == '{' ||
          peek() == '[') {
        if (pos_ > space_start) {
          auto space = make(kind::string);
          space->text = text_.substr(space_start, pos_ - space_start);
          parts.push_back(std::move(space));
        }
      }
    }
    if (parts.empty()) error(key, "expected a value, got " + show(peek()));
    if (parts.size() == 1) {
      auto& only = parts.front();
      if (single_unquoted) {
        if (only->text == "true" || only->text == "false") {
          only->type = kind::boolean;
        } else if (only->text == "null") {
          only->type = kind::null;
        } else if (is_number(only->text)) {
          only->type = kind::number;
        }
      }
      return only;
    }
    if (has_substitution) {
      auto node = make(kind::concatenation, start_line);
      node->items = std::move(parts);
      return node;
    }
    auto joined = make(kind::string, start_line);
    for (const auto& part : parts) joined->text += part->text;
    return joined;
  }

  // Opens `levels` levels of nesting; beyond max_config_depth is an error at this line.
  void enter(const std::vector<std::string>& key, int levels) {
    depth_ += levels;
    if (depth_ > max_config_depth) {
      error(key,
            "objects and lists nested deeper than " + std::to_string(max_config_depth) + " levels");
    }
  }

  config_node_ptr parse_object(const std::vector<std::string>& path) {
    const int open_line = line_;
    enter(path, 1);
    ++pos_;  // '{'
    auto obj = make(kind::object);
    parse_fields(*obj, path, true, open_line);
    --depth_;
    return obj;
  }

  config_node_ptr parse_array(const std::vector<std::string>& key) {
    const int open_line = line_;
    enter(key, 1);
    ++pos_;  // '['
    auto array = make(kind::array);
    for (;;) {
      skip_all();
      if (at_end()) fail(*origin_, open_line, join_path(key), "unterminated list: '[' has no ']'");
      if (peek() == ']') {
        ++pos_;
        --depth_;
        return array;
      }
      array->items.push_back(parse_value(key));
      skip_inline();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != '\n' && peek() != ']' && !at_end()) {
        error(key, "expected ',' or a new line between list items, got " + show(peek()));
      }
    }
  }

  std::string parse_quoted(const std::vector<std::string>& key) {
    const int open_line = line_;
    if (text_.substr(pos_, 3) == "\"\"\"") {
      pos_ += 3;
      const auto end = text_.find("\"\"\"", pos_);
      if (end == std::string_view::npos) {
        fail(*origin_, open_line, join_path(key), "unterminated string: '\"\"\"' has no end");
      }
      std::string out(text_.substr(pos_, end - pos_));
      while (pos_ < end) advance();
      pos_ += 3;
      return out;
    }
    ++pos_;  // '"'
    std::string out;
    for (;;) {
      if (at_end() || peek() == '\n') {
        fail(*origin_, open_line, join_path(key), "unterminated string: missing closing '\"'");
      }
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      const char e = peek();
      ++pos_;
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u':
          append_utf8(out, parse_unicode_escape(key));
          break;
        default:
          error(key, std::string("invalid escape '\\") + e + "' in string");
      }
    }
  }

  std::uint32_t parse_hex4(const std::vector<std::string>& key) {
    std::uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = peek();
      value <<= 4;
      if (c >= '0' && c <= '9') {
        value |= static_cast<std::uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        value |= static_cast<std::uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        value |= static_cast<std::uint32_t>(c - 'A' + 10);
      } else {
        error(key, "'\\u' must be followed by 4 hex digits");
      }
      ++pos_;
    }
    return value;
  }

  std::uint32_t parse_unicode_escape(const std::vector<std::string>& key) {
    const std::uint32_t high = parse_hex4(key);
    if (high >= 0xD800 && high <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
      pos_ += 2;
      const std::uint32_t low = parse_hex4(key);
      if (low < 0xDC00 || low > 0xDFFF) error(key, "invalid UTF-16 surrogate pair in '\\u' escape");
      return 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
    }
    if (high >= 0xD800 && high <= 0xDFFF) error(key, "lone UTF-16 surrogate in '\\u' escape");
    return high;
  }

  config_node_ptr parse_substitution(const std::vector<std::string>& key) {
    auto node = make(kind::substitution);
    pos_ += 2;  // "${"
    if (peek() == '?') {
      node->optional = true;
      ++pos_;
    }
    const auto end = text_.find_first_of("}\n", pos_);
    if (end == std::string_view::npos || text_[end] != '}') {
      error(key, "unterminated substitution: '${' has no '}'");
    }
    std::string_view inner = text_.substr(pos_, end - pos_);
    while (!inner.empty() && is_inline_space(inner.front())) inner.remove_prefix(1);
    while (!inner.empty() && is_inline_space(inner.back())) inner.remove_suffix(1);
    if (inner.empty()) error(key, "empty substitution '${}'");
    node->text = std::string(inner);
    try {
      node->path = split_path(inner);
    } catch (const config_error&) {
      error(key, "invalid path in substitution ${" + node->text + "}");
    }
    node->include_prefix = prefix_;
    pos_ = end + 1;
    return node;
  }

  // `include "file"` or `include required("file")` at the start of a field.
  [[nodiscard]] bool at_include() const {
    if (text_.substr(pos_, 7) != "include") return false;
    std::size_t i = pos_ + 7;
    if (i >= text_.size() || !is_inline_space(text_[i])) return false;
    while (i < text_.size() && is_inline_space(text_[i])) ++i;
    return i < text_.size() && (text_[i] == '"' || text_.substr(i, 9) == "required(");
  }

  void parse_include(config_node& obj, const std::vector<std::string>& path) {
    const int include_line = line_;
    pos_ += 7;
    skip_inline();
    const bool wrapped = peek() == 'r';
    if (wrapped) pos_ += 9;  // "required("
    if (peek() != '"') error(path, "include expects a quoted file name");
    const std::string name = parse_quoted(path);
    if (wrapped) {
      if (peek() != ')') error(path, "expected ')' after the included file name");
      ++pos_;
    }
    const fs::path file = fs::path(name).is_absolute() ? fs::path(name) : base_dir_ / name;
    const std::string shown = file.lexically_normal().string();
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
      fail(*origin_, include_line, join_path(path),
           "include \"" + name + "\": file not found: " + shown);
    }
    const fs::path canonical = fs::weakly_canonical(file, ec);
    for (const auto& open : includes_.files) {
      if (open == canonical) {
        fail(*origin_, include_line, join_path(path),
             "include cycle: \"" + name + "\" (" + shown + ") is already being read");
      }
    }
    if (includes_.files.size() >= max_include_depth) {
      fail(*origin_, include_line, join_path(path), "includes nested too deep");
    }
    const std::string text = read_file(shown, *origin_, include_line, join_path(path));
    includes_.files.push_back(canonical);
    parser nested(text, shown, file.parent_path(), concat(prefix_, path), includes_);
    auto included = nested.parse_document(depth_);
    includes_.files.pop_back();
    for (auto& [key, value] : included->fields) merge_field(obj, key, value);
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  int line_ = 1;
  // Levels of objects and lists open at pos_, the root object included.
  int depth_ = 0;
  std::shared_ptr<const std::string> origin_;
  fs::path base_dir_;
  std::vector<std::string> prefix_;
  include_stack& includes_;
};

config_node_ptr parse_and_resolve(std::string_view text, const std::string& origin,
                                  include_stack& includes) {
  fs::path base_dir;
  if (!origin.empty() && origin.front() != '<') base_dir = fs::path(origin).parent_path();
  parser p(text, origin, base_dir, {}, includes);
  auto root = p.parse_document();
  return resolve_config(root);
}

}  // namespace

config_node_ptr parse_config(std::string_view text, const std::string& origin) {
  include_stack includes;
  std::error_code ec;
  if (!origin.empty() && origin.front() != '<' && fs::is_regular_file(origin, ec)) {
    includes.files.push_back(fs::weakly_canonical(origin, ec));
  }
  return parse_and_resolve(text, origin, includes);
}

config_node_ptr parse_config_file(const std::string& path) {
  const std::string text = read_file(path, path, 0, "");
  return parse_config(text, path);
}

}  // namespace troupe::detail
