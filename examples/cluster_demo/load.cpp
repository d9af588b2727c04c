#include "load.hpp"

#include <troupe/cluster/errc.hpp>
#include <troupe/core/errc.hpp>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>
#include <utility>

namespace cluster_demo {

const char* name_of(phase p) {
  switch (p) {
    case phase::steady:
      return "steady";
    case phase::join:
      return "join";
    case phase::leave:
      return "leave";
    case phase::kill:
      return "kill";
    case phase::settle:
      return "steady again";
  }
  return "?";
}

namespace {

enum class outcome : std::uint8_t { pending, acked, failed };
enum class reason : std::uint8_t { timed_out, node_left, other };

reason reason_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::system_error& err) {
    if (err.code() == make_error_code(troupe::errc::ask_timeout)) return reason::timed_out;
    if (err.code() == make_error_code(troupe::cluster::errc::node_left)) return reason::node_left;
  } catch (...) {
  }
  return reason::other;
}

void count(failure_tally& t, reason r) {
  switch (r) {
    case reason::timed_out:
      ++t.timed_out;
      break;
    case reason::node_left:
      ++t.node_left;
      break;
    case reason::other:
      ++t.other;
      break;
  }
}

/// Asks sent in these phases have ended and been read back before the kill.
bool before_kill(phase p) { return p == phase::steady || p == phase::join || p == phase::leave; }

std::string cart_id(std::size_t i) {
  char id[32];
  std::snprintf(id, sizeof id, "cart-%06zu", i);
  return id;
}

/// Asks get_cart of the carts `ids[i]` for every i in `todo`, `window` at a time, and again
/// those that did not answer until `patience` runs out; `answered(i, contents)` takes each
/// answer. Returns the indices that never answered.
template <class Answered>
std::vector<std::size_t> read_carts(const troupe::actor_ref<cart_command>& front,
                                    const std::vector<std::string>& ids,
                                    std::vector<std::size_t> todo, Answered answered,
                                    std::chrono::seconds patience) {
  constexpr std::size_t window = 256;
  const auto give_up = demo_clock::now() + patience;
  while (!todo.empty() && demo_clock::now() < give_up) {
    std::vector<std::size_t> again;
    for (std::size_t first = 0; first < todo.size(); first += window) {
      std::vector<std::pair<std::size_t, std::future<cart_contents>>> batch;
      for (std::size_t k = first; k < std::min(todo.size(), first + window); ++k) {
        const std::size_t i = todo[k];
        batch.emplace_back(i, front.ask<cart_contents>(get_cart{ids[i]}, std::chrono::seconds(2),
                                                       troupe::use_future));
      }
      for (auto& [i, reply] : batch) {
        try {
          answered(i, reply.get());
        } catch (const std::exception&) {
          again.push_back(i);
        }
      }
    }
    todo = std::move(again);
  }
  return todo;
}

}  // namespace

// -- one client thread and its carts --------------------------------------------------------------

struct load::client {
  struct cart_record {
    std::string id;
    std::int64_t next_seq = 1;
    int in_flight = 0;
    /// Per item_seq - 1.
    std::vector<outcome> outcomes;
    /// Per item_seq - 1: the node that acknowledged it, and when (for the report of a reorder).
    std::vector<std::pair<std::string, demo_clock::time_point>> acked_by;
    /// Per item_seq - 1: the cart holds the item (filled by verify()).
    std::vector<bool> persisted;
    /// After a failure: no ask to this cart before then.
    demo_clock::time_point rest_until{};
    std::optional<std::uint32_t> shard;
    /// Its shard was on the killed node at the kill.
    bool on_killed = false;
    bool back = false;
    demo_clock::time_point back_at{};
  };
  struct failure {
    std::size_t cart = 0;
    std::int64_t seq = 0;
    phase sent_in = phase::steady;
    demo_clock::time_point sent_at{};
    demo_clock::time_point failed_at{};
    reason why = reason::other;
    /// Read back before the kill (check_before_kill): whether the cart held the item then.
    bool persisted_at_check = false;
  };

  explicit client(load& l) : owner(l) {}

