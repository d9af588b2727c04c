#include <troupe/core/detail/real_time_use.hpp>

#include <atomic>
#include <cstring>
#include <mutex>

namespace troupe::detail {

namespace {

std::atomic<int> recordings{0};

struct record {
  std::mutex mutex;
  std::vector<std::pair<const char*, std::uint64_t>> uses;
};

record& the_record() {
  static record r;  // never destroyed before a late note from another static's destructor
  return r;
}

}  // namespace

void note_real_time_use(const char* what) noexcept {
  if (recordings.load(std::memory_order_relaxed) == 0) return;
  record& r = the_record();
  std::lock_guard lock(r.mutex);
  for (auto& [w, n] : r.uses) {
    if (std::strcmp(w, what) == 0) {
      ++n;
      return;
    }
  }
  try {
    r.uses.emplace_back(what, 1);
  } catch (...) {
    // Out of memory: the use goes unrecorded, the run goes on.
  }
}

void begin_real_time_recording() {
  record& r = the_record();
  std::lock_guard lock(r.mutex);
  if (recordings.fetch_add(1, std::memory_order_relaxed) == 0) r.uses.clear();
}

void end_real_time_recording() noexcept { recordings.fetch_sub(1, std::memory_order_relaxed); }

std::vector<std::pair<std::string, std::uint64_t>> real_time_uses() {
  record& r = the_record();
  std::lock_guard lock(r.mutex);
  std::vector<std::pair<std::string, std::uint64_t>> out;
  out.reserve(r.uses.size());
  for (const auto& [w, n] : r.uses) out.emplace_back(w, n);
  return out;
}

}  // namespace troupe::detail
