#include "troupe/persistence/memory_plugin.hpp"

#include <troupe/persistence/errc.hpp>

#include "persistence/memory/memory_storage.hpp"

#include <algorithm>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace troupe::persistence {

namespace {

using lock = std::scoped_lock<std::mutex>;

/// Runs `body` under the storage's lock and completes `h` with its result or its exception.
template <class T, class Body>
void run(memory_storage& s, completion<T> h, Body body) {
  std::optional<T> result;
  std::exception_ptr failure;
  try {
    lock guard(s.mutex);
    result.emplace(body());
  } catch (...) {
    failure = std::current_exception();
  }
  detail::pending<completion<T>> done(std::move(h));
  std::move(done).complete(failure, result ? std::move(*result) : T{});
}

template <class Body>
void run_write(memory_storage& s, void_completion h, Body body) {
  std::exception_ptr failure;
  try {
    lock guard(s.mutex);
    body();
  } catch (...) {
    failure = std::current_exception();
  }
  s.writes.fetch_add(1, std::memory_order_relaxed);
  detail::pending<void_completion> done(std::move(h));
  std::move(done).complete(failure);
}

void require_intact(const std::string& pid, const event_record& e) {
  if (e.event.manifest.type_name.empty() || e.event.manifest.version == 0) {
    throw persistence_error(errc::corrupt_record, "event " + std::to_string(e.sequence) + " of " +
                                                      pid + " has no valid manifest");
  }
}

/// Appends `r` (with the storage's mutex held); the last sequence number written.
sequence_nr append_locked(memory_storage& s, append_request& r) {
  s.writes.fetch_add(1, std::memory_order_relaxed);
  s.check_owner_fence(r.shard_fence, r.epoch);
  s.check_fence(r.persistence_id, r.epoch);
  auto& entry = s.journals[r.persistence_id];
  if (r.expected_next != entry.highest + 1) {
    throw persistence_error(errc::sequence_conflict,
                            "append to " + r.persistence_id + " expected next " +
                                std::to_string(r.expected_next) + ", highest is " +
                                std::to_string(entry.highest));
  }
  sequence_nr seq = r.expected_next;
  for (auto& e : r.events) {
    entry.events.emplace(seq, event_record{seq, std::move(e), r.epoch});
    ++seq;
  }
  entry.highest = seq - 1;
  s.raise_fence(r.persistence_id, r.epoch);
  return entry.highest;
}

/// Appends `r` as `fault` says: refused, written with its answer lost, or written.
void append_with(memory_storage& s, append_request r, const write_fault& fault,
                 completion<sequence_nr> h) {
  run<sequence_nr>(s, std::move(h), [&] {
    if (fault.fail) {
      throw persistence_error(errc::store_failure,
                              "append to " + r.persistence_id + " failed (injected write fault)");
    }
    const sequence_nr last = append_locked(s, r);
    if (fault.answer_lost) {
      throw persistence_error(errc::store_failure, "append to " + r.persistence_id +
                                                       ": answer lost (injected write fault)");
    }
    return last;
  });
}

/// The appends a faulty journal holds back (a slow disk), each until its timer fires or the
/// plugin closes, whichever comes first takes it.
struct delayed_appends {
  struct op {
    append_request request;
    write_fault fault;
    completion<sequence_nr> handler;
    timer_id timer = 0;
  };
  std::mutex mutex;
  std::uint64_t next_key = 0;
  std::map<std::uint64_t, op> ops;

  std::optional<op> take(std::uint64_t key) {
    std::scoped_lock guard(mutex);
    auto it = ops.find(key);
    if (it == ops.end()) return std::nullopt;
    std::optional<op> taken(std::move(it->second));
    ops.erase(it);
    return taken;
  }
};

/// What a test injects into the appends (make_memory_plugin with a policy).
struct injected_faults {
  write_fault_policy policy;
  std::shared_ptr<troupe::clock> clock;
};

class memory_journal final : public journal {
 public:
  memory_journal(std::shared_ptr<memory_storage> s, std::optional<injected_faults> faults)
      : storage_(std::move(s)),
        s_(*storage_),
        faults_(std::move(faults)),
        delayed_(faults_ ? std::make_shared<delayed_appends>() : nullptr) {}

  ~memory_journal() override {
    if (!delayed_) return;
    std::map<std::uint64_t, delayed_appends::op> closing;
    {
      std::scoped_lock guard(delayed_->mutex);
      closing.swap(delayed_->ops);
    }
    for (auto& [key, op] : closing) {
      faults_->clock->cancel(op.timer);
      detail::pending<completion<sequence_nr>> done(std::move(op.handler));
      std::move(done).complete(
          std::make_exception_ptr(persistence_error(
              errc::store_closed, "append to " + op.request.persistence_id +
                                      " not done: the plugin closed while the write was slow")),
          sequence_nr{0});
    }
  }
  memory_journal(const memory_journal&) = delete;
  memory_journal& operator=(const memory_journal&) = delete;

