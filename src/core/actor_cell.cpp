#include <troupe/core/actor.hpp>
#include <troupe/core/detail/actor_cell.hpp>
#include <troupe/core/detail/system_messages.hpp>
#include <troupe/core/node_standing.hpp>

#include "core/cell_extras.hpp"
#include "core/cell_messages.hpp"
#include "core/system_impl.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <string_view>

namespace troupe::detail {

namespace {

thread_local actor_cell* tls_current = nullptr;       // NOLINT
thread_local actor_cell* tls_constructing = nullptr;  // NOLINT
// Work the running turn posted to itself (coroutine resumptions), run before the turn ends.
thread_local system_message* tls_local_head = nullptr;  // NOLINT
thread_local system_message* tls_local_tail = nullptr;  // NOLINT
// The envelopes of a batch, kept between batches so that a batch allocates no list of its own.
// A batch takes it out while it runs (turns can nest).
thread_local std::vector<envelope_base*> tls_batch;  // NOLINT
// A list grown past this by one huge batch is not kept.
constexpr std::size_t kept_batch_capacity = 1024;
// Fresh wake-ups that keep their place in line after a turn that ended with a backlog: enough
// for a hot key whose feeding shard lags for a few of its batches, few enough that an actor
// that stopped being busy soon queues at the back like everyone else.
constexpr std::uint8_t backlog_wakeup_credit = 16;

/// Sets the thread's current cell for a scope (turns can nest: spawn runs a child's start).
class current_scope {
 public:
  explicit current_scope(actor_cell* c) noexcept
      : previous_(tls_current), head_(tls_local_head), tail_(tls_local_tail) {
    tls_current = c;
    tls_local_head = tls_local_tail = nullptr;
  }
  ~current_scope() {
    tls_current = previous_;
    tls_local_head = head_;
    tls_local_tail = tail_;
  }
  current_scope(const current_scope&) = delete;
  current_scope& operator=(const current_scope&) = delete;

 private:
  actor_cell* previous_;
  system_message* head_;
  system_message* tail_;
};

// One table lookup per character: names are checked on every spawn (a million entities...).
constexpr std::array<bool, 256> valid_name_chars = [] {
  std::array<bool, 256> table{};
  for (int c = 'a'; c <= 'z'; ++c) table[c] = true;
  for (int c = 'A'; c <= 'Z'; ++c) table[c] = true;
  for (int c = '0'; c <= '9'; ++c) table[c] = true;
  for (const char c : std::string_view("_-.@:+~")) table[static_cast<unsigned char>(c)] = true;
  return table;
}();

bool valid_name_char(char c) { return valid_name_chars[static_cast<unsigned char>(c)]; }

}  // namespace

std::string describe_exception(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return type_name(typeid(ex)) + ": " + ex.what();
  } catch (...) {
    return "unknown exception";
  }
}

void directive_message::apply(actor_cell& cell) { cell_access::directive(cell, *this); }
void restart_now_message::apply(actor_cell& cell) { cell_access::restart_now(cell, error); }

void terminated_message::apply(actor_cell& cell) { cell.handle_terminated(who); }
void watch_message::apply(actor_cell& cell) { cell.handle_watch(watcher); }
void watch_message::on_undelivered(actor_target& target) {
  watcher->send_system(new terminated_message(intrusive_ptr<actor_target>(&target)));
}
void unwatch_message::apply(actor_cell& cell) { cell.handle_unwatch(watcher); }
void stop_message::apply(actor_cell& cell) { cell.handle_stop(); }

actor_cell* current_cell() noexcept { return tls_current; }
actor_cell* constructing_cell() noexcept { return tls_constructing; }

// -- construction -------------------------------------------------------------------------------

