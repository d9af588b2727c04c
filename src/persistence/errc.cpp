#include "troupe/persistence/errc.hpp"

namespace troupe::persistence {

namespace {

class persistence_category final : public std::error_category {
 public:
  [[nodiscard]] const char* name() const noexcept override { return "troupe.persistence"; }
  [[nodiscard]] std::string message(int code) const override {
    switch (static_cast<errc>(code)) {
      case errc::decode_error:
        return "malformed bytes";
      case errc::unknown_manifest:
        return "no codec for this manifest";
      case errc::sequence_conflict:
        return "sequence number conflict";
      case errc::revision_conflict:
        return "revision conflict";
      case errc::epoch_fenced:
        return "write fenced by a newer owner's epoch";
      case errc::corrupt_record:
        return "corrupt stored record";
      case errc::invalid_request:
        return "invalid request";
      case errc::store_failure:
        return "store failure";
      case errc::store_closed:
        return "store closed";
      case errc::overloaded:
        return "store overloaded";
    }
    return "unknown persistence error";
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const persistence_category category;
  return category;
}

}  // namespace troupe::persistence
