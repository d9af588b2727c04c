#pragma once
/// The message types that may cross nodes, each under a stable manifest (name + version):
///
///   auto registry = std::make_shared<troupe::cluster::message_registry>();
///   registry->add<account_command>("bank.account_command")   // a variant: sent as a whole
///           .add<balance>("bank.balance");                    // a reply type
///
/// Register every type sent to a remote ref: commands (often a std::variant) and replies.
/// Reflected structs, variants, strings, numbers, containers and actor refs need no codec of
/// their own (troupe/persistence/serialization/codec.hpp; refs: troupe/cluster/ref_codec.hpp).
/// Fill a registry before the node starts; it is then only read, from any thread.

#include <troupe/cluster/errc.hpp>
#include <troupe/cluster/ref_codec.hpp>
#include <troupe/core/detail/envelope.hpp>
#include <troupe/persistence/serialization/codec.hpp>
#include <troupe/persistence/serialization/manifest.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <typeindex>
#include <unordered_map>

namespace troupe::cluster {

class message_registry {
 public:
  /// How one registered type is written and read.
  struct entry {
    persistence::manifest manifest;
    /// Appends the payload of an envelope holding this type.
    void (*encode)(persistence::byte_writer& w, const void* value);
    /// Decodes a whole payload into a new envelope; throws persistence_error on bad bytes.
    troupe::detail::envelope_base* (*decode)(std::span<const std::byte> payload);
  };

  /// Registers T under `type_name` and `version`. Throws cluster_error for a type or manifest
  /// registered twice or an empty name.
  template <persistence::encodable T>
  message_registry& add(std::string type_name, std::uint32_t version = 1) {
    insert(std::type_index(typeid(T)),
           entry{persistence::manifest{std::move(type_name), version},
                 [](persistence::byte_writer& w, const void* v) {
                   persistence::codec<T>::encode(w, *static_cast<const T*>(v));
                 },
                 [](std::span<const std::byte> payload) -> troupe::detail::envelope_base* {
                   return new troupe::detail::envelope<T>(persistence::decode<T>(payload));
                 }});
    return *this;
  }

  /// The entry of a C++ type, or null when it is not registered.
  [[nodiscard]] const entry* find(const std::type_info& type) const noexcept;
  /// The entry of a manifest, or null when none is registered.
  [[nodiscard]] const entry* find(std::string_view type_name, std::uint32_t version) const noexcept;

 private:
  void insert(std::type_index type, entry e);

  std::unordered_map<std::type_index, std::shared_ptr<const entry>> by_type_;
  /// Hashes and compares manifests, and finds one by a name it does not own (a delivery
  /// decodes one per message: no key string is built for the lookup, and a hash costs a third
  /// of a tree's string compares).
  struct manifest_hash {
    using is_transparent = void;
    template <class A>
    std::size_t operator()(const std::pair<A, std::uint32_t>& m) const noexcept {
      return std::hash<std::string_view>{}(std::string_view(m.first)) ^
             (static_cast<std::size_t>(m.second) * 0x9e3779b97f4a7c15ULL);
    }
  };
  struct manifest_equal {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const std::pair<A, std::uint32_t>& a,
                    const std::pair<B, std::uint32_t>& b) const noexcept {
      return a.second == b.second && std::string_view(a.first) == std::string_view(b.first);
    }
  };
  std::unordered_map<std::pair<std::string, std::uint32_t>, std::shared_ptr<const entry>,
                     manifest_hash, manifest_equal>
      by_manifest_;
};

}  // namespace troupe::cluster
