#pragma once
/// Metrics the runtime records and something outside reads: counters, gauges and histograms
/// with fixed buckets, grouped in labelled families that a metrics_registry owns.
///
/// Recording is a relaxed atomic add on a child the caller looked up once and kept: no lock,
/// no allocation, no text. Reading (metrics_registry::collect) copies the numbers into a plain
/// snapshot while writers go on; turning it into text is the observability layer's job.
///
///     auto& messages = registry.counter_family("troupe_entity_messages_total",
///                                              "Messages handled by entities", {"type", "shard"});
///     troupe::counter& cart_17 = messages.with({"cart", "17"});   // once, under the family lock
///     cart_17.inc();                                               // on the hot path

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace troupe {

// -- names --------------------------------------------------------------------

/// True when `name` is a valid Prometheus metric name: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
[[nodiscard]] bool is_valid_metric_name(std::string_view name) noexcept;

/// True when `name` is a valid Prometheus label name: `[a-zA-Z_][a-zA-Z0-9_]*`, and does not
/// start with `__` (reserved for Prometheus' own labels).
[[nodiscard]] bool is_valid_label_name(std::string_view name) noexcept;

/// The label value every label of a family's overflow child carries (see metric_family::with).
inline constexpr std::string_view metrics_overflow_label_value = "__overflow__";

/// The counter family in which a registry counts the children its capped families refused,
/// labelled `family`. It exists once a family with a cap does.
inline constexpr std::string_view metrics_refused_children_name =
    "troupe_metrics_refused_children_total";

// -- metrics ------------------------------------------------------------------

/// A monotonic count. Whole increments are one relaxed fetch_add on an integer; fractional ones
/// go to a second, floating-point cell. Negative and NaN amounts are ignored (a counter never
/// goes down; a hot path must not throw).
class counter {
 public:
  counter() = default;
  counter(const counter&) = delete;
  counter& operator=(const counter&) = delete;

  void inc() noexcept { whole_.fetch_add(1, std::memory_order_relaxed); }
  template <std::integral Int>
  void add(Int n) noexcept {
    if constexpr (std::is_signed_v<Int>) {
      if (n < 0) return;
    }
    whole_.fetch_add(static_cast<std::uint64_t>(n), std::memory_order_relaxed);
  }
  void add(double amount) noexcept {
    if (amount > 0) fraction_.fetch_add(amount, std::memory_order_relaxed);
  }

  /// The total so far (the whole part plus the fractional part, as a double).
  [[nodiscard]] double value() const noexcept {
    return static_cast<double>(whole_.load(std::memory_order_relaxed)) +
           fraction_.load(std::memory_order_relaxed);
  }

 private:
  // Aligned so that two children allocated side by side do not share a cache line.
  alignas(64) std::atomic<std::uint64_t> whole_{0};
  std::atomic<double> fraction_{0.0};
};

/// A value that goes up and down (entities alive, a buffer's depth).
class gauge {
 public:
  gauge() = default;
  gauge(const gauge&) = delete;
  gauge& operator=(const gauge&) = delete;

  void set(double v) noexcept { value_.store(v, std::memory_order_relaxed); }
  void add(double v) noexcept { value_.fetch_add(v, std::memory_order_relaxed); }
  void sub(double v) noexcept { value_.fetch_sub(v, std::memory_order_relaxed); }
  void inc() noexcept { add(1.0); }
  void dec() noexcept { sub(1.0); }

  [[nodiscard]] double value() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  alignas(64) std::atomic<double> value_{0.0};
};

/// What a histogram holds at one moment, buckets already cumulative.
struct histogram_data {
  /// The finite upper bounds, strictly increasing; the implicit last bucket is +Inf.
  std::vector<double> upper_bounds;
  /// upper_bounds.size() + 1 counts: observations <= upper_bounds[i]; the last one is `count`.
  std::vector<std::uint64_t> cumulative_counts;
  double sum = 0.0;
  std::uint64_t count = 0;
};

/// Counts observations into buckets whose upper bounds are fixed at creation. A value equal to
/// a bound falls in that bound's bucket (Prometheus' `le`); NaN falls only in +Inf. Observing
/// is two relaxed atomic adds (its bucket and the sum): the count is the buckets' total, so a
/// snapshot's +Inf bucket always equals its count.
class histogram {
 public:
  /// Bounds must be strictly increasing and not NaN; a trailing +Inf is dropped (it is always
  /// there). Throws std::invalid_argument otherwise.
  explicit histogram(std::vector<double> upper_bounds);
  histogram(const histogram&) = delete;
  histogram& operator=(const histogram&) = delete;

  void observe(double v) noexcept {
    buckets_[bucket_index(v)].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(v, std::memory_order_relaxed);
  }

  [[nodiscard]] const std::vector<double>& upper_bounds() const noexcept { return bounds_; }
  /// A copy of the numbers, read bucket by bucket while observers go on.
  [[nodiscard]] histogram_data read() const;

 private:
  [[nodiscard]] std::size_t bucket_index(double v) const noexcept;

  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;  // bounds_.size() + 1, not cumulative
  alignas(64) std::atomic<double> sum_{0.0};
};

/// `count` bounds: start, start + width, ... (width > 0).
[[nodiscard]] std::vector<double> linear_buckets(double start, double width, std::size_t count);
/// `count` bounds: start, start * factor, ... (start > 0, factor > 1).
[[nodiscard]] std::vector<double> exponential_buckets(double start, double factor,
                                                      std::size_t count);

// -- snapshot -----------------------------------------------------------------

enum class metric_type { counter, gauge, histogram };

/// "counter", "gauge" or "histogram": the word Prometheus' `# TYPE` line uses.
[[nodiscard]] const char* to_string(metric_type type) noexcept;

/// One labelled child at the moment of collect().
struct metric_child_snapshot {
  /// In the order of the family's label names.
  std::vector<std::string> label_values;
  /// The counter's or gauge's value; unused for histograms.
  double value = 0.0;
  /// Histograms only.
  histogram_data histogram;
};

struct metric_family_snapshot {
  std::string name;
  std::string help;
  metric_type type = metric_type::counter;
  std::vector<std::string> label_names;
  /// Ordered by label values; the overflow child, if any, last.
  std::vector<metric_child_snapshot> children;
};

/// Everything a registry holds, families ordered by name.
struct metrics_snapshot {
  std::vector<metric_family_snapshot> families;
};

// -- families -----------------------------------------------------------------

namespace detail {

/// A family's child behind a common base, so that the family's bookkeeping lives in one
/// non-template class.
struct metric_child_base {
  virtual ~metric_child_base() = default;
  virtual void read_into(metric_child_snapshot& out) const = 0;
};

template <class Metric>
struct metric_child final : metric_child_base {
  template <class... Args>
  explicit metric_child(Args&&... args) : metric(std::forward<Args>(args)...) {}
  void read_into(metric_child_snapshot& out) const override {
    if constexpr (std::is_same_v<Metric, troupe::histogram>) {
      out.histogram = metric.read();
    } else {
      out.value = metric.value();
    }
  }
  Metric metric;
};

// Orders label-value lists of std::string or std::string_view alike, so that a lookup needs no
// allocation.
struct label_values_less {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    return std::lexicographical_compare(
        a.begin(), a.end(), b.begin(), b.end(),
        [](const auto& x, const auto& y) { return std::string_view(x) < std::string_view(y); });
  }
};

class metric_family_base {
 public:
  metric_family_base(std::string name, std::string help, metric_type type,
                     std::vector<std::string> label_names, std::vector<double> upper_bounds,
                     std::size_t max_children, counter* refused_counter);
  metric_family_base(const metric_family_base&) = delete;
  metric_family_base& operator=(const metric_family_base&) = delete;
  virtual ~metric_family_base();

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const std::string& help() const noexcept { return help_; }
  [[nodiscard]] metric_type type() const noexcept { return type_; }
  [[nodiscard]] const std::vector<std::string>& label_names() const noexcept {
    return label_names_;
  }
  [[nodiscard]] const std::vector<double>& upper_bounds() const noexcept { return bounds_; }
  [[nodiscard]] std::size_t max_children() const noexcept { return max_children_; }

  /// Children exported now (removed ones and the overflow child not counted).
  [[nodiscard]] std::size_t size() const;
  /// How many times with() gave the overflow child because the family was full.
  [[nodiscard]] std::uint64_t refused() const noexcept {
    return refused_.load(std::memory_order_relaxed);
  }

  void collect_into(metric_family_snapshot& out) const;

 protected:
  metric_child_base& child(std::span<const std::string_view> label_values);
  bool remove_child(std::span<const std::string_view> label_values);
  bool forget_child(std::span<const std::string_view> label_values);

 private:
  using child_map =
      std::map<std::vector<std::string>, std::unique_ptr<metric_child_base>, label_values_less>;

  [[nodiscard]] std::unique_ptr<metric_child_base> make_child() const;
  void check_arity(std::span<const std::string_view> label_values) const;

  const std::string name_;
  const std::string help_;
  const metric_type type_;
  const std::vector<std::string> label_names_;
  const std::vector<double> bounds_;
  const std::size_t max_children_;
  counter* const refused_counter_;  // in the registry's refused-children family; may be null
  std::atomic<std::uint64_t> refused_{0};

  mutable std::mutex mutex_;
  child_map live_;
  // Removed children stay allocated (a hot path may still hold one) and come back if their
  // labels are asked for again, so a counter stays monotonic across a remove and a re-add.
  child_map retired_;
  std::unique_ptr<metric_child_base> overflow_;
};

}  // namespace detail

