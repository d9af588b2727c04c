#pragma once
// Shared by the entity tests: an event-sourced account, a durable-state counter, and a plugin
// wrapper that can hold or fail store operations so a test controls when a write is durable.
#include <troupe/core/actor_system.hpp>
#include <troupe/persistence/durable_state_entity.hpp>
#include <troupe/persistence/memory_plugin.hpp>
#include <troupe/persistence/persistence_extension.hpp>
#include <troupe/persistence/persistent_entity.hpp>
#include <troupe/sharding/cluster_sharding.hpp>
#include <troupe/testkit/test_probe.hpp>

#include <boost/describe/class.hpp>

#include <stdlib.h>

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace entity_test {

namespace tp = troupe::persistence;

// -- the account: event sourced ------------------------------------------------------------------

struct deposited {
  std::int64_t amount = 0;
};
BOOST_DESCRIBE_STRUCT(deposited, (), (amount))
struct withdrawn {
  std::int64_t amount = 0;
};
BOOST_DESCRIBE_STRUCT(withdrawn, (), (amount))
/// Version 1 of `deposited` stored the amount in whole units of 100.
struct deposited_v1 {
  std::int64_t hundreds = 0;
};
BOOST_DESCRIBE_STRUCT(deposited_v1, (), (hundreds))
using account_event = std::variant<deposited, withdrawn>;

struct account_state {
  std::int64_t balance = 0;
  /// Every event's signed amount, in the order applied.
  std::vector<std::int64_t> history;
};
BOOST_DESCRIBE_STRUCT(account_state, (), (balance, history))

struct deposit {
  std::string id;
  std::int64_t amount = 0;
};
struct withdraw {
  std::string id;
  std::int64_t amount = 0;
};
/// Withdraws `amount` plus a `fee`: two events, persisted atomically.
struct withdraw_with_fee {
  std::string id;
  std::int64_t amount = 0;
  std::int64_t fee = 0;
};
struct get_history {
  std::string id;
};
struct passivate {
  std::string id;
};
using account_command = std::variant<deposit, withdraw, withdraw_with_fee, get_history, passivate>;

inline std::string account_of(const account_command& c) {
  return std::visit([](const auto& m) { return m.id; }, c);
}

/// Replies the new balance (std::int64_t) to deposits and withdrawals, the history
/// (std::vector<std::int64_t>) to get_history; refuses an overdraft with reply -1.
class account final : public tp::persistent_entity<account_command, account_event, account_state> {
 public:
  static inline const auto shard =
      troupe::sharding::shard_key<account_command>::of("account", account_of);

  account() = default;
  /// A plain actor with its own persistence id.
  explicit account(std::string persistence_id) : own_id_(std::move(persistence_id)) {}

 private:
  std::string make_persistence_id() const override {
    return own_id_.empty() ? persistent_entity::make_persistence_id() : own_id_;
  }

  effect_type on_command(const account_state& s, account_command& cmd) override {
    auto balance = [](const account_state& st) { return st.balance; };
    return std::visit(
        troupe::overloaded{
            [&](deposit& d) { return persist(deposited{d.amount}).then_reply(balance); },
            [&](withdraw& w) -> effect_type {
              if (w.amount > s.balance) return reply(std::int64_t{-1});
              return persist(withdrawn{w.amount}).then_reply(balance);
            },
            [&](withdraw_with_fee& w) -> effect_type {
              if (w.amount + w.fee > s.balance) return reply(std::int64_t{-1});
              return persist(withdrawn{w.amount}, withdrawn{w.fee}).then_reply(balance);
            },
            [&](get_history&) { return reply(s.history); },
            [&](passivate&) {
              return none().then([this](const account_state&) {
                troupe::sharding::request_passivation<account_command>(context());
              });
            },
        },
        cmd);
  }

  account_state apply(account_state s, const account_event& e) const override {
    std::visit(troupe::overloaded{
                   [&](const deposited& d) {
                     s.balance += d.amount;
                     s.history.push_back(d.amount);
                   },
                   [&](const withdrawn& w) {
                     s.balance -= w.amount;
                     s.history.push_back(-w.amount);
                   },
               },
               e);
    return s;
  }

  std::string own_id_;
};

// -- the counter: durable state ------------------------------------------------------------------

struct counter_state {
  std::int64_t value = 0;
  std::string last_by;
};
BOOST_DESCRIBE_STRUCT(counter_state, (), (value, last_by))

struct increment {
  std::string id;
  std::string by;
};
struct get_value {
  std::string id;
};
/// Replies the revision (std::uint64_t).
struct get_revision {
  std::string id;
};
using counter_command = std::variant<increment, get_value, get_revision>;

inline std::string counter_of(const counter_command& c) {
  return std::visit([](const auto& m) { return m.id; }, c);
}

/// Replies the new value (std::int64_t) to increments and get_value.
class counter final : public tp::durable_state_entity<counter_command, counter_state> {
 public:
  static inline const auto shard =
      troupe::sharding::shard_key<counter_command>::of("counter", counter_of);

 private:
  effect_type on_command(const counter_state& s, counter_command& cmd) override {
    auto value = [](const counter_state& st) { return st.value; };
    return std::visit(troupe::overloaded{
                          [&](increment& i) {
                            return persist(counter_state{s.value + 1, i.by}).then_reply(value);
                          },
                          [&](get_value&) { return reply(s.value); },
                          [&](get_revision&) { return reply(revision()); },
                      },
                      cmd);
  }
};

/// Registers the test types in a system's codec registry.
inline void register_codecs(troupe::actor_system& system) {
  tp::get(system)
      .codecs()
      .add<deposited>("test.deposited", 2)
      .add_upcast<deposited_v1, deposited>(
          1, [](deposited_v1 old) { return deposited{old.hundreds * 100}; })
      .add<withdrawn>("test.withdrawn")
      .add<account_state>("test.account")
      .add<counter_state>("test.counter");
}

// -- a plugin whose operations a test can hold or fail
// ---------------------------------------------

/// Wraps another plugin. While `hold_*` is set, operations of that kind wait until release();
/// `fail_next_append` makes the next append fail with that code without reaching the store.
class gated_plugin final : public tp::plugin {
 public:
  explicit gated_plugin(std::shared_ptr<tp::plugin> inner)
      : inner_(std::move(inner)), journal_(*this), snapshots_(*this) {}

  void hold_appends(bool on) { set_hold(hold_appends_, on); }
  void hold_reads(bool on) { set_hold(hold_reads_, on); }
  void fail_next_append(tp::errc code) {
    std::lock_guard lock(mutex_);
    fail_next_ = code;
  }
  /// Runs every held operation (in order) and stops holding.
  void release() {
    std::deque<std::function<void()>> run;
    {
      std::lock_guard lock(mutex_);
      hold_appends_ = hold_reads_ = false;
      run.swap(held_);
    }
    for (auto& f : run) f();
  }
  [[nodiscard]] std::size_t held() const {
    std::lock_guard lock(mutex_);
    return held_.size();
  }
  /// The number of events of each append that reached the store, in order.
  [[nodiscard]] std::vector<std::size_t> append_sizes() const {
    std::lock_guard lock(mutex_);
    return append_sizes_;
  }

  tp::journal& journal() override { return journal_; }
  tp::snapshot_store& snapshots() override { return snapshots_; }
  tp::durable_state_store& durable_state() override { return inner_->durable_state(); }
  tp::remember_entities_store& remember_entities() override { return inner_->remember_entities(); }
  [[nodiscard]] tp::write_stats stats() const override { return inner_->stats(); }

 protected:
  void do_raise_shard_fence(tp::shard_fence_raise r, tp::completion<tp::fence_raise> h) override {
    auto p = std::make_shared<tp::detail::pending<tp::completion<tp::fence_raise>>>(std::move(h));
    inner_->async_raise_shard_fence(std::move(r), [p](std::exception_ptr e, tp::fence_raise v) {
      std::move(*p).complete(e, v);
    });
  }

 private:
  template <class T>
  static auto forward(tp::completion<T> h) {
    return
        [p = std::make_shared<tp::detail::pending<tp::completion<T>>>(std::move(h))](
            std::exception_ptr e, T value) mutable { std::move(*p).complete(e, std::move(value)); };
  }
  static auto forward_void(tp::void_completion h) {
    return [p = std::make_shared<tp::detail::pending<tp::void_completion>>(std::move(h))](
               std::exception_ptr e) mutable { std::move(*p).complete(e); };
  }

  void set_hold(bool& flag, bool on) {
    std::lock_guard lock(mutex_);
    flag = on;
  }
  /// Runs `op` now, or later when `flag` holds.
  void run_or_hold(bool gated_by_appends, std::function<void()> op) {
    {
      std::lock_guard lock(mutex_);
      if (gated_by_appends ? hold_appends_ : hold_reads_) {
        held_.push_back(std::move(op));
        return;
      }
    }
    op();
  }

  class gated_journal final : public tp::journal {
   public:
    explicit gated_journal(gated_plugin& owner) : owner_(owner) {}

   protected:
    void do_append(tp::append_request r, tp::completion<tp::sequence_nr> h) override {
      std::optional<tp::errc> fail;
      {
        std::lock_guard lock(owner_.mutex_);
        fail = std::exchange(owner_.fail_next_, std::nullopt);
      }
      if (fail) {
        forward<tp::sequence_nr>(std::move(h))(
            std::make_exception_ptr(tp::persistence_error(*fail, "injected failure")), 0);
        return;
      }
      auto done = forward<tp::sequence_nr>(std::move(h));
      owner_.run_or_hold(true, [this, r = std::move(r), done]() mutable {
        {
          std::lock_guard lock(owner_.mutex_);
          owner_.append_sizes_.push_back(r.events.size());
        }
        owner_.inner_->journal().async_append(std::move(r), done);
      });
    }
    void do_read(tp::read_request r, tp::completion<std::vector<tp::event_record>> h) override {
      auto done = forward<std::vector<tp::event_record>>(std::move(h));
      owner_.run_or_hold(false, [this, r = std::move(r), done]() mutable {
        owner_.inner_->journal().async_read(std::move(r), done);
      });
    }
    void do_highest_sequence_nr(std::string pid, tp::completion<tp::sequence_nr> h) override {
      owner_.inner_->journal().async_highest_sequence_nr(std::move(pid),
                                                         forward<tp::sequence_nr>(std::move(h)));
    }
    void do_delete_to(tp::delete_events_request r, tp::void_completion h) override {
      owner_.inner_->journal().async_delete_to(std::move(r), forward_void(std::move(h)));
    }

   private:
    gated_plugin& owner_;
  };

  class gated_snapshots final : public tp::snapshot_store {
   public:
    explicit gated_snapshots(gated_plugin& owner) : owner_(owner) {}

   protected:
    void do_save(tp::snapshot_write w, tp::void_completion h) override {
      owner_.inner_->snapshots().async_save(std::move(w), forward_void(std::move(h)));
    }
    void do_load(tp::snapshot_query q,
                 tp::completion<std::optional<tp::snapshot_record>> h) override {
      auto done = forward<std::optional<tp::snapshot_record>>(std::move(h));
      owner_.run_or_hold(false, [this, q = std::move(q), done]() mutable {
        owner_.inner_->snapshots().async_load(std::move(q), done);
      });
    }
    void do_delete(tp::snapshot_delete d, tp::void_completion h) override {
      owner_.inner_->snapshots().async_delete(std::move(d), forward_void(std::move(h)));
    }

   private:
    gated_plugin& owner_;
  };

  std::shared_ptr<tp::plugin> inner_;
  gated_journal journal_;
  gated_snapshots snapshots_;
  mutable std::mutex mutex_;
  bool hold_appends_ = false;
  bool hold_reads_ = false;
  std::optional<tp::errc> fail_next_;
  std::deque<std::function<void()>> held_;
  std::vector<std::size_t> append_sizes_;
};

/// A temporary directory, removed with everything in it.
class temp_dir {
 public:
  temp_dir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "troupe-entity-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~temp_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  [[nodiscard]] std::filesystem::path file() const { return path_ / "store.db"; }

 private:
  std::filesystem::path path_;
};

}  // namespace entity_test