actor_cell::actor_cell(system_impl& system, intrusive_ptr<actor_cell> parent, std::string&& label,
                       const mailbox_config& mailbox, label_kind kind)
    : label_kind_(kind), system_(system), parent_(std::move(parent)), label_(std::move(label)) {
  // A sharded entity's name is unique by construction (its shard's index of ids says so).
  if (kind == label_kind::entity_id) unindexed_name_ = true;
  if (mailbox.capacity > 0) {
    ext_ = std::make_unique<cell_extras>();
    ext_->bounded = std::make_unique<bounded_mailbox>(mailbox.capacity, mailbox.overflow);
    bounded_ = true;
  }
}

actor_cell::~actor_cell() {
  assert(actor_ == nullptr);
  while (mpsc_node* n = mailbox_.pop()) delete static_cast<envelope_base*>(n);
  system_message* m = system_inbox_.exchange(nullptr);
  while (m != nullptr) delete std::exchange(m, m->next);
  delete async_message_;
  if (ext_) {
    for (auto* e : ext_->stash) delete e;
    for (auto* e : ext_->unstashed) delete e;
  }
}

void actor_cell::set_child_entity_home(const entity_home* home) {
  ext().child_home = home;
  ext_->child_entity_name = home != nullptr ? home->append_entity_name : nullptr;
}

const entity_home* actor_cell::child_entity_home() const noexcept {
  return ext_ ? ext_->child_home : nullptr;
}

actor_cell* actor_cell::first_child() const noexcept { return ext_ ? ext_->first_child : nullptr; }

bounded_mailbox* actor_cell::bounded() const noexcept {
  return bounded_ ? ext_->bounded.get() : nullptr;
}

cell_extras& actor_cell::ext() {
  if (!ext_) {
    // Created under the children lock: children read our name index from their threads.
    auto created = std::make_unique<cell_extras>();
    std::lock_guard lock(system_.children_lock(this));
    ext_ = std::move(created);
  }
  return *ext_;
}

std::string actor_cell::name() const {
  if (label_kind_ == label_kind::name) return label_;
  std::string out;
  append_name(out);
  return out;
}

void actor_cell::append_name(std::string& out) const {
  if (label_kind_ == label_kind::name) {
    out += label_;
    return;
  }
  // Through the parent cell (kept alive by parent_), not home(): the home lives in the shard's
  // instance, which may be gone when a stopped entity's path is asked for.
  const cell_extras* up = parent_ ? parent_->ext_.get() : nullptr;
  if (up != nullptr && up->child_entity_name != nullptr) {
    up->child_entity_name(out, label_);
  } else {
    out += label_;  // no scheme given (not spawned by sharding): the id itself
  }
}

bool actor_cell::has_name(std::string_view name) const {
  if (label_kind_ == label_kind::name) return label_ == name;
  // An entity's name is at least as long as its id: most mismatches need no name built.
  return name.size() >= label_.size() && this->name() == name;
}

std::string actor_cell::path() const {
  std::string p;
  if (parent_) p = parent_->path();
  p += '/';
  append_name(p);
  return p;
}

system_impl* actor_cell::owner() const noexcept { return &system_; }

void actor_cell::start() {
  if (label_kind_ == label_kind::entity_id) {
    // The name is built from the id by the sharding layer's scheme: valid by construction.
  } else if (label_.empty()) {
    label_ = system_.anonymous_name();
  } else {
    if (label_[0] == '$' || label_ == "." || label_ == ".." ||
        !std::all_of(label_.begin(), label_.end(), valid_name_char)) {
      throw error(errc::invalid_actor_name, "invalid actor name '" + label_ +
                                                "': use [A-Za-z0-9_-.@:+~], not starting with '$'");
    }
  }
  if (parent_) {
    std::lock_guard lock(system_.children_lock(parent_.get()));
    if (parent_->children_closed_) {
      throw error(errc::recipient_terminated,
                  "cannot spawn '" + name() + "': parent " + parent_->path() + " is stopping");
    }
    // Generated names ('$...') are unique by construction, and so are names the spawner vouches
    // for; only other chosen names need the index. (We hold the parent's children lock, so its
    // extras, which hold its children, are created here, not via ext().)
    const bool indexed = !unindexed_name_ && label_[0] != '$';
    if (!parent_->ext_) parent_->ext_ = std::make_unique<cell_extras>();
    if (unindexed_name_) parent_->ext_->has_unindexed_children = true;
    if (indexed && !parent_->ext_->named_children.emplace(label_, this).second) {
      throw error(errc::actor_name_taken,
                  "actor name '" + label_ + "' is taken under " + parent_->path());
    }
    next_sibling_ = parent_->ext_->first_child;
    if (next_sibling_ != nullptr) next_sibling_->prev_sibling_ = this;
    parent_->ext_->first_child = this;
  }
  add_ref();  // the "alive" reference, released when the actor has terminated
  state_.store(scheduled, std::memory_order_relaxed);
  {
    current_scope scope(this);
    create_instance(nullptr);
    run_local_posts();
  }
  release_turn();
}

