#include "activation_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <vector>

namespace cluster_demo {

activation_log::activation_log(const std::filesystem::path& file)
    : fd_(::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {
  if (fd_ < 0) throw std::runtime_error("cannot open the activation log " + file.string());
}

activation_log::~activation_log() { ::close(fd_); }

void activation_log::enter(const std::string& cart, const std::string&) { record("start", cart); }

void activation_log::leave(const std::string& cart, const std::string&) { record("stop", cart); }

void activation_log::fenced() { record("fence", "-"); }

void activation_log::record(const char* what, const std::string& cart) {
  const std::string line =
      std::string(what) + " " + cart + " " + std::to_string(steady_ns()) + "\n";
  if (::write(fd_, line.data(), line.size()) < 0) std::perror("activation log");
}

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

activation_counts merge_activation_logs(const std::map<std::string, std::filesystem::path>& nodes,
                                        const std::string& killed, std::int64_t killed_ns) {
  constexpr std::int64_t never = std::numeric_limits<std::int64_t>::max();
  struct span {
    std::string node;
    std::int64_t from = 0;
    std::int64_t to = never;
  };
  std::map<std::string, std::vector<span>> by_cart;
  for (const auto& [node, file] : nodes) {
    std::ifstream in(file);
    std::string what;
    std::string cart;
    std::int64_t at = 0;
    while (in >> what >> cart >> at) {
      if (what == "fence") {
        for (auto& [id, spans] : by_cart) {
          for (auto& s : spans) {
            if (s.node == node && s.from < at) s.to = std::min(s.to, at);
          }
        }
      } else if (what == "start") {
        by_cart[cart].push_back({node, at, node == killed ? killed_ns : never});
      } else if (what == "stop") {
        auto& spans = by_cart[cart];
        for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
          if (it->node == node) {
            it->to = std::min(it->to, at);
            break;
          }
        }
      }
    }
  }
  activation_counts out;
  for (auto& [cart, spans] : by_cart) {
    std::sort(spans.begin(), spans.end(),
              [](const span& a, const span& b) { return a.from < b.from; });
    for (std::size_t j = 0; j < spans.size(); ++j) {
      ++out.activations;
      for (std::size_t i = 0; i < j; ++i) {
        if (spans[i].node != spans[j].node && spans[j].from < spans[i].to) {
          ++out.duplicates;
          if (out.examples.size() < 3) {
            out.examples.push_back(cart + " started on " + spans[j].node + " while active on " +
                                   spans[i].node);
          }
          break;
        }
      }
    }
  }
  return out;
}

}  // namespace cluster_demo