/// The children of one metric name, one per combination of label values.
template <class Metric>
class metric_family final : public detail::metric_family_base {
 public:
  using detail::metric_family_base::metric_family_base;

  /// The child for these label values (one per label name, in order; throws
  /// std::invalid_argument on a count mismatch). Created on first use under the family's lock:
  /// look it up once and keep the reference, which stays valid as long as the registry. When
  /// the family already holds max_children children, returns the shared overflow child (every
  /// label value metrics_overflow_label_value) and counts a refusal.
  Metric& with(std::initializer_list<std::string_view> label_values) {
    return with(std::span<const std::string_view>(label_values.begin(), label_values.size()));
  }
  Metric& with(std::span<const std::string_view> label_values) {
    return static_cast<detail::metric_child<Metric>&>(child(label_values)).metric;
  }
  /// The same, for any range of strings (std::vector<std::string>, ...).
  template <std::ranges::input_range Range>
  requires std::convertible_to<std::ranges::range_reference_t<Range>, std::string_view> Metric&
  with(const Range& label_values) {
    std::vector<std::string_view> views(std::ranges::begin(label_values),
                                        std::ranges::end(label_values));
    return with(std::span<const std::string_view>(views));
  }

  /// Stops exporting the child with these label values (a shard that left the node). The child
  /// stays valid: references held elsewhere may go on recording, unseen, and asking for the
  /// same labels again brings it back with its value. False when there was no such child.
  bool remove(std::initializer_list<std::string_view> label_values) {
    return remove_child(
        std::span<const std::string_view>(label_values.begin(), label_values.size()));
  }
  bool remove(std::span<const std::string_view> label_values) { return remove_child(label_values); }