void actor_cell::create_instance(std::exception_ptr restart_reason) noexcept {
  actor_cell* previous = tls_constructing;
  tls_constructing = this;
  try {
    actor_ = construct();
  } catch (...) {
    tls_constructing = previous;
    actor_ = nullptr;
    fail(std::current_exception(), "in its constructor");
    return;
  }
  tls_constructing = previous;
  try {
    if (restart_reason) {
      actor_->post_restart(restart_reason);
    } else {
      actor_->pre_start();
    }
  } catch (...) {
    fail(std::current_exception(), restart_reason ? "in post_restart" : "in pre_start");
    return;
  }
  phase_ = phase::running;
  update_suspended();
}

// -- delivery (any thread) ----------------------------------------------------------------------

void actor_cell::push_user(envelope_base* e) noexcept {
  mailbox_.push(e);
  std::uint32_t s = state_.load(std::memory_order_seq_cst);
  while ((s & (scheduled | suspended)) == 0) {
    if (state_.compare_exchange_weak(s, s | scheduled, std::memory_order_seq_cst)) {
      // An actor that was backlogged a moment ago keeps its place in line (see
      // backlog_wakeups_); one wake-up of its credit is spent.
      const std::uint8_t credit = backlog_wakeups_.load(std::memory_order_relaxed);
      if (credit > 0) backlog_wakeups_.store(credit - 1, std::memory_order_relaxed);
      schedule(credit > 0);
      return;
    }
  }
}

void actor_cell::enqueue(envelope_base* e) noexcept {
  if (is_terminated()) {
    // Straight to dead letters on the sender's thread: a sender that never pauses must not keep
    // the drain of a dead mailbox (and with it termination and shutdown) going forever.
    if (e->kind == envelope_kind::user) {
      dead_letter(e, make_error_code(errc::recipient_terminated), "recipient terminated");
    } else {
      delete e;  // the runtime's own signals are no one's lost mail
    }
    return;
  }
  // The runtime's own signals (timers, receive timeout, poison pill) bypass the bound: a
  // rejected timer message would silently end a periodic timer.
  if (bounded() != nullptr && e->kind == envelope_kind::user) {
    (void)enqueue_bounded(e);
    return;
  }
  push_user(e);
}

std::error_code actor_cell::try_enqueue(envelope_base* e) noexcept {
  if (is_terminated()) {
    dead_letter(e, make_error_code(errc::recipient_terminated), "recipient terminated");
    return make_error_code(errc::recipient_terminated);
  }
  if (bounded() != nullptr) {
    const std::error_code ec = enqueue_bounded(e);
    return bounded()->policy == overflow_policy::drop ? std::error_code() : ec;
  }
  push_user(e);
  return {};
}

std::error_code actor_cell::enqueue_bounded(envelope_base* e) noexcept {
  if (bounded()->size.fetch_add(1, std::memory_order_seq_cst) >= bounded()->capacity) {
    bounded()->size.fetch_sub(1, std::memory_order_seq_cst);
    dead_letter(e, make_error_code(errc::mailbox_full), "mailbox full");
    return make_error_code(errc::mailbox_full);
  }
  push_user(e);
  return {};
}

