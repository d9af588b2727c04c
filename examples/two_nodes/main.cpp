// Two nodes talking over TCP on 127.0.0.1, in one process for the sake of the example (in
// production each node is its own process, usually on its own machine):
//
//   * node "vault" hosts an account actor and exposes it by its path;
//   * node "teller" gets a ref to it with ref_to, deposits with tell, reads the balance with an
//     ask, and sends its own actor's ref inside a message so the account can report to it;
//   * the teller watches the remote account; when the vault stops it, the teller's watcher
//     hears `terminated` across the network.
//
// Every type that crosses nodes is registered with a manifest; reflected structs, variants and
// actor refs need no serialization code.

#include <troupe/cluster/remote_node.hpp>
#include <troupe/cluster/tcp_transport.hpp>
#include <troupe/core/actor_system.hpp>

#include <boost/describe/class.hpp>

#include <chrono>
#include <cstdio>
#include <future>
#include <string>
#include <variant>

using namespace std::chrono_literals;
namespace tc = troupe::cluster;

namespace {

struct report {
  std::string text;
};
BOOST_DESCRIBE_STRUCT(report, (), (text))

struct deposit {
  long amount = 0;
};
BOOST_DESCRIBE_STRUCT(deposit, (), (amount))

struct get_balance {};
BOOST_DESCRIBE_STRUCT(get_balance, (), ())

struct subscribe {
  troupe::actor_ref<report> to;
};
BOOST_DESCRIBE_STRUCT(subscribe, (), (to))

using account_command = std::variant<deposit, get_balance, subscribe>;

class account final : public troupe::actor<account_command> {
  long balance_ = 0;
  troupe::actor_ref<report> subscriber_;

  void receive(account_command& cmd) override {
    std::visit(troupe::overloaded{
                   [&](deposit& d) {
                     balance_ += d.amount;
                     if (subscriber_)
                       subscriber_.tell(report{"deposit of " + std::to_string(d.amount)});
                   },
                   [&](get_balance&) { context().reply(balance_); },
                   [&](subscribe& s) { subscriber_ = s.to; },
               },
               cmd);
  }
};

/// Prints what it hears, and watches the account.
class teller_log final : public troupe::actor<report> {
 public:
  explicit teller_log(troupe::untyped_ref watched) : watched_(std::move(watched)) {}

 private:
  void pre_start() override { context().watch(watched_); }
  void receive(report& r) override { std::printf("teller heard: %s\n", r.text.c_str()); }
  void on_terminated(const troupe::untyped_ref& who) override {
    std::printf("teller heard: %s has stopped\n", who.path().c_str());
    done_.set_value();
  }
  troupe::untyped_ref watched_;

 public:
  static inline std::promise<void> done_;
};

tc::remote_options options(const std::string& cluster) {
  auto registry = std::make_shared<tc::message_registry>();
  registry->add<account_command>("example.account_command")
      .add<long>("example.balance")
      .add<report>("example.report");
  return tc::remote_options{}
      .with_cluster_name(cluster)
      .with_bind({"127.0.0.1", 0})
      .with_registry(registry)
      .with_transport([](boost::asio::any_io_executor ex) {
        return std::make_shared<tc::tcp_transport>(ex, tc::tcp_options{});
      });
}

}  // namespace

int main() {
  troupe::actor_system vault_system(troupe::system_config{}.with_name("vault").with_workers(1));
  tc::remote_node vault(vault_system, options("bank"));
  auto acct = vault_system.spawn<account>("account-7");
  vault.expose(acct);
  std::printf("vault node listens at %s\n", to_string(vault.self()).c_str());

  troupe::actor_system teller_system(troupe::system_config{}.with_name("teller").with_workers(1));
  tc::remote_node teller(teller_system, options("bank"));
  auto remote_account = teller.ref_to<account_command>(vault.self().address, "/user/account-7");
  std::printf("teller has a ref to %s\n", remote_account.path().c_str());

  auto log = teller_system.spawn<teller_log>("log", troupe::untyped_ref(remote_account));
  remote_account.tell(subscribe{log});  // a ref inside a message: reports come back to node 2
  remote_account.tell(deposit{100});
  remote_account.tell(deposit{50});
  auto balance = remote_account.ask<long>(get_balance{}, 2s, troupe::use_future);
  std::printf("balance read across nodes: %ld\n", balance.get());

  vault_system.stop(acct);  // the teller's watch fires across the network
  if (teller_log::done_.get_future().wait_for(5s) != std::future_status::ready) {
    std::printf("no terminated within 5 s\n");
    return 1;
  }
  teller.shutdown();
  vault.shutdown();
  return 0;
}
