#pragma once
// The fixture every conformance test uses: a plugin from the factory under test, reopening, and
// helpers that wait for an operation through std::future (the stores complete on their own
// threads, the future wakes the test).

#include <troupe/persistence/errc.hpp>
#include <troupe/persistence/plugin.hpp>
#include <troupe/persistence/serialization/codec.hpp>

#include "persistence/conformance/plugin_factories.hpp"

#include <boost/asio/use_future.hpp>
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>
#include <vector>

namespace troupe::persistence::conformance {

inline constexpr auto use_future = boost::asio::use_future;

/// An event (or state) holding `text`.
inline serialized value_of(const std::string& text, std::uint32_t version = 1) {
  return {{"test.text", version}, encode(text)};
}

inline std::string text_of(const serialized& s) { return decode<std::string>(s.payload); }

/// The error code a future fails with, or errc{} when it succeeds.
template <class T>
errc error_of(std::future<T> f) {
  try {
    f.get();
  } catch (const persistence_error& e) {
    return e.value();
  }
  return errc{};
}

template <class Factory>
class store_test : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (requires { Factory::unavailable(); }) {
      if (auto why = Factory::unavailable()) GTEST_SKIP() << *why;
    }
    plugin_ = factory_.open();
  }

  /// Closes the plugin (finishing its queued writes) and opens it again over the same storage.
  void reopen() {
    plugin_.reset();
    plugin_ = factory_.open();
  }

  persistence::journal& journal() { return plugin_->journal(); }
  snapshot_store& snapshots() { return plugin_->snapshots(); }
  durable_state_store& states() { return plugin_->durable_state(); }
  remember_entities_store& remembered() { return plugin_->remember_entities(); }
  plugin& store() { return *plugin_; }
  Factory& factory() { return factory_; }

  sequence_nr append(const std::string& pid, sequence_nr next, std::vector<std::string> texts,
                     ownership_epoch epoch = 0) {
    append_request r{pid, next, {}, epoch, std::nullopt};
    for (auto& t : texts) r.events.push_back(value_of(t));
    return journal().async_append(std::move(r), use_future).get();
  }

  std::vector<std::string> read_texts(const std::string& pid, sequence_nr from = 1,
                                      sequence_nr to = max_sequence_nr) {
    std::vector<std::string> out;
    for (auto& e : journal().async_read({pid, from, to}, use_future).get()) {
      out.push_back(text_of(e.event));
    }
    return out;
  }

 private:
  Factory factory_;
  std::unique_ptr<plugin> plugin_;
};

}  // namespace troupe::persistence::conformance