void actor_cell::enqueue_or_wait(envelope_base* e,
                                 std::function<void(std::error_code)> done) noexcept {
  if (bounded() == nullptr || bounded()->policy != overflow_policy::suspend || is_terminated()) {
    done(try_enqueue(e));
    return;
  }
  {
    std::unique_lock lock(bounded()->mutex);
    if (bounded()->size.fetch_add(1, std::memory_order_seq_cst) < bounded()->capacity) {
      lock.unlock();
      push_user(e);
      done({});
      return;
    }
    bounded()->size.fetch_sub(1, std::memory_order_seq_cst);
    bounded()->waiters.emplace_back(e, std::move(done));
    bounded()->waiting.fetch_add(1, std::memory_order_seq_cst);
  }
  admit_waiters();  // the consumer may have made room between our check and our registration
}

void actor_cell::admit_waiters() noexcept {
  for (;;) {
    std::pair<envelope_base*, std::function<void(std::error_code)>> w;
    {
      std::lock_guard lock(bounded()->mutex);
      if (bounded()->waiters.empty()) return;
      if (bounded()->size.fetch_add(1, std::memory_order_seq_cst) >= bounded()->capacity) {
        bounded()->size.fetch_sub(1, std::memory_order_seq_cst);
        return;
      }
      w = std::move(bounded()->waiters.front());
      bounded()->waiters.pop_front();
      bounded()->waiting.fetch_sub(1, std::memory_order_seq_cst);
    }
    push_user(w.first);
    w.second({});
  }
}

void actor_cell::enqueue_any(envelope_base* e) noexcept {
  envelope_base* converted = convert(e);
  if (converted == nullptr) {
    dead_letter(e, make_error_code(errc::bad_reply_type),
                "message of type " + type_name(e->type()) + " not accepted");
    return;
  }
  enqueue(converted);
}

void actor_cell::send_system(system_message* m) noexcept {
  system_message* head = system_inbox_.load(std::memory_order_relaxed);
  do {
    m->next = head;
  } while (!system_inbox_.compare_exchange_weak(head, m, std::memory_order_seq_cst));
  const std::uint32_t old = state_.fetch_or(scheduled, std::memory_order_seq_cst);
  if ((old & scheduled) == 0) schedule();
}

void actor_cell::post(system_message* m) noexcept {
  if (tls_current == this) {
    m->next = nullptr;
    if (tls_local_tail != nullptr) {
      tls_local_tail->next = m;
    } else {
      tls_local_head = m;
    }
    tls_local_tail = m;
    return;
  }
  send_system(m);
}

void actor_cell::schedule(bool mid_way) noexcept { system_.sched().schedule(this, mid_way); }

void actor_cell::dead_letter(envelope_base* e, std::error_code code, std::string reason) noexcept {
  system_.dead_letters().publish(e, path(), code, std::move(reason));
}

// -- the turn (worker thread) -------------------------------------------------------------------

bool actor_cell::user_messages_allowed() const noexcept {
  return phase_ == phase::running && !async_in_flight_;
}

void actor_cell::update_suspended() noexcept {
  const bool want = phase_ != phase::dead && !user_messages_allowed();
  const bool has = (state_.load(std::memory_order_relaxed) & suspended) != 0;
  if (want && !has) state_.fetch_or(suspended, std::memory_order_seq_cst);
  if (!want && has) state_.fetch_and(~suspended, std::memory_order_seq_cst);
}

