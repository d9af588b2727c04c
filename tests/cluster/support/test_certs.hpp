#pragma once
// Throwaway TLS files for tests: scripts/make-test-certs.sh (path in TROUPE_MAKE_TEST_CERTS) run
// once per test process into a temporary directory: ca, node-a, node-b, rogue-ca, rogue-node.

#include <troupe/cluster/tcp_transport.hpp>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace troupe::cluster::test {

inline const std::filesystem::path& certs() {
  static const struct cert_dir {
    std::filesystem::path path;
    cert_dir() {
      std::string pattern =
          (std::filesystem::temp_directory_path() / "troupe-certs-XXXXXX").string();
      if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
      path = pattern;
      const std::string command =
          std::string("'") + TROUPE_MAKE_TEST_CERTS + "' '" + path.string() + "'";
      if (std::system(command.c_str()) != 0) {
        throw std::runtime_error("scripts/make-test-certs.sh failed");
      }
    }
    ~cert_dir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  } dir;
  return dir.path;
}

inline std::string cert_file(const std::string& name) { return (certs() / name).string(); }

/// The files of a node: its certificate and key, trusting `ca`.
inline tls_options node_files(const std::string& node, const std::string& ca = "ca") {
  return {cert_file(ca + ".crt"), cert_file(node + ".crt"), cert_file(node + ".key")};
}

}  // namespace troupe::cluster::test
