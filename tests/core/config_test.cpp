// Config: the HOCON subset of docs/configuration.md, typed getters, durations, includes,
// substitutions, layering with with_fallback, and errors that name the file, the line and the key.
#include <troupe/core/config.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using testing::ElementsAre;
using testing::HasSubstr;
using troupe::config;
using troupe::config_error;

config parse(std::string_view text) { return config::parse_string(text, "test.conf"); }

// The message of the config_error `fn` throws (fails the test when it throws nothing).
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const config_error& e) {
    EXPECT_EQ(e.value(), troupe::errc::invalid_config);
    return e.what();
  }
  ADD_FAILURE() << "expected a config_error";
  return {};
}

std::string parse_error(std::string_view text) {
  return error_of([&] { (void)parse(text); });
}

// A directory under the system temp dir, removed with everything in it at the end of the test.
class temp_dir {
 public:
  temp_dir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("troupe-config-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  // Writes `text` to `name` (subfolders are created) and returns the file's path.
  std::string write(const std::string& name, std::string_view text) const {
    const auto file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
    return file.string();
  }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// -- syntax --------------------------------------------------------------------------------------

TEST(Config, ReadsTheSpecShardingExample) {
  const auto cfg = parse(
      "actor-ts.sharding { number-of-shards = 128 \n passivation-idle = 2 minutes \n"
      " max-entities = 50000 }");
  EXPECT_EQ(cfg.get_int("actor-ts.sharding.number-of-shards"), 128);
  EXPECT_EQ(cfg.get_duration("actor-ts.sharding.passivation-idle"), troupe::duration(2min));
  EXPECT_EQ(cfg.get_string("actor-ts.sharding.passivation-idle"), "2 minutes");
  EXPECT_EQ(cfg.get_int("actor-ts.sharding.max-entities"), 50000);
  EXPECT_THAT(cfg.at("actor-ts.sharding").keys(),
              ElementsAre("max-entities", "number-of-shards", "passivation-idle"));
}

TEST(Config, EmptyTextIsAnEmptyConfig) {
  EXPECT_TRUE(parse("").keys().empty());
  EXPECT_TRUE(parse("  \n # only a comment\n").keys().empty());
  EXPECT_TRUE(config::empty().keys().empty());
  EXPECT_FALSE(config::empty().has("a"));
}

TEST(Config, RootBracesAreOptional) {
  const auto braced = parse("{ a = 1\n b = x }");
  const auto bare = parse("a = 1\nb = x");
  EXPECT_EQ(braced.get_int("a"), 1);
  EXPECT_EQ(braced.get_string("b"), "x");
  EXPECT_EQ(bare.get_int("a"), 1);
  EXPECT_EQ(bare.get_string("b"), "x");
}

TEST(Config, ObjectsNestWithOrWithoutASeparator) {
  const auto cfg = parse("a { b { c = 1 } }\nd = { e: 2 }\nf : { g = 3 }");
  EXPECT_EQ(cfg.get_int("a.b.c"), 1);
  EXPECT_EQ(cfg.get_int("d.e"), 2);
  EXPECT_EQ(cfg.get_int("f.g"), 3);
  EXPECT_TRUE(cfg.has("a.b"));
}

TEST(Config, DottedKeysAreNestedObjects) {
  const auto cfg = parse("a.b.c = 1\na.b.d = 2\na { e = 3 }");
  EXPECT_EQ(cfg.get_int("a.b.c"), 1);
  EXPECT_EQ(cfg.get_int("a.b.d"), 2);
  EXPECT_EQ(cfg.get_int("a.e"), 3);
  EXPECT_THAT(cfg.at("a").keys(), ElementsAre("b", "e"));
}

TEST(Config, QuotedKeysMayHoldDotsAndSpaces) {
  const auto cfg = parse("\"a.b\" = 1\n\"with space\" = 2\nx.\"y.z\".w = 3");
  EXPECT_EQ(cfg.get_int("\"a.b\""), 1);
  EXPECT_FALSE(cfg.has("a.b"));
  EXPECT_EQ(cfg.get_int("\"with space\""), 2);
  EXPECT_EQ(cfg.get_int("x.\"y.z\".w"), 3);
}

TEST(Config, SeparatorsAreEqualsOrColon) {
  const auto cfg = parse("a = 1\nb : 2\nc=3\nd:4");
  EXPECT_EQ(cfg.get_int("a"), 1);
  EXPECT_EQ(cfg.get_int("b"), 2);
  EXPECT_EQ(cfg.get_int("c"), 3);
  EXPECT_EQ(cfg.get_int("d"), 4);
}

TEST(Config, CommentsStartWithHashOrDoubleSlash) {
  const auto cfg = parse(
      "# a comment\n// another\na = 1 # trailing\nb = two words // trailing\n"
      "c { # after a brace\n d = 4 // x\n }\ne = \"# not a comment\"");
  EXPECT_EQ(cfg.get_int("a"), 1);
  EXPECT_EQ(cfg.get_string("b"), "two words");
  EXPECT_EQ(cfg.get_int("c.d"), 4);
  EXPECT_EQ(cfg.get_string("e"), "# not a comment");
  EXPECT_THAT(cfg.keys(), ElementsAre("a", "b", "c", "e"));
}

TEST(Config, FieldsMaySitOnOneLineSeparatedByCommas) {
  const auto cfg = parse("a { x = 1, y = 2, }\nb = 3, c = 4");
  EXPECT_EQ(cfg.get_int("a.x"), 1);
  EXPECT_EQ(cfg.get_int("a.y"), 2);
  EXPECT_EQ(cfg.get_int("b"), 3);
  EXPECT_EQ(cfg.get_int("c"), 4);
}

TEST(Config, QuotedStringsUnescape) {
  const auto cfg = parse(R"(a = "say \"hi\"\\ \n\tend"
b = "caf\u00e9 \u20ac \ud83d\ude00"
c = ""
d = "  padded  "
e = "a/b \/")");
  EXPECT_EQ(cfg.get_string("a"), "say \"hi\"\\ \n\tend");
  EXPECT_EQ(cfg.get_string("b"), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(cfg.get_string("c"), "");
  EXPECT_EQ(cfg.get_string("d"), "  padded  ");
  EXPECT_EQ(cfg.get_string("e"), "a/b /");
}

TEST(Config, TripleQuotedStringsSpanLinesVerbatim) {
  const auto cfg = parse("a = \"\"\"line 1\n  \"quoted\" \\n\"\"\"\nb = 2");
  EXPECT_EQ(cfg.get_string("a"), "line 1\n  \"quoted\" \\n");
  EXPECT_EQ(cfg.get_int("b"), 2);
  EXPECT_EQ(cfg.origin_of("b"), "test.conf:3");
}

TEST(Config, UnquotedStringsAreTrimmedAndWordsConcatenate) {
  const auto cfg =
      parse("a =   hello world   \nb = foo \"bar\" baz\nc = /var/lib/troupe\nd = 1.2.3");
  EXPECT_EQ(cfg.get_string("a"), "hello world");
  EXPECT_EQ(cfg.get_string("b"), "foo bar baz");
  EXPECT_EQ(cfg.get_string("c"), "/var/lib/troupe");
  EXPECT_EQ(cfg.get_string("d"), "1.2.3");
}

TEST(Config, NumbersAreIntegersOrFloats) {
  const auto cfg = parse("i = 42\nn = -7\nf = 2.5\ne = 1e3\nbig = 9223372036854775807");
  EXPECT_EQ(cfg.get_int("i"), 42);
  EXPECT_EQ(cfg.get_int("n"), -7);
  EXPECT_EQ(cfg.get_double("f"), 2.5);
  EXPECT_EQ(cfg.get_double("e"), 1000.0);
  EXPECT_EQ(cfg.get_double("i"), 42.0);
  EXPECT_EQ(cfg.get_int("big"), INT64_MAX);
  EXPECT_EQ(cfg.get_string("f"), "2.5");
  EXPECT_EQ(cfg.get_string("i"), "42");
}

TEST(Config, QuotedNumbersAndBooleansConvert) {
  const auto cfg = parse("a = \"42\"\nb = \"0.5\"\nc = \"yes\"");
  EXPECT_EQ(cfg.get_int("a"), 42);
  EXPECT_EQ(cfg.get_double("b"), 0.5);
  EXPECT_EQ(cfg.get_bool("c"), true);
}

TEST(Config, BooleansAreTrueFalseOnOffYesNo) {
  const auto cfg = parse("a = true\nb = false\nc = on\nd = off\ne = yes\nf = no");
  EXPECT_EQ(cfg.get_bool("a"), true);
  EXPECT_EQ(cfg.get_bool("b"), false);
  EXPECT_EQ(cfg.get_bool("c"), true);
  EXPECT_EQ(cfg.get_bool("d"), false);
  EXPECT_EQ(cfg.get_bool("e"), true);
  EXPECT_EQ(cfg.get_bool("f"), false);
  EXPECT_EQ(cfg.get_string("a"), "true");
}

TEST(Config, NullCountsAsMissing) {
  const auto cfg = parse("a = null\nb { c = 1 }");
  EXPECT_FALSE(cfg.has("a"));
  EXPECT_EQ(cfg.get_string("a"), std::nullopt);
  EXPECT_EQ(cfg.get_int("a"), std::nullopt);
  EXPECT_EQ(cfg.get_duration("a.x"), std::nullopt);
  EXPECT_THAT(cfg.keys(), ElementsAre("b"));
  EXPECT_TRUE(cfg.at("a").keys().empty());
}

TEST(Config, ListsSeparateItemsByCommasOrNewLines) {
  const auto cfg =
      parse("a = [x, y, z]\nb = [\n  one\n  \"two\"\n  3,\n]\nc = []\nd = [ 1 , 2 ] # comment");
  EXPECT_EQ(cfg.get_string_list("a"), (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(cfg.get_string_list("b"), (std::vector<std::string>{"one", "two", "3"}));
  EXPECT_EQ(cfg.get_string_list("c"), std::vector<std::string>{});
  EXPECT_EQ(cfg.get_string_list("d"), (std::vector<std::string>{"1", "2"}));
}

TEST(Config, ARepeatedKeyTakesTheLaterValue) {
  const auto cfg = parse("a = 1\na = 2\nb = [1]\nb = [2, 3]");
  EXPECT_EQ(cfg.get_int("a"), 2);
  EXPECT_EQ(cfg.get_string_list("b"), (std::vector<std::string>{"2", "3"}));
  EXPECT_EQ(cfg.origin_of("a"), "test.conf:2");
}

TEST(Config, RepeatedObjectsMergeKeyByKey) {
  const auto cfg = parse("a { x = 1, y = 1, n { p = 1 } }\na { y = 2, z = 2, n { q = 2 } }");
  EXPECT_EQ(cfg.get_int("a.x"), 1);
  EXPECT_EQ(cfg.get_int("a.y"), 2);
  EXPECT_EQ(cfg.get_int("a.z"), 2);
  EXPECT_EQ(cfg.get_int("a.n.p"), 1);
  EXPECT_EQ(cfg.get_int("a.n.q"), 2);
}

TEST(Config, AnObjectReplacesAScalarAndAScalarReplacesAnObject) {
  const auto cfg = parse("a = 1\na.b = 2\nc { d = 1 }\nc = 3");
  EXPECT_EQ(cfg.get_int("a.b"), 2);
  EXPECT_EQ(cfg.get_int("c"), 3);
}

// -- durations -----------------------------------------------------------------------------------

TEST(Config, DurationsAcceptEveryHoconUnit) {
  struct example {
    const char* text;
    troupe::duration expected;
  };
  const example examples[] = {
      {"5ns", 5ns},
      {"5 nano", 5ns},
      {"5 nanos", 5ns},
      {"1 nanosecond", 1ns},
      {"5 nanoseconds", 5ns},
      {"5us", 5us},
      {"5 micro", 5us},
      {"5 micros", 5us},
      {"1 microsecond", 1us},
      {"5 microseconds", 5us},
      {"500ms", 500ms},
      {"5 milli", 5ms},
      {"5 millis", 5ms},
      {"1 millisecond", 1ms},
      {"5 milliseconds", 5ms},
      {"5s", 5s},
      {"5 s", 5s},
      {"1 second", 1s},
      {"5 seconds", 5s},
      {"5m", 5min},
      {"1 minute", 1min},
      {"2 minutes", 2min},
      {"5h", 5h},
      {"1 hour", 1h},
      {"3 hours", 3h},
      {"2d", 48h},
      {"1 day", 24h},
      {"7 days", 168h},
      {"0", 0ms},
      {"250", 250ms},
      {"0 s", 0s},
      {"1.5 s", 1500ms},
      {"0.5m", 30s},
  };
  for (const auto& e : examples) {
    const auto cfg = parse(std::string("d = ") + e.text);
    EXPECT_EQ(cfg.get_duration("d"), e.expected) << e.text;
    const auto quoted = parse(std::string("d = \"") + e.text + "\"");
    EXPECT_EQ(quoted.get_duration("d"), e.expected) << '"' << e.text << '"';
  }
}

TEST(Config, ABareNumberDurationIsMilliseconds) {
  EXPECT_EQ(parse("d = 1500").get_duration("d"), troupe::duration(1500ms));
}

TEST(Config, NegativeDurationsAreRejected) {
  const auto cfg = parse("a = -5s\nb = -100");
  EXPECT_EQ(error_of([&] { (void)cfg.get_duration("a"); }),
            "test.conf:1: a: expected a non-negative duration, got \"-5s\"");
  EXPECT_EQ(error_of([&] { (void)cfg.get_duration("b"); }),
            "test.conf:2: b: expected a non-negative duration, got -100");
}

TEST(Config, DurationsWithUnknownUnitsOrTooLargeAreRejected) {
  const auto cfg = parse("a = 5 fortnights\nb = 5S\nc = s\nd = 300000 days\ne = 1.s");
  for (const char* key : {"a", "b", "c", "e"}) {
    EXPECT_THAT(error_of([&] { (void)cfg.get_duration(key); }), HasSubstr("expected a duration"))
        << key;
  }
  EXPECT_THAT(error_of([&] { (void)cfg.get_duration("d"); }), HasSubstr("shorter than 292 years"));
}

// -- typed getters and errors --------------------------------------------------------------------

TEST(Config, BadDurationErrorNamesFileLineAndKey) {
  temp_dir dir;
  const auto file = dir.write("app.conf",
                              "troupe {\n  sharding {\n    number-of-shards = 64\n"
                              "    passivation-idle = soon\n  }\n}\n");
  const auto cfg = config::parse_file(file);
  EXPECT_EQ(error_of([&] { (void)cfg.get_duration("troupe.sharding.passivation-idle"); }),
            file + ":4: troupe.sharding.passivation-idle: expected a duration, got \"soon\"");
}

TEST(Config, WrongTypesThrowNamingFileLineAndKey) {
  const auto cfg =
      parse("s = hello\no { x = 1 }\nl = [1, 2]\nf = 1.5\nb = maybe\nlo = [a, {x = 1}]");
  EXPECT_EQ(error_of([&] { (void)cfg.get_int("s"); }),
            "test.conf:1: s: expected an integer, got \"hello\"");
  EXPECT_EQ(error_of([&] { (void)cfg.get_int("f"); }),
            "test.conf:4: f: expected an integer, got 1.5");
  EXPECT_EQ(error_of([&] { (void)cfg.get_string("o"); }),
            "test.conf:2: o: expected a string, got an object");
  EXPECT_EQ(error_of([&] { (void)cfg.get_double("l"); }),
            "test.conf:3: l: expected a number, got a list");
  EXPECT_EQ(error_of([&] { (void)cfg.get_bool("b"); }),
            "test.conf:5: b: expected a boolean (true/false, yes/no, on/off), got \"maybe\"");
  EXPECT_EQ(error_of([&] { (void)cfg.get_string_list("s"); }),
            "test.conf:1: s: expected a list, got \"hello\"");
  EXPECT_THAT(error_of([&] { (void)cfg.get_string_list("lo"); }),
              HasSubstr("test.conf:6: lo: expected a list of strings"));
  EXPECT_THAT(error_of([&] { (void)cfg.at("s"); }),
              HasSubstr("test.conf:1: s: expected an object"));
}

TEST(Config, IntegersOutside64BitsAreRejected) {
  const auto cfg = parse("a = 9223372036854775808");
  EXPECT_THAT(error_of([&] { (void)cfg.get_int("a"); }), HasSubstr("64-bit range"));
}

TEST(Config, MissingValuesAreNullopt) {
  const auto cfg = parse("a { b = 1 }");
  EXPECT_FALSE(cfg.has("x"));
  EXPECT_FALSE(cfg.has("a.c"));
  EXPECT_EQ(cfg.get_string("x"), std::nullopt);
  EXPECT_EQ(cfg.get_int("a.c"), std::nullopt);
  EXPECT_EQ(cfg.get_bool("x.y.z"), std::nullopt);
  EXPECT_EQ(cfg.get_double("x"), std::nullopt);
  EXPECT_EQ(cfg.get_duration("x"), std::nullopt);
  EXPECT_EQ(cfg.get_string_list("x"), std::nullopt);
  EXPECT_EQ(cfg.origin_of("x"), "");
}

TEST(Config, APathThroughAScalarIsAnError) {
  const auto cfg = parse("a = 1");
  EXPECT_EQ(error_of([&] { (void)cfg.get_int("a.b"); }),
            "test.conf:1: a: expected an object, got 1");
}

TEST(Config, InvalidPathsAreErrors) {
  const auto cfg = parse("a = 1");
  EXPECT_THAT(error_of([&] { (void)cfg.has("a..b"); }), HasSubstr("empty segment"));
  EXPECT_THAT(error_of([&] { (void)cfg.has("a."); }), HasSubstr("ends with '.'"));
  EXPECT_THAT(error_of([&] { (void)cfg.has("\"a"); }), HasSubstr("unterminated quote"));
}

TEST(Config, AtGivesTheSubtreeAndErrorsKeepTheFullPath) {
  const auto cfg = parse("troupe.sharding { n = 4\n idle = later }");
  const auto sharding = cfg.at("troupe").at("sharding");
  EXPECT_EQ(sharding.get_int("n"), 4);
  EXPECT_THAT(sharding.keys(), ElementsAre("idle", "n"));
  EXPECT_EQ(error_of([&] { (void)sharding.get_duration("idle"); }),
            "test.conf:2: troupe.sharding.idle: expected a duration, got \"later\"");
  EXPECT_EQ(sharding.origin_of("n"), "test.conf:1");
}

TEST(Config, AtAMissingPathIsEmpty) {
  const auto cfg = parse("a = 1");
  const auto missing = cfg.at("nope.deeper");
  EXPECT_TRUE(missing.keys().empty());
  EXPECT_FALSE(missing.has("x"));
}

TEST(Config, KeysAreTheSortedDirectChildren) {
  const auto cfg = parse("zeta = 1\nalpha { inner = 2 }\nmid = [1]");
  EXPECT_THAT(cfg.keys(), ElementsAre("alpha", "mid", "zeta"));
  EXPECT_THAT(cfg.at("alpha").keys(), ElementsAre("inner"));
}

TEST(Config, OriginOfNamesFileAndLine) {
  const auto cfg = config::parse_string("\n\na = 1\nb {\n  c = x\n}", "app.conf");
  EXPECT_EQ(cfg.origin_of("a"), "app.conf:3");
  EXPECT_EQ(cfg.origin_of("b.c"), "app.conf:5");
}

// -- unknown keys --------------------------------------------------------------------------------

TEST(Config, UnknownKeyFailsNamingTheKeyFileAndLine) {
  const auto cfg = config::parse_string(
      "troupe.sharding {\n  number-of-shards = 64\n  pasivation-idle = 2 minutes\n}", "app.conf");
  EXPECT_NO_THROW(cfg.check_known_keys("troupe", {"sharding"}));
  const auto message = error_of([&] {
    cfg.check_known_keys("troupe.sharding", {"number-of-shards", "passivation-idle"});
  });
  EXPECT_THAT(message, HasSubstr("app.conf:3: troupe.sharding.pasivation-idle: unknown key"));
  EXPECT_THAT(message, HasSubstr("passivation-idle"));
  // Through at(), the key keeps its full path.
  EXPECT_THAT(
      error_of([&] { cfg.at("troupe").check_known_keys("sharding", {"number-of-shards"}); }),
      HasSubstr("app.conf:3: troupe.sharding.pasivation-idle: unknown key"));
}

TEST(Config, CheckKnownKeysOfAMissingPathPasses) {
  EXPECT_NO_THROW(parse("a = 1").check_known_keys("troupe.sharding", {"x"}));
  EXPECT_NO_THROW(parse("a = 1").check_known_keys("", {"a"}));
  EXPECT_THAT(error_of([&] { parse("a = 1\nb = 2").check_known_keys("", {"a"}); }),
              HasSubstr("test.conf:2: b: unknown key"));
}

// -- bad syntax ----------------------------------------------------------------------------------

TEST(Config, UnterminatedStringFailsAtItsLine) {
  EXPECT_EQ(parse_error("a = 1\nb = \"open\nc = 2"),
            "test.conf:2: b: unterminated string: missing closing '\"'");
  EXPECT_THAT(parse_error("a = \"\"\"never closed"), HasSubstr("test.conf:1: a: unterminated"));
}

TEST(Config, UnterminatedObjectFailsAtTheOpeningBrace) {
  EXPECT_EQ(parse_error("a = 1\nb {\n  c = 2\n"),
            "test.conf:2: b: unterminated object: '{' has no matching '}'");
  EXPECT_THAT(parse_error("{ a = 1"), HasSubstr("test.conf:1: unterminated object"));
}

TEST(Config, UnterminatedListFails) {
  EXPECT_EQ(parse_error("a = [1,\n2"), "test.conf:1: a: unterminated list: '[' has no ']'");
}

TEST(Config, MissingValueFailsNamingTheKey) {
  EXPECT_EQ(parse_error("a = 1\nb =\nc = 2"),
            "test.conf:2: b: expected a value, got the end of the line");
  EXPECT_EQ(parse_error("x { y = }"), "test.conf:1: x.y: expected a value, got '}'");
  EXPECT_THAT(parse_error("a = "), HasSubstr("test.conf:1: a: expected a value"));
}

TEST(Config, MissingSeparatorOrKeyFails) {
  EXPECT_EQ(parse_error("a 1"), "test.conf:1: a: expected '=', ':' or '{' after the key, got '1'");
  EXPECT_THAT(parse_error("= 1"), HasSubstr("test.conf:1: expected a key"));
  EXPECT_THAT(parse_error("a. = 1"), HasSubstr("key ends with '.'"));
  EXPECT_THAT(parse_error("a += 1"), HasSubstr("'+=' is not supported"));
}

TEST(Config, TwoValuesOnOneLineFail) {
  EXPECT_EQ(parse_error("x = 0\na = 1 b = 2"),
            "test.conf:2: a: expected ',' or a new line after the value, got '='");
  EXPECT_THAT(parse_error("a = [1 2 }"), HasSubstr("test.conf:1: a:"));
}

TEST(Config, StrayClosingBraceFails) {
  EXPECT_THAT(parse_error("a = 1\n}"), HasSubstr("test.conf:2: unexpected '}'"));
  EXPECT_THAT(parse_error("{ a = 1 } b = 2"), HasSubstr("after the root object"));
}

TEST(Config, BadEscapesFail) {
  EXPECT_THAT(parse_error(R"(a = "\q")"), HasSubstr("test.conf:1: a: invalid escape"));
  EXPECT_THAT(parse_error(R"(a = "\u12")"), HasSubstr("4 hex digits"));
  EXPECT_THAT(parse_error(R"(a = "\ud800")"), HasSubstr("surrogate"));
}

TEST(Config, ARootListFails) { EXPECT_THAT(parse_error("[1, 2]"), HasSubstr("must be an object")); }

// -- files and includes --------------------------------------------------------------------------

TEST(Config, ParseFileReadsAFileAndNamesItInOrigins) {
  temp_dir dir;
  const auto file = dir.write("app.conf", "a = 1\nb = 2\n");
  const auto cfg = config::parse_file(file);
  EXPECT_EQ(cfg.get_int("b"), 2);
  EXPECT_EQ(cfg.origin_of("b"), file + ":2");
}

TEST(Config, ParseFileOfAMissingFileFails) {
  temp_dir dir;
  const auto missing = (dir.path() / "nope.conf").string();
  EXPECT_THAT(error_of([&] { (void)config::parse_file(missing); }),
              HasSubstr(missing + ": cannot read config file"));
}

TEST(Config, IncludesResolveRelativeToTheIncludingFile) {
  temp_dir dir;
  dir.write("conf.d/defaults.conf", "include \"more/net.conf\"\npool = 4\n");
  dir.write("conf.d/more/net.conf", "port = 2552\n");
  const auto file = dir.write("app.conf", "include \"conf.d/defaults.conf\"\nname = app\n");
  const auto cfg = config::parse_file(file);
  EXPECT_EQ(cfg.get_int("pool"), 4);
  EXPECT_EQ(cfg.get_int("port"), 2552);
  EXPECT_EQ(cfg.get_string("name"), "app");
  EXPECT_EQ(cfg.origin_of("port"), (dir.path() / "conf.d/more/net.conf").string() + ":1");
}

TEST(Config, IncludedFieldsMergeAndLaterFieldsWin) {
  temp_dir dir;
  dir.write("base.conf", "a = 1\nobj { x = 1, y = 1 }\n");
  const auto file =
      dir.write("app.conf", "a = 0\nobj { w = 0 }\ninclude \"base.conf\"\nobj.y = 2\n");
  const auto cfg = config::parse_file(file);
  EXPECT_EQ(cfg.get_int("a"), 1);  // the include comes later than a = 0
  EXPECT_EQ(cfg.get_int("obj.w"), 0);
  EXPECT_EQ(cfg.get_int("obj.x"), 1);
  EXPECT_EQ(cfg.get_int("obj.y"), 2);
}

TEST(Config, IncludeInsideAnObjectNestsTheFile) {
  temp_dir dir;
  dir.write("sharding.conf", "number-of-shards = 16\nidle = ${number-of-shards}s\n");
  const auto file = dir.write("app.conf", "troupe.sharding {\n  include \"sharding.conf\"\n}\n");
  const auto cfg = config::parse_file(file);
  EXPECT_EQ(cfg.get_int("troupe.sharding.number-of-shards"), 16);
  // A substitution in an included file looks first relative to where it was included.
  EXPECT_EQ(cfg.get_duration("troupe.sharding.idle"), troupe::duration(16s));
}

TEST(Config, IncludeRequiredFormIsAccepted) {
  temp_dir dir;
  dir.write("b.conf", "x = 1\n");
  const auto file = dir.write("a.conf", "include required(\"b.conf\")\n");
  EXPECT_EQ(config::parse_file(file).get_int("x"), 1);
}

TEST(Config, AMissingIncludeIsAnError) {
  temp_dir dir;
  const auto file = dir.write("app.conf", "a = 1\ninclude \"missing.conf\"\n");
  const auto message = error_of([&] { (void)config::parse_file(file); });
  EXPECT_THAT(message, HasSubstr(file + ":2: include \"missing.conf\": file not found"));
}

TEST(Config, AnIncludeCycleIsAnError) {
  temp_dir dir;
  dir.write("a.conf", "a = 1\ninclude \"b.conf\"\n");
  dir.write("b.conf", "b = 1\ninclude \"a.conf\"\n");
  const auto file = (dir.path() / "a.conf").string();
  const auto message = error_of([&] { (void)config::parse_file(file); });
  EXPECT_THAT(message, HasSubstr("b.conf:2"));
  EXPECT_THAT(message, HasSubstr("include cycle"));
  // A file including itself too.
  const auto self = dir.write("self.conf", "include \"self.conf\"\n");
  EXPECT_THAT(error_of([&] { (void)config::parse_file(self); }), HasSubstr("include cycle"));
}

// -- nesting bound: text nested deeper than 64 levels is an error, never a stack overflow --------

// `levels` objects `a { a { ... } }` around `x = 1`, the root object being the first level.
std::string nested_objects(std::size_t levels) {
  std::string text;
  for (std::size_t i = 1; i < levels; ++i) text += "a{";
  text += "x=1";
  text.append(levels - 1, '}');
  return text;
}

TEST(Config, NestingUpTo64LevelsIsRead) {
  std::string path = "a";
  for (int i = 2; i < 64; ++i) path += ".a";
  EXPECT_EQ(parse(nested_objects(64)).get_int(path + ".x"), 1);
  EXPECT_THAT(parse_error(nested_objects(65)), HasSubstr("nested deeper than 64 levels"));
}

TEST(Config, DeeplyNestedObjectsFailNamingTheLine) {
  const auto message = parse_error("ok = 1\n" + nested_objects(100000));
  EXPECT_THAT(message, HasSubstr("test.conf:2: "));
  EXPECT_THAT(message, HasSubstr("objects and lists nested deeper than 64 levels"));
  // Over lines, the line where the 65th level opens.
  std::string text;
  for (int i = 0; i < 100000; ++i) text += "a {\n";
  EXPECT_THAT(parse_error(text), HasSubstr("test.conf:64: "));
  EXPECT_THAT(parse_error("{" + text), HasSubstr("test.conf:64: "));
}

TEST(Config, DeeplyNestedListsFail) {
  EXPECT_THAT(parse_error("a = " + std::string(100000, '[')),
              HasSubstr("test.conf:1: a: objects and lists nested deeper than 64 levels"));
  EXPECT_THAT(parse_error("a = " + std::string(64, '[') + std::string(64, ']')),
              HasSubstr("nested deeper than 64 levels"));
  EXPECT_EQ(parse("a = " + std::string(63, '[') + std::string(63, ']')).has("a"), true);
}

TEST(Config, ADottedKeyOfTooManySegmentsFails) {
  std::string key = "a";
  for (int i = 0; i < 100000; ++i) key += ".a";
  const auto message = parse_error(key + " = 1");
  EXPECT_THAT(message, HasSubstr("nested deeper than 64 levels"));
  EXPECT_LT(message.size(), 1000U);  // the key is cut short in the message
  // 64 segments are 64 levels with the root (the last segment holds the value).
  key = "a";
  for (int i = 1; i < 64; ++i) key += ".a";
  EXPECT_EQ(parse(key + " = 1").get_int(key), 1);
  EXPECT_THAT(parse_error(key + ".a = 1"), HasSubstr("nested deeper than 64 levels"));
}

TEST(Config, NestingCountsAcrossIncludes) {
  temp_dir dir;
  dir.write("deep.conf", nested_objects(40));
  // The included root becomes the including object: level 25 plus 39 more is 64.
  const auto including_at = [](int level) {
    std::string text;
    for (int i = 1; i < level; ++i) text += "b{";
    text += "\ninclude \"deep.conf\"\n";
    text.append(static_cast<std::size_t>(level - 1), '}');
    return text;
  };
  EXPECT_TRUE(config::parse_file(dir.write("ok.conf", including_at(25))).has("b"));
  const auto file = dir.write("app.conf", including_at(26));
  const auto message = error_of([&] { (void)config::parse_file(file); });
  EXPECT_THAT(message, HasSubstr("deep.conf:1: "));
  EXPECT_THAT(message, HasSubstr("nested deeper than 64 levels"));
}

TEST(Config, SubstitutionsCannotBuildATreeDeeperThan64Levels) {
  // Resolved in key order, each object takes the previous one inside it: shallow recursion, but
  // a tree 100,000 levels deep.
  std::string text = "k000000 = { x = 1 }\n";
  char line[64];
  for (int i = 1; i < 100000; ++i) {
    std::snprintf(line, sizeof line, "k%06d = { x = ${k%06d} }\n", i, i - 1);
    text += line;
  }
  const auto message = parse_error(text);
  EXPECT_THAT(message, HasSubstr("nested deeper than 64 levels after substitution"));
  EXPECT_THAT(message, HasSubstr("test.conf:65: k000064: "));
}

TEST(Config, LongSubstitutionChainsFail) {
  // Resolving k000000 first needs k000001, which needs k000002, ...
  std::string text;
  char line[64];
  for (int i = 0; i < 100000; ++i) {
    std::snprintf(line, sizeof line, "k%06d = ${k%06d}\n", i, i + 1);
    text += line;
  }
  text += "k100000 = 1\n";
  EXPECT_THAT(parse_error(text), HasSubstr("substitutions nested too deep"));
  // A short chain resolves.
  EXPECT_EQ(parse("a = ${b}\nb = ${c}\nc = ${d}\nd = 4").get_int("a"), 4);
}

TEST(Config, AConfigMergedWithItselfStaysTheSame) {
  const auto cfg = parse("a { b { c = 1 } }");
  EXPECT_EQ(cfg.with_fallback(cfg).get_int("a.b.c"), 1);
}

TEST(Config, IncludesFromAStringResolveAgainstTheOriginDirectory) {
  temp_dir dir;
  dir.write("inc.conf", "x = 5\n");
  const auto cfg =
      config::parse_string("include \"inc.conf\"", (dir.path() / "virtual.conf").string());
  EXPECT_EQ(cfg.get_int("x"), 5);
}

// -- substitutions -------------------------------------------------------------------------------

TEST(Config, SubstitutionsReferToOtherPaths) {
  const auto cfg = parse(
      "base { port = 2552, host = localhost }\n"
      "copy = ${base.port}\n"
      "forward = ${later}\n"
      "later = 7\n"
      "obj = ${base}\n"
      "url = \"tcp://\"${base.host}\":\"${base.port}/path\n"
      "chain = ${copy}");
  EXPECT_EQ(cfg.get_int("copy"), 2552);
  EXPECT_EQ(cfg.get_int("forward"), 7);
  EXPECT_EQ(cfg.get_string("obj.host"), "localhost");
  EXPECT_EQ(cfg.get_string("url"), "tcp://localhost:2552/path");
  EXPECT_EQ(cfg.get_int("chain"), 2552);
}

TEST(Config, ASubstitutedObjectMergesWithALaterObject) {
  const auto cfg = parse("defaults { a = 1, b = 1 }\nx = ${defaults}\nx { b = 2 }");
  EXPECT_EQ(cfg.get_int("x.a"), 1);
  EXPECT_EQ(cfg.get_int("x.b"), 2);
  EXPECT_EQ(cfg.get_int("defaults.b"), 1);
}

TEST(Config, SubstitutionsFallBackToTheEnvironment) {
  ::setenv("TROUPE_CONFIG_TEST_HOST", "db.example", 1);
  ::setenv("troupe.config-test.port", "5432", 1);
  const auto cfg = parse(
      "host = ${TROUPE_CONFIG_TEST_HOST}\nport = ${troupe.config-test.port}\n"
      "dsn = \"postgres://\"${TROUPE_CONFIG_TEST_HOST}");
  EXPECT_EQ(cfg.get_string("host"), "db.example");
  EXPECT_EQ(cfg.get_int("port"), 5432);
  EXPECT_EQ(cfg.get_string("dsn"), "postgres://db.example");
  // A config path wins over an environment variable of the same name.
  EXPECT_EQ(
      parse("TROUPE_CONFIG_TEST_HOST = local\nh = ${TROUPE_CONFIG_TEST_HOST}").get_string("h"),
      "local");
  ::unsetenv("TROUPE_CONFIG_TEST_HOST");
  ::unsetenv("troupe.config-test.port");
}

TEST(Config, AnUnresolvedSubstitutionIsAnError) {
  ::unsetenv("TROUPE_CONFIG_TEST_NOPE");
  EXPECT_EQ(parse_error("a = 1\nb = ${TROUPE_CONFIG_TEST_NOPE}"),
            "test.conf:2: b: cannot resolve ${TROUPE_CONFIG_TEST_NOPE}: no such key and no "
            "environment variable TROUPE_CONFIG_TEST_NOPE");
  EXPECT_THAT(parse_error("a = ${b"), HasSubstr("unterminated substitution"));
  EXPECT_THAT(parse_error("a = ${}"), HasSubstr("empty substitution"));
}

TEST(Config, AnOptionalSubstitutionLeavesTheFieldUnset) {
  ::unsetenv("TROUPE_CONFIG_TEST_NOPE");
  const auto cfg = parse(
      "a = ${?TROUPE_CONFIG_TEST_NOPE}\n"
      "b = 1\nb = ${?TROUPE_CONFIG_TEST_NOPE}\n"
      "c = ${?b}\n"
      "list = [x, ${?TROUPE_CONFIG_TEST_NOPE}, y]\n"
      "s = pre${?TROUPE_CONFIG_TEST_NOPE}post");
  EXPECT_FALSE(cfg.has("a"));
  EXPECT_EQ(cfg.get_int("b"), 1);  // the earlier value stays
  EXPECT_EQ(cfg.get_int("c"), 1);
  EXPECT_EQ(cfg.get_string_list("list"), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(cfg.get_string("s"), "prepost");
  EXPECT_THAT(cfg.keys(), ElementsAre("b", "c", "list", "s"));
}

TEST(Config, AnOptionalSubstitutionOverridesWhenSet) {
  ::setenv("TROUPE_CONFIG_TEST_SHARDS", "256", 1);
  const auto cfg = parse("shards = 64\nshards = ${?TROUPE_CONFIG_TEST_SHARDS}");
  EXPECT_EQ(cfg.get_int("shards"), 256);
  ::unsetenv("TROUPE_CONFIG_TEST_SHARDS");
}

TEST(Config, ASubstitutionCycleIsAnError) {
  EXPECT_THAT(parse_error("a = ${b}\nb = ${a}"), HasSubstr("substitution cycle"));
  EXPECT_THAT(parse_error("a { b = ${a} }"), HasSubstr("substitution cycle"));
}

TEST(Config, ConcatenatingAnObjectIsAnError) {
  EXPECT_THAT(parse_error("o { x = 1 }\ns = prefix ${o}"),
              HasSubstr("test.conf:2: s: cannot concatenate an object"));
  EXPECT_THAT(parse_error("s = prefix { x = 1 }"), HasSubstr("not supported"));
}

// -- layering ------------------------------------------------------------------------------------

TEST(Config, WithFallbackLayersCodeOverFileOverDefaults) {
  const auto defaults = config::parse_string(
      "troupe.sharding { number-of-shards = 64\n passivation-idle = 2 minutes\n"
      " max-entities = 100000 }\ntroupe.other = d",
      "defaults.conf");
  const auto file = config::parse_string(
      "troupe.sharding { number-of-shards = 128\n max-entities = 50000 }", "app.conf");
  const auto code = config::parse_string("troupe.sharding.max-entities = 10", "<code>");
  const auto cfg = code.with_fallback(file).with_fallback(defaults);
  EXPECT_EQ(cfg.get_int("troupe.sharding.max-entities"), 10);       // code
  EXPECT_EQ(cfg.get_int("troupe.sharding.number-of-shards"), 128);  // file
  EXPECT_EQ(cfg.get_duration("troupe.sharding.passivation-idle"),
            troupe::duration(2min));  // defaults
  EXPECT_EQ(cfg.get_string("troupe.other"), "d");
  EXPECT_EQ(cfg.origin_of("troupe.sharding.number-of-shards"), "app.conf:1");
  EXPECT_EQ(cfg.origin_of("troupe.sharding.passivation-idle"), "defaults.conf:2");
  EXPECT_THAT(cfg.at("troupe.sharding").keys(),
              ElementsAre("max-entities", "number-of-shards", "passivation-idle"));
  // The inputs are unchanged.
  EXPECT_EQ(defaults.get_int("troupe.sharding.max-entities"), 100000);
  EXPECT_FALSE(code.has("troupe.sharding.number-of-shards"));
}

TEST(Config, WithFallbackLetsAScalarOrNullHideAnObject) {
  const auto fallback = parse("a { x = 1 }\nb { y = 1 }");
  const auto cfg = parse("a = 5\nb = null").with_fallback(fallback);
  EXPECT_EQ(cfg.get_int("a"), 5);
  EXPECT_FALSE(cfg.has("b"));
  EXPECT_FALSE(cfg.has("b.y"));
}

TEST(Config, WithFallbackOfEmptyIsTheSame) {
  const auto cfg = parse("a = 1").with_fallback(config::empty());
  EXPECT_EQ(cfg.get_int("a"), 1);
  EXPECT_EQ(config::empty().with_fallback(parse("a = 2")).get_int("a"), 2);
}

TEST(Config, CopiesShareTheTreeAndOutliveTheOriginal) {
  std::optional<config> sub;
  {
    const auto cfg = parse("a { b { c = 1 } }");
    sub = cfg.at("a.b");
  }
  EXPECT_EQ(sub->get_int("c"), 1);
}

}  // namespace