void actor_cell::run_turn() noexcept {
  current_scope scope(this);
  process_system_messages();
  bool mid_way = false;
  if (phase_ == phase::dead) {
    drain_to_dead_letters("recipient terminated");
  } else {
    const std::uint32_t budget = system_.throughput();
    std::uint32_t n = 0;
    bool full_batch = false;
    for (; n < budget && user_messages_allowed(); ++n) {
      const std::size_t batch_cap = actor_ != nullptr ? actor_->batch_cap() : 0;
      if (batch_cap > 1) {
        const std::size_t taken = run_batch(batch_cap);
        if (taken == 0) break;
        n += static_cast<std::uint32_t>(taken - 1);
        full_batch = taken >= batch_cap;
        if (async_in_flight_) mailbox_.warm(batch_cap);
      } else {
        envelope_base* e = next_user_envelope();
        if (e == nullptr) break;
        handle_user_envelope(e);
      }
      run_local_posts();
      if (system_inbox_.load(std::memory_order_relaxed) != nullptr) process_system_messages();
    }
    if (n > 0 && actor_ != nullptr && phase_ == phase::running) actor_->turn_ended(n);
    // It stopped at its budget or took a full batch: a backlog is waiting (a busy shard, a
    // hot key), and its next turn keeps its place in line.
    mid_way = n >= budget || full_batch;
    if (mid_way) backlog_wakeups_.store(backlog_wakeup_credit, std::memory_order_relaxed);
  }
  run_local_posts();
  release_turn(mid_way);
}

void actor_cell::release_turn(bool mid_way) noexcept {
  // Our own state is read while we still own the turn: once `scheduled` is clear, another
  // worker may run the next turn. Afterwards only what producers write (atomics) is read.
  const bool takes_mail = phase_ == phase::dead || user_messages_allowed();
  const bool queued = takes_mail && (!mailbox_.empty() ||
                                     (phase_ != phase::dead && ext_ && !ext_->unstashed.empty()));
  state_.fetch_and(~scheduled, std::memory_order_seq_cst);
  const bool more = system_inbox_.load(std::memory_order_seq_cst) != nullptr || queued ||
                    (takes_mail && mailbox_.pushed_since_drained());
  if (!more) return;
  std::uint32_t s = state_.load(std::memory_order_seq_cst);
  while ((s & scheduled) == 0) {
    if (state_.compare_exchange_weak(s, s | scheduled, std::memory_order_seq_cst)) {
      schedule(mid_way);
      return;
    }
  }
}

void actor_cell::process_system_messages() noexcept {
  for (;;) {
    system_message* list = system_inbox_.exchange(nullptr, std::memory_order_acquire);
    if (list == nullptr) return;
    // The inbox is a stack; reverse it to handle signals in the order they were sent.
    system_message* ordered = nullptr;
    while (list != nullptr) {
      system_message* next = list->next;
      list->next = ordered;
      ordered = list;
      list = next;
    }
    while (ordered != nullptr) {
      system_message* m = std::exchange(ordered, ordered->next);
      apply_system(m);
      run_local_posts();
    }
  }
}

void actor_cell::apply_system(system_message* m) noexcept {
  try {
    m->apply(*this);
  } catch (...) {
    fail(std::current_exception(), "while resuming");
  }
  delete m;
}

void actor_cell::run_local_posts() noexcept {
  while (tls_local_head != nullptr) {
    system_message* m = tls_local_head;
    tls_local_head = m->next;
    if (tls_local_head == nullptr) tls_local_tail = nullptr;
    apply_system(m);
  }
}

envelope_base* actor_cell::next_user_envelope() noexcept {
  for (;;) {
    envelope_base* e = nullptr;
    if (ext_ && !ext_->unstashed.empty()) {
      e = ext_->unstashed.back();
      ext_->unstashed.pop_back();
    } else {
      e = static_cast<envelope_base*>(mailbox_.pop());
      if (e != nullptr && bounded() != nullptr && e->kind == envelope_kind::user) {
        bounded()->size.fetch_sub(1, std::memory_order_seq_cst);
        if (bounded()->waiting.load(std::memory_order_seq_cst) > 0) admit_waiters();
      }
    }
    // An ordinary actor pays one compare; an entity handles nothing once its node no longer
    // stands for its shard (entity_home::standing), checked per message so that a node resumed
    // past its lease's deadline stops before its fence timer runs.
    if (e == nullptr || label_kind_ != label_kind::entity_id || e->kind != envelope_kind::user ||
        !standing_lost()) {
      return e;
    }
    dead_letter(e, make_error_code(errc::recipient_terminated),
                "this node no longer stands for the entity's shard (its lease is gone or in "
                "doubt)");
  }
}

