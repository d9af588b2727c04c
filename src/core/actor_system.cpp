#include "troupe/core/actor_system.hpp"

#include "troupe/core/detail/system_messages.hpp"
#include <troupe/core/detail/real_time_use.hpp>

#include "core/system_impl.hpp"

#include <boost/asio/signal_set.hpp>

#include <chrono>
#include <csignal>
#include <thread>

namespace troupe {

namespace detail {

namespace {

/// The actor behind /user and /system; supervises top-level actors with the default strategy.
class guardian final : public actor<std::monostate> {
  void receive(std::monostate& /*unused*/) override {}
};

std::size_t worker_count(const system_config& config) {
  if (config.manual_scheduling) return 0;
  if (config.workers > 0) return config.workers;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : hw;
}

}  // namespace

actor_cell& user_guardian(system_impl& impl) { return impl.user_guardian(); }
actor_cell& system_guardian(system_impl& impl) { return impl.system_guardian(); }

std::shared_ptr<clock> clock_of(system_impl* system) noexcept {
  if (system == nullptr || !system->running()) return nullptr;
  return system->clock_ptr();
}

system_impl::system_impl(actor_system& facade, system_config config)
    : facade_(&facade),
      config_(std::move(config)),
      clock_(config_.clock ? config_.clock : make_steady_clock()),
      io_work_(boost::asio::make_work_guard(io_)),
      scheduler_(worker_count(config_), config_.name) {
  if (config_.throughput == 0) config_.throughput = 1;
  // With manual scheduling, run_until_idle runs the I/O handlers too: no thread of our own, so
  // a simulation drives everything from its one thread.
  if (!scheduler_.manual()) {
    note_real_time_use("the actor system's I/O thread");
    io_thread_ = std::thread([this] {
      const std::string n = config_.name.substr(0, 11) + "-io";
      ::pthread_setname_np(::pthread_self(), n.c_str());
      io_.run();
    });
  }
  // A timer's completion then finds a worker already awake (the clock calls it just before).
  if (!scheduler_.manual()) clock_->set_wake_hint([this] { scheduler_.wake_one(); });
}

system_impl::~system_impl() { shutdown_threads(); }

std::shared_ptr<troupe::clock> system_impl::clock_ptr() const noexcept { return clock_; }

void system_impl::start() {
  // A guardian cell keeps the runtime alive (through its factory) while any actor lives, since
  // every cell holds its parent; refs outliving the actor_system therefore never dangle.
  intrusive_ptr<system_impl> self(this);
  auto make_guardian = [&](const char* name) {
    auto factory = [self](void* where) { return new (where) guardian(); };
    auto* cell = new actor_cell_of<guardian, decltype(factory)>(
        *this, nullptr, std::string(name), mailbox_config{}, std::move(factory));
    intrusive_ptr<actor_cell> ref(cell, adopt);
    cell->prepare_for_foreign_spawns();
    cell->start();
    return ref;
  };
  user_guardian_ = make_guardian("user");
  system_guardian_ = make_guardian("system");
}

std::size_t system_impl::run_manual_turns() {
  std::size_t done = 0;
  for (;;) {
    const std::size_t turns = scheduler_.run_until_idle();
    const std::size_t handlers = io_.stopped() ? 0 : io_.poll();
    if (turns + handlers == 0) return done;
    done += turns + handlers;
  }
}

std::mutex& system_impl::children_lock(const actor_cell* parent) noexcept {
  const auto h = reinterpret_cast<std::uintptr_t>(parent) >> 6;
  return children_locks_[h % children_locks_.size()];
}

std::string system_impl::anonymous_name() {
  static constexpr char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::uint64_t n = anonymous_counter_.fetch_add(1, std::memory_order_relaxed);
  char buf[16];
  int i = 0;
  do {
    buf[i++] = digits[n % 36];
    n /= 36;
  } while (n != 0);
  std::string out = "$";
  while (i > 0) out += buf[--i];
  return out;
}

void system_impl::terminate() {
  {
    std::lock_guard lock(termination_mutex_);
    if (terminate_started_) return;
    terminate_started_ = true;
  }
  // Asks waiting for a reply fail now, not at their timeouts: the answer may never come (an
  // asker awaiting one in a coroutine would hold up its own stop), and new asks fail at once.
  asks_.close_and_fail_all();
  // /user first, top-down; /system once /user is gone (see guardian_terminated).
  user_guardian_->send_system(new stop_message());
}

void system_impl::guardian_terminated(actor_cell& guardian) {
  if (&guardian == user_guardian_.get()) {
    system_guardian_->send_system(new stop_message());
    return;
  }
  {
    std::lock_guard lock(termination_mutex_);
    terminated_.store(true, std::memory_order_release);
  }
  termination_cv_.notify_all();
}

bool system_impl::await_termination_for(std::optional<duration> timeout) {
  std::unique_lock lock(termination_mutex_);
  auto done = [&] { return terminated_.load(std::memory_order_acquire); };
  if (!timeout) {
    // With manual scheduling nobody else runs the turns that stop the actors.
    while (scheduler_.manual() && !done()) {
      lock.unlock();
      run_manual_turns();
      lock.lock();
      if (!done()) termination_cv_.wait_for(lock, std::chrono::milliseconds(1));
    }
    termination_cv_.wait(lock, done);
    return true;
  }
  const auto deadline = std::chrono::steady_clock::now() + *timeout;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    if (scheduler_.manual()) {
      lock.unlock();
      run_manual_turns();
      lock.lock();
    }
    termination_cv_.wait_for(lock, std::chrono::milliseconds(scheduler_.manual() ? 1 : 50));
  }
  return done();
}

void system_impl::release_guardians() {
  user_guardian_.reset();
  system_guardian_.reset();
}

void system_impl::shutdown_threads() {
  if (!scheduler_.manual()) clock_->set_wake_hint(nullptr);
  scheduler_.shutdown();
  io_work_.reset();
  io_.stop();
  if (io_thread_.joinable()) io_thread_.join();
}

}  // namespace detail

