#include <troupe/core/actor.hpp>
#include <troupe/core/detail/actor_cell.hpp>
#include <troupe/core/detail/system_messages.hpp>

#include "core/cell_extras.hpp"
#include "core/system_impl.hpp"

#include <algorithm>
#include <cassert>

namespace troupe::detail {

namespace {

thread_local actor_cell* tls_current = nullptr;       // NOLINT
thread_local actor_cell* tls_constructing = nullptr;  // NOLINT
// Work the running turn posted to itself (coroutine resumptions), run before the turn ends.
thread_local system_message* tls_local_head = nullptr;  // NOLINT
thread_local system_message* tls_local_tail = nullptr;  // NOLINT

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

std::string describe_exception(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return type_name(typeid(ex)) + ": " + ex.what();
  } catch (...) {
    return "unknown exception";
  }
}

bool valid_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.' || c == '@' || c == ':' || c == '+' || c == '~';
}

constexpr std::size_t stash_capacity = 10'000;

// -- runtime signals between cells --------------------------------------------------------------

struct child_terminated_message final : system_message {
  explicit child_terminated_message(intrusive_ptr<actor_cell> c) : child(std::move(c)) {}
  void apply(actor_cell& cell) override { cell.handle_child_terminated(*child); }
  intrusive_ptr<actor_cell> child;
};

struct child_failed_message final : system_message {
  child_failed_message(intrusive_ptr<actor_cell> c, std::exception_ptr e)
      : child(std::move(c)), error(std::move(e)) {}
  void apply(actor_cell& cell) override { cell.handle_child_failed(*child, error); }
  intrusive_ptr<actor_cell> child;
  std::exception_ptr error;
};

struct directive_message final : system_message {
  directive_message(directive d, std::exception_ptr e, supervisor_strategy s)
      : what(d), error(std::move(e)), strategy(std::move(s)) {}
  void apply(actor_cell& cell) override;
  directive what;
  std::exception_ptr error;
  supervisor_strategy strategy;
};

struct restart_now_message final : system_message {
  explicit restart_now_message(std::exception_ptr e) : error(std::move(e)) {}
  void apply(actor_cell& cell) override;
  std::exception_ptr error;
};

/// Runs a member function of the cell later in the same turn (after the current step).
struct deferred_message final : system_message {
  explicit deferred_message(void (actor_cell::*f)()) : fn(f) {}
  void apply(actor_cell& cell) override { (cell.*fn)(); }
  void (actor_cell::*fn)();
};

struct idle_check_message final : system_message {
  explicit idle_check_message(std::uint64_t g) : generation(g) {}
  void apply(actor_cell& cell) override { cell.handle_timer_check(generation); }
  std::uint64_t generation;
};

}  // namespace

/// Private access for the messages above.
struct cell_access {
  static void directive(actor_cell& c, const directive_message& m);
  static void restart_now(actor_cell& c, std::exception_ptr error);
};

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