bool actor_cell::standing_lost() const noexcept {
  if (standings_in_force.load(std::memory_order_acquire) == 0) return false;
  const entity_home* h = home();
  return h != nullptr && h->standing != nullptr && h->standing->lost();
}

void actor_cell::handle_user_envelope(envelope_base* e) noexcept {
  switch (e->kind) {
    case envelope_kind::poison_pill:
      delete e;
      handle_stop();
      return;
    case envelope_kind::timer:
      if (!accept_timer(*e)) {
        delete e;  // cancelled or replaced after it was queued
        return;
      }
      break;
    case envelope_kind::idle:
      break;
    case envelope_kind::user:
      if (ext_ && ext_->idle_make) ext_->idle_last = system_.clock().now();
      break;
  }
  // A coroutine handler may run to its end inside handle() and free `e` (end_async_turn).
  const envelope_kind kind = e->kind;
  current_ = e;
  bool async = false;
  bool released = false;  // a plain handler passed `e` on (release_current): not ours to free
  try {
    async = actor_->handle(*e);
    released = !async && current_ != e;
  } catch (...) {
    released = current_ != e;
    std::string what = "while handling a message of type ";
    try {
      what += released ? std::string("?") : e->describe();
    } catch (...) {
      what += "?";
    }
    current_ = nullptr;
    if (async_message_ == e) async_message_ = nullptr;  // a turn that began never started
    const std::exception_ptr failure = std::current_exception();
    if (released) {
      fail(failure, what);
      return;
    }
    // An asker hears at once that its question failed the actor (instead of timing out).
    if (e->sender) {
      e->sender->notify_undelivered(
          make_error_code(errc::actor_failed),
          path() + " failed " + what + ": " + describe_exception(failure));
    }
    fail(failure, what);
  }
  current_ = nullptr;
  if (kind == envelope_kind::idle && ext_ && ext_->idle_make) {
    ext_->idle_last = system_.clock().now();
    arm_idle_check();
  }
  // A coroutine turn took `e` in begin_async_turn (its payload moved into the coroutine) and
  // frees it when the handler ends; it names the message on failure.
  if (!async && !released) delete e;
}

envelope_base* actor_cell::release_current() noexcept {
  if (current_ == nullptr || current_ == async_message_) return nullptr;
  return std::exchange(current_, nullptr);
}

std::size_t actor_cell::run_batch(std::size_t cap) noexcept {
  // Everything queued (up to `cap`) in arrival order, in one handler call: a hot entity's burst
  // becomes one write. The runtime's own messages end a batch and are handled after it.
  std::vector<envelope_base*> batch = std::move(tls_batch);
  batch.clear();
  envelope_base* signal = nullptr;
  while (batch.size() < cap) {
    envelope_base* e = next_user_envelope();
    if (e == nullptr) break;
    if (e->kind != envelope_kind::user) {
      signal = e;
      break;
    }
    batch.push_back(e);
  }
  const std::size_t taken = batch.size() + (signal != nullptr ? 1 : 0);
  if (!batch.empty()) {
    if (ext_ && ext_->idle_make) ext_->idle_last = system_.clock().now();
    try {
      actor_->handle_batch(batch);
    } catch (...) {
      const std::exception_ptr failure = std::current_exception();
      const std::string what = "while handling a batch of " + std::to_string(batch.size()) +
                               " messages of type " + batch.front()->describe();
      for (auto* e : batch) {
        if (e->sender) {
          e->sender->notify_undelivered(
              make_error_code(errc::actor_failed),
              path() + " failed " + what + ": " + describe_exception(failure));
        }
      }
      fail(failure, what);
    }
    for (auto* e : batch) delete e;
  }
  if (batch.capacity() <= kept_batch_capacity) {
    batch.clear();
    tls_batch = std::move(batch);
  }
  if (signal != nullptr) {
    if (user_messages_allowed()) {
      run_local_posts();
      handle_user_envelope(signal);
    } else {
      ext().unstashed.push_back(signal);  // next in line once the batch's turn is over
    }
  }
  return taken;
}