  /// Stops exporting the child with these label values and frees it, for labels that churn
  /// (the hottest keys of the moment) where remove() would keep every one ever seen. Only for
  /// a child no one holds a reference to: one looked up and written at once, as a refresh
  /// does. False when there was no such child.
  bool forget(std::span<const std::string_view> label_values) { return forget_child(label_values); }
};

// -- registry -----------------------------------------------------------------

/// Owns metric families and their children; every reference it hands out stays valid until it
/// is destroyed. Thread-safe: families and children may be created, removed and collected from
/// any thread while others record.
class metrics_registry {
 public:
  /// No cap on the children of a family.
  static constexpr std::size_t unlimited = 0;

  metrics_registry();
  metrics_registry(const metrics_registry&) = delete;
  metrics_registry& operator=(const metrics_registry&) = delete;
  ~metrics_registry();

  /// The counter family `name` (which must end in `_total`), created on first call. A second
  /// call with the same definition returns the same family; one with another definition (type,
  /// help, labels, cap) throws std::invalid_argument, as do invalid names. `max_children`
  /// bounds the label cardinality (see metric_family::with).
  metric_family<counter>& counter_family(std::string_view name, std::string_view help,
                                         std::vector<std::string> label_names = {},
                                         std::size_t max_children = unlimited);
  /// The gauge family `name`, as counter_family.
  metric_family<gauge>& gauge_family(std::string_view name, std::string_view help,
                                     std::vector<std::string> label_names = {},
                                     std::size_t max_children = unlimited);
  /// The histogram family `name`, every child with these bucket bounds (see histogram); `le`
  /// is not allowed as a label name.
  metric_family<histogram>& histogram_family(std::string_view name, std::string_view help,
                                             std::vector<std::string> label_names,
                                             std::vector<double> upper_bounds,
                                             std::size_t max_children = unlimited);

  /// A copy of every family's numbers, taken while writers go on: each value is one that its
  /// metric held during the call. Families without children are included. The collect hooks
  /// run first, one collect at a time.
  [[nodiscard]] metrics_snapshot collect() const;

  /// Runs `refresh` at the start of every collect(): for figures the runtime already keeps
  /// (a shard's counts), copied into metrics when someone reads them rather than on each
  /// message. `refresh` may create and update this registry's metrics. Returns a handle for
  /// remove_collect_hook.
  std::uint64_t add_collect_hook(std::function<void()> refresh);
  /// Removes a hook; once it returns, the hook is not running and never runs again.
  void remove_collect_hook(std::uint64_t handle);

 private:
  detail::metric_family_base& family(std::string_view name, std::string_view help, metric_type type,
                                     std::vector<std::string> label_names,
                                     std::vector<double> upper_bounds, std::size_t max_children);

  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<detail::metric_family_base>, std::less<>> families_;
  // Held while hooks run (never with mutex_): a removed hook is not running.
  mutable std::mutex hooks_mutex_;
  std::map<std::uint64_t, std::function<void()>> hooks_;
  std::uint64_t next_hook_ = 1;
};

}  // namespace troupe
