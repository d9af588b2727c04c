#pragma once
/// troupectl's entry point as a function, so that tests run commands in-process: parses the
/// command line (CLI11), runs the command against --url, and returns the exit code
/// (exit_code.hpp). Tables and JSON go to `out`; errors and progress to `err`.

#include <chrono>
#include <ostream>
#include <string>

namespace troupectl {

[[nodiscard]] int run(int argc, char** argv, std::ostream& out, std::ostream& err);

/// "250ms", "5s", "2m" or a bare number of seconds; throws std::invalid_argument otherwise.
[[nodiscard]] std::chrono::milliseconds parse_duration(const std::string& text);

}  // namespace troupectl
