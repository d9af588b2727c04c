#pragma once
/// What a store keeps of a serialized value: its manifest (type name and version) and its bytes.

#include <troupe/persistence/serialization/wire.hpp>

#include <compare>
#include <cstdint>
#include <string>

namespace troupe::persistence {

/// Names the type and format version of some bytes, so a reader picks the right decoder (and an
/// upcaster when the version is older than the current one).
struct manifest {
  /// A stable name chosen by the application ("bank.deposited"), never a compiler's type name.
  std::string type_name;
  /// The format version, from 1.
  std::uint32_t version = 1;

  friend auto operator<=>(const manifest&, const manifest&) = default;
};

/// A value in its stored form.
struct serialized {
  persistence::manifest manifest;
  persistence::bytes payload;

  friend bool operator==(const serialized&, const serialized&) = default;
};

}  // namespace troupe::persistence
