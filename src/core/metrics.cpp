// The metrics registry's bookkeeping: name checks, histogram buckets, families with their
// children (created, capped, removed, read) and the registry that owns the families.
#include "troupe/core/metrics.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace troupe {

namespace {

bool is_name_start(char c, bool allow_colon) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
}

bool is_name_char(char c, bool allow_colon) noexcept {
  return is_name_start(c, allow_colon) || (c >= '0' && c <= '9');
}

bool is_valid_name(std::string_view name, bool allow_colon) noexcept {
  if (name.empty() || !is_name_start(name.front(), allow_colon)) return false;
  return std::all_of(name.begin() + 1, name.end(),
                     [allow_colon](char c) { return is_name_char(c, allow_colon); });
}

[[noreturn]] void invalid(const std::string& what) { throw std::invalid_argument(what); }

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

bool ends_with(std::string_view s, std::string_view suffix) noexcept {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The bounds a histogram keeps: checked, with a trailing +Inf dropped.
std::vector<double> checked_bounds(std::vector<double> bounds) {
  if (!bounds.empty() && bounds.back() == std::numeric_limits<double>::infinity()) {
    bounds.pop_back();
  }
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (std::isnan(bounds[i])) invalid("histogram bucket bound " + std::to_string(i) + " is NaN");
    if (std::isinf(bounds[i]) && bounds[i] > 0) {
      invalid("histogram bucket bound +Inf must be the last one");
    }
    if (i > 0 && !(bounds[i - 1] < bounds[i])) {
      invalid("histogram bucket bounds must be strictly increasing (bound " + std::to_string(i) +
              " is not greater than bound " + std::to_string(i - 1) + ")");
    }
  }
  return bounds;
}

// The suffixes a histogram's samples add to its name; another family must not take them.
constexpr std::string_view histogram_suffixes[] = {"_bucket", "_sum", "_count"};

}  // namespace

bool is_valid_metric_name(std::string_view name) noexcept { return is_valid_name(name, true); }

bool is_valid_label_name(std::string_view name) noexcept {
  return is_valid_name(name, false) && !name.starts_with("__");
}

// -- histogram ----------------------------------------------------------------

histogram::histogram(std::vector<double> upper_bounds)
    : bounds_(checked_bounds(std::move(upper_bounds))),
      buckets_(std::make_unique<std::atomic<std::uint64_t>[]>(bounds_.size() + 1)) {}

std::size_t histogram::bucket_index(double v) const noexcept {
  // The first bound >= v; NaN compares false with every bound and so lands in +Inf.
  if (std::isnan(v)) return bounds_.size();
  return static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) -
                                  bounds_.begin());
}

histogram_data histogram::read() const {
  histogram_data out;
  out.upper_bounds = bounds_;
  out.cumulative_counts.resize(bounds_.size() + 1);
  std::uint64_t running = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    out.cumulative_counts[i] = running;
  }
  out.count = running;
  out.sum = sum_.load(std::memory_order_relaxed);
  return out;
}

std::vector<double> linear_buckets(double start, double width, std::size_t count) {
  if (!(width > 0)) invalid("linear_buckets: width must be greater than 0");
  std::vector<double> bounds(count);
  for (std::size_t i = 0; i < count; ++i) bounds[i] = start + width * static_cast<double>(i);
  return bounds;
}

std::vector<double> exponential_buckets(double start, double factor, std::size_t count) {
  if (!(start > 0)) invalid("exponential_buckets: start must be greater than 0");
  if (!(factor > 1)) invalid("exponential_buckets: factor must be greater than 1");
  std::vector<double> bounds(count);
  double bound = start;
  for (std::size_t i = 0; i < count; ++i, bound *= factor) bounds[i] = bound;
  return bounds;
}

// -- families -----------------------------------------------------------------

namespace detail {

metric_family_base::metric_family_base(std::string name, std::string help, metric_type type,
                                       std::vector<std::string> label_names,
                                       std::vector<double> upper_bounds, std::size_t max_children,
                                       counter* refused_counter)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(label_names)),
      bounds_(std::move(upper_bounds)),
      max_children_(max_children),
      refused_counter_(refused_counter) {
  // A family without labels has exactly one child, exported from the start (at zero).
  if (label_names_.empty()) live_.emplace(std::vector<std::string>{}, make_child());
}

metric_family_base::~metric_family_base() = default;

std::unique_ptr<metric_child_base> metric_family_base::make_child() const {
  switch (type_) {
    case metric_type::counter:
      return std::make_unique<metric_child<counter>>();
    case metric_type::gauge:
      return std::make_unique<metric_child<gauge>>();
    case metric_type::histogram:
      return std::make_unique<metric_child<histogram>>(bounds_);
  }
  return nullptr;
}