const intrusive_ptr<actor_target>& actor_cell::current_sender() const noexcept {
  static const intrusive_ptr<actor_target> none;
  if (current_ != nullptr) return current_->sender;
  if (async_in_flight_ && async_message_ != nullptr) return async_message_->sender;
  return none;
}

void actor_cell::drain_to_dead_letters(const char* reason) noexcept {
  const auto code = make_error_code(errc::recipient_terminated);
  if (ext_) {
    for (auto it = ext_->unstashed.rbegin(); it != ext_->unstashed.rend(); ++it) {
      dead_letter(*it, code, reason);
    }
    ext_->unstashed.clear();
    for (auto* e : ext_->stash) dead_letter(e, code, reason);
    ext_->stash.clear();
  }
  while (auto* e = static_cast<envelope_base*>(mailbox_.pop())) {
    if (bounded() != nullptr && e->kind == envelope_kind::user) {
      bounded()->size.fetch_sub(1, std::memory_order_relaxed);
    }
    if (e->kind == envelope_kind::poison_pill || e->kind == envelope_kind::timer ||
        e->kind == envelope_kind::idle) {
      delete e;  // the runtime's own signals are no one's lost mail
      continue;
    }
    dead_letter(e, code, reason);
  }
  if (bounded() != nullptr) {
    std::deque<std::pair<envelope_base*, std::function<void(std::error_code)>>> waiters;
    {
      std::lock_guard lock(bounded()->mutex);
      waiters.swap(bounded()->waiters);
      bounded()->waiting.store(0);
    }
    for (auto& [e, done] : waiters) {
      dead_letter(e, code, reason);
      done(code);
    }
  }
}

// -- coroutine turns ----------------------------------------------------------------------------

void actor_cell::begin_async_turn() {
  // The handler's message (null when the turn starts outside a message: recovery, a batch)
  // carries the sender; the coroutine may start, and even end, inside handle().
  async_in_flight_ = true;
  delete std::exchange(async_message_, current_);
  update_suspended();
}

void actor_cell::end_async_turn(std::exception_ptr failure) {
  async_in_flight_ = false;
  std::unique_ptr<envelope_base> message(std::exchange(async_message_, nullptr));
  if (current_ == message.get()) current_ = nullptr;  // ended inside handle(): `e` goes now
  const intrusive_ptr<actor_target> sender = message ? std::move(message->sender) : nullptr;
  if (failure && phase_ == phase::running) {
    std::string what = "in a coroutine handler";
    if (message && actor_ != nullptr) {
      try {
        what += " of a message of type " + message->describe();
      } catch (...) {
      }
    }
    if (sender) {
      sender->notify_undelivered(make_error_code(errc::actor_failed),
                                 path() + " failed " + what + ": " + describe_exception(failure));
    }
    fail(failure, what);
  }
  if (phase_ == phase::terminating) {
    // Deferred: we are inside the coroutine's completion, which must return before the
    // instance (and its cancellation signal) goes away.
    post(new deferred_message(&actor_cell::continue_termination));
    return;
  }
  if (phase_ == phase::failed && ext_ && ext_->restart_after_turn) {
    // Deferred like termination: the instance outlives the coroutine's completion.
    post(new restart_now_message(std::exchange(ext_->restart_after_turn, nullptr)));
  }
  update_suspended();
}

void actor_cell::continue_termination() { try_finish_termination(); }

}  // namespace troupe::detail
