#include "persistence/sqlite/sqlite_worker.hpp"

#include <vector>

namespace troupe::persistence::sqlite {

namespace {

using append_alone = group_commit::run_alone<write_session, append_request, sequence_nr, &append>;

/// An append: a task that can also be done in a run of appends.
class append_task final : public group_commit::typed_task<write_task, sequence_nr,
                                                          completion<sequence_nr>, append_alone> {
 public:
  append_task(append_request r, completion<sequence_nr> h)
      : typed_task(std::move(h), append_alone{std::move(r)}) {}

  [[nodiscard]] const append_request* append() const noexcept override { return &body().request; }
  void set_outcome(group_commit::run_outcome outcome) noexcept override {
    if (outcome.refusal) {
      fail(std::move(outcome.refusal));
    } else {
      set_result(outcome.result);
    }
  }
};

}  // namespace

std::unique_ptr<write_task> make_append_task(append_request r, completion<sequence_nr> h) {
  return std::make_unique<append_task>(std::move(r), std::move(h));
}

// -- writer ------------------------------------------------------------------

writer::writer(std::unique_ptr<connection> c, std::size_t max_batch, std::size_t max_queued,
               group_commit::group_metrics metrics)
    : connection_(std::move(c)),
      session_{*connection_, heads_},
      loop_(
          "SQLite store", max_batch, max_queued, [this](batch& b) { run_group(b); },
          std::move(metrics)) {}

void writer::run_group(batch& b) {
  // Savepoints cost two statements per write: take them only when a write failed mid-way.
  if (!try_group(b, false)) try_group(b, true);
}

bool writer::try_group(batch& b, bool savepoints) {
  auto& c = *connection_;
  try {
    c.prepare("BEGIN IMMEDIATE").run();
    heads_.check_data_version(c);
    if (savepoints) {
      run_with_savepoints(b);
    } else if (!run_in_runs(b)) {
      rollback();
      return false;
    }
    c.prepare("COMMIT").run();
    heads_.trim();
    transactions_.fetch_add(1, std::memory_order_relaxed);
  } catch (...) {
    auto failure = std::current_exception();
    rollback();
    for (auto& t : b) t->fail(failure);
  }
  return true;
}

void writer::check_still_open(bool ok) const {
  if (!ok && connection_->autocommit()) {
    // SQLite rolled the whole transaction back (I/O error, disk full): the writes before this
    // one are gone too.
    throw persistence_error(errc::store_failure,
                            "SQLite rolled back a group commit after a failed write");
  }
}

void writer::run_with_savepoints(batch& b) {
  auto& c = *connection_;
  for (auto& t : b) {
    c.prepare("SAVEPOINT write").run();
    bool ok = t->run(session_);
    check_still_open(ok);
    if (!ok) {
      c.prepare("ROLLBACK TO write").run();
      heads_.clear();  // the cache may hold what the rolled back write changed
    }
    c.prepare("RELEASE write").run();
  }
}

bool writer::run_in_runs(batch& b) {
  std::size_t i = 0;
  while (i < b.size()) {
    if (b[i]->append() == nullptr) {
      bool ok = b[i]->run(session_);
      check_still_open(ok);
      if (!ok && !b[i]->refused_cleanly()) return false;
      ++i;
      continue;
    }
    std::vector<const append_request*> run;
    std::size_t end = i;
    for (; end < b.size() && b[end]->append() != nullptr; ++end) run.push_back(b[end]->append());
    std::vector<group_commit::run_outcome> outcomes;
    try {
      outcomes = append_run(session_, run);
    } catch (...) {
      return false;  // redo with a savepoint per write, so that only the failing one fails
    }
    for (std::size_t k = 0; k < outcomes.size(); ++k) b[i + k]->set_outcome(std::move(outcomes[k]));
    i = end;
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
