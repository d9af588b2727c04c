#include "persistence/postgres/pg_worker.hpp"

#include <pqxx/except>
#include <pqxx/nontransaction>
#include <pqxx/transaction>

#include <string>
#include <type_traits>
#include <unordered_set>

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

std::exception_ptr escalate_connection_failures::kept(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const pqxx::broken_connection&) {
    throw;
  } catch (const pqxx::transaction_rollback&) {
    throw;  // a deadlock with another writer: the writer redoes the whole group
  } catch (...) {
    return as_persistence_error(e);
  }
}

namespace {

/// An append or an upsert: a task that can also be done in a run with others of its kind.
template <class Request, class T, T (*Run)(write_session&, const Request&)>
using alone = group_commit::run_alone<write_session, Request, T, Run>;

template <class Request, class T, T (*Run)(write_session&, const Request&)>
class run_task final
    : public group_commit::typed_task<write_task, T, completion<T>, alone<Request, T, Run>,
                                      escalate_connection_failures> {
  using base = group_commit::typed_task<write_task, T, completion<T>, alone<Request, T, Run>,
                                        escalate_connection_failures>;
  static constexpr bool is_append = std::is_same_v<Request, append_request>;

 public:
  run_task(Request r, completion<T> h) : base(std::move(h), alone<Request, T, Run>{std::move(r)}) {}

  [[nodiscard]] write_info info() const noexcept override {
    const auto& r = this->body().request;
    return {r.persistence_id, r.epoch, false, is_append};
  }
  [[nodiscard]] const append_request* append() const noexcept override {
    if constexpr (is_append) return &this->body().request;
    return nullptr;
  }
  [[nodiscard]] const state_write* upsert() const noexcept override {
    if constexpr (!is_append) return &this->body().request;
    return nullptr;
  }
  void set_outcome(run_outcome outcome) noexcept override {
    if (outcome.refusal) {
      this->fail(std::move(outcome.refusal));
    } else {
      this->set_result(outcome.result);
    }
  }
};

}  // namespace

std::unique_ptr<write_task> make_append_task(append_request r, completion<sequence_nr> h) {
  return std::make_unique<run_task<append_request, sequence_nr, &append>>(std::move(r),
                                                                          std::move(h));
}

std::unique_ptr<write_task> make_upsert_task(state_write w, completion<revision_nr> h) {
  return std::make_unique<run_task<state_write, revision_nr, &upsert_state>>(std::move(w),
                                                                             std::move(h));
}

// -- writer ------------------------------------------------------------------

writer::writer(session s, std::size_t max_batch, std::size_t max_queued,
               group_commit::group_metrics metrics)
    : session_(std::move(s)),
      loop_(
          "PostgreSQL store", max_batch, max_queued, [this](batch& b) { run_group(b); },
          std::move(metrics)) {}

void writer::run_group(batch& b) {
  for (int attempt = 0;; ++attempt) {
    try {
      auto& c = session_.get();
      // Savepoints cost two statements per write: take them only when a write failed mid-way.
      if (!try_group(c, b, false)) {
        heads_.reset();  // they hold what the rolled back transaction wrote
        try_group(c, b, true);
      }
      return;
    } catch (const pqxx::in_doubt_error& e) {
      // The connection broke during COMMIT: the transaction may have committed or not, so it
      // must not be redone. The callers learn that the outcome is unknown.
      heads_.reset();
      session_.reset();
      auto failure = std::make_exception_ptr(persistence_error(
          errc::store_failure,
          std::string("PostgreSQL connection lost while committing; the writes may or may not "
                      "have been stored: ") +
              e.what()));
      for (auto& t : b) t->fail(failure);
      return;
    } catch (const pqxx::transaction_rollback& e) {
      // PostgreSQL chose this transaction as a deadlock victim (two nodes writing the same ids in
      // different orders) or could not serialize it: nothing committed, so redo the group.
      heads_.reset();
      if (attempt < 3) continue;
      auto failure = std::make_exception_ptr(
          persistence_error(errc::store_failure, std::string("PostgreSQL: ") + e.what()));
      for (auto& t : b) t->fail(failure);
      return;
    } catch (...) {
      heads_.reset();
      auto failure = std::current_exception();
      if (connection_lost(failure)) {
        session_.reset();
        // Nothing committed: redo the whole group once on a new connection.
        if (attempt == 0) continue;
      }
      failure = as_persistence_error(failure);
      for (auto& t : b) t->fail(failure);
      return;
    }
  }
}

