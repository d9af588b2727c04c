#include "troupe/persistence/postgres_plugin.hpp"

#include <troupe/persistence/errc.hpp>

#include "persistence/postgres/pg_operations.hpp"
#include "persistence/postgres/pg_session.hpp"
#include "persistence/postgres/pg_worker.hpp"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace troupe::persistence {

namespace {

using pg::make_read_task;
using pg::make_write_task;
using pg::write_session;
using tx = pqxx::transaction_base;

/// The threads every store of one plugin shares: writes go to `writer` (group commit), reads to
/// `readers`.
struct workers {
  pg::writer& writer;
  pg::reader_pool& readers;
};

class pg_journal final : public journal {
 public:
  explicit pg_journal(workers w) : w_(w) {}

 protected:
  void do_append(append_request r, completion<sequence_nr> h) override {
    w_.writer.submit(pg::make_append_task(std::move(r), std::move(h)));
  }
  void do_read(read_request r, completion<std::vector<event_record>> h) override {
    w_.readers.submit(make_read_task<std::vector<event_record>>(
        std::move(h), [r = std::move(r)](tx& t) { return pg::read_events(t, r); }));
  }
  void do_highest_sequence_nr(std::string pid, completion<sequence_nr> h) override {
    w_.readers.submit(make_read_task<sequence_nr>(
        std::move(h), [pid = std::move(pid)](tx& t) { return pg::highest_sequence_nr(t, pid); }));
  }
  void do_delete_to(delete_events_request r, void_completion h) override {
    auto pid = r.persistence_id;
    auto epoch = r.epoch;
    w_.writer.submit(make_write_task<void>(
        std::move(h), [r = std::move(r)](write_session& s) { pg::delete_to(s, r); }, std::move(pid),
        epoch, /*deletes_events=*/true));
  }

 private:
  workers w_;
};

class pg_snapshots final : public snapshot_store {
 public:
  explicit pg_snapshots(workers w) : w_(w) {}

 protected:
  void do_save(snapshot_write w, void_completion h) override {
    auto pid = w.persistence_id;
    auto epoch = w.epoch;
    w_.writer.submit(make_write_task<void>(
        std::move(h), [w = std::move(w)](write_session& s) { pg::save_snapshot(s, w); },
        std::move(pid), epoch));
  }
  void do_load(snapshot_query q, completion<std::optional<snapshot_record>> h) override {
    w_.readers.submit(make_read_task<std::optional<snapshot_record>>(
        std::move(h), [q = std::move(q)](tx& t) { return pg::load_snapshot(t, q); }));
  }
  void do_delete(snapshot_delete d, void_completion h) override {
    auto pid = d.persistence_id;
    auto epoch = d.epoch;
    w_.writer.submit(make_write_task<void>(
        std::move(h), [d = std::move(d)](write_session& s) { pg::delete_snapshots(s, d); },
        std::move(pid), epoch));
  }

 private:
  workers w_;
};

class pg_durable_state final : public durable_state_store {
 public:
  explicit pg_durable_state(workers w) : w_(w) {}

 protected:
  void do_upsert(state_write w, completion<revision_nr> h) override {
    w_.writer.submit(pg::make_upsert_task(std::move(w), std::move(h)));
  }
  void do_get(std::string pid, completion<std::optional<durable_state_record>> h) override {
    w_.readers.submit(make_read_task<std::optional<durable_state_record>>(
        std::move(h), [pid = std::move(pid)](tx& t) { return pg::get_state(t, pid); }));
  }
  void do_delete(state_delete d, void_completion h) override {
    auto pid = d.persistence_id;
    auto epoch = d.epoch;
    w_.writer.submit(make_write_task<void>(
        std::move(h), [d = std::move(d)](write_session& s) { pg::delete_state(s, d); },
        std::move(pid), epoch));
  }

 private:
  workers w_;
};

class pg_remember_entities final : public remember_entities_store {
 public:
  explicit pg_remember_entities(workers w) : w_(w) {}

 protected:
  void do_update(remember_update u, void_completion h) override {
    // Not a persistence id's write: a shard's fence guards it (see pg::update_remembered).
    w_.writer.submit(make_write_task<void>(
        std::move(h), [u = std::move(u)](write_session& s) { pg::update_remembered(s, u); }, "",
        0));
  }
  void do_list(remember_query q, completion<std::vector<std::string>> h) override {
    w_.readers.submit(make_read_task<std::vector<std::string>>(
        std::move(h), [q = std::move(q)](tx& t) { return pg::list_remembered(t, q); }));
  }
  void do_list_shards(std::string type_name, completion<std::vector<std::uint32_t>> h) override {
    w_.readers.submit(make_read_task<std::vector<std::uint32_t>>(
        std::move(h),
        [type = std::move(type_name)](tx& t) { return pg::list_remembered_shards(t, type); }));
  }

 private:
  workers w_;
};

pg::session_settings settings_of(const postgres_options& o, bool create_schema) {
  return {o.url, o.schema, o.application_name, create_schema};
}

/// The writer's session, connected, with the schema created.
pg::session open_writer(const postgres_options& o) {
  pg::session s(settings_of(o, true));
  s.get();
  return s;
}

std::vector<pg::session> open_readers(const postgres_options& o) {
  std::vector<pg::session> out;
  for (std::size_t i = 0; i < std::max<std::size_t>(o.readers, 1); ++i) {
    out.emplace_back(settings_of(o, false));
    out.back().get();  // fail at open, not at the first read
  }
  return out;
}

class postgres_plugin final : public plugin {
 public:
  explicit postgres_plugin(const postgres_options& o)
      // The writer first: it creates the schema the readers' statements need.
      : writer_(open_writer(o), o.max_batch, o.max_queued,
                group_commit::group_metrics::of(o.metrics, "postgres")),
        readers_(open_readers(o)),
        journal_({writer_, readers_}),
        snapshots_({writer_, readers_}),
        states_({writer_, readers_}),
        remembered_({writer_, readers_}) {}

  persistence::journal& journal() override { return journal_; }
  snapshot_store& snapshots() override { return snapshots_; }
  durable_state_store& durable_state() override { return states_; }
  remember_entities_store& remember_entities() override { return remembered_; }

  write_stats stats() const override { return {writer_.tasks_run(), writer_.transactions()}; }

 protected:
  void do_raise_shard_fence(shard_fence_raise r, completion<fence_raise> h) override {
    // Not a persistence id's write: it changes no cached fence (writes read shard fences anew).
    writer_.submit(make_write_task<fence_raise>(
        std::move(h), [r = std::move(r)](write_session& s) { return pg::raise_shard_fence(s, r); },
        "", 0));
  }

 private:
  // Declared before the stores so that they are destroyed after them: the writer is destroyed
  // last and finishes every queued write.
  pg::writer writer_;
  pg::reader_pool readers_;
  pg_journal journal_;
  pg_snapshots snapshots_;
  pg_durable_state states_;
  pg_remember_entities remembered_;
};

}  // namespace

std::unique_ptr<plugin> open_postgres_plugin(postgres_options options) {
  if (options.url.empty()) {
    throw persistence_error(errc::invalid_request, "postgres_options.url must name a server");
  }
  if (options.schema.empty()) {
    throw persistence_error(errc::invalid_request, "postgres_options.schema must not be empty");
  }
  return std::make_unique<postgres_plugin>(options);
}

}  // namespace troupe::persistence
