#include "troupe/sharding/entity_path.hpp"

#include <cstddef>

namespace troupe::sharding {
namespace {

// The bytes an actor name may carry as themselves. '~' is a valid name character too, but it
// starts an escape, so it is escaped itself: that is what makes the escape injective (every '~'
// in a name starts a fixed-length five-character escape, and no other character does).
bool kept_verbatim(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.' || c == '@' || c == ':' || c == '+';
}

void append_prefixed_and_escaped(std::string& name, std::string_view prefix, std::string_view raw) {
  static constexpr char hex[] = "0123456789ABCDEF";
  name.reserve(name.size() + prefix.size() + raw.size());
  name.append(prefix);
  for (const char ch : raw) {
    const auto c = static_cast<unsigned char>(ch);
    if (kept_verbatim(c)) {
      name.push_back(ch);
    } else {
      // Four digits, as wide as a UTF-16 code unit in the spec, though a byte needs only two.
      const char escape[] = {'~', '0', '0', hex[c >> 4U], hex[c & 0x0FU]};
      name.append(escape, sizeof escape);
    }
  }
}

std::string prefixed_and_escaped(std::string_view prefix, std::string_view raw) {
  std::string name;
  append_prefixed_and_escaped(name, prefix, raw);
  return name;
}

}  // namespace

std::string entity_child_name(std::string_view entity_id) {
  return prefixed_and_escaped("entity-", entity_id);
}

void append_entity_child_name(std::string& out, std::string_view entity_id) {
  append_prefixed_and_escaped(out, "entity-", entity_id);
}

std::string shard_child_name(shard_id shard) { return "shard-" + std::to_string(shard); }

std::string region_name(std::string_view type_name) {
  return prefixed_and_escaped("region-", type_name);
}

}  // namespace troupe::sharding