// -- the facade ---------------------------------------------------------------------------------

actor_system::actor_system(system_config config)
    : impl_(new detail::system_impl(*this, std::move(config)), detail::adopt) {
  impl_->start();
}

actor_system::~actor_system() {
  impl_->terminate();
  if (!impl_->await_termination_for(impl_->config().shutdown_timeout)) {
    detail::runtime_logger().error(
        "actor system '{}' did not terminate within {} ms; abandoning the actors still running",
        impl_->config().name, impl_->config().shutdown_timeout.count());
  }
  impl_->shutdown_threads();
  {
    // Newest first: a later extension may use an earlier one.
    std::lock_guard lock(impl_->extensions_mutex_);
    while (!impl_->extensions_.empty()) impl_->extensions_.pop_back();
  }
  impl_->detach_facade();
  impl_->dead_letters().unsubscribe_all();
  impl_->release_guardians();
  impl_.reset();  // the last actor ref frees the runtime
}

void* actor_system::extension_slot(const std::type_info& type,
                                   const std::function<std::shared_ptr<void>()>& make) {
  std::lock_guard lock(impl_->extensions_mutex_);
  for (auto& [key, value] : impl_->extensions_) {
    if (key == std::type_index(type)) return value.get();
  }
  auto created = make();
  void* raw = created.get();
  impl_->extensions_.emplace_back(std::type_index(type), std::move(created));
  return raw;
}

void actor_system::stop(const untyped_ref& ref) {
  if (ref) ref.target()->send_system(new detail::stop_message());
}

const std::string& actor_system::name() const noexcept { return impl_->config().name; }
const troupe::config& actor_system::config() const noexcept { return impl_->config().config; }
troupe::clock& actor_system::clock() const noexcept { return impl_->clock(); }
dead_letter_office& actor_system::dead_letters() noexcept { return impl_->dead_letters(); }

void actor_system::record_metrics(std::shared_ptr<metrics_registry> registry) {
  impl_->record_metrics(std::move(registry));
}

std::shared_ptr<metrics_registry> actor_system::recorded_metrics() const {
  const auto* i = impl_->instruments();
  return i == nullptr ? nullptr : i->registry;
}

