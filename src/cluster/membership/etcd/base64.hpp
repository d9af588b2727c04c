#pragma once
// Standard base64 (RFC 4648, padded), as etcd's JSON gateway writes keys and values.

#include <optional>
#include <string>
#include <string_view>

namespace troupe::cluster::etcd {

/// Encodes `bytes` as padded base64.
std::string base64_encode(std::string_view bytes);
/// Decodes padded base64; nullopt when `text` is not base64.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace troupe::cluster::etcd
