#pragma once
// The dashboard's files (src/observability/dashboard/), compiled into the library by
// cmake/troupe_embed_files.cmake so a node serves them offline, from no path on disk.

#include <span>
#include <string_view>

namespace troupe::observability::management {

/// One embedded file: its name (no directory) and its bytes.
struct embedded_file {
  std::string_view name;
  std::string_view content;
};

/// The dashboard's files, index.html among them.
[[nodiscard]] std::span<const embedded_file> dashboard_files() noexcept;

}  // namespace troupe::observability::management