bool writer::may_change_fences(const batch& b) const {
  for (const auto& t : b) {
    auto info = t->info();
    if (info.deletes_events || heads_.may_raise(info.persistence_id, info.epoch)) return true;
  }
  return false;
}

void writer::load_heads(pqxx::transaction_base& t, const batch& b) {
  std::vector<head_wanted> wanted;
  wanted.reserve(b.size());
  for (const auto& task : b) {
    auto info = task->info();
    if (!info.persistence_id.empty()) wanted.push_back({info.persistence_id, info.needs_highest});
  }
  heads_.load(t, wanted);
}

bool writer::try_group(pqxx::connection& c, batch& b, bool savepoints) {
  pqxx::work txn(c);
  heads_.lock_generation(txn, may_change_fences(b));
  if (savepoints) {
    // Savepoints by hand: libpqxx 6.4's subtransaction does not begin (send SAVEPOINT) when its
    // first statement is a prepared one, so a failed write would abort the whole transaction.
    write_session s{txn, heads_};
    for (auto& t : b) {
      txn.exec("SAVEPOINT write");
      // A write changes the cached heads only once all its statements succeeded, so rolling
      // back to the savepoint leaves the cache matching the transaction.
      txn.exec(t->run(s) ? "RELEASE SAVEPOINT write" : "ROLLBACK TO SAVEPOINT write");
    }
  } else {
    try {
      load_heads(txn, b);
    } catch (const pqxx::broken_connection&) {
      throw;
    } catch (const pqxx::transaction_rollback&) {
      throw;
    } catch (const pqxx::sql_error&) {
      return false;  // the redo reads each write's head alone, so that only its write fails
    } catch (const persistence_error&) {
      return false;  // a damaged row: likewise
    }
    if (!run_in_runs(txn, b)) return false;
  }
  heads_.before_commit(txn);
  txn.commit();
  heads_.committed();
  transactions_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool writer::run_in_runs(pqxx::transaction_base& t, batch& b) {
  write_session s{t, heads_};
  std::size_t i = 0;
  while (i < b.size()) {
    std::size_t end = i;
    std::vector<run_outcome> outcomes;
    try {
      if (b[i]->append() != nullptr) {
        std::vector<const append_request*> run;
        for (; end < b.size() && b[end]->append() != nullptr; ++end)
          run.push_back(b[end]->append());
        outcomes = append_run(s, run);
      } else if (b[i]->upsert() != nullptr) {
        // One row per id in a statement: a second upsert of an id starts the next run.
        std::vector<const state_write*> run;
        std::unordered_set<std::string_view> ids;
        for (; end < b.size() && b[end]->upsert() != nullptr; ++end) {
          if (!ids.insert(b[end]->upsert()->persistence_id).second) break;
          run.push_back(b[end]->upsert());
        }
        outcomes = upsert_run(s, run);
      } else {
        if (!b[i]->run(s) && !b[i]->refused_cleanly()) return false;
        ++i;
        continue;
      }
    } catch (const pqxx::broken_connection&) {
      throw;
    } catch (const pqxx::transaction_rollback&) {
      throw;
    } catch (const pqxx::sql_error&) {
      return false;  // the transaction is aborted; redo with savepoints
    } catch (const persistence_error&) {
      return false;  // e.g. a number too large for PostgreSQL: isolate that write
    }
    for (std::size_t k = 0; k < outcomes.size(); ++k) b[i + k]->set_outcome(std::move(outcomes[k]));
    i = end;
  }
  return true;
}

// -- reader_pool -------------------------------------------------------------

reader_pool::reader_pool(std::vector<session> sessions) : sessions_(std::move(sessions)) {
  for (auto& s : sessions_) threads_.emplace_back([this, &s] { loop(s); });
}

reader_pool::~reader_pool() {
  queue_.close();
  for (auto& t : threads_) t.join();
}

void reader_pool::loop(session& s) {
  std::deque<std::unique_ptr<read_task>> b;
  while (queue_.take(b, 1)) {
    auto& t = *b.front();
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
    t.complete();
    b.clear();
  }
}

}  // namespace troupe::persistence::pg
