// troupe.management in the node's config: defaults when absent, every key read, the token from
// the environment through ${?...}, and a clear error naming the key and its line for an unknown
// key or a value out of range.
#include <troupe/observability/management_config.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>

namespace troupe::observability {
namespace {

using namespace std::chrono_literals;

/// The config_error's message for `text`, or "" when it parses.
std::string error_of(const std::string& text) {
  try {
    (void)read_management_config(config::parse_string(text, "node.conf"));
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}

TEST(ManagementConfig, IsOffOnLoopbackByDefault) {
  const auto c = read_management_config(config::empty());
  EXPECT_FALSE(c.enabled);
  const management_options defaults;
  EXPECT_EQ(c.options.address, "127.0.0.1");
  EXPECT_EQ(c.options.port, defaults.port);
  EXPECT_TRUE(c.options.bearer_token.empty());
  EXPECT_EQ(c.options.max_connections, defaults.max_connections);
  EXPECT_EQ(c.options.read_timeout, defaults.read_timeout);
}

TEST(ManagementConfig, ReadsEveryKey) {
  const auto c = read_management_config(config::parse_string(R"(
    troupe.management {
      enabled = on
      address = "0.0.0.0"
      port = 0
      bearer-token = "t0k"
      max-id-length = 64
      max-header-bytes = 4096
      max-connections = 8
      read-timeout = 3s
      source-threads = 4
    })"));
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.options.address, "0.0.0.0");
  EXPECT_EQ(c.options.port, 0);
  EXPECT_EQ(c.options.bearer_token, "t0k");
  EXPECT_EQ(c.options.max_id_length, 64U);
  EXPECT_EQ(c.options.max_header_bytes, 4096U);
  EXPECT_EQ(c.options.max_connections, 8U);
  EXPECT_EQ(c.options.read_timeout, 3s);
  EXPECT_EQ(c.options.source_threads, 4U);
}

TEST(ManagementConfig, TakesTheTokenFromTheEnvironmentWhenTheFileSaysSo) {
  const std::string text = "troupe.management.bearer-token = ${?TROUPE_TEST_MANAGEMENT_TOKEN}";
  ::unsetenv("TROUPE_TEST_MANAGEMENT_TOKEN");
  EXPECT_TRUE(read_management_config(config::parse_string(text)).options.bearer_token.empty());
  ::setenv("TROUPE_TEST_MANAGEMENT_TOKEN", "from-env", 1);
  EXPECT_EQ(read_management_config(config::parse_string(text)).options.bearer_token, "from-env");
  ::unsetenv("TROUPE_TEST_MANAGEMENT_TOKEN");
}

TEST(ManagementConfig, RefusesUnknownKeysAndValuesOutOfRangeNamingTheKeyAndLine) {
  EXPECT_NE(error_of("troupe.management.prot = 1").find("prot"), std::string::npos);
  const auto port = error_of("troupe.management {\n  port = 70000\n}");
  EXPECT_NE(port.find("node.conf:2"), std::string::npos) << port;
  EXPECT_NE(port.find("troupe.management.port"), std::string::npos) << port;
  EXPECT_NE(error_of("troupe.management.port = -1"), "");
  EXPECT_NE(error_of("troupe.management.max-connections = 0").find("max-connections"),
            std::string::npos);
  EXPECT_NE(error_of("troupe.management.source-threads = 0"), "");
  EXPECT_NE(error_of("troupe.management.read-timeout = 0s").find("read-timeout"),
            std::string::npos);
  EXPECT_NE(error_of("troupe.management.address = \"\""), "");
  EXPECT_NE(error_of("troupe.management.enabled = maybe"), "");
}

}  // namespace
}  // namespace troupe::observability