void metric_family_base::check_arity(std::span<const std::string_view> label_values) const {
  if (label_values.size() != label_names_.size()) {
    invalid("metric " + quoted(name_) + " has " + std::to_string(label_names_.size()) +
            " label(s) but was given " + std::to_string(label_values.size()) + " value(s)");
  }
}

std::size_t metric_family_base::size() const {
  std::lock_guard lock(mutex_);
  return live_.size();
}

metric_child_base& metric_family_base::child(std::span<const std::string_view> label_values) {
  check_arity(label_values);
  std::lock_guard lock(mutex_);
  if (auto it = live_.find(label_values); it != live_.end()) return *it->second;
  if (max_children_ != 0 && live_.size() >= max_children_) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    if (refused_counter_ != nullptr) refused_counter_->inc();
    if (!overflow_) overflow_ = make_child();
    return *overflow_;
  }
  if (auto it = retired_.find(label_values); it != retired_.end()) {
    auto node = retired_.extract(it);
    return *live_.insert(std::move(node)).position->second;
  }
  std::vector<std::string> key(label_values.begin(), label_values.end());
  return *live_.emplace(std::move(key), make_child()).first->second;
}

bool metric_family_base::remove_child(std::span<const std::string_view> label_values) {
  check_arity(label_values);
  std::lock_guard lock(mutex_);
  auto it = live_.find(label_values);
  if (it == live_.end()) return false;
  retired_.insert(live_.extract(it));
  return true;
}

bool metric_family_base::forget_child(std::span<const std::string_view> label_values) {
  check_arity(label_values);
  std::lock_guard lock(mutex_);
  if (auto it = live_.find(label_values); it != live_.end()) {
    live_.erase(it);
    return true;
  }
  if (auto it = retired_.find(label_values); it != retired_.end()) retired_.erase(it);
  return false;
}

void metric_family_base::collect_into(metric_family_snapshot& out) const {
  out.name = name_;
  out.help = help_;
  out.type = type_;
  out.label_names = label_names_;
  std::lock_guard lock(mutex_);
  out.children.reserve(live_.size() + (overflow_ ? 1 : 0));
  for (const auto& [labels, child] : live_) {
    auto& snapshot = out.children.emplace_back();
    snapshot.label_values = labels;
    child->read_into(snapshot);
  }
  if (overflow_) {
    auto& snapshot = out.children.emplace_back();
    snapshot.label_values.assign(label_names_.size(), std::string(metrics_overflow_label_value));
    overflow_->read_into(snapshot);
  }
}

}  // namespace detail

const char* to_string(metric_type type) noexcept {
  switch (type) {
    case metric_type::counter:
      return "counter";
    case metric_type::gauge:
      return "gauge";
    case metric_type::histogram:
      return "histogram";
  }
  return "untyped";
}

// -- registry -----------------------------------------------------------------

metrics_registry::metrics_registry() = default;
metrics_registry::~metrics_registry() = default;

metric_family<counter>& metrics_registry::counter_family(std::string_view name,
                                                         std::string_view help,
                                                         std::vector<std::string> label_names,
                                                         std::size_t max_children) {
  return static_cast<metric_family<counter>&>(
      family(name, help, metric_type::counter, std::move(label_names), {}, max_children));
}

metric_family<gauge>& metrics_registry::gauge_family(std::string_view name, std::string_view help,
                                                     std::vector<std::string> label_names,
                                                     std::size_t max_children) {
  return static_cast<metric_family<gauge>&>(
      family(name, help, metric_type::gauge, std::move(label_names), {}, max_children));
}

metric_family<histogram>& metrics_registry::histogram_family(std::string_view name,
                                                             std::string_view help,
                                                             std::vector<std::string> label_names,
                                                             std::vector<double> upper_bounds,
                                                             std::size_t max_children) {
  return static_cast<metric_family<histogram>&>(family(name, help, metric_type::histogram,
                                                       std::move(label_names),
                                                       std::move(upper_bounds), max_children));
}

