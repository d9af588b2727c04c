#include "report.hpp"

#include <cstdio>
#include <string>

namespace cluster_demo {

std::string grouped(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

namespace {

std::string seconds_text(double s) {
  if (s < 0) return "never";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f s", s);
  return text;
}

std::string reasons(const failure_tally& t) {
  if (t.total() == 0) return {};
  std::string out;
  auto add = [&](const char* what, std::int64_t n) {
    if (n == 0) return;
    if (!out.empty()) out += ", ";
    out += what + std::string(" ") + grouped(n);
  };
  add("timed out", t.timed_out);
  add("node left", t.node_left);
  add("other errors", t.other);
  // The ask failed, but its event was persisted: the reply is what got lost.
  if (t.persisted > 0) out += "; " + grouped(t.persisted) + " persisted anyway";
  return out;
}

/// Rows of label, value, check and note, in aligned columns.
struct table {
  bool ok = true;
  void row(const std::string& label, const std::string& value, const std::string& check = {},
           const std::string& note = {}) {
    char text[512];
    std::snprintf(text, sizeof text, "  %-44s %10s   %-15s %s", label.c_str(), value.c_str(),
                  check.c_str(), note.c_str());
    std::string line = text;
    line.erase(line.find_last_not_of(' ') + 1);
    std::puts(line.c_str());
  }
  void must_be_zero(const std::string& label, std::int64_t n, const std::string& note = {}) {
    if (n != 0) ok = false;
    row(label, grouped(n), n == 0 ? "must be 0: ok" : "must be 0: FAIL", note);
  }
};

}  // namespace

bool print_summary(const summary& s) {
  table t;
  std::printf("\n  == summary %s\n", std::string(80, '=').c_str());

  failure_tally graceful;
  std::string by_phase;
  for (const auto& [p, tally] : s.asks.failed_graceful) {
    graceful += tally;
    if (tally.total() == 0) continue;
    by_phase += (by_phase.empty() ? "sent in " : ", ") + std::string(name_of(p)) + " " +
                grouped(tally.total());
  }

  t.row("add_item asks sent", grouped(s.asks.sent));
  t.row("acknowledged (event persisted, reply received)", grouped(s.asks.acked));
  // Lost means not delivered: an ask that timed out while its shard moved, and whose event
  // the cart holds, was delivered late, and is counted on the next row.
  t.must_be_zero("lost during join/leave/rebalance", graceful.total() - graceful.persisted,
                 by_phase.empty() ? "" : by_phase + ": " + reasons(graceful));
  t.row("asks timed out in join/leave, event persisted", grouped(graceful.persisted), "counted",
        "delivered late: the reply came after the ask's timeout");
  t.row("lost in flight to the killed node", grouped(s.asks.failed_in_flight_at_kill.total()),
        "counted", reasons(s.asks.failed_in_flight_at_kill));
  t.row("failed while c's shards had no new home", grouped(s.asks.failed_after_kill.total()),
        "counted", reasons(s.asks.failed_after_kill));
  t.must_be_zero("acknowledged events lost", s.carts.lost,
                 grouped(s.carts.carts_read) + " carts read back, " + grouped(s.carts.events_read) +
                     " events");
  t.must_be_zero("carts that did not answer get_cart", s.carts.unreadable);
  t.must_be_zero("duplicate activations", s.duplicates,
                 grouped(s.activations) + " activations in all");
  t.must_be_zero("reordered (acknowledged items, per cart)", s.carts.reordered);
  t.must_be_zero("items persisted twice or never sent", s.carts.twice);
  t.row("join: until d held its fair share (" + std::to_string(s.fair_share) + " +-1)",
        seconds_text(s.join_s), s.join_s < 0 ? "FAIL" : "");
  t.row("leave: from b's leave() until done", seconds_text(s.leave_s), s.leave_s < 0 ? "FAIL" : "",
        "its shards handed off, then its lease revoked");
  t.row("kill: until every cart of c answered again", seconds_text(s.kill_s),
        s.kill_s < 0 ? "FAIL" : "",
        grouped(s.killed_carts) + " carts; c's lease (2 s) runs out first");
  t.row("shard moves seen", std::to_string(s.handoffs + s.failovers), "",
        std::to_string(s.handoffs) + " hand-offs, " + std::to_string(s.failovers) + " failovers");

  for (const auto& e : s.asks.lost_examples) std::printf("  ! lost: %s\n", e.c_str());
  for (const auto& e : s.carts.examples) std::printf("  ! %s\n", e.c_str());
  for (const auto& e : s.duplicate_examples) std::printf("  ! %s\n", e.c_str());
  for (const auto& p : s.problems) std::printf("  ! %s\n", p.c_str());
  if (s.join_s < 0 || s.leave_s < 0 || s.kill_s < 0 || !s.problems.empty()) t.ok = false;
  return t.ok;
}

}  // namespace cluster_demo
