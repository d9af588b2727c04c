#include "options.hpp"

#include <stdexcept>

namespace cluster_demo {

void print_usage(std::FILE* to) {
  std::fputs(
      "usage: troupe_cluster_demo [--seconds-per-phase N] [--carts N] [--quiet]\n"
      "  --seconds-per-phase N  how long each phase runs at least, in seconds (default 4, 1-60)\n"
      "  --carts N              how many carts the clients fill (default 2000, 1-100000)\n"
      "  --quiet                no live status line\n",
      to);
}

std::optional<options> parse_options(int argc, char** argv, std::string& error) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    const bool takes_value =
        arg.rfind("--seconds-per-phase", 0) == 0 || arg.rfind("--carts", 0) == 0;
    if (takes_value) {
      if (const auto eq = arg.find('='); eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        error = arg + " needs a value";
        return std::nullopt;
      }
    }
    try {
      std::size_t used = 0;
      if (arg == "--seconds-per-phase") {
        o.seconds_per_phase = std::stod(value, &used);
        if (used != value.size() || !(o.seconds_per_phase >= 1 && o.seconds_per_phase <= 60)) {
          throw std::invalid_argument("out of range");
        }
      } else if (arg == "--carts") {
        const long long n = std::stoll(value, &used);
        if (used != value.size() || n < 1 || n > 100000) throw std::invalid_argument("range");
        o.carts = static_cast<std::size_t>(n);
      } else if (arg == "--quiet") {
        o.quiet = true;
      } else if (arg == "--help" || arg == "-h") {
        o.help = true;
      } else {
        error = "unknown argument '" + arg + "'";
        return std::nullopt;
      }
    } catch (const std::exception&) {
      error = "bad value '" + value + "' for " + arg;
      return std::nullopt;
    }
  }
  return o;
}

}  // namespace cluster_demo