actor_cell::actor_cell(system_impl& system, intrusive_ptr<actor_cell> parent, std::string name,
                       const mailbox_config& mailbox)
    : system_(system), parent_(std::move(parent)), name_(std::move(name)) {
  if (mailbox.capacity > 0) {
    bounded_ = new bounded_mailbox(mailbox.capacity, mailbox.overflow);
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
  delete bounded_;
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

std::string actor_cell::path() const {
  if (!parent_) return "/" + name_;
  std::string p = parent_->path();
  p += '/';
  p += name_;
  return p;
}

system_impl* actor_cell::owner() const noexcept { return &system_; }

void actor_cell::start() {
  if (name_.empty()) {
    name_ = system_.anonymous_name();
  } else {
    if (name_[0] == '$' || name_ == "." || name_ == ".." ||
        !std::all_of(name_.begin(), name_.end(), valid_name_char)) {
      throw error(errc::invalid_actor_name, "invalid actor name '" + name_ +
                                                "': use [A-Za-z0-9_-.@:+~], not starting with '$'");
    }
  }
  if (parent_) {
    std::lock_guard lock(system_.children_lock(parent_.get()));
    if (parent_->children_closed_) {
      throw error(errc::recipient_terminated,
                  "cannot spawn '" + name_ + "': parent " + parent_->path() + " is stopping");
    }
    // Generated names ('$...') are unique by construction; only chosen names need the index.
    // (We hold the parent's children lock, so its extras are created here, not via ext().)
    if (name_[0] != '$' && !parent_->ext_) parent_->ext_ = std::make_unique<cell_extras>();
    if (name_[0] != '$' && !parent_->ext_->named_children.emplace(name_, this).second) {
      throw error(errc::actor_name_taken,
                  "actor name '" + name_ + "' is taken under " + parent_->path());
    }
    next_sibling_ = parent_->first_child_;
    if (next_sibling_ != nullptr) next_sibling_->prev_sibling_ = this;
    parent_->first_child_ = this;
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
      schedule();
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
  if (bounded_ != nullptr && e->kind == envelope_kind::user) {
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
  if (bounded_ != nullptr) {
    const std::error_code ec = enqueue_bounded(e);
    return bounded_->policy == overflow_policy::drop ? std::error_code() : ec;
  }
  push_user(e);
  return {};
}

std::error_code actor_cell::enqueue_bounded(envelope_base* e) noexcept {
  if (bounded_->size.fetch_add(1, std::memory_order_seq_cst) >= bounded_->capacity) {
    bounded_->size.fetch_sub(1, std::memory_order_seq_cst);
    dead_letter(e, make_error_code(errc::mailbox_full), "mailbox full");
    return make_error_code(errc::mailbox_full);
  }
  push_user(e);
  return {};
}

void actor_cell::enqueue_or_wait(envelope_base* e,
                                 std::function<void(std::error_code)> done) noexcept {
  if (bounded_ == nullptr || bounded_->policy != overflow_policy::suspend || is_terminated()) {
    done(try_enqueue(e));
    return;
  }
  {
    std::unique_lock lock(bounded_->mutex);
    if (bounded_->size.fetch_add(1, std::memory_order_seq_cst) < bounded_->capacity) {
      lock.unlock();
      push_user(e);
      done({});
      return;
    }
    bounded_->size.fetch_sub(1, std::memory_order_seq_cst);
    bounded_->waiters.emplace_back(e, std::move(done));
    bounded_->waiting.fetch_add(1, std::memory_order_seq_cst);
  }
  admit_waiters();  // the consumer may have made room between our check and our registration
}

void actor_cell::admit_waiters() noexcept {
  for (;;) {
    std::pair<envelope_base*, std::function<void(std::error_code)>> w;
    {
      std::lock_guard lock(bounded_->mutex);
      if (bounded_->waiters.empty()) return;
      if (bounded_->size.fetch_add(1, std::memory_order_seq_cst) >= bounded_->capacity) {
        bounded_->size.fetch_sub(1, std::memory_order_seq_cst);
        return;
      }
      w = std::move(bounded_->waiters.front());
      bounded_->waiters.pop_front();
      bounded_->waiting.fetch_sub(1, std::memory_order_seq_cst);
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

void actor_cell::schedule() noexcept { system_.sched().schedule(this); }

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
  if (phase_ == phase::dead) {
    drain_to_dead_letters("recipient terminated");
  } else {
    const std::uint32_t budget = system_.throughput();
    for (std::uint32_t n = 0; n < budget && user_messages_allowed(); ++n) {
      envelope_base* e = next_user_envelope();
      if (e == nullptr) break;
      handle_user_envelope(e);
      run_local_posts();
      if (system_inbox_.load(std::memory_order_relaxed) != nullptr) process_system_messages();
    }
  }
  run_local_posts();
  release_turn();
}

void actor_cell::release_turn() noexcept {
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
      schedule();
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
  if (ext_ && !ext_->unstashed.empty()) {
    envelope_base* e = ext_->unstashed.back();
    ext_->unstashed.pop_back();
    return e;
  }
  auto* e = static_cast<envelope_base*>(mailbox_.pop());
  if (e != nullptr && bounded_ != nullptr && e->kind == envelope_kind::user) {
    bounded_->size.fetch_sub(1, std::memory_order_seq_cst);
    if (bounded_->waiting.load(std::memory_order_seq_cst) > 0) admit_waiters();
  }
  return e;
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
  current_ = e;
  bool async = false;
  try {
    async = actor_->handle(*e);
  } catch (...) {
    std::string what = "while handling a message of type ";
    try {
      what += e->describe();
    } catch (...) {
      what += "?";
    }
    current_ = nullptr;
    const std::exception_ptr failure = std::current_exception();
    // An asker hears at once that its question failed the actor (instead of timing out).
    if (e->sender) {
      e->sender->notify_undelivered(
          make_error_code(errc::actor_failed),
          path() + " failed " + what + ": " + describe_exception(failure));
    }
    fail(failure, what);
  }
  current_ = nullptr;
  if (e->kind == envelope_kind::idle && ext_ && ext_->idle_make) {
    ext_->idle_last = system_.clock().now();
    arm_idle_check();
  }
  if (async) {
    // Kept (its payload moved into the coroutine) until the handler ends, to name it on failure.
    delete std::exchange(async_message_, e);
  } else {
    delete e;
  }
}

const intrusive_ptr<actor_target>& actor_cell::current_sender() const noexcept {
  static const intrusive_ptr<actor_target> none;
  if (current_ != nullptr) return current_->sender;
  if (async_in_flight_) return async_sender_;
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
    if (bounded_ != nullptr && e->kind == envelope_kind::user) {
      bounded_->size.fetch_sub(1, std::memory_order_relaxed);
    }
    if (e->kind == envelope_kind::poison_pill || e->kind == envelope_kind::timer ||
        e->kind == envelope_kind::idle) {
      delete e;  // the runtime's own signals are no one's lost mail
      continue;
    }
    dead_letter(e, code, reason);
  }
  if (bounded_ != nullptr) {
    std::deque<std::pair<envelope_base*, std::function<void(std::error_code)>>> waiters;
    {
      std::lock_guard lock(bounded_->mutex);
      waiters.swap(bounded_->waiters);
      bounded_->waiting.store(0);
    }
    for (auto& [e, done] : waiters) {
      dead_letter(e, code, reason);
      done(code);
    }
  }
}

// -- coroutine turns ----------------------------------------------------------------------------

void actor_cell::begin_async_turn(intrusive_ptr<actor_target> sender) {
  async_sender_ = std::move(sender);
  async_in_flight_ = true;
  update_suspended();
}

void actor_cell::end_async_turn(std::exception_ptr failure) {
  async_in_flight_ = false;
  const intrusive_ptr<actor_target> sender = std::move(async_sender_);
  std::unique_ptr<envelope_base> message(std::exchange(async_message_, nullptr));
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

// -- failure and supervision --------------------------------------------------------------------

void actor_cell::fail(std::exception_ptr error, const std::string& while_doing) noexcept {
  runtime_logger().error("[{}] failed {}: {}", path(), while_doing, describe_exception(error));
  if (phase_ == phase::terminating || phase_ == phase::dead) return;
  phase_ = phase::failed;
  update_suspended();
  if (parent_) {
    parent_->send_system(new child_failed_message(intrusive_ptr<actor_cell>(this), error));
  } else {
    // A guardian never fails for good: it carries on.
    phase_ = actor_ ? phase::running : phase::failed;
    update_suspended();
  }
}

void actor_cell::handle_child_failed(actor_cell& child, std::exception_ptr error) {
  supervisor_strategy strategy;
  directive d = directive::restart;
  try {
    if (actor_ != nullptr) strategy = actor_->child_supervision();
    d = strategy.decider(error);
  } catch (...) {
    d = directive::stop;
  }
  if (phase_ == phase::terminating || phase_ == phase::dead) d = directive::stop;
  if (d == directive::escalate) {
    if (!parent_) {
      d = directive::stop;  // nobody above a guardian: stop the child
    } else {
      ext().escalated.emplace_back(&child);
      fail(error, "(escalated from child " + child.name_ + ")");
      return;
    }
  }
  child.send_system(new directive_message(d, error, std::move(strategy)));
}

void cell_access::directive(actor_cell& c, const directive_message& m) {
  c.handle_directive(m.what, m.error, m.strategy);
}

void actor_cell::handle_directive(directive d, std::exception_ptr error,
                                  const supervisor_strategy& strategy) {
  if (phase_ != phase::failed) return;
  if (d == directive::resume && actor_ == nullptr) d = directive::restart;
  switch (d) {
    case directive::resume:
      phase_ = phase::running;
      update_suspended();
      // Children whose failure we escalated are resumed with us (a restart or stop stops them).
      if (ext_) {
        for (auto& c : std::exchange(ext_->escalated, {})) {
          c->send_system(new directive_message(directive::resume, error, supervisor_strategy{}));
        }
      }
      return;
    case directive::stop:
    case directive::escalate:
      handle_stop();
      return;
    case directive::restart:
      break;
  }
  cell_extras& x = ext();
  const time_point now = system_.clock().now();
  if (x.restarts == 0 || now - x.restart_window_start > strategy.window) {
    x.restarts = 0;
    x.restart_window_start = now;
  }
  if (x.restarts >= strategy.max_restarts) {
    runtime_logger().error("[{}] stopped: {} restarts within {} ms", path(), x.restarts,
                           strategy.window.count());
    handle_stop();
    return;
  }
  ++x.restarts;
  duration delay{};
  if (x.restarts > 1) {
    const int shift = std::min(x.restarts - 2, 20);
    delay = std::min<duration>(strategy.min_backoff * (1LL << shift), strategy.max_backoff);
  }
  if (delay == duration::zero()) {
    restart(error);
    return;
  }
  intrusive_ptr<actor_cell> self(this);
  x.restart_timer = system_.clock().schedule_after(
      delay, [self, error] { self->send_system(new restart_now_message(error)); });
}

void cell_access::restart_now(actor_cell& c, std::exception_ptr error) {
  if (c.ext_) c.ext_->restart_timer = 0;
  if (c.phase_ == actor_cell::phase::failed) c.restart(std::move(error));
}

void actor_cell::restart(std::exception_ptr error) {
  if (async_in_flight_) {
    // A coroutine handler still runs on this instance (the failure came from elsewhere, e.g.
    // on_terminated): cancel it and restart once it has ended (see end_async_turn).
    ext().restart_after_turn = std::move(error);
    if (actor_ != nullptr) actor_->cancel_turn();
    return;
  }
  cancel_all_timers();
  cancel_receive_timeout();
  if (ext_) ext_->escalated.clear();
  // Stashed messages go back in front of the mailbox; the fresh instance starts unstashed.
  unstash_all();
  if (actor_ != nullptr) {
    try {
      actor_->pre_restart(error);
    } catch (...) {
      runtime_logger().error("[{}] pre_restart threw: {}", path(),
                             describe_exception(std::current_exception()));
    }
    destroy_instance(actor_);
    actor_ = nullptr;
  }
  // A fresh instance may want its children's names again: wait until the old ones are gone.
  if (first_child_locked() != nullptr) {
    ext().pending_restart = error;
    return;
  }
  create_instance(error);
}

actor_cell* actor_cell::first_child_locked() const {
  std::lock_guard lock(system_.children_lock(this));
  return first_child_;
}

// -- stopping -----------------------------------------------------------------------------------

// Deferred: the actor's handler is still on the stack and must not see itself destroyed.
void actor_cell::stop_self() { post(new deferred_message(&actor_cell::handle_stop)); }

void actor_cell::stop_child(actor_target& target) { target.send_system(new stop_message()); }

void actor_cell::handle_stop() {
  if (phase_ == phase::terminating || phase_ == phase::dead) return;
  phase_ = phase::terminating;
  update_suspended();
  cancel_all_timers();
  cancel_receive_timeout();
  if (ext_) {
    // A restart waiting for its backoff would otherwise hold this cell until it fires.
    if (ext_->restart_timer != 0) system_.clock().cancel(std::exchange(ext_->restart_timer, 0));
    ext_->escalated.clear();
  }
  std::vector<intrusive_ptr<actor_cell>> kids;
  {
    std::lock_guard lock(system_.children_lock(this));
    children_closed_ = true;
    for (actor_cell* c = first_child_; c != nullptr; c = c->next_sibling_) {
      kids.emplace_back(c);
    }
  }
  for (auto& k : kids) k->send_system(new stop_message());
  try_finish_termination();
}

void actor_cell::try_finish_termination() noexcept {
  if (phase_ != phase::terminating) return;
  if (async_in_flight_) {
    if (actor_ != nullptr && !(ext_ && ext_->cancel_requested)) {
      ext().cancel_requested = true;
      actor_->cancel_turn();
    }
    return;
  }
  if (first_child_locked() != nullptr) return;
  finish_termination();
}

void actor_cell::finish_termination() noexcept {
  if (actor_ != nullptr) {
    try {
      actor_->post_stop();
    } catch (...) {
      runtime_logger().error("[{}] post_stop threw: {}", path(),
                             describe_exception(std::current_exception()));
    }
    destroy_instance(actor_);
    actor_ = nullptr;
  }
  cancel_all_timers();
  cancel_receive_timeout();
  phase_ = phase::dead;
  state_.fetch_or(dead, std::memory_order_seq_cst);
  update_suspended();
  drain_to_dead_letters("recipient terminated");
  // Free the name before any watcher hears of the death, so it can be reused at once (the
  // parent unlinks us from its children later, when it handles child_terminated_message).
  if (parent_ && name_[0] != '$') {
    std::lock_guard lock(system_.children_lock(parent_.get()));
    if (parent_->ext_) {
      auto& named = parent_->ext_->named_children;
      auto it = named.find(name_);
      if (it != named.end() && it->second == this) named.erase(it);
    }
  }
  intrusive_ptr<actor_target> self(this);
  if (ext_) {
    for (auto& w : std::exchange(ext_->watchers, {})) w->send_system(new terminated_message(self));
    ext_->watching.clear();
  }
  if (parent_) {
    parent_->send_system(new child_terminated_message(intrusive_ptr<actor_cell>(this)));
  } else {
    system_.guardian_terminated(*this);
  }
  release();  // the "alive" reference; the turn's own reference keeps us until it ends
}

void actor_cell::handle_child_terminated(actor_cell& child) {
  bool none_left;
  {
    std::lock_guard lock(system_.children_lock(this));
    if (child.prev_sibling_ != nullptr) {
      child.prev_sibling_->next_sibling_ = child.next_sibling_;
    } else if (first_child_ == &child) {
      first_child_ = child.next_sibling_;
    }
    if (child.next_sibling_ != nullptr) child.next_sibling_->prev_sibling_ = child.prev_sibling_;
    child.next_sibling_ = child.prev_sibling_ = nullptr;
    if (ext_ && child.name_[0] != '$') {
      auto it = ext_->named_children.find(child.name_);
      if (it != ext_->named_children.end() && it->second == &child) ext_->named_children.erase(it);
    }
    none_left = first_child_ == nullptr;
  }
  if (phase_ == phase::terminating) {
    try_finish_termination();
  } else if (none_left && phase_ == phase::failed && ext_ && ext_->pending_restart) {
    create_instance(std::exchange(ext_->pending_restart, nullptr));
  }
}

std::vector<intrusive_ptr<actor_cell>> actor_cell::children() const {
  std::vector<intrusive_ptr<actor_cell>> out;
  std::lock_guard lock(system_.children_lock(this));
  for (actor_cell* c = first_child_; c != nullptr; c = c->next_sibling_) out.emplace_back(c);
  return out;
}

intrusive_ptr<actor_cell> actor_cell::child(std::string_view name) const {
  std::lock_guard lock(system_.children_lock(this));
  if (!name.empty() && name[0] == '$') {
    for (actor_cell* c = first_child_; c != nullptr; c = c->next_sibling_) {
      if (c->name_ == name) return intrusive_ptr<actor_cell>(c);
    }
    return nullptr;
  }
  if (!ext_) return nullptr;
  auto it = ext_->named_children.find(std::string(name));
  return it == ext_->named_children.end() ? nullptr : intrusive_ptr<actor_cell>(it->second);
}

// -- death watch --------------------------------------------------------------------------------

void actor_cell::watch(const intrusive_ptr<actor_target>& target) {
  if (!target || target.get() == this) return;
  auto& watching = ext().watching;
  if (std::find(watching.begin(), watching.end(), target) != watching.end()) return;
  watching.push_back(target);
  target->send_system(new watch_message(intrusive_ptr<actor_target>(this)));
}

void actor_cell::unwatch(const intrusive_ptr<actor_target>& target) {
  if (!ext_) return;
  auto& watching = ext_->watching;
  auto it = std::find(watching.begin(), watching.end(), target);
  if (it == watching.end()) return;
  watching.erase(it);
  target->send_system(new unwatch_message(intrusive_ptr<actor_target>(this)));
}

void actor_cell::handle_watch(const intrusive_ptr<actor_target>& watcher) {
  if (phase_ == phase::dead) {
    watcher->send_system(new terminated_message(intrusive_ptr<actor_target>(this)));
    return;
  }
  auto& watchers = ext().watchers;
  if (std::find(watchers.begin(), watchers.end(), watcher) == watchers.end()) {
    watchers.push_back(watcher);
  }
}

void actor_cell::handle_unwatch(const intrusive_ptr<actor_target>& watcher) {
  if (!ext_) return;
  auto& watchers = ext_->watchers;
  watchers.erase(std::remove(watchers.begin(), watchers.end(), watcher), watchers.end());
}

void actor_cell::handle_terminated(const intrusive_ptr<actor_target>& who) {
  if (!ext_ || actor_ == nullptr || phase_ == phase::dead) return;
  auto& watching = ext_->watching;
  auto it = std::find(watching.begin(), watching.end(), who);
  if (it == watching.end()) return;  // unwatched meanwhile
  watching.erase(it);
  try {
    actor_->on_terminated(untyped_ref(who));
  } catch (...) {
    fail(std::current_exception(), "in on_terminated");
  }
}

// -- timers -------------------------------------------------------------------------------------

void actor_cell::start_timer(const std::string& key, duration delay, bool periodic,
                             timer_message_factory make) {
  cell_extras& x = ext();
  cancel_timer(key);
  const std::uint64_t gen = ++x.timer_generation;
  auto& entry = x.timers[key];
  entry.generation = gen;
  entry.periodic = periodic;
  entry.interval = delay;
  entry.make = std::move(make);
  entry.id = arm_timer(key, entry);
}

timer_id actor_cell::arm_timer(const std::string& key, const timer_entry& entry) {
  intrusive_ptr<actor_cell> self(this);
  return system_.clock().schedule_after(
      entry.interval,
      [self, make = entry.make, key, gen = entry.generation] { self->enqueue(make(key, gen)); });
}

bool actor_cell::accept_timer(envelope_base& e) {
  const timer_info info = e.timer();
  if (!ext_ || info.key == nullptr) return false;
  auto it = ext_->timers.find(*info.key);
  if (it == ext_->timers.end() || it->second.generation != info.generation) return false;
  if (it->second.periodic) {
    it->second.id = arm_timer(it->first, it->second);
  } else {
    ext_->timers.erase(it);
  }
  return true;
}

bool actor_cell::cancel_timer(std::string_view key) {
  if (!ext_) return false;
  auto it = ext_->timers.find(std::string(key));
  if (it == ext_->timers.end()) return false;
  system_.clock().cancel(it->second.id);
  ext_->timers.erase(it);
  return true;
}

void actor_cell::cancel_all_timers() {
  if (!ext_) return;
  for (auto& [key, entry] : ext_->timers) system_.clock().cancel(entry.id);
  ext_->timers.clear();
}

bool actor_cell::timer_active(std::string_view key) const {
  return ext_ && ext_->timers.count(std::string(key)) != 0;
}

void actor_cell::set_receive_timeout(duration d, std::function<envelope_base*()> make) {
  cancel_receive_timeout();
  if (d <= duration::zero()) return;
  cell_extras& x = ext();
  x.idle_after = d;
  x.idle_make = std::move(make);
  x.idle_last = system_.clock().now();
  arm_idle_check();
}

void actor_cell::cancel_receive_timeout() {
  if (!ext_ || !ext_->idle_make) return;
  system_.clock().cancel(ext_->idle_timer);
  ext_->idle_timer = 0;
  ext_->idle_make = nullptr;
  ++ext_->idle_generation;
}

void actor_cell::arm_idle_check() {
  cell_extras& x = ext();
  system_.clock().cancel(x.idle_timer);
  const std::uint64_t gen = ++x.idle_generation;
  intrusive_ptr<actor_cell> self(this);
  x.idle_timer = system_.clock().schedule_at(
      x.idle_last + x.idle_after, [self, gen] { self->send_system(new idle_check_message(gen)); });
}

void actor_cell::handle_timer_check(std::uint64_t generation) {
  if (!ext_ || !ext_->idle_make || generation != ext_->idle_generation) return;
  if (phase_ != phase::running) return;
  const time_point now = system_.clock().now();
  if (now - ext_->idle_last >= ext_->idle_after) {
    ext_->idle_timer = 0;
    enqueue(ext_->idle_make());  // re-armed once it has been handled
  } else {
    arm_idle_check();
  }
}

// -- stash --------------------------------------------------------------------------------------

void actor_cell::stash(envelope_base* e) {
  cell_extras& x = ext();
  if (x.stash.size() >= stash_capacity) {
    delete e;
    throw error(errc::stash_overflow,
                "stash of " + path() + " is full (" + std::to_string(stash_capacity) + ")");
  }
  x.stash.push_back(e);
}

void actor_cell::unstash_all() {
  if (!ext_ || ext_->stash.empty()) return;
  auto& x = *ext_;
  // Stashed messages go before those still waiting from an earlier unstash_all.
  x.unstashed.insert(x.unstashed.end(), x.stash.rbegin(), x.stash.rend());
  x.stash.clear();
}

std::size_t actor_cell::stash_size() const { return ext_ ? ext_->stash.size() : 0; }

}  // namespace troupe::detail
