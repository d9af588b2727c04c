#include <troupe/sharding/coordination/strategy_config.hpp>

#include <string>

namespace troupe::sharding::coordination {
namespace {

const std::string base = "troupe.sharding.";

[[noreturn]] void fail(const config& file, const std::string& key, const std::string& what) {
  const std::string where = file.origin_of(base + key);
  throw config_error((where.empty() ? std::string() : where + ": ") + base + key + ": " + what);
}

}  // namespace

std::unique_ptr<allocation_strategy> strategy_from_config(const config& file) {
  rebalance_limits limits;
  if (auto r = file.get_double(base + "rebalance-relative-limit")) {
    if (!(*r > 0.0 && *r <= 1.0)) {
      fail(file, "rebalance-relative-limit",
           "must be above 0 and at most 1 (the share of the shards one round may move), got " +
               std::to_string(*r));
    }
    limits.relative = *r;
  }
  if (auto a = file.get_int(base + "rebalance-absolute-limit")) {
    if (*a < 1) {
      fail(file, "rebalance-absolute-limit",
           "must be at least 1 (the shards one round may move), got " + std::to_string(*a));
    }
    limits.absolute = static_cast<std::size_t>(*a);
  }
  const std::string name =
      file.get_string(base + "allocation-strategy").value_or("hash-mod-regions");
  if (name == "hash-mod-regions") return make_hash_mod_regions_strategy(limits);
  if (name == "least-shards") return make_least_shards_strategy(limits);
  if (name == "load-aware") return make_load_aware_strategy(load_aware_options{.limits = limits});
  fail(file, "allocation-strategy",
       "expected hash-mod-regions, least-shards or load-aware, got \"" + name + "\"");
}

}  // namespace troupe::sharding::coordination
