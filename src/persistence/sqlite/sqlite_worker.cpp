#include "persistence/sqlite/sqlite_worker.hpp"

namespace troupe::persistence::sqlite {

// -- writer ------------------------------------------------------------------

writer::writer(std::unique_ptr<connection> c, std::size_t max_batch)
    : connection_(std::move(c)),
      session_{*connection_, heads_},
      max_batch_(max_batch == 0 ? 1 : max_batch) {
  thread_ = std::thread([this] { loop(); });
}

writer::~writer() {
  queue_.close();
  thread_.join();
}

void writer::loop() {
  batch b;
  while (queue_.take(b, max_batch_)) {
    run_group(b);
    tasks_run_.fetch_add(b.size(), std::memory_order_relaxed);
    for (auto& t : b) t->complete();
    b.clear();
  }
}

void writer::run_group(batch& b) {
  // Savepoints cost two statements per write: take them only when a write failed mid-way.
  if (!try_group(b, false)) try_group(b, true);
}

bool writer::try_group(batch& b, bool savepoints) {
  auto& c = *connection_;
  try {
    c.prepare("BEGIN IMMEDIATE").run();
    heads_.check_data_version(c);
    for (auto& t : b) {
      if (savepoints) c.prepare("SAVEPOINT write").run();
      bool ok = t->run(session_);
      if (!ok && c.autocommit()) {
        // SQLite rolled the whole transaction back (I/O error, disk full): the writes before
        // this one are gone too.
        throw persistence_error(errc::store_failure,
                                "SQLite rolled back a group commit after a failed write");
      }
      if (savepoints) {
        if (!ok) {
          c.prepare("ROLLBACK TO write").run();
          heads_.clear();  // the cache may hold what the rolled back write changed
        }
        c.prepare("RELEASE write").run();
      } else if (!ok && !t->refused_cleanly()) {
        rollback();
        return false;
      }
    }
    c.prepare("COMMIT").run();
    transactions_.fetch_add(1, std::memory_order_relaxed);
  } catch (...) {
    auto failure = std::current_exception();
    rollback();
    for (auto& t : b) t->fail(failure);
  }
  return true;
}

void writer::rollback() noexcept {
  heads_.clear();  // the cache holds what the transaction wrote
  if (connection_->autocommit()) return;
  try {
    connection_->exec("ROLLBACK");
  } catch (...) {
    // The transaction is unusable either way; the callers get the first failure.
  }
}

// -- reader ------------------------------------------------------------------

reader::reader(std::unique_ptr<connection> c) : connection_(std::move(c)) {
  thread_ = std::thread([this] { loop(); });
}

reader::~reader() {
  queue_.close();
  thread_.join();
}

void reader::loop() {
  std::deque<std::unique_ptr<read_task>> b;
  while (queue_.take(b, 1)) {
    for (auto& t : b) {
      t->run(*connection_);
      t->complete();
    }
    b.clear();
  }
}

}  // namespace troupe::persistence::sqlite
