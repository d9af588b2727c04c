#pragma once
// The demo's load: client threads adding items to carts with asks through one node's region,
// and the record of every ask's outcome that the checks read afterwards.
//
// Each cart is driven by exactly one client thread, so the order the thread sends a cart's
// items in is the order the runtime promises to keep (one sender's messages to one entity).
// A thread keeps at most `per_cart` asks in flight per cart, and at most `window` asks in flight
// that were sent less than `slot_hold` ago: an ask that waits longer (its node died, its shard is
// moving) keeps its cart waiting but frees its slot, so the other carts go on meanwhile, while
// the window keeps the queues, and so the latency, short. After a failed ask a cart rests for
// `backoff`, as a client would, rather than failing again at once.

#include <troupe/core/actor_ref.hpp>

#include "cart.hpp"
#include "console.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace cluster_demo {

/// The demo's phases, in order; each ask is tagged with the phase it was sent in.
enum class phase { steady, join, leave, kill, settle };
inline constexpr std::size_t phase_count = 5;

[[nodiscard]] const char* name_of(phase p);

struct load_settings {
  std::size_t carts = 2000;
  int threads = 4;
  /// Asks in flight per client thread, not counting those older than slot_hold.
  std::size_t window = 256;
  std::chrono::milliseconds slot_hold{500};
  /// Asks in flight per cart: more than one, so that order across a move is tested.
  int per_cart = 2;
  std::chrono::milliseconds ask_timeout{2000};
  std::chrono::milliseconds backoff{250};
};

/// Failed asks by reason.
struct failure_tally {
  std::int64_t timed_out = 0;
  std::int64_t node_left = 0;
  std::int64_t other = 0;
  /// Of these, items the cart holds all the same (the ask failed, the event was persisted).
  std::int64_t persisted = 0;
  [[nodiscard]] std::int64_t total() const { return timed_out + node_left + other; }
  failure_tally& operator+=(const failure_tally& o) {
    timed_out += o.timed_out;
    node_left += o.node_left;
    other += o.other;
    persisted += o.persisted;
    return *this;
  }
};

/// What happened to the asks, once the load has stopped.
struct ask_report {
  std::int64_t sent = 0;
  std::int64_t acked = 0;
  /// Failed asks outside the killed node's failover, by the phase they were sent in.
  std::map<phase, failure_tally> failed_graceful;
  /// Failed asks to the killed node's carts that were in flight at the kill.
  failure_tally failed_in_flight_at_kill;
  /// Failed asks to the killed node's carts sent after the kill, before those carts answered
  /// again (lost to the dead node, or refused while its shards had no new home).
  failure_tally failed_after_kill;
  /// A few graceful-phase asks whose event never was persisted: cart, shard, when sent and
  /// failed (seconds since t0, the driver's clock as the console prints it).
  std::vector<std::string> lost_examples;
};

/// What the carts hold, read back after the run, against what was acknowledged.
struct cart_verdict {
  std::int64_t carts_read = 0;
  /// Carts that never answered get_cart.
  std::int64_t unreadable = 0;
  std::int64_t events_read = 0;
  /// Acknowledged items missing from their cart.
  std::int64_t lost = 0;
  /// Acknowledged items persisted after a higher item of the same cart.
  std::int64_t reordered = 0;
  /// Items persisted twice.
  std::int64_t twice = 0;
  std::vector<std::string> examples;
};

class load {
 public:
  load(troupe::actor_ref<cart_command> front, load_settings settings);
  ~load();
  load(const load&) = delete;
  load& operator=(const load&) = delete;

  /// Asks every cart once (get_cart) so that every entity runs and every shard is allocated
  /// before the clock starts; returns how many never answered within `patience`.
  std::size_t activate_all(std::chrono::seconds patience);

  /// Starts the client threads; `t0` is the time the report counts from.
  void start(demo_clock::time_point t0);
  void set_phase(phase p) { phase_.store(p); }
  [[nodiscard]] phase current_phase() const { return phase_.load(); }
  /// Stops sending and waits until every ask has ended.
  void stop();

  [[nodiscard]] std::int64_t sent() const { return sent_.load(); }
  [[nodiscard]] std::int64_t acked() const { return acked_.load(); }
  [[nodiscard]] std::int64_t failed() const { return failed_.load(); }

  /// Before the kill: waits until every ask sent before the kill phase has ended, then reads
  /// back each cart with a failed ask among them, so that what the join and the leave lost is
  /// known before the kill can lose anything. Returns how many carts could not be read.
  std::size_t check_before_kill(std::chrono::seconds patience);

  /// `node` was killed at `at` (taken before the signal went), holding `shards`: from now on
  /// the load waits for those carts to answer again from another node. An ask that fails from
  /// `at` on may have been lost with the node, so it counts as the kill's.
  void killed(const std::string& node, const std::set<std::uint32_t>& shards,
              demo_clock::time_point at);
  /// The killed node's carts (those whose shard it held).
  [[nodiscard]] std::int64_t killed_carts() const { return killed_carts_.load(); }
  /// Those not yet acknowledged by another node since the kill.
  [[nodiscard]] std::int64_t killed_carts_waiting() const { return killed_waiting_.load(); }
  /// Seconds from the kill until the last of them answered again; negative if some never did.
  [[nodiscard]] double killed_carts_back_after() const;

  /// After stop(): reads every cart and checks it against the acknowledged items.
  [[nodiscard]] cart_verdict verify(std::chrono::seconds patience);
  /// After verify(): every ask's outcome, classified.
  [[nodiscard]] ask_report report() const;

  struct client;

 private:
  /// Reads back each cart `where` names (its client and index there) through the front,
  /// calling `answered` with the client's lock held; returns how many never answered.
  std::size_t read_back(
      const std::vector<std::pair<client*, std::size_t>>& where,
      const std::function<void(client&, std::size_t, const cart_contents&)>& answered,
      std::chrono::seconds patience);

  troupe::actor_ref<cart_command> front_;
  load_settings settings_;
  std::vector<std::unique_ptr<client>> clients_;
  std::atomic<phase> phase_{phase::steady};
  std::atomic<std::int64_t> sent_{0};
  std::atomic<std::int64_t> acked_{0};
  std::atomic<std::int64_t> failed_{0};
  std::atomic<std::int64_t> killed_carts_{0};
  std::atomic<std::int64_t> killed_waiting_{0};
  demo_clock::time_point kill_at_{};
  demo_clock::time_point t0_{};
};

}  // namespace cluster_demo
