#include "troupe/sharding/cluster_sharding.hpp"

#include <troupe/core/config.hpp>
#include <troupe/core/dead_letters.hpp>
#include <troupe/sharding/coordination/strategy_config.hpp>
#include <troupe/sharding/entity_path.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <future>
#include <variant>

namespace troupe::sharding {

namespace detail {

namespace {

/// A parent that only groups children: /system/cluster and /system/cluster/sharding.
class container final : public actor<std::monostate> {
  void receive(std::monostate& /*unused*/) override {}
};

/// Waits for an introspection reply. With manual scheduling nobody else runs the actors that
/// answer, so this thread runs them while it waits; the deadline is real time either way.
template <class T>
T await_reply(actor_system& system, std::future<T> reply, duration timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (reply.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
    try {
      system.run_until_idle();
    } catch (const troupe::error&) {
      // threaded scheduling: the workers answer
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw error(errc::ask_timeout, "sharding introspection got no reply in time");
    }
  }
  return reply.get();
}

}  // namespace

troupe::detail::actor_cell& entity_cell_of(const untyped_ref& self) {
  auto* cell = dynamic_cast<troupe::detail::actor_cell*>(self.target());
  if (cell == nullptr || cell->entity_id() == nullptr || cell->parent() == nullptr) {
    throw error(errc::not_an_entity,
                "request_passivation: " + self.path() + " is not a sharded entity's own ref");
  }
  return *cell;
}

void dead_letter_from(actor_context& context, troupe::detail::envelope_base* message, errc code,
                      std::string reason) {
  context.system().dead_letters().publish(message, context.path(), make_error_code(code),
                                          std::move(reason));
}

namespace {

/// A type name as one segment of a config path (quoted when it holds more than [A-Za-z0-9_-]).
std::string path_segment(const std::string& name) {
  const bool plain = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
  });
  if (plain) return name;
  std::string out = "\"";
  for (char c : name) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

/// An entity's failure never fails its shard (and with it every sibling): escalate stops it.
supervisor_strategy contained(supervisor_strategy s) {
  s.decider = [decide = std::move(s.decider)](const std::exception_ptr& e) {
    const directive d = decide ? decide(e) : directive::stop;
    return d == directive::escalate ? directive::stop : d;
  };
  return s;
}

}  // namespace

region_settings resolve_settings(actor_system& system, const std::string& type_name,
                                 std::optional<std::uint32_t> num_shards,
                                 std::optional<duration> passivation_idle,
                                 std::optional<duration> shard_passivation_idle,
                                 std::optional<std::size_t> max_entities, std::optional<bool> proxy,
                                 std::optional<bool> remember_entities,
                                 std::optional<std::string> role, const entity_options& entity,
                                 std::optional<std::size_t> shard_capacity) {
  // Code overrides the node's file, which overrides the defaults (shared/DESIGN.md); in the
  // file, the type's own section (troupe.sharding.types."<type>") overrides the node's baseline.
  const config& file = system.config();
  const std::string base = "troupe.sharding";
  const std::string own = base + ".types." + path_segment(type_name);
  file.check_known_keys(
      base,
      {"number-of-shards", "remember-entities", "remember-entities-start-rate",
       "entity-restart-backoff", "passivation-idle", "shard-passivation-idle", "max-entities",
       "buffer-size", "entity-mailbox-capacity", "entity-mailbox-overflow", "entity-supervision",
       "shard-capacity", "rebalance-interval", "hand-off-timeout", "leave-timeout",
       "allocation-strategy", "rebalance-relative-limit", "rebalance-absolute-limit", "types"});
  if (file.has(own)) {
    file.check_known_keys(
        own, {"number-of-shards", "remember-entities", "remember-entities-start-rate",
              "entity-restart-backoff", "passivation-idle", "shard-passivation-idle",
              "max-entities", "buffer-size", "entity-mailbox-capacity", "entity-mailbox-overflow",
              "entity-supervision", "shard-capacity"});
  }
  auto key = [&](const char* k) {
    std::string in_type = own + "." + k;
    return file.has(in_type) ? in_type : base + "." + k;
  };
  auto fail = [&](const char* k, const std::string& what) {
    const std::string where = file.origin_of(key(k));
    throw config_error((where.empty() ? std::string() : where + ": ") + key(k) + ": " + what +
                       " (sharding type '" + type_name + "')");
  };

  region_settings s;
  s.type_name = type_name;
  std::int64_t shards = num_shards ? static_cast<std::int64_t>(*num_shards)
                                   : file.get_int(key("number-of-shards")).value_or(s.num_shards);
  if (shards < 1 || shards > 1'000'000) fail("number-of-shards", "must be between 1 and 1000000");
  s.num_shards = static_cast<std::uint32_t>(shards);

  s.passivation_idle =
      passivation_idle ? *passivation_idle
                       : file.get_duration(key("passivation-idle")).value_or(s.passivation_idle);
  if (s.passivation_idle < duration::zero()) fail("passivation-idle", "must not be negative");
  // Unset, the shard window follows the entity window; 0 keeps empty shards resident.
  s.shard_passivation_idle =
      shard_passivation_idle
          ? *shard_passivation_idle
          : file.get_duration(key("shard-passivation-idle")).value_or(s.passivation_idle);
  if (s.shard_passivation_idle < duration::zero()) {
    fail("shard-passivation-idle", "must not be negative");
  }
  const std::int64_t max = max_entities ? static_cast<std::int64_t>(*max_entities)
                                        : file.get_int(key("max-entities")).value_or(0);
  if (max < 0) fail("max-entities", "must not be negative");
  s.max_entities = static_cast<std::size_t>(max);
  const std::int64_t buffer = file.get_int(key("buffer-size")).value_or(100'000);
  if (buffer < 1) fail("buffer-size", "must be at least 1");
  s.buffer_size = static_cast<std::size_t>(buffer);
  s.remember_entities = remember_entities ? *remember_entities
                                          : file.get_bool(key("remember-entities")).value_or(false);
  const std::int64_t start_rate = file.get_int(key("remember-entities-start-rate")).value_or(1000);
  if (start_rate < 1)
    fail("remember-entities-start-rate", "must be at least 1 (entities per second)");
  s.remember_start_rate = static_cast<std::size_t>(start_rate);
  s.entity_restart_backoff =
      file.get_duration(key("entity-restart-backoff")).value_or(s.entity_restart_backoff);
  if (s.entity_restart_backoff < duration::zero()) {
    fail("entity-restart-backoff", "must not be negative");
  }

  const std::int64_t in_flight = shard_capacity ? static_cast<std::int64_t>(*shard_capacity)
                                                : file.get_int(key("shard-capacity")).value_or(0);
  if (in_flight < 0) fail("shard-capacity", "must not be negative (0: unbounded)");
  s.shard_capacity = static_cast<std::size_t>(in_flight);

  if (entity.mailbox) {
    s.entity_mailbox = *entity.mailbox;
  } else {
    const std::int64_t capacity = file.get_int(key("entity-mailbox-capacity")).value_or(0);
    if (capacity < 0) fail("entity-mailbox-capacity", "must not be negative (0: unbounded)");
    const std::string overflow = file.get_string(key("entity-mailbox-overflow")).value_or("fail");
    overflow_policy policy = overflow_policy::fail;
    if (overflow == "drop") {
      policy = overflow_policy::drop;
    } else if (overflow == "suspend") {
      policy = overflow_policy::suspend;
    } else if (overflow != "fail") {
      fail("entity-mailbox-overflow", "expected fail, drop or suspend, got \"" + overflow + "\"");
    }
    s.entity_mailbox = mailbox_config{static_cast<std::size_t>(capacity), policy};
  }
  if (entity.supervision) {
    s.entity_supervision = contained(*entity.supervision);
  } else {
    const std::string how = file.get_string(key("entity-supervision")).value_or("stop");
    if (how == "stop") {
      s.entity_supervision = supervisor_strategy::stopping();
    } else if (how == "restart") {
      s.entity_supervision = supervisor_strategy::restarting();
    } else if (how == "resume") {
      s.entity_supervision = supervisor_strategy::resuming();
    } else {
      fail("entity-supervision", "expected stop, restart or resume, got \"" + how + "\"");
    }
  }

  // Validated now; they take effect with the cluster.
  if (auto d = file.get_duration(base + ".rebalance-interval"); d && *d <= duration::zero()) {
    fail("rebalance-interval", "must be positive");
  }
  if (auto d = file.get_duration(base + ".hand-off-timeout"); d && *d <= duration::zero()) {
    fail("hand-off-timeout", "must be positive");
  }
  if (auto d = file.get_duration(base + ".leave-timeout"); d && *d <= duration::zero()) {
    fail("leave-timeout", "must be positive");
  }
  (void)coordination::strategy_from_config(file);  // its keys' errors, before the cluster
  if (proxy) s.proxy = *proxy;
  if (role) s.role = *role;
  return s;
}

}  // namespace detail

cluster_sharding::cluster_sharding(actor_system& system) : system_(system) {
  auto cluster = system.spawn_system_actor<detail::container>("cluster");
  sharding_guardian_ = troupe::detail::spawn_actor<detail::container>(detail::cell_of(cluster),
                                                                      spawn_options("sharding"));
}

cluster_sharding::~cluster_sharding() = default;

untyped_ref cluster_sharding::register_type(
    const std::string& type_name, const std::type_info& message_type,
    std::shared_ptr<const void> setup,
    const std::function<untyped_ref(actor_context&)>& spawn_region,
    std::function<untyped_ref(shard_id)> (*make_shard_ref)(untyped_ref),
    std::function<shard_id(const std::string&)> extract_shard_id, std::uint32_t num_shards) {
  std::lock_guard lock(mutex_);
  if (types_.count(type_name) != 0) {
    throw error(errc::invalid_config, "sharding type '" + type_name + "' is already started");
  }
  actor_context guardian(&detail::cell_of(sharding_guardian_));
  untyped_ref region = spawn_region(guardian);
  types_.emplace(type_name, started_type{region_handle{region, std::move(setup)}, &message_type,
                                         make_shard_ref(region), nullptr, untyped_ref(),
                                         std::move(extract_shard_id), num_shards});
  return region;
}

const cluster_sharding::started_type& cluster_sharding::started(
    const std::string& type_name) const {
  auto it = types_.find(type_name);
  if (it == types_.end()) {
    throw error(errc::invalid_entity_id, "sharding type '" + type_name + "' is not started");
  }
  return it->second;
}

untyped_ref cluster_sharding::shard_ref_for(const std::string& type_name, shard_id shard) {
  std::lock_guard lock(mutex_);
  return started(type_name).shard_ref(shard);
}

cluster_sharding::region_handle cluster_sharding::region_of(
    const std::string& type_name, const std::type_info& message_type) const {
  std::lock_guard lock(mutex_);
  const started_type& type = started(type_name);
  if (*type.message_type != message_type) {
    throw error(errc::invalid_config, "sharding type '" + type_name + "' handles " +
                                          troupe::detail::type_name(*type.message_type) + ", not " +
                                          troupe::detail::type_name(message_type));
  }
  return type.handle;
}

untyped_ref cluster_sharding::input_ref(const std::string& type_name,
                                        const std::type_info& input_type) const {
  std::lock_guard lock(mutex_);
  auto it = types_.find(type_name);
  if (it == types_.end() || it->second.input_type == nullptr ||
      *it->second.input_type != input_type) {
    return {};
  }
  return it->second.input;
}

void cluster_sharding::set_input_ref(const std::string& type_name, const std::type_info& input_type,
                                     untyped_ref ref) {
  std::lock_guard lock(mutex_);
  auto& type = types_.at(type_name);
  type.input_type = &input_type;
  type.input = std::move(ref);
}

void cluster_sharding::region_state_async(
    const std::string& type_name, duration timeout,
    std::function<void(std::exception_ptr, region_state)> done) {
  untyped_ref region;
  try {
    std::lock_guard lock(mutex_);
    region = started(type_name).handle.region;
  } catch (...) {
    done(std::current_exception(), {});
    return;
  }
  region.ask_any<region_state>(detail::get_region_state{}, timeout, std::move(done));
}

region_state cluster_sharding::state(const std::string& type_name, duration timeout) {
  untyped_ref region;
  {
    std::lock_guard lock(mutex_);
    region = started(type_name).handle.region;
  }
  region_state state = detail::await_reply(
      system_,
      region.ask_any<region_state>(detail::get_region_state{}, timeout, troupe::use_future),
      timeout);
  // Each running shard reports its own figures and hot ids (the region does not count per
  // entity: most messages pass it by).
  for (auto& info : state.shards) {
    if (!info.resident) continue;
    try {
      info.stats = detail::await_reply(
          system_,
          shard_ref_for(type_name, info.id)
              .ask_any<shard_stats>(get_shard_stats{}, timeout, troupe::use_future),
          timeout);
    } catch (const troupe::error& e) {
      // A busy shard is the caller's to retry; one that stopped since the region answered (a
      // hand-off, passivation) is described as the region saw it, without its figures.
      if (e.value() == errc::ask_timeout) throw;
      continue;
    }
    info.entity_count = info.stats.entity_count;
    state.hottest.insert(state.hottest.end(), info.stats.hottest.begin(), info.stats.hottest.end());
  }
  // An id lives in one shard: merging is sorting.
  std::sort(state.hottest.begin(), state.hottest.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (state.hottest.size() > 10) state.hottest.resize(10);
  return state;
}

std::vector<shard_info> cluster_sharding::shards(const std::string& type_name, duration timeout) {
  return state(type_name, timeout).shards;
}

std::vector<std::string> cluster_sharding::entity_ids(const std::string& type_name, shard_id shard,
                                                      duration timeout) {
  return detail::await_reply(
      system_,
      shard_ref_for(type_name, shard)
          .ask_any<std::vector<std::string>>(get_entity_ids{}, timeout, troupe::use_future),
      timeout);
}

void cluster_sharding::set_placement_factory(placement_factory factory) {
  std::lock_guard lock(mutex_);
  placement_factory_ = std::move(factory);
}

std::shared_ptr<placement> cluster_sharding::make_placement(const region_settings& settings,
                                                            const std::type_info& message_type) {
  placement_factory factory;
  {
    std::lock_guard lock(mutex_);
    factory = placement_factory_;
  }
  std::shared_ptr<placement> made = factory ? factory(settings, message_type) : nullptr;
  if (!made) made = std::make_shared<single_node_placement>();
  return made;
}

void cluster_sharding::set_remembered_entities_factory(remembered_entities_factory factory) {
  std::lock_guard lock(mutex_);
  remembered_factory_ = std::move(factory);
}

std::shared_ptr<remembered_entities> cluster_sharding::make_memory(
    const region_settings& settings) {
  if (!settings.remember_entities || settings.proxy) return nullptr;
  remembered_entities_factory factory;
  {
    std::lock_guard lock(mutex_);
    factory = remembered_factory_;
  }
  std::shared_ptr<remembered_entities> made = factory ? factory(settings) : nullptr;
  if (!made) {
    throw error(errc::invalid_config,
                "sharding: type '" + settings.type_name +
                    "' remembers its entities but this node has no store for them: join a "
                    "cluster, or call troupe::persistence::remember_entities_in_plugins(system)");
  }
  return made;
}

shard_id cluster_sharding::shard_for(const std::string& type_name,
                                     const std::string& entity_id) const {
  std::function<shard_id(const std::string&)> extract;
  std::uint32_t num_shards = 0;
  {
    std::lock_guard lock(mutex_);
    const started_type& t = started(type_name);
    extract = t.shard_of_id;
    num_shards = t.num_shards;
  }
  // The user's extractor runs outside the lock: it may be slow, or throw. Its shard ids may
  // go past num-shards (they name shards, they are not taken modulo).
  return extract ? extract(entity_id) : shard_of(entity_id, num_shards);
}

std::vector<std::string> cluster_sharding::type_names() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [name, t] : types_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace troupe::sharding
