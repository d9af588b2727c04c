// libFuzzer target for the HOCON reader: arbitrary text must either parse or fail with
// config_error; any other exception, a crash, a stack overflow, an over-read (ASan) or undefined
// behaviour (UBSan) is a finding. What parses is read back through every getter, at every path,
// and merged with itself and with a fixed config. Built and run by tests/fuzz/run_fuzz.cmake.
#include <troupe/core/config.hpp>

#include "core/config_parser.hpp"

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

namespace {

namespace fs = std::filesystem;
using troupe::config;
using troupe::config_error;

// A folder of small files the input may include by name (a name without '/' stays in it).
const std::string& origin() {
  static const std::string path = [] {
    const auto dir =
        fs::temp_directory_path() / ("troupe-config-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::ofstream(dir / "a.conf") << "a = 1\nobj { x = ${?a}, l = [1, 2] }\n";
    std::ofstream(dir / "b.conf") << "include \"a.conf\"\nb { c { d = 2 minutes } }\n";
    std::ofstream(dir / "self.conf") << "include \"self.conf\"\n";
    std::ofstream(dir / "deep.conf") << "a{b{c{d{e{f{g{h{i{j{k{l{m{n{o{p=1}}}}}}}}}}}}}}}\n";
    // Removed when the fuzzer exits.
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(
          fs::temp_directory_path() / ("troupe-config-fuzz-" + std::to_string(::getpid())), ec);
    });
    return (dir / "fuzz.conf").string();
  }();
  return path;
}

// Each getter may refuse the value's type with config_error, never otherwise.
template <typename Fn>
void read(Fn&& fn) {
  try {
    (void)fn();
  } catch (const config_error&) {
  }
}

// Reads every value below `cfg` through every getter.
void walk(const config& cfg, int depth) {
  if (depth > troupe::detail::max_config_depth) std::abort();  // the bound did not hold
  for (const auto& key : cfg.keys()) {
    const std::string path = troupe::detail::join_path({key});
    if (!cfg.has(path)) std::abort();
    (void)cfg.origin_of(path);
    read([&] { return cfg.get_string(path); });
    read([&] { return cfg.get_int(path); });
    read([&] { return cfg.get_bool(path); });
    read([&] { return cfg.get_double(path); });
    read([&] { return cfg.get_duration(path); });
    read([&] { return cfg.get_string_list(path); });
    try {
      walk(cfg.at(path), depth + 1);
    } catch (const config_error&) {
    }
  }
  read([&] {
    cfg.check_known_keys("", {"a", "b"});
    return 0;
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // An include may name only the files above: no path, and no escape that could spell one.
  if (text.find("include") != std::string_view::npos &&
      text.find_first_of("/\\") != std::string_view::npos) {
    return 0;
  }
  config cfg;
  try {
    cfg = config::parse_string(text, origin());
  } catch (const config_error&) {
    return 0;
  }
  walk(cfg, 1);
  walk(cfg.with_fallback(cfg), 1);
  const auto fixed = config::parse_string("a { b = 1, c = [x, y] }\nd = 5 s\n", "<fixed>");
  walk(cfg.with_fallback(fixed), 1);
  walk(fixed.with_fallback(cfg), 1);
  return 0;
}
