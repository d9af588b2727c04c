// top: read a type's shards every interval and show the busiest by message rate. The rate is
// the node's own (messages since its previous read), so the first round may show none.
#include "troupectl/commands.hpp"
#include "troupectl/json_fields.hpp"
#include "troupectl/render.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <ctime>
#include <thread>

namespace troupectl {

namespace json = boost::json;

namespace {

double rate_of(const json::value& s) { return number(s, "messages_per_second"); }

/// The `limit` busiest shards: by rate, then by messages; unknown rates last.
json::array hottest(const json::value& v, std::size_t limit) {
  json::array shards;
  if (const auto* list = field(v, "shards"); list != nullptr && list->is_array()) {
    shards = list->as_array();
  }
  std::stable_sort(shards.begin(), shards.end(), [](const json::value& a, const json::value& b) {
    if (rate_of(a) != rate_of(b)) return rate_of(a) > rate_of(b);
    return number(a, "messages") > number(b, "messages");
  });
  if (shards.size() > limit) shards.resize(limit);
  return shards;
}

std::string clock_time() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[16];
  std::strftime(text, sizeof text, "%H:%M:%S", &local);
  return text;
}

bool stopped(const top_options& o) { return o.stop != nullptr && o.stop->load(); }

}  // namespace

void top(const context& c, const top_options& o) {
  const std::string path = "/cluster/shards/" + percent_encode(o.type);
  for (unsigned round = 1; o.iterations == 0 || round <= o.iterations; ++round) {
    const json::value v = c.api.get_json(path);
    json::array busiest = hottest(v, o.limit);
    if (c.json) {
      c.out << json::serialize(json::object{
                   {"type", o.type},
                   {"round", round},
                   {"num_shards", field(v, "num_shards") != nullptr ? *field(v, "num_shards")
                                                                    : json::value(nullptr)},
                   {"shards", std::move(busiest)}})
            << std::endl;
    } else {
      if (o.clear_screen) c.out << "\x1b[H\x1b[2J";
      c.out << "top " << o.type << ": the " << busiest.size() << " busiest of "
            << text(v, "num_shards") << " shards, " << clock_time() << " (round " << round;
      if (o.iterations != 0) c.out << "/" << o.iterations;
      c.out << ")\n";
      table t({"SHARD", "OWNER", "MSG/S", "MESSAGES", "ENTITIES", "HOT KEYS"});
      for (const auto& s : busiest) {
        t.add({text(s, "shard"), text(s, "owner"), format_rate(rate_of(s)), text(s, "messages"),
               text(s, "entities"), hot_keys_text(s)});
      }
      t.print(c.out);
      c.out << std::flush;
    }
    if (o.iterations != 0 && round == o.iterations) break;
    // Sleep in small steps so Ctrl-C ends the loop at once.
    const auto wake = std::chrono::steady_clock::now() + o.interval;
    while (!stopped(o) && std::chrono::steady_clock::now() < wake) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (stopped(o)) break;
  }
}

}  // namespace troupectl
