#pragma once
/// Accepting a message whose type is only known at run time: the exact type, or one
/// alternative of a std::variant message type.

#include <troupe/core/detail/envelope.hpp>

#include <optional>
#include <typeinfo>
#include <utility>
#include <variant>

namespace troupe::detail {

template <class T>
struct is_variant : std::false_type {};
template <class... Ts>
struct is_variant<std::variant<Ts...>> : std::true_type {};

template <class... Ts>
std::optional<std::variant<Ts...>> convert_to_variant(envelope_base& e,
                                                      std::variant<Ts...>* /*tag*/) {
  std::optional<std::variant<Ts...>> out;
  // First alternative whose type matches wins; at most one can.
  (void)((e.type() == typeid(Ts)
              ? (out.emplace(std::in_place_type<Ts>, std::move(*static_cast<Ts*>(e.payload()))),
                 true)
              : false) ||
         ...);
  return out;
}

/// Moves the payload out as an M when its type is M or an alternative of M.
template <class M>
std::optional<M> convert_payload(envelope_base& e) {
  if (e.kind == envelope_kind::poison_pill) return std::nullopt;
  if (e.type() == typeid(M)) return std::optional<M>(std::move(*static_cast<M*>(e.payload())));
  if constexpr (is_variant<M>::value) {
    return convert_to_variant(e, static_cast<M*>(nullptr));
  } else {
    return std::nullopt;
  }
}

}  // namespace troupe::detail