 protected:
  void do_append(append_request r, completion<sequence_nr> h) override {
    const write_fault fault = faults_ ? faults_->policy(r) : write_fault{};
    if (fault.delay <= std::chrono::nanoseconds::zero()) {
      append_with(s_, std::move(r), fault, std::move(h));
      return;
    }
    std::scoped_lock guard(delayed_->mutex);
    const std::uint64_t key = ++delayed_->next_key;
    // Built in place: Boost 1.81's any_completion_handler move assignment recurses forever.
    auto& op = delayed_->ops.emplace(key, delayed_appends::op{std::move(r), fault, std::move(h), 0})
                   .first->second;
    op.timer = faults_->clock->schedule_after(
        std::chrono::duration_cast<duration>(fault.delay),
        [delayed = std::weak_ptr(delayed_), storage = storage_, key] {
          auto held = delayed.lock();
          if (!held) return;
          auto taken = held->take(key);
          if (taken)
            append_with(*storage, std::move(taken->request), taken->fault,
                        std::move(taken->handler));
        });
  }

  void do_read(read_request r, completion<std::vector<event_record>> h) override {
    run<std::vector<event_record>>(s_, std::move(h), [&] {
      std::vector<event_record> out;
      auto it = s_.journals.find(r.persistence_id);
      if (it == s_.journals.end()) return out;
      for (auto e = it->second.events.lower_bound(r.from);
           e != it->second.events.end() && e->first <= r.to && out.size() < r.max_count; ++e) {
        require_intact(r.persistence_id, e->second);
        out.push_back(e->second);
      }
      return out;
    });
  }

  void do_highest_sequence_nr(std::string pid, completion<sequence_nr> h) override {
    run<sequence_nr>(s_, std::move(h), [&] {
      auto it = s_.journals.find(pid);
      return it == s_.journals.end() ? sequence_nr{0} : it->second.highest;
    });
  }

  void do_delete_to(delete_events_request r, void_completion h) override {
    run_write(s_, std::move(h), [&] {
      s_.check_fence(r.persistence_id, r.epoch);
      auto it = s_.journals.find(r.persistence_id);
      if (it != s_.journals.end()) {
        auto& events = it->second.events;
        events.erase(events.begin(), events.upper_bound(r.to));
      }
      s_.raise_fence(r.persistence_id, r.epoch);
    });
  }

 private:
  std::shared_ptr<memory_storage> storage_;
  memory_storage& s_;
  std::optional<injected_faults> faults_;
  std::shared_ptr<delayed_appends> delayed_;  // only with injected faults
};

class memory_snapshots final : public snapshot_store {
 public:
  explicit memory_snapshots(memory_storage& s) : s_(s) {}

 protected:
  void do_save(snapshot_write w, void_completion h) override {
    run_write(s_, std::move(h), [&] {
      s_.check_owner_fence(w.shard_fence, w.epoch);
      s_.check_fence(w.persistence_id, w.epoch);
      s_.snapshots[w.persistence_id][w.sequence] =
          snapshot_record{w.sequence, std::move(w.state), w.epoch};
      s_.raise_fence(w.persistence_id, w.epoch);
    });
  }

  void do_load(snapshot_query q, completion<std::optional<snapshot_record>> h) override {
    run<std::optional<snapshot_record>>(s_, std::move(h), [&]() -> std::optional<snapshot_record> {
      auto it = s_.snapshots.find(q.persistence_id);
      if (it == s_.snapshots.end()) return std::nullopt;
      auto at = it->second.upper_bound(q.max_sequence);
      if (at == it->second.begin()) return std::nullopt;
      return std::prev(at)->second;
    });
  }

  void do_delete(snapshot_delete d, void_completion h) override {
    run_write(s_, std::move(h), [&] {
      s_.check_fence(d.persistence_id, d.epoch);
      auto it = s_.snapshots.find(d.persistence_id);
      if (it != s_.snapshots.end()) {
        it->second.erase(it->second.begin(), it->second.upper_bound(d.max_sequence));
      }
      s_.raise_fence(d.persistence_id, d.epoch);
    });
  }

 private:
  memory_storage& s_;
};

class memory_durable_state final : public durable_state_store {
 public:
  explicit memory_durable_state(memory_storage& s) : s_(s) {}

 protected:
  void do_upsert(state_write w, completion<revision_nr> h) override {
    run<revision_nr>(s_, std::move(h), [&] {
      s_.writes.fetch_add(1, std::memory_order_relaxed);
      s_.check_owner_fence(w.shard_fence, w.epoch);
      s_.check_fence(w.persistence_id, w.epoch);
      check_revision(w.persistence_id, w.expected_revision);
      revision_nr next = w.expected_revision + 1;
      s_.states[w.persistence_id] = durable_state_record{next, std::move(w.value), w.epoch};
      s_.raise_fence(w.persistence_id, w.epoch);
      return next;
    });
  }

  void do_get(std::string pid, completion<std::optional<durable_state_record>> h) override {
    run<std::optional<durable_state_record>>(s_, std::move(h),
                                             [&]() -> std::optional<durable_state_record> {
                                               auto it = s_.states.find(pid);
                                               if (it == s_.states.end()) return std::nullopt;
                                               return it->second;
                                             });
  }

