#include "options.hpp"

#include <cstdlib>
#include <stdexcept>

namespace cluster_demo {

void print_usage(std::FILE* to) {
  std::fputs(
      "usage: troupe_cluster_demo [--seconds-per-phase N] [--carts N] [--quiet]\n"
      "                           [--processes [--etcd HOST:PORT,...]]\n"
      "  --seconds-per-phase N  how long each phase runs at least, in seconds (default 4, 1-60)\n"
      "  --carts N              how many carts the clients fill (default 2000, 1-100000)\n"
      "  --quiet                no live status line\n"
      "  --processes            one process per node and a real etcd (default: every node in\n"
      "                         this process, etcd modelled in-process)\n"
      "  --etcd ENDPOINTS       etcd's client endpoints (default: TROUPE_ETCD_ENDPOINTS)\n"
      "The driver starts each node as: troupe_cluster_demo --node NAME --etcd ENDPOINTS\n"
      "  --cluster NAME --journal FILE --activation-log FILE --parent PID\n",
      to);
}

std::optional<options> parse_options(int argc, char** argv, std::string& error) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    const bool takes_value = arg.rfind("--seconds-per-phase", 0) == 0 ||
                             arg.rfind("--carts", 0) == 0 || arg.rfind("--etcd", 0) == 0 ||
                             arg.rfind("--node", 0) == 0 || arg.rfind("--journal", 0) == 0 ||
                             arg.rfind("--activation-log", 0) == 0 ||
                             arg.rfind("--cluster", 0) == 0 || arg.rfind("--parent", 0) == 0;
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
      } else if (arg == "--processes") {
        o.processes = true;
      } else if (arg == "--etcd") {
        o.etcd = value;
      } else if (arg == "--node") {
        o.node = value;
      } else if (arg == "--journal") {
        o.journal = value;
      } else if (arg == "--activation-log") {
        o.activation_log = value;
      } else if (arg == "--cluster") {
        o.cluster = value;
      } else if (arg == "--parent") {
        o.parent = std::stol(value, &used);
        if (used != value.size() || o.parent < 1) throw std::invalid_argument("range");
      } else {
        error = "unknown argument '" + arg + "'";
        return std::nullopt;
      }
    } catch (const std::exception&) {
      error = "bad value '" + value + "' for " + arg;
      return std::nullopt;
    }
  }
  if ((o.processes || !o.node.empty()) && o.etcd.empty()) {
    if (const char* env = std::getenv("TROUPE_ETCD_ENDPOINTS")) o.etcd = env;
    if (o.etcd.empty()) {
      error = "--processes needs etcd: --etcd HOST:PORT or TROUPE_ETCD_ENDPOINTS";
      return std::nullopt;
    }
  }
  if (!o.node.empty() && (o.journal.empty() || o.cluster.empty())) {
    error = "--node needs --journal and --cluster";
    return std::nullopt;
  }
  return o;
}

}  // namespace cluster_demo
