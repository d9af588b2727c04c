#pragma once
/// INTERNAL. The region's ref when it takes a type In other than its entities' M (e.g.
/// sharding_envelope<M>): on the sender's thread it reads the id from the In, turns the In into
/// the entity's M, and hands (id, M) to the region actor as a routed message, so the region and
/// its shards stay keyed on M. What it cannot convert becomes a dead letter with the reason.

#include <troupe/core/dead_letters.hpp>
#include <troupe/core/detail/message_convert.hpp>
#include <troupe/sharding/detail/region_actor.hpp>
#include <troupe/sharding/detail/region_ingress.hpp>

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace troupe::sharding::detail {

/// What an envelope ingress needs from its type's start.
template <class M, class In>
struct envelope_setup {
  entity_id_extractor<In> extract_entity_id;
  std::function<M(In)> extract_entity_message;
  std::string type_name;
  dead_letter_office* dead_letters = nullptr;  // the system's: alive as long as the region ref
};

template <class M, class In>
class envelope_ingress final : public region_forwarder {
 public:
  envelope_ingress(untyped_ref region, std::shared_ptr<const envelope_setup<M, In>> setup)
      : region_forwarder(std::move(region)), setup_(std::move(setup)) {}

  [[nodiscard]] std::string path() const override { return region().path(); }

 private:
  void forward(troupe::detail::envelope_base* e) noexcept override {
    try {
      // The sender's own In is read in place, so that a rejected one is dead-lettered intact.
      In* in = nullptr;
      std::optional<In> converted;
      if (e->kind == troupe::detail::envelope_kind::user && e->type() == typeid(In)) {
        in = static_cast<In*>(e->payload());
      } else {
        converted = troupe::detail::convert_payload<In>(*e);
        if (!converted) {
          region().target()->enqueue_any(e);  // the region dead-letters what it cannot take
          return;
        }
        // An alternative of a variant In: the envelope now holds a moved-from value.
        auto* whole = new troupe::detail::envelope<In>(std::move(*converted));
        whole->sender = std::move(e->sender);
        delete e;
        e = whole;
        in = static_cast<In*>(e->payload());
      }
      std::string id;
      const char* step = "the entity-id extractor";
      try {
        id = setup_->extract_entity_id(*in);
        if (id.empty()) {
          reject(e, "empty entity id");
          return;
        }
        step = "the entity-message extractor";
        M message = setup_->extract_entity_message(std::move(*in));
        step = "passing the message on";
        auto* wrapped = new troupe::detail::envelope<region_message<M>>(
            std::in_place_type<routed<M>>, routed<M>{std::move(id), std::move(message)});
        std::unique_ptr<troupe::detail::envelope_base> held(e);
        replace_to_region(held, wrapped);
      } catch (const std::exception& ex) {
        reject(e, std::string(step) + " threw: " + ex.what());
      } catch (...) {
        reject(e, std::string(step) + " threw a non-standard exception");
      }
    } catch (...) {
      // Out of memory before the message was taken apart: say so, with what is left of it.
      reject(e, "could not be passed on (out of memory)", errc::mailbox_full);
    }
  }

  /// Publishes the sender's own envelope (its In, or what is left of it after a failed move)
  /// as a dead letter: an asker fails at once.
  void reject(troupe::detail::envelope_base* e, const std::string& reason,
              errc code = errc::invalid_entity_id) noexcept {
    setup_->dead_letters->publish(e, region().path(), make_error_code(code),
                                  "region " + setup_->type_name + ": " + reason);
  }

  std::shared_ptr<const envelope_setup<M, In>> setup_;
};

}  // namespace troupe::sharding::detail
