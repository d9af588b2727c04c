// A sharded, event-sourced bank on SQLite: accounts survive a restart.
//
//   * `account` is a persistent_entity: its command handler returns an effect ("persist these
//     events, then reply"), and apply() folds the events into the balance;
//   * accounts are sharded entities (cluster_sharding), identified by the owner's name;
//   * events and snapshots go to one SQLite file through the persistence extension;
//   * the program runs the bank twice: the second actor system reopens the file and every
//     account recovers its balance (from a snapshot plus the events after it).
//
// Usage: troupe_example_bank_persistent [database-file]
// Without a file it uses a temporary one and removes it; with one, run it again to see the
// balances carry over between runs.

#include <troupe/core/actor_system.hpp>
#include <troupe/persistence/persistence_extension.hpp>
#include <troupe/persistence/persistent_entity.hpp>
#include <troupe/persistence/sqlite_plugin.hpp>
#include <troupe/sharding/cluster_sharding.hpp>

#include <boost/describe/class.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <variant>

using namespace std::chrono_literals;
namespace tp = troupe::persistence;

namespace {

// -- events and state: what is stored
// --------------------------------------------------------------

struct deposited {
  std::int64_t amount = 0;
};
BOOST_DESCRIBE_STRUCT(deposited, (), (amount))
struct withdrawn {
  std::int64_t amount = 0;
};
BOOST_DESCRIBE_STRUCT(withdrawn, (), (amount))
struct fee_charged {
  std::int64_t amount = 0;
};
BOOST_DESCRIBE_STRUCT(fee_charged, (), (amount))
using account_event = std::variant<deposited, withdrawn, fee_charged>;

struct account_state {
  std::int64_t balance = 0;
  std::int64_t fees_paid = 0;
};
BOOST_DESCRIBE_STRUCT(account_state, (), (balance, fees_paid))

// -- commands: what the account is asked ----------------------------------------------------------

struct deposit {
  std::string owner;
  std::int64_t amount = 0;
};
/// Withdraws the amount and a fee of 1 for amounts over 100, atomically.
struct withdraw {
  std::string owner;
  std::int64_t amount = 0;
};
struct get_balance {
  std::string owner;
};
using account_command = std::variant<deposit, withdraw, get_balance>;

/// The reply to every command.
struct receipt {
  bool accepted = false;
  std::int64_t balance = 0;
};

class account final : public tp::persistent_entity<account_command, account_event, account_state> {
 public:
  static inline const auto shard =
      troupe::sharding::shard_key<account_command>::of("account", [](const account_command& c) {
        return std::visit([](const auto& m) { return m.owner; }, c);
      });

 private:
  void on_recovered() override {
    std::printf("  [%s] recovered: balance %lld after %llu events\n", persistence_id().c_str(),
                static_cast<long long>(state().balance),
                static_cast<unsigned long long>(last_sequence_nr()));
  }

  effect_type on_command(const account_state& s, account_command& cmd) override {
    auto accepted = [](const account_state& st) { return receipt{true, st.balance}; };
    return std::visit(
        troupe::overloaded{
            [&](const deposit& d) -> effect_type {
              if (d.amount <= 0) return reply(receipt{false, s.balance});
              return persist(deposited{d.amount}).then_reply(accepted);
            },
            [&](const withdraw& w) -> effect_type {
              const std::int64_t fee = w.amount > 100 ? 1 : 0;
              if (w.amount <= 0 || w.amount + fee > s.balance) {
                return reply(receipt{false, s.balance});  // refused: nothing is written
              }
              if (fee == 0) return persist(withdrawn{w.amount}).then_reply(accepted);
              // Both events or neither: the journal appends them atomically.
              return persist(withdrawn{w.amount}, fee_charged{fee}).then_reply(accepted);
            },
            [&](const get_balance&) -> effect_type {
              return reply(receipt{true, s.balance});
            },
        },
        cmd);
  }

  account_state apply(account_state s, const account_event& e) const override {
    std::visit(troupe::overloaded{
                   [&](const deposited& d) { s.balance += d.amount; },
                   [&](const withdrawn& w) { s.balance -= w.amount; },
                   [&](const fee_charged& f) {
                     s.balance -= f.amount;
                     s.fees_paid += f.amount;
                   },
               },
               e);
    return s;
  }
};

/// Starts an actor system whose accounts live in `file`.
void configure(troupe::actor_system& system, const std::filesystem::path& file) {
  auto& persistence = tp::get(system);
  persistence.codecs()
      .add<deposited>("bank.deposited")
      .add<withdrawn>("bank.withdrawn")
      .add<fee_charged>("bank.fee_charged")
      .add<account_state>("bank.account_state");
  persistence.set_default_plugin(tp::open_sqlite_plugin({.file = file}));
  persistence.set_snapshot_every(5);
}

receipt ask(const troupe::actor_ref<account_command>& bank, account_command cmd) {
  return bank.ask<receipt>(std::move(cmd), 5s, troupe::use_future).get();
}

void show(const char* what, const receipt& r) {
  std::printf("main: %-28s -> %s, balance %lld\n", what, r.accepted ? "ok" : "refused",
              static_cast<long long>(r.balance));
}

}  // namespace

int main(int argc, char** argv) {
  const bool temporary = argc < 2;
  const std::filesystem::path file =
      temporary ? std::filesystem::temp_directory_path() /
                      ("troupe-bank-" +
                       std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) +
                       ".db")
                : std::filesystem::path(argv[1]);
  std::printf("== the bank's journal: %s\n", file.c_str());

  std::printf("== first run\n");
  {
    troupe::actor_system system(troupe::system_config{}.with_name("bank-1"));
    configure(system, file);
    auto bank = troupe::sharding::cluster_sharding::get(system).start<account>();
    show("alice deposits 500", ask(bank, deposit{"alice", 500}));
    show("alice withdraws 120 (+fee 1)", ask(bank, withdraw{"alice", 120}));
    show("bob deposits 40", ask(bank, deposit{"bob", 40}));
    show("bob withdraws 90", ask(bank, withdraw{"bob", 90}));
    for (int i = 0; i < 4; ++i) ask(bank, deposit{"alice", 10});
    show("alice after 4 deposits of 10", ask(bank, get_balance{"alice"}));
    std::printf("== shutting down: the actors stop, then the SQLite file is closed\n");
  }

  std::printf("== second run: a new actor system reopens the file\n");
  {
    troupe::actor_system system(troupe::system_config{}.with_name("bank-2"));
    configure(system, file);
    auto bank = troupe::sharding::cluster_sharding::get(system).start<account>();
    show("alice's balance", ask(bank, get_balance{"alice"}));
    show("bob's balance", ask(bank, get_balance{"bob"}));
    show("bob withdraws 30", ask(bank, withdraw{"bob", 30}));
  }

  if (temporary) {
    std::error_code ignored;
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::filesystem::remove(file.string() + suffix, ignored);
    }
  }
  std::printf("== done\n");
  return 0;
}
