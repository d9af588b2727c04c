#include "persistence/sqlite/sqlite_worker.hpp"

#include <string>

namespace troupe::persistence::sqlite {

worker::worker(std::unique_ptr<connection> c, mode m, std::size_t max_batch)
    : connection_(std::move(c)), mode_(m), max_batch_(max_batch == 0 ? 1 : max_batch) {
  thread_ = std::thread([this] { loop(); });
}

worker::~worker() {
  {
    std::scoped_lock lock(mutex_);
    closing_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void worker::submit(std::unique_ptr<task> t) {
  {
    std::scoped_lock lock(mutex_);
    if (!closing_) {
      queue_.push_back(std::move(t));
      // Notify under the lock: the worker may be destroyed as soon as it sees closing_.
      wake_.notify_one();
      return;
    }
  }
  t->fail(std::make_exception_ptr(persistence_error(errc::store_closed, "SQLite store closed")));
  t->complete();
}

void worker::loop() {
  std::deque<std::unique_ptr<task>> batch;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return closing_ || !queue_.empty(); });
      if (queue_.empty()) return;  // closing, and everything queued has run
      while (!queue_.empty() && batch.size() < max_batch_) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    if (mode_ == mode::group_commit) {
      run_group(batch);
    } else {
      run_each(batch);
    }
    tasks_run_.fetch_add(batch.size(), std::memory_order_relaxed);
    for (auto& t : batch) t->complete();
    batch.clear();
  }
}

void worker::run_group(std::deque<std::unique_ptr<task>>& batch) {
  // Savepoints cost two statements per write: take them only when a write failed mid-way.
  if (!try_group(batch, false)) try_group(batch, true);
}

bool worker::try_group(std::deque<std::unique_ptr<task>>& batch, bool savepoints) {
  auto& c = *connection_;
  try {
    c.prepare("BEGIN IMMEDIATE").run();
    for (auto& t : batch) {
      if (savepoints) c.prepare("SAVEPOINT write").run();
      bool ok = t->run(c);
      if (!ok && c.autocommit()) {
        // SQLite rolled the whole transaction back (I/O error, disk full): the writes before
        // this one are gone too.
        throw persistence_error(errc::store_failure,
                                "SQLite rolled back a group commit after a failed write");
      }
      if (savepoints) {
        if (!ok) c.prepare("ROLLBACK TO write").run();
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
    for (auto& t : batch) t->fail(failure);
  }
  return true;
}

void worker::rollback() noexcept {
  if (connection_->autocommit()) return;
  try {
    connection_->exec("ROLLBACK");
  } catch (...) {
    // The transaction is unusable either way; the callers get the first failure.
  }
}

void worker::run_each(std::deque<std::unique_ptr<task>>& batch) {
  for (auto& t : batch) t->run(*connection_);
}

}  // namespace troupe::persistence::sqlite
