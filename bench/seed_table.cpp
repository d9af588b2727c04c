#include "seed_table.hpp"

#include <cmath>
#include <cstdio>

namespace troupe::bench::seed {

namespace {

std::function<bool(const measurement&)> share_of_bound(double f) {
  return [f](const measurement& m) { return m.msgs_per_s >= f * m.bound_msgs_per_s; };
}

/// The issue-14 form: the slowest run too, not only the median.
std::function<bool(const measurement&)> worst_share_of_bound(double f) {
  return [f](const measurement& m) { return m.worst >= f * m.bound_msgs_per_s; };
}

std::function<bool(const measurement&)> at_least(double v) {
  return [v](const measurement& m) { return m.msgs_per_s >= v; };
}

/// 6080000 -> "6.08 M", 90931 -> "90.9 k", 937 -> "937".
std::string human(double v) {
  char buf[64];
  if (!std::isfinite(v) || v <= 0) return "-";
  if (v >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f M", v / 1e6);
  } else if (v >= 1e4) {
    std::snprintf(buf, sizeof buf, "%.1f k", v / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  }
  return buf;
}

}  // namespace

std::vector<table_row> default_rows(double io_ms, std::uint64_t seed, std::size_t workers) {
  std::vector<table_row> rows;
  auto row = [&](std::string label, std::int64_t messages, std::int64_t keys, distribution d,
                 mode how, std::uint32_t shards, std::int64_t batch) -> table_row& {
    table_row r;
    r.label = std::move(label);
    r.spec.messages = messages;
    r.spec.keys = keys;
    r.spec.dist = d;
    r.spec.seed = seed;
    r.config.how = how;
    r.config.shards = shards;
    r.config.batch = batch;
    r.config.io_ms = io_ms;
    r.config.workers = workers;
    rows.push_back(std::move(r));
    return rows.back();
  };
  constexpr auto uniform = distribution::uniform;
  constexpr auto zipf = distribution::zipf;
  constexpr auto actors = mode::shard_actors;
  constexpr auto entities = mode::entities;

  // The guide's section 1 and 3: shard actors, uniform and Zipf 1.1, 10,000 msgs over 1,000 keys.
  const std::uint32_t counts[] = {1, 4, 16, 64, 256};
  const double guide_uniform[] = {937, 3'615, 12'674, 38'336, 90'931};
  const double guide_zipf[] = {0, 2'455, 4'292, 4'665, 4'906};
  for (std::size_t i = 0; i < 5; ++i) {
    auto& r = row("shard-actors uniform " + std::to_string(counts[i]), 10'000, 1'000, uniform,
                  actors, counts[i], 0);
    r.guide = guide_uniform[i];
    r.target = ">= 90% bound";
    r.meets = share_of_bound(0.9);
    if (counts[i] == 256) {
      r.best_other = 72'663;
      r.best_other_by = "Python 3.11";
    }
  }
  for (std::size_t i = 1; i < 5; ++i) {
    auto& r = row("shard-actors zipf " + std::to_string(counts[i]), 10'000, 1'000, zipf, actors,
                  counts[i], 0);
    r.guide = guide_zipf[i];
    r.target = ">= 90% bound";
    r.meets = share_of_bound(0.9);
    if (counts[i] == 256) {
      r.best_other = 4'995;
      r.best_other_by = "Python 3.11";
    }
  }
  // The guide's section 4: batch inside the shard (write_many of up to 200).
  for (std::size_t i = 0; i < 5; ++i) {
    auto& r = row("shard-actors uniform " + std::to_string(counts[i]) + " batch", 10'000, 1'000,
                  uniform, actors, counts[i], 200);
    if (counts[i] == 256) {
      r.best_other = 1'597'322;
      r.best_other_by = "CAF 0.17.6";
    }
  }
  for (std::size_t i = 1; i < 5; ++i) {
    auto& r = row("shard-actors zipf " + std::to_string(counts[i]) + " batch", 10'000, 1'000, zipf,
                  actors, counts[i], 200);
    if (counts[i] == 256) {
      r.best_other = 785'216;
      r.best_other_by = "CAF 0.17.6";
    }
  }
  // Troupe's own design: one entity per key.
  {
    auto& u = row("entities uniform", 10'000, 1'000, uniform, entities, 64, 0);
    u.best_other = 304'479;
    u.best_other_by = "CAF actor/key";
    u.target = ">= 90% bound";
    u.meets = share_of_bound(0.9);
    auto& z = row("entities zipf", 10'000, 1'000, zipf, entities, 64, 0);
    z.best_other = 5'127;
    z.best_other_by = "CAF actor/key";
    z.target = ">= 95% bound";
    z.meets = share_of_bound(0.95);
    row("entities uniform batch", 10'000, 1'000, uniform, entities, 64, 200);
    row("entities zipf batch", 10'000, 1'000, zipf, entities, 64, 200);
  }
  // The scaled workload: 1,000,000 messages over 100,000 keys. Zipf without batching is left
  // out: its hot key alone needs ~143 s.
  {
    auto& a = row("scaled shard-actors uniform 256", 1'000'000, 100'000, uniform, actors, 256, 0);
    a.best_other = 186'572;
    a.best_other_by = "CAF 0.17.6";
    auto& ab =
        row("scaled shard-actors uniform 256 batch", 1'000'000, 100'000, uniform, actors, 256, 200);
    ab.best_other = 1'483'044;
    ab.best_other_by = "CAF 0.17.6";
    auto& az =
        row("scaled shard-actors zipf 256 batch", 1'000'000, 100'000, zipf, actors, 256, 200);
    az.best_other = 780'350;
    az.best_other_by = "CAF 0.17.6";
    auto& e = row("scaled entities uniform", 1'000'000, 100'000, uniform, entities, 64, 0);
    e.target = ">= 1 M";
    e.meets = at_least(1e6);
    auto& eb = row("scaled entities uniform batch", 1'000'000, 100'000, uniform, entities, 64, 200);
    eb.best_other = 1'483'044;
    eb.best_other_by = "CAF 256 shards batched";
    eb.target = ">= 3 M";
    eb.meets = at_least(3e6);
    auto& ez = row("scaled entities zipf batch", 1'000'000, 100'000, zipf, entities, 64, 200);
    ez.best_other = 780'350;
    ez.best_other_by = "CAF 256 shards batched";
    ez.target = ">= 90% bound, worst run";
    ez.meets = worst_share_of_bound(0.9);
  }
  return rows;
}

void print_table(const std::vector<table_row>& rows, const std::vector<measurement>& results) {
  const char* const fmt = "%-38s %10s %10s %10s %6s %6s %10s %10s %-22s %-13s %s\n";
  std::printf("\n");
  std::printf(fmt, "case (msgs/s)", "Troupe", "worst", "bound", "%bnd", "%worst", "guide",
              "best other", "(by)", "target", "");
  for (std::size_t i = 0; i < rows.size() && i < results.size(); ++i) {
    const auto& r = rows[i];
    const auto& m = results[i];
    char share[16];
    std::snprintf(share, sizeof share, "%.0f%%", 100 * m.msgs_per_s / m.bound_msgs_per_s);
    char worst_share[16];
    std::snprintf(worst_share, sizeof worst_share, "%.0f%%", 100 * m.worst / m.bound_msgs_per_s);
    std::string status;
    if (!m.error.empty()) {
      status = "FAILED: " + m.error;
    } else if (r.meets) {
      status = r.meets(m) ? "ok" : "MISSED";
    }
    if (cut_short(m)) {
      char once[64];
      std::snprintf(once, sizeof once, "%s%zu of %d runs (10 s rule)", status.empty() ? "" : ", ",
                    m.runs.size(), m.runs_asked);
      status += once;
    }
    if (m.error.empty() && r.best_other) {
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%s%.1fx best other", status.empty() ? "" : ", ",
                    m.msgs_per_s / *r.best_other);
      status += ratio;
    }
    std::printf(fmt, r.label.c_str(), human(m.msgs_per_s).c_str(), human(m.worst).c_str(),
                human(m.bound_msgs_per_s).c_str(), share, worst_share,
                r.guide && *r.guide > 0 ? human(*r.guide).c_str() : "-",
                r.best_other ? human(*r.best_other).c_str() : "-", r.best_other_by.c_str(),
                r.target.empty() ? "-" : r.target.c_str(), status.c_str());
  }
  std::printf(
      "(median msgs/s of the runs and the worst run, but a row repeats only while its runs took "
      "under 10 s: "
      "\"1 of 3 runs (10 s rule)\" marks a row that ran fewer times; bound: messages / (busiest "
      "key's or shard's serial writes x io); guide: "
      "Python 3.14 figures published in the guide; best other: issue 4, same key sequence on "
      "this machine kind)\n");
}

}  // namespace troupe::bench::seed
