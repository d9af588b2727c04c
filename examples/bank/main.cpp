// A bank of account actors: a tour of Troupe's core in one small program.
//
//   * `account` handles a std::variant of commands, visited with troupe::overloaded;
//   * `bank` spawns accounts by name, supervises them and watches them die;
//   * main() talks to the actors with asks that return std::futures (troupe::use_future);
//   * an overdraft throws inside a handler: the bank's child_supervision() resumes the account,
//     so its balance survives; any other failure restarts it from its opening balance;
//   * `auditor` has a coroutine handler that co_awaits troupe::sleep_for and an ask;
//   * the program ends with a graceful shutdown: children stop before their parents.

#include <troupe/core/actor_system.hpp>
#include <troupe/core/async_actor.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

using namespace std::chrono_literals;

namespace {

/// Prints one line; actors run on worker threads, so lines must not interleave.
template <class... Args>
void say(const char* format, Args... args) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  std::printf(format, args...);
  std::printf("\n");
  std::fflush(stdout);
}

// -- accounts -----------------------------------------------------------------------------------

struct deposit {
  std::int64_t amount;
};
struct withdraw {
  std::int64_t amount;
};
struct get_balance {};
/// Simulates a bug in the account's code (not a business rule).
struct corrupt_ledger {};

using account_command = std::variant<deposit, withdraw, get_balance, corrupt_ledger>;
using account_ref = troupe::actor_ref<account_command>;

/// A business rule said no: the account's state is still good.
class insufficient_funds : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Replies to every command with the new balance (an std::int64_t).
class account final : public troupe::actor<account_command> {
 public:
  account(std::string owner, std::int64_t opening_balance)
      : owner_(std::move(owner)), balance_(opening_balance) {}

 private:
  void pre_start() override {
    say("  [%s] account opened with %lld", owner_.c_str(), ll(balance_));
  }
  // On a restart the failed instance gets pre_restart, the fresh one post_restart (by default
  // they run post_stop and pre_start).
  void pre_restart(const std::exception_ptr& /*reason*/) override {
    say("  [%s] dropping the failed instance (balance %lld)", owner_.c_str(), ll(balance_));
  }
  void post_restart(const std::exception_ptr& /*reason*/) override {
    say("  [%s] restarted: a fresh instance, balance back to %lld", owner_.c_str(), ll(balance_));
  }
  void post_stop() override { say("  [%s] account closed at %lld", owner_.c_str(), ll(balance_)); }

  void receive(account_command& command) override {
    std::visit(
        troupe::overloaded{
            [&](const deposit& d) {
              balance_ += d.amount;
              context().reply(balance_);
            },
            [&](const withdraw& w) {
              if (w.amount > balance_) {
                // Throwing fails this message; the parent decides what happens next.
                throw insufficient_funds(owner_ + " cannot withdraw " + std::to_string(w.amount));
              }
              balance_ -= w.amount;
              context().reply(balance_);
            },
            [&](const get_balance&) { context().reply(balance_); },
            [&](const corrupt_ledger&) { throw std::logic_error("ledger checksum mismatch"); },
        },
        command);
  }

  static long long ll(std::int64_t v) { return static_cast<long long>(v); }

  std::string owner_;
  std::int64_t balance_;
};

// -- the bank -----------------------------------------------------------------------------------

/// Opens an account (a child actor named after its owner); replies with its ref.
struct open_account {
  std::string owner;
  std::int64_t opening_balance;
};
using bank_command = std::variant<open_account>;

class bank final : public troupe::actor<bank_command> {
 private:
  void receive(bank_command& command) override {
    const auto& open = std::get<open_account>(command);
    account_ref child = context().spawn<account>(open.owner, open.owner, open.opening_balance);
    context().watch(child);  // death watch: on_terminated runs when it stops
    context().reply(child);
  }

  /// Failures of our accounts: business-rule violations leave the state intact, so resume
  /// (skip the message, keep the balance); anything else may have corrupted it, so restart.
  [[nodiscard]] troupe::supervisor_strategy child_supervision() const override {
    troupe::supervisor_strategy strategy;
    strategy.decider = [](const std::exception_ptr& failure) {
      try {
        std::rethrow_exception(failure);
      } catch (const insufficient_funds& e) {
        say("  [bank] %s -> resume (the balance stays)", e.what());
        return troupe::directive::resume;
      } catch (const std::exception& e) {
        say("  [bank] %s -> restart", e.what());
        return troupe::directive::restart;
      }
    };
    return strategy;
  }

  void on_terminated(const troupe::untyped_ref& who) override {
    say("  [bank] death watch: %s has stopped", who.path().c_str());
  }
  void post_stop() override { say("  [bank] closed (after all its accounts)"); }
};

// -- the auditor: a coroutine handler ------------------------------------------------------------

struct audit {
  account_ref account;
};

/// Takes its time (co_await sleep_for), asks the account, replies with a report. The auditor
/// stays busy until the coroutine finishes; other actors keep running meanwhile.
class auditor final : public troupe::async_actor<audit> {
 private:
  boost::asio::awaitable<void> receive(audit request) override {
    say("  [auditor] auditing %s ...", request.account.path().c_str());
    co_await troupe::sleep_for(50ms);
    const auto balance = co_await request.account.ask<std::int64_t>(get_balance{}, 1s);
    context().reply("balance of " + request.account.path() + " is " + std::to_string(balance) +
                    ": in order");
  }
};

}  // namespace

int main() {
  troupe::actor_system system(troupe::system_config{}.with_name("bank-example"));

  say("== open accounts");
  auto the_bank = system.spawn<bank>("bank");
  auto open = [&](std::string owner, std::int64_t balance) {
    return the_bank
        .ask<account_ref>(open_account{std::move(owner), balance}, 1s, troupe::use_future)
        .get();
  };
  const account_ref alice = open("alice", 100);
  const account_ref bob = open("bob", 20);
  say("main: got %s and %s", alice.path().c_str(), bob.path().c_str());

  say("== asks (each returns a std::future)");
  auto ask = [](const account_ref& to, account_command command) {
    return to.ask<std::int64_t>(std::move(command), 1s, troupe::use_future).get();
  };
  say("main: alice deposits 50  -> balance %lld", static_cast<long long>(ask(alice, deposit{50})));
  say("main: bob withdraws 5    -> balance %lld", static_cast<long long>(ask(bob, withdraw{5})));

  say("== an overdraft throws; the bank resumes the account");
  // A handler that throws sends no reply (an ask would time out), so just tell.
  bob.tell(withdraw{1'000});
  say("main: bob's balance is still %lld", static_cast<long long>(ask(bob, get_balance{})));

  say("== a bug throws; the bank restarts the account");
  alice.tell(corrupt_ledger{});
  say("main: alice's balance after the restart: %lld",
      static_cast<long long>(ask(alice, get_balance{})));

  say("== a coroutine handler");
  auto the_auditor = system.spawn<auditor>("auditor");
  const auto report = the_auditor.ask<std::string>(audit{bob}, 2s, troupe::use_future).get();
  say("main: auditor says: %s", report.c_str());

  say("== death watch: close bob's account with a poison pill");
  bob.tell(troupe::poison_pill{});
  // bob stops when it reaches the pill; an ask behind it (or after it) fails at once with
  // errc::recipient_terminated instead of waiting for its timeout.
  try {
    ask(bob, get_balance{});
  } catch (const troupe::error& e) {
    say("main: asking bob now fails: %s", e.what());
  }

  say("== graceful shutdown (children stop before their parents)");
  system.terminate();
  system.await_termination();
  say("main: the actor system has terminated");
  return 0;
}
