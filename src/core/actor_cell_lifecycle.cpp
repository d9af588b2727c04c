// The actor cell, part 2: failure, supervision, restart, stopping and children.
#include <troupe/core/actor.hpp>
#include <troupe/core/detail/actor_cell.hpp>
#include <troupe/core/detail/system_messages.hpp>

#include "core/cell_extras.hpp"
#include "core/cell_messages.hpp"
#include "core/system_impl.hpp"

#include <algorithm>

namespace troupe::detail {

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
      fail(error, "(escalated from child " + child.name() + ")");
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
  return first_child();
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
    for (actor_cell* c = first_child(); c != nullptr; c = c->next_sibling_) {
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
  if (parent_ && !unindexed_name_ && label_[0] != '$') {
    std::lock_guard lock(system_.children_lock(parent_.get()));
    if (parent_->ext_) {
      auto& named = parent_->ext_->named_children;
      auto it = named.find(label_);
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
    } else if (ext_ && ext_->first_child == &child) {
      ext_->first_child = child.next_sibling_;
    }
    if (child.next_sibling_ != nullptr) child.next_sibling_->prev_sibling_ = child.prev_sibling_;
    child.next_sibling_ = child.prev_sibling_ = nullptr;
    if (ext_ && !child.unindexed_name_ && child.label_[0] != '$') {
      auto it = ext_->named_children.find(child.label_);
      if (it != ext_->named_children.end() && it->second == &child) ext_->named_children.erase(it);
    }
    none_left = first_child() == nullptr;
  }
  if (phase_ == phase::terminating) {
    try_finish_termination();
  } else if (none_left && phase_ == phase::failed && ext_ && ext_->pending_restart) {
    create_instance(std::exchange(ext_->pending_restart, nullptr));
  } else if (phase_ == phase::running && actor_ != nullptr) {
    try {
      actor_->on_child_terminated(untyped_ref(intrusive_ptr<actor_target>(&child)));
    } catch (...) {
      fail(std::current_exception(), "in on_child_terminated");
    }
  }
}

std::vector<intrusive_ptr<actor_cell>> actor_cell::children() const {
  std::vector<intrusive_ptr<actor_cell>> out;
  std::lock_guard lock(system_.children_lock(this));
  for (actor_cell* c = first_child(); c != nullptr; c = c->next_sibling_) out.emplace_back(c);
  return out;
}

intrusive_ptr<actor_cell> actor_cell::child(std::string_view name) const {
  std::lock_guard lock(system_.children_lock(this));
  if (!name.empty() && name[0] == '$') {
    for (actor_cell* c = first_child(); c != nullptr; c = c->next_sibling_) {
      if (c->has_name(name)) return intrusive_ptr<actor_cell>(c);
    }
    return nullptr;
  }
  if (!ext_) return nullptr;
  auto it = ext_->named_children.find(name);
  if (it != ext_->named_children.end()) return intrusive_ptr<actor_cell>(it->second);
  if (ext_->has_unindexed_children) {
    for (actor_cell* c = first_child(); c != nullptr; c = c->next_sibling_) {
      if (c->unindexed_name_ && c->has_name(name) && !c->is_terminated()) {
        return intrusive_ptr<actor_cell>(c);
      }
    }
  }
  return nullptr;
}

}  // namespace troupe::detail