  void run() {
    std::unique_lock lock(mutex);
    std::size_t cursor = 0;
    while (!stopping) {
      const auto now = demo_clock::now();
      age(now);
      if (young.size() >= owner.settings_.window) {
        // Woken by an answer, or when the oldest ask stops holding its slot.
        wake.wait_for(lock, std::chrono::milliseconds(10));
        continue;
      }
      std::size_t pick = carts.size();
      for (std::size_t k = 0; k < carts.size(); ++k) {
        const std::size_t i = (cursor + k) % carts.size();
        if (carts[i].in_flight < owner.settings_.per_cart && carts[i].rest_until <= now) {
          pick = i;
          cursor = i + 1;
          break;
        }
      }
      if (pick == carts.size()) {
        // Woken by an answer, or when a resting cart may go again.
        wake.wait_for(lock, std::chrono::milliseconds(10));
        continue;
      }
      // Send the cart's next items back to back, so they travel together and their order
      // across a move is put to the test. An ask can fail inside send() (a node known to be
      // gone): then the cart rests.
      while (carts[pick].in_flight < owner.settings_.per_cart &&
             young.size() < owner.settings_.window && carts[pick].rest_until <= now) {
        send(pick, lock);
      }
    }
  }

  void send(std::size_t i, std::unique_lock<std::mutex>& lock) {
    auto& c = carts[i];
    const std::int64_t seq = c.next_seq++;
    c.outcomes.push_back(outcome::pending);
    c.acked_by.emplace_back();
    ++c.in_flight;
    ++in_flight;
    const phase sent_in = owner.phase_.load();
    ++in_flight_in[static_cast<std::size_t>(sent_in)];
    const auto sent_at = demo_clock::now();
    const std::uint64_t ask = next_ask++;
    young.insert(ask);
    by_age.emplace_back(sent_at, ask);
    add_item cmd{c.id, seq, "sku-" + std::to_string(10000 + (seq * 7919 + i * 104729) % 90000),
                 static_cast<std::int32_t>(1 + seq % 3)};
    owner.sent_.fetch_add(1);
    lock.unlock();
    owner.front_.ask<item_acked>(
        std::move(cmd), owner.settings_.ask_timeout,
        [this, ask, i, seq, sent_in, sent_at](std::exception_ptr e, item_acked r) {
          complete(ask, i, seq, sent_in, sent_at, e, r);
        });
    lock.lock();
  }

  // On whatever thread ended the ask: quick, never blocks for long.
  void complete(std::uint64_t ask, std::size_t i, std::int64_t seq, phase sent_in,
                demo_clock::time_point sent_at, const std::exception_ptr& e, const item_acked& r) {
    const auto now = demo_clock::now();
    const reason why = e ? reason_of(e) : reason::other;
    {
      std::lock_guard lock(mutex);
      auto& c = carts[i];
      --c.in_flight;
      --in_flight;
      --in_flight_in[static_cast<std::size_t>(sent_in)];
      young.erase(ask);
      if (e) {
        c.outcomes[static_cast<std::size_t>(seq - 1)] = outcome::failed;
        c.rest_until = now + owner.settings_.backoff;
        failures.push_back({i, seq, sent_in, sent_at, now, why});
      } else {
        c.outcomes[static_cast<std::size_t>(seq - 1)] = outcome::acked;
        c.acked_by[static_cast<std::size_t>(seq - 1)] = {r.node, now};
        c.shard = r.shard;
        if (kill_at && c.on_killed && !c.back && r.node != killed_node) {
          c.back = true;
          c.back_at = now;
          owner.killed_waiting_.fetch_sub(1);
        }
      }
      (e ? owner.failed_ : owner.acked_).fetch_add(1);
      // Under the lock: once it is released, stop() may return and this client go.
      wake.notify_all();
    }
  }

  /// Asks older than slot_hold stop holding a window slot.
  void age(demo_clock::time_point now) {
    while (!by_age.empty() && now - by_age.front().first >= owner.settings_.slot_hold) {
      young.erase(by_age.front().second);
      by_age.pop_front();
    }
  }

  load& owner;
  std::mutex mutex;
  std::condition_variable wake;
  std::vector<cart_record> carts;
  std::vector<failure> failures;
  std::size_t in_flight = 0;
  /// Asks in flight by the phase they were sent in.
  std::array<std::size_t, phase_count> in_flight_in{};
  /// The asks in flight that hold a window slot, and every ask sent within slot_hold, oldest
  /// first.
  std::unordered_set<std::uint64_t> young;
  std::deque<std::pair<demo_clock::time_point, std::uint64_t>> by_age;
  std::uint64_t next_ask = 0;
  bool stopping = false;
  std::optional<demo_clock::time_point> kill_at;
  std::string killed_node;
  std::thread thread;
};

// -- the load -------------------------------------------------------------------------------------

