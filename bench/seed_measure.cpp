#include "seed_measure.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <numeric>

namespace troupe::bench::seed {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string micros(double us) {
  char buf[64];
  if (!std::isfinite(us)) return "-";
  if (us >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f s", us / 1e6);
  } else if (us >= 1000) {
    std::snprintf(buf, sizeof buf, "%.1f ms", us / 1000);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f us", us);
  }
  return buf;
}

std::size_t argmax(const std::vector<std::int64_t>& v) {
  return static_cast<std::size_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

}  // namespace

const char* mode_name(mode m) { return m == mode::entities ? "entities" : "shard-actors"; }
const char* dist_name(distribution d) { return d == distribution::zipf ? "zipf" : "uniform"; }

measurement measure(const workload_spec& spec, const run_config& config, int runs,
                    double repeat_budget_s) {
  measurement m;
  m.spec = spec;
  m.config = config;
  m.runs_asked = runs;
  m.repeat_budget_s = repeat_budget_s;
  const prepared_workload w = prepare(spec);
  m.workload_crc = workload_crc32(w.keys);
  m.workload_shard_counts = per_shard_counts(w.key_counts, config.shards);
  const std::size_t hot_key = argmax(w.key_counts);
  const std::size_t hot_shard = argmax(m.workload_shard_counts);
  const auto messages = static_cast<double>(spec.messages);
  m.hottest_key_share = static_cast<double>(w.key_counts[hot_key]) / messages;
  m.busiest_shard_share = static_cast<double>(m.workload_shard_counts[hot_shard]) / messages;
  if (config.how == mode::entities) {
    m.bound_msgs_per_s =
        bound_msgs_per_s(spec.messages, w.key_counts[hot_key], config.batch, config.io_ms);
    m.hot_unit = "entity " + w.names[hot_key];
    m.hot_unit_messages = w.key_counts[hot_key];
  } else {
    m.bound_msgs_per_s = bound_msgs_per_s(spec.messages, m.workload_shard_counts[hot_shard],
                                          config.batch, config.io_ms);
    m.hot_unit = "shard actor " + std::to_string(hot_shard);
    m.hot_unit_messages = m.workload_shard_counts[hot_shard];
  }
  double spent_s = 0;
  for (int r = 0; r < runs; ++r) {
    if (repeat_budget_s > 0 && spent_s >= repeat_budget_s) break;
    try {
      run_result res = config.how == mode::entities
                           ? run_entities(w, config, static_cast<std::uint32_t>(hot_key))
                           : run_shard_actors(w, config, static_cast<std::uint32_t>(hot_shard));
      m.runs.push_back(res.msgs_per_s);
      spent_s += res.total_s;
      if (!res.order_error.empty()) {
        m.order_ok = false;
        m.error = "per-key order violated: " + res.order_error;
      }
      m.last = std::move(res);
    } catch (const std::exception& e) {
      m.error = e.what();
    }
    if (!m.error.empty()) break;
  }
  m.msgs_per_s = median(m.runs);
  m.worst = m.runs.empty() ? 0 : *std::min_element(m.runs.begin(), m.runs.end());
  return m;
}

bool cut_short(const measurement& m) {
  return m.error.empty() && static_cast<int>(m.runs.size()) < m.runs_asked;
}

std::string json_line(const measurement& m) {
  const auto& c = m.config;
  std::string j =
      "{\"bench\":\"seed\",\"mode\":\"" + std::string(mode_name(c.how)) + "\",\"dist\":\"" +
      dist_name(m.spec.dist) + "\",\"shards\":" + std::to_string(c.shards) +
      ",\"batch\":" + std::to_string(c.batch) +
      ",\"max_concurrent\":" + std::to_string(c.max_concurrent) +
      ",\"messages\":" + std::to_string(m.spec.messages) +
      ",\"keys\":" + std::to_string(m.spec.keys) + ",\"io_ms\":" + num(c.io_ms) +
      ",\"msgs_per_s\":" + num(m.msgs_per_s) + ",\"worst\":" + num(m.worst) + ",\"runs\":[";
  for (std::size_t i = 0; i < m.runs.size(); ++i) j += (i ? "," : "") + num(m.runs[i]);
  j += "],\"runs_asked\":" + std::to_string(m.runs_asked);
  if (cut_short(m)) {
    j += ",\"repeat\":\"" + std::to_string(m.runs.size()) + " of " + std::to_string(m.runs_asked) +
         " runs: repeats stop once the runs took " + num(m.repeat_budget_s) + " s\"";
  }
  j += ",\"order_ok\":" + std::string(m.order_ok ? "true" : "false") +
       ",\"workload_crc32\":" + std::to_string(m.workload_crc) +
       ",\"hottest_key_share\":" + num(m.hottest_key_share) +
       ",\"busiest_shard_share\":" + num(m.busiest_shard_share) +
       ",\"bound_msgs_per_s\":" + num(m.bound_msgs_per_s);
  const auto& hot = m.last.hot;
  j += ",\"hot_unit\":\"" + m.hot_unit + "\",\"hot_batches\":" + std::to_string(hot.batches) +
       ",\"hot_mean_batch\":" +
       num(hot.batches ? static_cast<double>(hot.messages) / static_cast<double>(hot.batches)
                       : std::nan("")) +
       ",\"hot_max_batch\":" + std::to_string(hot.max_batch) +
       ",\"hot_wait_p50_us\":" + num(percentile(hot.waits_us, 0.5)) +
       ",\"hot_wait_p99_us\":" + num(percentile(hot.waits_us, 0.99)) +
       ",\"hot_step_p50_us\":" + num(percentile(hot.steps_us, 0.5)) + ",\"hot_steps_total_us\":" +
       num(std::accumulate(hot.steps_us.begin(), hot.steps_us.end(), 0.0)) +
       ",\"hot_timer_late_p50_us\":" + num(percentile(hot.lateness_us, 0.5));
  if (!m.last.shard_loads.empty()) {
    // Troupe's introspection after the last run: messages per shard id, and the hottest ids.
    std::vector<std::uint64_t> per_shard(c.shards);
    for (const auto& l : m.last.shard_loads) {
      if (l.shard < per_shard.size()) per_shard[l.shard] = l.messages;
    }
    j += ",\"shard_messages\":[";
    for (std::size_t i = 0; i < per_shard.size(); ++i) {
      j += (i ? "," : "") + std::to_string(per_shard[i]);
    }
    j += "],\"hottest_ids\":[";
    for (std::size_t i = 0; i < std::min<std::size_t>(m.last.hottest_ids.size(), 5); ++i) {
      j += std::string(i ? "," : "") + "[\"" + m.last.hottest_ids[i].first + "\"," +
           std::to_string(m.last.hottest_ids[i].second) + "]";
    }
    j += "]";
  }
  if (c.asio_timer) j += ",\"timer\":\"asio\"";
  if (c.warm) j += ",\"warm\":true";
  if (!m.error.empty()) {
    std::string escaped;
    for (const char ch : m.error) {
      if (ch == '"' || ch == '\\') escaped += '\\';
      escaped += ch;
    }
    j += ",\"error\":\"" + escaped + "\"";
  }
  return j + "}";
}

void print_details(const measurement& m) {
  if (cut_short(m)) {
    std::printf("  %zu of %d runs: a row stops repeating once its runs took %.0f s\n",
                m.runs.size(), m.runs_asked, m.repeat_budget_s);
  }
  if (m.runs.size() > 1) {
    std::printf("  %zu runs: median %.0f msgs/s (%.0f%% of the bound), worst %.0f (%.0f%%)\n",
                m.runs.size(), m.msgs_per_s, 100 * m.msgs_per_s / m.bound_msgs_per_s, m.worst,
                100 * m.worst / m.bound_msgs_per_s);
  }
  const auto& hot = m.last.hot;
  const double mean_batch =
      hot.batches ? static_cast<double>(hot.messages) / static_cast<double>(hot.batches) : 0;
  std::printf(
      "  %s (%lld msgs, %.1f%% of all): %lld batches, mean size %.1f, max %lld; "
      "queue wait p50 %s, p99 %s; serial step p50 %.0f us (timer late by %.0f), all steps %s; "
      "run %s, of it sending %s (last run)\n",
      m.hot_unit.c_str(), static_cast<long long>(m.hot_unit_messages),
      100.0 * static_cast<double>(m.hot_unit_messages) / static_cast<double>(m.spec.messages),
      static_cast<long long>(hot.batches), mean_batch, static_cast<long long>(hot.max_batch),
      micros(percentile(hot.waits_us, 0.5)).c_str(), micros(percentile(hot.waits_us, 0.99)).c_str(),
      percentile(hot.steps_us, 0.5), percentile(hot.lateness_us, 0.5),
      micros(std::accumulate(hot.steps_us.begin(), hot.steps_us.end(), 0.0)).c_str(),
      micros(m.last.total_s * 1e6).c_str(), micros(m.last.send_s * 1e6).c_str());
  if (m.config.how != mode::entities || m.last.shard_loads.empty()) return;

  // Troupe's own per-shard counts: a flat profile means sharding works; one shard far above
  // the rest names a hot key.
  auto loads = m.last.shard_loads;
  std::uint64_t total = 0;
  bool matches = true;
  for (const auto& l : loads) {
    total += l.messages;
    if (static_cast<std::int64_t>(l.messages) != m.workload_shard_counts[l.shard]) matches = false;
  }
  std::sort(loads.begin(), loads.end(),
            [](const shard_load& a, const shard_load& b) { return a.messages > b.messages; });
  std::printf(
      "  per-shard messages (cluster_sharding::shards, %zu of %u shards started, %s the "
      "workload):",
      loads.size(), m.config.shards, matches ? "equal to" : "DIFFERENT from");
  for (std::size_t i = 0; i < std::min<std::size_t>(loads.size(), 4); ++i) {
    std::printf(" shard-%u %llu (%.1f%%)", loads[i].shard,
                static_cast<unsigned long long>(loads[i].messages),
                100.0 * static_cast<double>(loads[i].messages) /
                    static_cast<double>(std::max<std::uint64_t>(total, 1)));
  }
  std::printf(" ... median %llu, fair share %.1f%%\n",
              static_cast<unsigned long long>(loads[loads.size() / 2].messages),
              100.0 / static_cast<double>(m.config.shards));
  std::printf("  hottest ids (region_state::hottest, sampled):");
  for (std::size_t i = 0; i < std::min<std::size_t>(m.last.hottest_ids.size(), 5); ++i) {
    std::printf(" %s (%llu)", m.last.hottest_ids[i].first.c_str(),
                static_cast<unsigned long long>(m.last.hottest_ids[i].second));
  }
  std::printf("\n");
}

}  // namespace troupe::bench::seed
