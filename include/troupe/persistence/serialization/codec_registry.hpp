#pragma once
/// Maps C++ types to manifests and back, with upcasters for older versions.
///
///   codec_registry reg;
///   reg.add<deposited>("bank.deposited", 2);                      // the current version
///   reg.add_upcast<deposited_v1, deposited>(1, [](deposited_v1 old) {   // bytes stored as v1
///     return deposited{old.amount, "EUR"};
///   });
///   serialized s = reg.serialize(event_variant);   // the manifest of the active alternative
///   auto e = reg.deserialize<event>(s);            // decodes, upcasts, wraps in the variant
///
/// A registry is filled once at start-up and then only read, from any thread.

#include <troupe/persistence/errc.hpp>
#include <troupe/persistence/serialization/codec.hpp>
#include <troupe/persistence/serialization/manifest.hpp>

#include <any>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <variant>

namespace troupe::persistence {

namespace detail {
template <class T>
struct is_variant : std::false_type {};
template <class... Ts>
struct is_variant<std::variant<Ts...>> : std::true_type {};
}  // namespace detail

/// Manifests of registered types, their decoders and upcasters.
class codec_registry {
 public:
  /// Registers T as `type_name` at its current `version`: serialize(T) writes this manifest.
  template <encodable T>
  codec_registry& add(std::string type_name, std::uint32_t version = 1) {
    static_assert(std::is_copy_constructible_v<T>, "registered types must be copyable");
    require_valid(type_name, version);
    manifest m{std::move(type_name), version};
    if (by_type_.contains(std::type_index(typeid(T)))) {
      throw persistence_error(errc::invalid_request,
                              "type registered twice, now as " + describe(m));
    }
    add_decoder(
        m, [](std::span<const std::byte> in) -> std::any { return persistence::decode<T>(in); });
    by_type_.emplace(std::type_index(typeid(T)), std::move(m));
    return *this;
  }

  /// Bytes stored under T's type name at `old_version` decode as Old and become a T through
  /// `upcast`. Register T first. To go from v1 through v2 to v3, compose the functions.
  template <encodable Old, class T, class F>
  codec_registry& add_upcast(std::uint32_t old_version, F upcast) {
    static_assert(std::is_invocable_r_v<T, F, Old>, "upcast must turn an Old into a T");
    auto it = by_type_.find(std::type_index(typeid(T)));
    if (it == by_type_.end()) {
      throw persistence_error(errc::invalid_request, "add_upcast before add of the target type");
    }
    if (old_version >= it->second.version) {
      throw persistence_error(errc::invalid_request, "upcast version must be older than " +
                                                         it->second.type_name + " v" +
                                                         std::to_string(it->second.version));
    }
    add_decoder(manifest{it->second.type_name, old_version},
                [f = std::move(upcast)](std::span<const std::byte> in) -> std::any {
                  return T(f(persistence::decode<Old>(in)));
                });
    return *this;
  }

  /// The manifest T is written with; throws errc::unknown_manifest when T is not registered.
  template <class T>
  [[nodiscard]] const manifest& manifest_of() const {
    auto it = by_type_.find(std::type_index(typeid(T)));
    if (it == by_type_.end()) {
      throw persistence_error(errc::unknown_manifest,
                              std::string("no manifest registered for ") + typeid(T).name());
    }
    return it->second;
  }

  /// The stored form of `value`. A variant that is not registered itself is written as its
  /// active alternative, which then must be registered.
  template <class T>
  [[nodiscard]] serialized serialize(const T& value) const {
    if constexpr (detail::is_variant<T>::value) {
      if (!by_type_.contains(std::type_index(typeid(T)))) {
        return std::visit([this](const auto& alt) { return serialize(alt); }, value);
      }
    }
    if constexpr (encodable<T>) {
      return serialized{manifest_of<T>(), persistence::encode(value)};
    } else {
      static_assert(detail::is_variant<T>::value, "T has no codec");
      throw persistence_error(errc::unknown_manifest, "variant is not registered");
    }
  }

  /// Decodes `stored` as a T (or as one alternative of a variant T), upcasting older versions.
  /// Throws errc::unknown_manifest for an unregistered manifest or a type that does not fit T,
  /// and errc::decode_error for malformed bytes.
  template <class T>
  [[nodiscard]] T deserialize(const serialized& stored) const {
    auto it = decoders_.find(stored.manifest);
    if (it == decoders_.end()) {
      throw persistence_error(errc::unknown_manifest,
                              "no decoder for " + describe(stored.manifest));
    }
    std::any value = it->second(stored.payload);
    if (auto* exact = std::any_cast<T>(&value)) return std::move(*exact);
    if constexpr (detail::is_variant<T>::value) {
      std::optional<T> out;
      wrap_alternative<T>(value, out, std::make_index_sequence<std::variant_size_v<T>>{});
      if (out) return std::move(*out);
    }
    throw persistence_error(errc::unknown_manifest,
                            describe(stored.manifest) + " does not decode to the requested type");
  }

 private:
  using decoder_fn = std::function<std::any(std::span<const std::byte>)>;

  static std::string describe(const manifest& m) {
    return "manifest '" + m.type_name + "' v" + std::to_string(m.version);
  }

  static void require_valid(const std::string& type_name, std::uint32_t version) {
    if (type_name.empty() || version == 0) {
      throw persistence_error(errc::invalid_request, "a manifest needs a name and a version >= 1");
    }
  }

  void add_decoder(const manifest& m, decoder_fn fn) {
    if (!decoders_.emplace(m, std::move(fn)).second) {
      throw persistence_error(errc::invalid_request, describe(m) + " registered twice");
    }
  }

  template <class V, std::size_t... I>
  static void wrap_alternative(std::any& value, std::optional<V>& out,
                               std::index_sequence<I...> /*unused*/) {
    (void)((try_alternative<V, I>(value, out)) || ...);
  }

  template <class V, std::size_t I>
  static bool try_alternative(std::any& value, std::optional<V>& out) {
    using alt = std::variant_alternative_t<I, V>;
    if (auto* p = std::any_cast<alt>(&value)) {
      out.emplace(std::in_place_index<I>, std::move(*p));
      return true;
    }
    return false;
  }

  std::map<std::type_index, manifest> by_type_;
  std::map<manifest, decoder_fn> decoders_;
};

}  // namespace troupe::persistence