void detail::system_impl::record_metrics(std::shared_ptr<metrics_registry> registry) {
  std::lock_guard lock(instruments_mutex_);
  if (!registry) {
    instruments_.store(nullptr, std::memory_order_release);
    return;
  }
  auto made = std::make_unique<runtime_instruments>();
  // From 50 µs (a reply on the same node) to ~13 s (past the default ask timeouts).
  auto& asks = registry->histogram_family(
      "troupe_ask_duration_seconds",
      "From an ask's start to its reply, its timeout or its failure, by outcome", {"outcome"},
      exponential_buckets(0.00005, 2, 19));
  made->ask_replied = &asks.with({"replied"});
  made->ask_timed_out = &asks.with({"timed_out"});
  made->ask_failed = &asks.with({"failed"});
  made->registry = std::move(registry);
  instruments_.store(made.get(), std::memory_order_release);
  all_instruments_.push_back(std::move(made));
}

const detail::runtime_instruments* detail::instruments_of(const system_impl* system) noexcept {
  return system == nullptr ? nullptr : system->instruments();
}
dead_letter_office& detail::dead_letters_of(system_impl& system) noexcept {
  return system.dead_letters();
}
boost::asio::io_context& actor_system::io_context() noexcept { return impl_->io(); }

void actor_system::terminate() { impl_->terminate(); }
void actor_system::await_termination() { impl_->await_termination_for(std::nullopt); }
bool actor_system::await_termination_for(duration timeout) {
  return impl_->await_termination_for(timeout);
}
bool actor_system::is_terminated() const noexcept { return !impl_->running(); }

int actor_system::run_until_signal() {
  boost::asio::signal_set signals(impl_->io(), SIGINT, SIGTERM);
  std::atomic<int> received{0};
  signals.async_wait([this, &received](const boost::system::error_code& ec, int signo) {
    if (!ec) {
      detail::runtime_logger().info("actor system '{}': signal {} received, shutting down",
                                    impl_->config().name, signo);
      received.store(signo);
    }
  });
  // Wait in slices rather than in one blocking call: a signal to this thread that a sanitizer
  // defers until the thread leaves its wait is then still handled (ThreadSanitizer once held
  // a SIGTERM for good while this thread slept on the condition variable). The steps run here,
  // not on the io thread that took the signal: they may block, and may need that thread.
  bool stepped = false;
  while (!impl_->await_termination_for(std::chrono::milliseconds(100))) {
    if (received.load() != 0 && !stepped) {
      stepped = true;
      run_signal_steps();
      impl_->terminate();
    }
  }
  signals.cancel();
  return received.load();
}

std::uint64_t actor_system::add_signal_step(std::function<void()> step) {
  std::lock_guard lock(impl_->signal_steps_mutex_);
  const std::uint64_t id = impl_->next_signal_step_++;
  impl_->signal_steps_.emplace(id, std::move(step));
  return id;
}

void actor_system::remove_signal_step(std::uint64_t id) {
  std::lock_guard lock(impl_->signal_steps_mutex_);
  impl_->signal_steps_.erase(id);
}

void actor_system::run_signal_steps() {
  // One at a time, newest first, each taken out under the lock: a step may remove others (or
  // itself) while it runs.
  for (;;) {
    std::function<void()> step;
    {
      std::lock_guard lock(impl_->signal_steps_mutex_);
      if (impl_->signal_steps_.empty()) return;
      auto last = std::prev(impl_->signal_steps_.end());
      step = std::move(last->second);
      impl_->signal_steps_.erase(last);
    }
    try {
      step();
    } catch (const std::exception& e) {
      detail::runtime_logger().error("actor system '{}': a signal step threw: {}",
                                     impl_->config().name, e.what());
    }
  }
}

std::size_t actor_system::run_until_idle() {
  if (!impl_->sched().manual()) {
    throw error(errc::invalid_config, "run_until_idle needs system_config::with_manual_scheduling");
  }
  return impl_->run_manual_turns();
}

}  // namespace troupe
