#pragma once
// A run's temporary directory (the SQLite file, the activation logs), removed with everything in
// it when the run ends.

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace cluster_demo {

struct temp_dir {
  /// <temp>/<prefix>-<pid>.
  explicit temp_dir(const std::string& prefix)
      : path(std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  std::filesystem::path path;
};

}  // namespace cluster_demo
