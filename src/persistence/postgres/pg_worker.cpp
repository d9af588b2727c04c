#include "persistence/postgres/pg_worker.hpp"

#include <pqxx/nontransaction>
#include <pqxx/subtransaction>
#include <pqxx/transaction>

#include <string>

namespace troupe::persistence::pg {

std::exception_ptr as_persistence_error(const std::exception_ptr& e) noexcept {
  try {
    std::rethrow_exception(e);
  } catch (const persistence_error&) {
    return e;
  } catch (const std::exception& x) {
    std::string why = x.what();
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    return std::make_exception_ptr(persistence_error(errc::store_failure, "PostgreSQL: " + why));
  } catch (...) {
    return std::make_exception_ptr(
        persistence_error(errc::store_failure, "PostgreSQL: unknown failure"));
  }
}

bool is_refusal(const std::exception_ptr& e) noexcept {
  if (!e) return false;
  try {
    std::rethrow_exception(e);
  } catch (const persistence_error& x) {
    return x.value() == errc::sequence_conflict || x.value() == errc::epoch_fenced ||
           x.value() == errc::revision_conflict;
  } catch (...) {
    return false;
  }
}

namespace {

struct run_append {
  append_request request;
  sequence_nr operator()(pqxx::transaction_base& t) const { return append(t, request); }
};

class append_task final : public typed_task<sequence_nr, completion<sequence_nr>, run_append> {
 public:
  append_task(append_request r, completion<sequence_nr> h)
      : typed_task(std::move(h), run_append{std::move(r)}) {}

  [[nodiscard]] const append_request* append() const noexcept override { return &body().request; }

  void set_outcome(append_outcome outcome) noexcept override {
    if (outcome.refusal) {
      fail(std::move(outcome.refusal));
    } else {
      set_result(outcome.last);
    }
  }
};

}  // namespace

std::unique_ptr<task> make_append_task(append_request r, completion<sequence_nr> h) {
  return std::make_unique<append_task>(std::move(r), std::move(h));
}

// -- worker_base -------------------------------------------------------------

void worker_base::submit(std::unique_ptr<task> t) {
  {
    std::scoped_lock lock(mutex_);
    if (!closing_) {
      queue_.push_back(std::move(t));
      wake_.notify_one();
      return;
    }
  }
  t->fail(
      std::make_exception_ptr(persistence_error(errc::store_closed, "PostgreSQL store closed")));
  t->complete();
}

void worker_base::close_and_join() {
  {
    std::scoped_lock lock(mutex_);
    closing_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

std::deque<std::unique_ptr<task>> worker_base::take(std::size_t max) {
  std::deque<std::unique_ptr<task>> out;
  std::unique_lock lock(mutex_);
  wake_.wait(lock, [this] { return closing_ || !queue_.empty(); });
  while (!queue_.empty() && out.size() < max) {
    out.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return out;
}

// -- writer ------------------------------------------------------------------

writer::writer(session s, std::size_t max_batch)
    : session_(std::move(s)), max_batch_(max_batch == 0 ? 1 : max_batch) {
  threads_.emplace_back([this] { loop(); });
}

writer::~writer() { close_and_join(); }

void writer::loop() {
  for (;;) {
    auto batch = take(max_batch_);
    if (batch.empty()) return;  // closing, and everything queued has run
    run_group(batch);
    tasks_run_.fetch_add(batch.size(), std::memory_order_relaxed);
    for (auto& t : batch) t->complete();
  }
}

void writer::run_group(std::deque<std::unique_ptr<task>>& batch) {
  for (int attempt = 0;; ++attempt) {
    try {
      auto& c = session_.get();
      // Savepoints cost two statements per write: take them only when a write failed mid-way.
      if (!try_group(c, batch, false)) try_group(c, batch, true);
      return;
    } catch (const pqxx::in_doubt_error& e) {
      // The connection broke during COMMIT: the transaction may have committed or not, so it
      // must not be redone. The callers learn that the outcome is unknown.
      session_.reset();
      auto failure = std::make_exception_ptr(persistence_error(
          errc::store_failure,
          std::string("PostgreSQL connection lost while committing; the writes may or may not "
                      "have been stored: ") +
              e.what()));
      for (auto& t : batch) t->fail(failure);
      return;
    } catch (const pqxx::transaction_rollback& e) {
      // PostgreSQL chose this transaction as a deadlock victim (two nodes writing the same ids in
      // different orders) or could not serialize it: nothing committed, so redo the group.
      if (attempt < 3) continue;
      auto failure = std::make_exception_ptr(
          persistence_error(errc::store_failure, std::string("PostgreSQL: ") + e.what()));
      for (auto& t : batch) t->fail(failure);
      return;
    } catch (...) {
      auto failure = std::current_exception();
      if (connection_lost(failure)) {
        session_.reset();
        // Nothing committed: redo the whole group once on a new connection.
        if (attempt == 0) continue;
      }
      failure = as_persistence_error(failure);
      for (auto& t : batch) t->fail(failure);
      return;
    }
  }
}

bool writer::try_group(pqxx::connection& c, std::deque<std::unique_ptr<task>>& batch,
                       bool savepoints) {
  pqxx::work txn(c);
  if (savepoints) {
    for (auto& t : batch) {
      pqxx::subtransaction sp(txn, "write");
      if (t->run(sp)) sp.commit();  // otherwise destroying sp rolls back to the savepoint
    }
  } else {
    std::size_t i = 0;
    while (i < batch.size()) {
      if (batch[i]->append() == nullptr) {
        if (!batch[i]->run(txn) && !batch[i]->refused_cleanly()) return false;
        ++i;
        continue;
      }
      std::vector<const append_request*> run;
      std::size_t end = i;
      while (end < batch.size() && batch[end]->append() != nullptr) {
        run.push_back(batch[end]->append());
        ++end;
      }
      std::vector<append_outcome> outcomes;
      try {
        outcomes = append_many(txn, run);
      } catch (const pqxx::broken_connection&) {
        throw;
      } catch (const pqxx::transaction_rollback&) {
        throw;
      } catch (const pqxx::sql_error&) {
        return false;  // the transaction is aborted; redo with savepoints
      } catch (const persistence_error&) {
        return false;  // e.g. a number too large for PostgreSQL: isolate that write
      }
      for (std::size_t k = 0; k < outcomes.size(); ++k) {
        batch[i + k]->set_outcome(std::move(outcomes[k]));
      }
      i = end;
    }
  }
  txn.commit();
  transactions_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// -- reader_pool -------------------------------------------------------------

reader_pool::reader_pool(std::vector<session> sessions) : sessions_(std::move(sessions)) {
  for (auto& s : sessions_) threads_.emplace_back([this, &s] { loop(s); });
}

reader_pool::~reader_pool() { close_and_join(); }

void reader_pool::loop(session& s) {
  for (;;) {
    auto batch = take(1);
    if (batch.empty()) return;
    auto& t = *batch.front();
    for (int attempt = 0;; ++attempt) {
      try {
        pqxx::nontransaction n(s.get());
        t.run(n);
        break;
      } catch (...) {
        auto failure = std::current_exception();
        if (connection_lost(failure)) {
          s.reset();
          if (attempt == 0) continue;  // a read is safe to redo on a new connection
        }
        t.fail(as_persistence_error(failure));
        break;
      }
    }
    tasks_run_.fetch_add(1, std::memory_order_relaxed);
    t.complete();
  }
}

}  // namespace troupe::persistence::pg
