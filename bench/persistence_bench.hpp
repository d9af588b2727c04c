// What the files of troupe_bench_persistence share: the stores a run opens (SQLite, PostgreSQL),
// its scratch directory and completion thread, and the cases each file contributes.

#pragma once

#include <troupe/persistence/plugin.hpp>

#include "bench_support.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace troupe::bench::persistence {

/// A 64-byte event, as a small domain event encodes.
troupe::persistence::serialized event_payload();

/// "account-<i>": the persistence id of writer i.
std::string pid_of(std::int64_t i);

/// A fresh store of one kind per run, and where its data lives (removed after the run).
/// Opening it again on the same directory opens the same data (a restart).
struct store_kind {
  std::string name;
  std::function<std::unique_ptr<troupe::persistence::plugin>(const std::filesystem::path& dir)>
      open;
};

store_kind sqlite_store();
/// The server TROUPE_PG_URL names, or a throwaway one this program starts (and stops at exit)
/// with scripts/postgres.sh; one schema per scratch directory.
store_kind postgres_store();

/// A scratch directory for one run, removed when the run ends.
class scratch_dir {
 public:
  scratch_dir();
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  ~scratch_dir();
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// One thread running the completions (the stores complete on the caller's executor).
class completion_thread {
 public:
  completion_thread() : guard_(io_.get_executor()), thread_([this] { io_.run(); }) {}
  completion_thread(const completion_thread&) = delete;
  completion_thread& operator=(const completion_thread&) = delete;
  ~completion_thread() {
    guard_.reset();
    thread_.join();
  }
  boost::asio::io_context& io() { return io_; }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::thread thread_;
};

/// The raw `persist` case (persistence_bench.cpp): `ids` writers append `per_id` events each
/// straight to the journal, one at a time; value events/s.
run_result persist(const store_kind& kind, std::int64_t ids, std::int64_t per_id);

/// The cases through persistent entities (persistence_entity_bench.cpp) for one store.
std::vector<bench_case> entity_cases(const store_kind& kind, std::int64_t shrink);

}  // namespace troupe::bench::persistence