detail::metric_family_base& metrics_registry::family(std::string_view name, std::string_view help,
                                                     metric_type type,
                                                     std::vector<std::string> label_names,
                                                     std::vector<double> upper_bounds,
                                                     std::size_t max_children) {
  // Everything that can throw runs before the registry changes.
  if (!is_valid_metric_name(name)) {
    invalid("invalid metric name " + quoted(name) + ": it must match [a-zA-Z_:][a-zA-Z0-9_:]*");
  }
  if (type == metric_type::counter && !ends_with(name, "_total")) {
    invalid("invalid counter name " + quoted(name) + ": a counter's name ends in _total");
  }
  for (std::size_t i = 0; i < label_names.size(); ++i) {
    const auto& label = label_names[i];
    if (!is_valid_label_name(label)) {
      invalid("invalid label name " + quoted(label) + " for metric " + quoted(name) +
              ": it must match [a-zA-Z_][a-zA-Z0-9_]* and not start with __");
    }
    if (type == metric_type::histogram && label == "le") {
      invalid("histogram " + quoted(name) + " cannot have a label named 'le'");
    }
    if (std::find(label_names.begin(), label_names.begin() + static_cast<std::ptrdiff_t>(i),
                  label) != label_names.begin() + static_cast<std::ptrdiff_t>(i)) {
      invalid("metric " + quoted(name) + " names label " + quoted(label) + " twice");
    }
  }
  if (type == metric_type::histogram) upper_bounds = checked_bounds(std::move(upper_bounds));

  std::lock_guard lock(mutex_);
  if (auto it = families_.find(name); it != families_.end()) {
    const auto& existing = *it->second;
    if (existing.type() != type || existing.help() != help ||
        existing.label_names() != label_names || existing.upper_bounds() != upper_bounds ||
        existing.max_children() != max_children) {
      invalid("metric " + quoted(name) + " is already registered as a " +
              to_string(existing.type()) + " with another help, labels, buckets or cap");
    }
    return *it->second;
  }
  // A histogram's samples are named <name>_bucket, _sum and _count: no two families may meet
  // there.
  for (auto suffix : histogram_suffixes) {
    if (type == metric_type::histogram) {
      if (families_.contains(std::string(name) + std::string(suffix))) {
        invalid("histogram " + quoted(name) + " would clash with metric " +
                quoted(std::string(name) + std::string(suffix)));
      }
    } else if (ends_with(name, suffix)) {
      auto base = name.substr(0, name.size() - suffix.size());
      if (auto it = families_.find(base);
          it != families_.end() && it->second->type() == metric_type::histogram) {
        invalid("metric " + quoted(name) + " would clash with histogram " + quoted(base));
      }
    }
  }

  counter* refused = nullptr;
  if (max_children != unlimited) {
    auto it = families_.find(metrics_refused_children_name);
    if (it == families_.end()) {
      auto refusals = std::make_unique<metric_family<counter>>(
          std::string(metrics_refused_children_name),
          "Label sets refused because their family was full, by family", metric_type::counter,
          std::vector<std::string>{"family"}, std::vector<double>{}, unlimited, nullptr);
      it = families_.emplace(std::string(metrics_refused_children_name), std::move(refusals)).first;
    }
    refused = &static_cast<metric_family<counter>&>(*it->second).with({name});
  }

  std::unique_ptr<detail::metric_family_base> created;
  std::string owned_name(name);
  std::string owned_help(help);
  switch (type) {
    case metric_type::counter:
      created = std::make_unique<metric_family<counter>>(
          owned_name, owned_help, type, std::move(label_names), std::vector<double>{}, max_children,
          refused);
      break;
    case metric_type::gauge:
      created = std::make_unique<metric_family<gauge>>(
          owned_name, owned_help, type, std::move(label_names), std::vector<double>{}, max_children,
          refused);
      break;
    case metric_type::histogram:
      created = std::make_unique<metric_family<histogram>>(
          owned_name, owned_help, type, std::move(label_names), std::move(upper_bounds),
          max_children, refused);
      break;
  }
  return *families_.emplace(std::move(owned_name), std::move(created)).first->second;
}

std::uint64_t metrics_registry::add_collect_hook(std::function<void()> refresh) {
  if (!refresh) throw std::invalid_argument("metrics_registry: an empty collect hook");
  std::lock_guard lock(hooks_mutex_);
  const std::uint64_t handle = next_hook_++;
  hooks_.emplace(handle, std::move(refresh));
  return handle;
}

void metrics_registry::remove_collect_hook(std::uint64_t handle) {
  std::lock_guard lock(hooks_mutex_);
  hooks_.erase(handle);
}

metrics_snapshot metrics_registry::collect() const {
  {
    std::lock_guard hooks(hooks_mutex_);
    for (const auto& [handle, refresh] : hooks_) refresh();
  }
  metrics_snapshot out;
  std::lock_guard lock(mutex_);
  out.families.resize(families_.size());
  std::size_t i = 0;
  for (const auto& [name, family] : families_) family->collect_into(out.families[i++]);
  return out;
}

}  // namespace troupe
