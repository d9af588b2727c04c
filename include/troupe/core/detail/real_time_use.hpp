#pragma once
/// INTERNAL. Where the runtime starts a thread or reads the real clock, it says so here; while a
/// recording is on (testkit::simulation_guard), each such use is counted: a simulated run must
/// take all its time from a manual clock and run on its driver's thread.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace troupe::detail {

/// Counts `what` (a string literal) while a recording is on; otherwise one relaxed load.
void note_real_time_use(const char* what) noexcept;

/// Starts a recording (they nest: the counts are kept until the last one ends).
void begin_real_time_recording();
void end_real_time_recording() noexcept;
/// What was noted since the first recording began, with counts, in the order first noted.
std::vector<std::pair<std::string, std::uint64_t>> real_time_uses();

}  // namespace troupe::detail