load::load(troupe::actor_ref<cart_command> front, load_settings settings)
    : front_(std::move(front)), settings_(settings) {
  for (int t = 0; t < settings_.threads; ++t) clients_.push_back(std::make_unique<client>(*this));
  for (std::size_t i = 0; i < settings_.carts; ++i) {
    client::cart_record r;
    r.id = cart_id(i);
    clients_[i % clients_.size()]->carts.push_back(std::move(r));
  }
}

load::~load() { stop(); }

std::size_t load::activate_all(std::chrono::seconds patience) {
  std::vector<std::pair<client*, std::size_t>> where;
  for (auto& c : clients_) {
    for (std::size_t k = 0; k < c->carts.size(); ++k) where.emplace_back(c.get(), k);
  }
  return read_back(
      where,
      [](client& c, std::size_t k, const cart_contents& contents) {
        c.carts[k].shard = contents.shard;
      },
      patience);
}

std::size_t load::read_back(
    const std::vector<std::pair<client*, std::size_t>>& where,
    const std::function<void(client&, std::size_t, const cart_contents&)>& answered,
    std::chrono::seconds patience) {
  std::vector<std::string> ids;
  for (const auto& [c, k] : where) {
    std::lock_guard lock(c->mutex);
    ids.push_back(c->carts[k].id);
  }
  std::vector<std::size_t> all(ids.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  return read_carts(
             front_, ids, std::move(all),
             [&](std::size_t i, const cart_contents& contents) {
               auto [c, k] = where[i];
               std::lock_guard lock(c->mutex);
               answered(*c, k, contents);
             },
             patience)
      .size();
}

void load::start(demo_clock::time_point t0) {
  t0_ = t0;
  for (auto& c : clients_) c->thread = std::thread([c = c.get()] { c->run(); });
}

void load::stop() {
  for (auto& c : clients_) {
    {
      std::lock_guard lock(c->mutex);
      c->stopping = true;
    }
    c->wake.notify_all();
    if (c->thread.joinable()) c->thread.join();
  }
  // Every ask ends by its timeout at the latest; the callbacks need the clients until then.
  for (auto& c : clients_) {
    std::unique_lock lock(c->mutex);
    c->wake.wait(lock, [&] { return c->in_flight == 0; });
  }
}

std::size_t load::check_before_kill(std::chrono::seconds patience) {
  const auto give_up = demo_clock::now() + settings_.ask_timeout + patience;
  for (auto& c : clients_) {
    std::unique_lock lock(c->mutex);
    // Every ask ends by its timeout at the latest, and its callback wakes this wait.
    c->wake.wait_until(lock, give_up, [&] {
      for (std::size_t p = 0; p < phase_count; ++p) {
        if (before_kill(static_cast<phase>(p)) && c->in_flight_in[p] != 0) return false;
      }
      return true;
    });
  }
  // The carts with a failed ask sent before the kill phase. A get_cart goes behind the adds
  // sent before it on the same path, so its answer shows whether each of them was delivered.
  std::vector<std::pair<client*, std::size_t>> where;
  for (auto& c : clients_) {
    std::lock_guard lock(c->mutex);
    std::set<std::size_t> carts;
    for (const auto& f : c->failures) {
      if (before_kill(f.sent_in)) carts.insert(f.cart);
    }
    for (const std::size_t k : carts) where.emplace_back(c.get(), k);
  }
  return read_back(
      where,
      [](client& c, std::size_t k, const cart_contents& contents) {
        const std::set<std::int64_t> held(contents.item_seqs.begin(), contents.item_seqs.end());
        for (auto& f : c.failures) {
          if (f.cart == k && before_kill(f.sent_in)) f.persisted_at_check = held.count(f.seq) > 0;
        }
      },
      patience);
}

void load::killed(const std::string& node, const std::set<std::uint32_t>& shards,
                  demo_clock::time_point at) {
  kill_at_ = at;
  for (auto& c : clients_) {
    std::lock_guard lock(c->mutex);
    c->kill_at = kill_at_;
    c->killed_node = node;
    for (auto& r : c->carts) {
      r.on_killed = r.shard && shards.count(*r.shard) > 0;
      if (r.on_killed) {
        killed_carts_.fetch_add(1);
        killed_waiting_.fetch_add(1);
      }
    }
  }
}

double load::killed_carts_back_after() const {
  double last = 0;
  for (const auto& c : clients_) {
    std::lock_guard lock(c->mutex);
    for (const auto& r : c->carts) {
      if (!r.on_killed) continue;
      if (!r.back) return -1;
      last = std::max(last, seconds(kill_at_, r.back_at));
    }
  }
  return last;
}

ask_report load::report() const {
  ask_report out;
  out.sent = sent_.load();
  out.acked = acked_.load();
  for (const auto& c : clients_) {
    std::lock_guard lock(c->mutex);
    for (const auto& f : c->failures) {
      const auto& r = c->carts[f.cart];
      // Lost to the kill: the cart's shard was on the killed node, and the ask was sent in the
      // kill phase (every ask sent before it had ended and was read back before the kill).
      const bool to_killed = c->kill_at && r.on_killed && f.sent_in == phase::kill;
      failure_tally& t = !to_killed                ? out.failed_graceful[f.sent_in]
                         : f.sent_at < *c->kill_at ? out.failed_in_flight_at_kill
                                                   : out.failed_after_kill;
      count(t, f.why);
      // Asks of the phases before the kill count as delivered only if the cart held the item
      // when it was read back before the kill: whatever c held then was lost with it.
      const bool persisted = before_kill(f.sent_in)
                                 ? f.persisted_at_check
                                 : r.persisted.size() >= static_cast<std::size_t>(f.seq) &&
                                       r.persisted[static_cast<std::size_t>(f.seq - 1)];
      if (persisted) {
        ++t.persisted;
      } else if (!to_killed && out.lost_examples.size() < 5) {
        char text[160];
        std::snprintf(text, sizeof text,
                      "%s (shard %s) item %lld: sent in %s at +%.3f s, failed at +%.3f s",
                      r.id.c_str(), r.shard ? std::to_string(*r.shard).c_str() : "?",
                      static_cast<long long>(f.seq), name_of(f.sent_in), seconds(t0_, f.sent_at),
                      seconds(t0_, f.failed_at));
        out.lost_examples.emplace_back(text);
      }
    }
  }
  return out;
}

cart_verdict load::verify(std::chrono::seconds patience) {
  std::vector<std::string> ids;
  std::vector<client::cart_record*> records;
  for (auto& c : clients_) {
    for (auto& r : c->carts) {
      ids.push_back(r.id);
      records.push_back(&r);
    }
  }
  cart_verdict v;
  auto note = [&](std::string what) {
    if (v.examples.size() < 3) v.examples.push_back(std::move(what));
  };
  std::vector<std::size_t> all(ids.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  const auto unread = read_carts(
      front_, ids, std::move(all),
      [&](std::size_t i, const cart_contents& contents) {
        auto& r = *records[i];
        ++v.carts_read;
        v.events_read += static_cast<std::int64_t>(contents.item_seqs.size());
        std::vector<bool> seen(r.outcomes.size(), false);
        std::int64_t highest = 0;
        for (const std::int64_t seq : contents.item_seqs) {
          if (seq < 1 || seq > static_cast<std::int64_t>(r.outcomes.size()) ||
              seen[static_cast<std::size_t>(seq - 1)]) {
            ++v.twice;
            note(r.id + ": item " + std::to_string(seq) + " persisted twice or never sent");
            continue;
          }
          seen[static_cast<std::size_t>(seq - 1)] = true;
          if (seq < highest && r.outcomes[static_cast<std::size_t>(seq - 1)] == outcome::acked) {
            ++v.reordered;
            const auto& earlier = r.acked_by[static_cast<std::size_t>(seq - 1)];
            const auto& later = r.acked_by[static_cast<std::size_t>(highest - 1)];
            const auto gap = std::chrono::duration_cast<std::chrono::milliseconds>(earlier.second -
                                                                                   later.second);
            note(r.id + ": item " + std::to_string(seq) + " persisted after item " +
                 std::to_string(highest) + " (acknowledged by " + earlier.first + ", " +
                 std::to_string(gap.count()) + " ms after item " + std::to_string(highest) +
                 " by " + later.first + ")");
          }
          highest = std::max(highest, seq);
        }
        r.persisted = seen;
        for (std::size_t k = 0; k < r.outcomes.size(); ++k) {
          if (r.outcomes[k] == outcome::acked && !seen[k]) {
            ++v.lost;
            note(r.id + ": item " + std::to_string(k + 1) + " was acknowledged and is gone");
          }
        }
      },
      patience);
  v.unreadable = static_cast<std::int64_t>(unread.size());
  for (const std::size_t i : unread) note(ids[i] + " never answered get_cart");
  return v;
}

}  // namespace cluster_demo
