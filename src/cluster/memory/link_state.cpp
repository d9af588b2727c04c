#include "cluster/memory/link_state.hpp"

#include <stdexcept>
#include <string_view>

namespace troupe::cluster::detail {

namespace {

// splitmix64's output function: a bijective mix that spreads every input bit over the output.
std::uint64_t mix(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31U);
}

// FNV-1a, written out rather than std::hash so a link's random stream is the same on every
// platform and standard library: a seed logged on one machine replays on another.
void hash_into(std::uint64_t& h, std::string_view bytes) noexcept {
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
}

std::uint64_t link_hash(const node_address& from, const node_address& to) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const node_address* a : {&from, &to}) {
    hash_into(h, a->host);
    const char port[3] = {'\0', static_cast<char>(a->port >> 8U), static_cast<char>(a->port)};
    hash_into(h, std::string_view(port, sizeof port));
  }
  return h;
}

}  // namespace

link_state::link_state(std::uint64_t network_seed, const node_address& from, const node_address& to)
    : rng_state_(mix(network_seed) ^ link_hash(from, to)) {}

std::uint64_t link_state::next_random() {
  rng_state_ += 0x9e3779b97f4a7c15ULL;
  return mix(rng_state_);
}

link_state::verdict link_state::next_write() {
  std::lock_guard lock(mutex_);
  verdict v;
  if (blocked_ && !holds_) {
    v.lost = true;
  } else if (drop_probability_ > 0) {
    // 53 random bits as a double in [0, 1): probability 1 loses every write.
    const double u = static_cast<double>(next_random() >> 11U) * 0x1.0p-53;
    v.lost = u < drop_probability_;
  }
  if (v.lost) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return v;
  }
  if (delay_max_.count() > 0) {
    const auto span = static_cast<std::uint64_t>((delay_max_ - delay_min_).count());
    const auto extra = span == 0 ? 0 : next_random() % (span + 1);
    v.delay = delay_min_ + std::chrono::nanoseconds(static_cast<std::int64_t>(extra));
  }
  return v;
}

bool link_state::blocked() const {
  std::lock_guard lock(mutex_);
  return blocked_;
}

bool link_state::holding() const {
  std::lock_guard lock(mutex_);
  return blocked_ && holds_;
}

void link_state::block(bool hold) {
  std::lock_guard lock(mutex_);
  holds_ = blocked_ ? holds_ && hold : hold;
  blocked_ = true;
}

void link_state::drop(double probability) {
  if (!(probability >= 0 && probability <= 1)) {
    throw std::invalid_argument("drop probability must be in [0, 1]");
  }
  std::lock_guard lock(mutex_);
  drop_probability_ = probability;
}

void link_state::delay(std::chrono::nanoseconds min, std::chrono::nanoseconds max) {
  if (min.count() < 0 || max < min) {
    throw std::invalid_argument("delay needs 0 <= min <= max");
  }
  std::lock_guard lock(mutex_);
  delay_min_ = min;
  delay_max_ = max;
}

void link_state::heal() {
  std::lock_guard lock(mutex_);
  blocked_ = false;
  holds_ = false;
  drop_probability_ = 0;
  delay_min_ = delay_max_ = std::chrono::nanoseconds(0);
}

link_stats link_state::stats() const noexcept {
  return {delivered_.load(std::memory_order_relaxed), dropped_.load(std::memory_order_relaxed)};
}

}  // namespace troupe::cluster::detail