  void do_delete(state_delete d, void_completion h) override {
    run_write(s_, std::move(h), [&] {
      s_.check_fence(d.persistence_id, d.epoch);
      check_revision(d.persistence_id, d.expected_revision);
      s_.states.erase(d.persistence_id);
      s_.raise_fence(d.persistence_id, d.epoch);
    });
  }

 private:
  void check_revision(const std::string& pid, revision_nr expected) const {
    auto it = s_.states.find(pid);
    revision_nr stored = it == s_.states.end() ? 0 : it->second.revision;
    if (stored != expected) {
      throw persistence_error(errc::revision_conflict, "state " + pid + " is at revision " +
                                                           std::to_string(stored) + ", expected " +
                                                           std::to_string(expected));
    }
  }

  memory_storage& s_;
};

class memory_remember_entities final : public remember_entities_store {
 public:
  explicit memory_remember_entities(memory_storage& s) : s_(s) {}

 protected:
  void do_update(remember_update u, void_completion h) override {
    run_write(s_, std::move(h), [&] {
      memory_storage::shard_key key{u.type_name, u.shard};
      s_.check_owner_fence(u.shard_fence, u.epoch);
      s_.check_fence(key, u.epoch);
      auto& ids = s_.remembered[key];
      for (auto& id : u.added) ids.insert(std::move(id));
      for (const auto& id : u.removed) ids.erase(id);
      s_.raise_fence(key, u.epoch);
    });
  }

  void do_list(remember_query q, completion<std::vector<std::string>> h) override {
    run<std::vector<std::string>>(s_, std::move(h), [&] {
      auto it = s_.remembered.find({q.type_name, q.shard});
      if (it == s_.remembered.end()) return std::vector<std::string>{};
      return std::vector<std::string>(it->second.begin(), it->second.end());
    });
  }

  void do_list_shards(std::string type_name, completion<std::vector<std::uint32_t>> h) override {
    run<std::vector<std::uint32_t>>(s_, std::move(h), [&] {
      std::vector<std::uint32_t> out;
      for (const auto& [key, ids] : s_.remembered) {
        if (key.first == type_name && !ids.empty()) out.push_back(key.second);
      }
      std::sort(out.begin(), out.end());
      return out;
    });
  }

 private:
  memory_storage& s_;
};

class memory_plugin final : public plugin {
 public:
  memory_plugin(std::shared_ptr<memory_storage> storage, std::optional<injected_faults> faults)
      : storage_(std::move(storage)),
        journal_(storage_, std::move(faults)),
        snapshots_(*storage_),
        states_(*storage_),
        remembered_(*storage_) {}

  persistence::journal& journal() override { return journal_; }
  snapshot_store& snapshots() override { return snapshots_; }
  durable_state_store& durable_state() override { return states_; }
  remember_entities_store& remember_entities() override { return remembered_; }

  // Every write is its own "transaction": nothing is grouped.
  write_stats stats() const override {
    auto writes = storage_->writes.load(std::memory_order_relaxed);
    return {writes, writes};
  }

 protected:
  void do_raise_shard_fence(shard_fence_raise r, completion<fence_raise> h) override {
    run<fence_raise>(*storage_, std::move(h), [&] {
      storage_->writes.fetch_add(1, std::memory_order_relaxed);
      return storage_->raise_owner_fence(r.shard, r.epoch);
    });
  }

 private:
  std::shared_ptr<memory_storage> storage_;
  memory_journal journal_;
  memory_snapshots snapshots_;
  memory_durable_state states_;
  memory_remember_entities remembered_;
};

}  // namespace

std::shared_ptr<memory_storage> make_memory_storage() { return std::make_shared<memory_storage>(); }

std::unique_ptr<plugin> make_memory_plugin(std::shared_ptr<memory_storage> storage) {
  if (!storage) storage = make_memory_storage();
  return std::make_unique<memory_plugin>(std::move(storage), std::nullopt);
}

std::unique_ptr<plugin> make_memory_plugin(std::shared_ptr<memory_storage> storage,
                                           write_fault_policy faults,
                                           std::shared_ptr<troupe::clock> clock) {
  if (!storage) storage = make_memory_storage();
  if (!faults || !clock) {
    throw persistence_error(errc::invalid_request,
                            "make_memory_plugin: a write fault policy needs a policy and a clock");
  }
  return std::make_unique<memory_plugin>(std::move(storage),
                                         injected_faults{std::move(faults), std::move(clock)});
}

bool corrupt_stored_event(memory_storage& storage, const std::string& persistence_id,
                          sequence_nr sequence) {
  std::scoped_lock guard(storage.mutex);
  auto it = storage.journals.find(persistence_id);
  if (it == storage.journals.end()) return false;
  auto e = it->second.events.find(sequence);
  if (e == it->second.events.end()) return false;
  e->second.event.manifest.type_name.clear();
  return true;
}

}  // namespace troupe::persistence
