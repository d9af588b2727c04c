// The stores troupe_bench_persistence runs against, and a run's scratch directory.

#include <troupe/persistence/postgres_plugin.hpp>
#include <troupe/persistence/sqlite_plugin.hpp>

#include "persistence_bench.hpp"

#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace troupe::bench::persistence {

namespace tp = troupe::persistence;
namespace fs = std::filesystem;

tp::serialized event_payload() {
  return tp::serialized{tp::manifest{"bench.deposited", 1}, tp::bytes(64, std::byte{0x5A})};
}

std::string pid_of(std::int64_t i) { return "account-" + std::to_string(i); }

store_kind sqlite_store() {
  return {"sqlite", [](const fs::path& dir) {
            return tp::open_sqlite_plugin(tp::sqlite_options{dir / "bench.db"});
          }};
}

namespace {

/// The PostgreSQL server the cases use: TROUPE_PG_URL, or a throwaway one started by the
/// project's script (stopped again at exit).
class postgres_server {
 public:
  static const std::string& url() {
    static postgres_server server;
    return server.url_;
  }
  postgres_server(const postgres_server&) = delete;
  postgres_server& operator=(const postgres_server&) = delete;

 private:
  postgres_server() {
    if (const char* given = std::getenv("TROUPE_PG_URL"); given != nullptr && *given != 0) {
      url_ = given;
      return;
    }
    url_ = run(script_ + " start");
    started_ = true;
    check(!url_.empty(), "scripts/postgres.sh start printed no URL");
  }
  ~postgres_server() {
    if (started_) (void)run(script_ + " stop");
  }
  // The command's last line of output.
  static std::string run(const std::string& command) {
    std::string last;
    if (FILE* out = ::popen(command.c_str(), "r")) {
      std::array<char, 512> line{};
      while (std::fgets(line.data(), line.size(), out) != nullptr) last = line.data();
      ::pclose(out);
    }
    while (!last.empty() && (last.back() == '\n' || last.back() == '\r')) last.pop_back();
    return last;
  }

  std::string script_ = std::string(TROUPE_SOURCE_DIR) + "/scripts/postgres.sh";
  std::string url_;
  bool started_ = false;
};

}  // namespace

store_kind postgres_store() {
  return {"postgres", [](const fs::path& dir) {
            // A fresh schema per run (named after the run's scratch directory).
            return tp::open_postgres_plugin(
                tp::postgres_options{postgres_server::url(), "bench_" + dir.filename().string()});
          }};
}

scratch_dir::scratch_dir() {
  static std::atomic<int> counter{0};
  path_ = fs::temp_directory_path() /
          ("troupe_bench_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  fs::create_directories(path_);
}

scratch_dir::~scratch_dir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

}  // namespace troupe::bench::persistence
