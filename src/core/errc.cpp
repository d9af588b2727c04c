#include "troupe/core/errc.hpp"

namespace troupe {

namespace {

class troupe_category final : public std::error_category {
 public:
  [[nodiscard]] const char* name() const noexcept override { return "troupe"; }
  [[nodiscard]] std::string message(int code) const override {
    switch (static_cast<errc>(code)) {
      case errc::ask_timeout:
        return "ask timed out";
      case errc::recipient_terminated:
        return "recipient terminated";
      case errc::mailbox_full:
        return "mailbox full";
      case errc::invalid_actor_name:
        return "invalid actor name";
      case errc::actor_name_taken:
        return "actor name taken";
      case errc::no_sender:
        return "no sender to reply to";
      case errc::bad_reply_type:
        return "unexpected message type";
      case errc::system_terminated:
        return "actor system terminated";
      case errc::stash_overflow:
        return "stash full";
      case errc::actor_failed:
        return "actor failed";
      case errc::invalid_config:
        return "invalid configuration";
      case errc::not_in_actor:
        return "not inside an actor";
      case errc::not_an_entity:
        return "not a sharded entity";
      case errc::invalid_entity_id:
        return "invalid entity id";
      case errc::entity_start_failed:
        return "entity could not be started";
      case errc::message_copy_failed:
        return "message could not be copied or moved";
    }
    return "unknown troupe error";
  }
};

}  // namespace

const char* to_string(errc e) noexcept {
  switch (e) {
    case errc::ask_timeout:
      return "ask_timeout";
    case errc::recipient_terminated:
      return "recipient_terminated";
    case errc::mailbox_full:
      return "mailbox_full";
    case errc::invalid_actor_name:
      return "invalid_actor_name";
    case errc::actor_name_taken:
      return "actor_name_taken";
    case errc::no_sender:
      return "no_sender";
    case errc::bad_reply_type:
      return "bad_reply_type";
    case errc::system_terminated:
      return "system_terminated";
    case errc::stash_overflow:
      return "stash_overflow";
    case errc::actor_failed:
      return "actor_failed";
    case errc::invalid_config:
      return "invalid_config";
    case errc::not_in_actor:
      return "not_in_actor";
    case errc::not_an_entity:
      return "not_an_entity";
    case errc::invalid_entity_id:
      return "invalid_entity_id";
    case errc::entity_start_failed:
      return "entity_start_failed";
    case errc::message_copy_failed:
      return "message_copy_failed";
  }
  return "unknown";
}

const std::error_category& error_category() noexcept {
  static const troupe_category category;
  return category;
}

}  // namespace troupe
