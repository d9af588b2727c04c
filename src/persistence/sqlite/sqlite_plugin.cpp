#include "troupe/persistence/sqlite_plugin.hpp"

#include <troupe/persistence/errc.hpp>

#include "persistence/sqlite/sqlite_connection.hpp"
#include "persistence/sqlite/sqlite_operations.hpp"
#include "persistence/sqlite/sqlite_worker.hpp"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace troupe::persistence {

namespace {

using sqlite::connection;
using sqlite::make_task;
using sqlite::read_task;
using sqlite::write_session;
using sqlite::write_task;

/// The two threads every store of one plugin shares: writes go to `writer` (group commit),
/// reads to `reader`.
struct workers {
  sqlite::writer& writer;
  sqlite::reader& reader;
};

class sqlite_journal final : public journal {
 public:
  explicit sqlite_journal(workers w) : w_(w) {}

 protected:
  void do_append(append_request r, completion<sequence_nr> h) override {
    w_.writer.submit(sqlite::make_append_task(std::move(r), std::move(h)));
  }
  void do_read(read_request r, completion<std::vector<event_record>> h) override {
    w_.reader.submit(make_task<read_task, std::vector<event_record>>(
        std::move(h), [r = std::move(r)](connection& c) { return sqlite::read_events(c, r); }));
  }
  void do_highest_sequence_nr(std::string pid, completion<sequence_nr> h) override {
    w_.reader.submit(make_task<read_task, sequence_nr>(
        std::move(h),
        [pid = std::move(pid)](connection& c) { return sqlite::highest_sequence_nr(c, pid); }));
  }
  void do_delete_to(delete_events_request r, void_completion h) override {
    w_.writer.submit(make_task<write_task, void>(
        std::move(h), [r = std::move(r)](write_session& s) { sqlite::delete_to(s, r); }));
  }

 private:
  workers w_;
};

class sqlite_snapshots final : public snapshot_store {
 public:
  explicit sqlite_snapshots(workers w) : w_(w) {}

 protected:
  void do_save(snapshot_write w, void_completion h) override {
    w_.writer.submit(make_task<write_task, void>(
        std::move(h), [w = std::move(w)](write_session& s) { sqlite::save_snapshot(s, w); }));
  }
  void do_load(snapshot_query q, completion<std::optional<snapshot_record>> h) override {
    w_.reader.submit(make_task<read_task, std::optional<snapshot_record>>(
        std::move(h), [q = std::move(q)](connection& c) { return sqlite::load_snapshot(c, q); }));
  }
  void do_delete(snapshot_delete d, void_completion h) override {
    w_.writer.submit(make_task<write_task, void>(
        std::move(h), [d = std::move(d)](write_session& s) { sqlite::delete_snapshots(s, d); }));
  }

 private:
  workers w_;
};

class sqlite_durable_state final : public durable_state_store {
 public:
  explicit sqlite_durable_state(workers w) : w_(w) {}

 protected:
  void do_upsert(state_write w, completion<revision_nr> h) override {
    w_.writer.submit(make_task<write_task, revision_nr>(
        std::move(h), [w = std::move(w)](write_session& s) { return sqlite::upsert_state(s, w); }));
  }
  void do_get(std::string pid, completion<std::optional<durable_state_record>> h) override {
    w_.reader.submit(make_task<read_task, std::optional<durable_state_record>>(
        std::move(h), [pid = std::move(pid)](connection& c) { return sqlite::get_state(c, pid); }));
  }
  void do_delete(state_delete d, void_completion h) override {
    w_.writer.submit(make_task<write_task, void>(
        std::move(h), [d = std::move(d)](write_session& s) { sqlite::delete_state(s, d); }));
  }

 private:
  workers w_;
};

class sqlite_remember_entities final : public remember_entities_store {
 public:
  explicit sqlite_remember_entities(workers w) : w_(w) {}

 protected:
  void do_update(remember_update u, void_completion h) override {
    w_.writer.submit(make_task<write_task, void>(
        std::move(h), [u = std::move(u)](write_session& s) { sqlite::update_remembered(s, u); }));
  }
  void do_list(remember_query q, completion<std::vector<std::string>> h) override {
    w_.reader.submit(make_task<read_task, std::vector<std::string>>(
        std::move(h), [q = std::move(q)](connection& c) { return sqlite::list_remembered(c, q); }));
  }
  void do_list_shards(std::string type_name, completion<std::vector<std::uint32_t>> h) override {
    w_.reader.submit(make_task<read_task, std::vector<std::uint32_t>>(
        std::move(h), [type = std::move(type_name)](connection& c) {
          return sqlite::list_remembered_shards(c, type);
        }));
  }

 private:
  workers w_;
};

std::unique_ptr<connection> open_writer(const sqlite_options& o) {
  auto c = std::make_unique<connection>(o.file, false, o.busy_timeout);
  c->exec("PRAGMA journal_mode = WAL");
  // A group commit dirties hundreds of pages (the journal's last pages and the index leaves of the
  // ids it wrote). With SQLite's default (a checkpoint once the WAL holds 1,000 pages) nearly
  // every commit would also checkpoint, in this thread; every 20,000 pages (~80 MB of WAL) keeps
  // that to one checkpoint per ~25 group commits. The writer's page cache (128 MB) keeps the
  // index's recently written leaves in memory.
  c->exec("PRAGMA wal_autocheckpoint = 20000");
  c->exec("PRAGMA cache_size = -131072");
  c->exec(o.durability == sqlite_durability::full ? "PRAGMA synchronous = FULL"
                                                  : "PRAGMA synchronous = NORMAL");
  sqlite::create_schema(*c);
  return c;
}

class sqlite_plugin final : public plugin {
 public:
  explicit sqlite_plugin(const sqlite_options& o)
      // The writer first: it creates the file, switches it to WAL and creates the schema.
      : writer_(open_writer(o), o.max_batch, o.max_queued,
                group_commit::group_metrics::of(o.metrics, "sqlite")),
        reader_(std::make_unique<connection>(o.file, true, o.busy_timeout)),
        journal_({writer_, reader_}),
        snapshots_({writer_, reader_}),
        states_({writer_, reader_}),
        remembered_({writer_, reader_}) {}

  persistence::journal& journal() override { return journal_; }
  snapshot_store& snapshots() override { return snapshots_; }
  durable_state_store& durable_state() override { return states_; }
  remember_entities_store& remember_entities() override { return remembered_; }

  write_stats stats() const override { return {writer_.tasks_run(), writer_.transactions()}; }

 protected:
  void do_raise_shard_fence(shard_fence_raise r, completion<fence_raise> h) override {
    writer_.submit(make_task<write_task, fence_raise>(
        std::move(h),
        [r = std::move(r)](write_session& s) { return sqlite::raise_shard_fence(s, r); }));
  }

 private:
  // Declared before the stores so that they are destroyed after them: the writer is destroyed
  // last and finishes every queued write.
  sqlite::writer writer_;
  sqlite::reader reader_;
  sqlite_journal journal_;
  sqlite_snapshots snapshots_;
  sqlite_durable_state states_;
  sqlite_remember_entities remembered_;
};

}  // namespace

std::unique_ptr<plugin> open_sqlite_plugin(sqlite_options options) {
  if (options.file.empty()) {
    throw persistence_error(errc::invalid_request, "sqlite_options.file must name a file");
  }
  return std::make_unique<sqlite_plugin>(options);
}

}  // namespace troupe::persistence
