#include <troupe/cluster/errc.hpp>

namespace troupe::cluster {

namespace {

class cluster_category final : public std::error_category {
 public:
  [[nodiscard]] const char* name() const noexcept override { return "troupe.cluster"; }
  [[nodiscard]] std::string message(int code) const override {
    switch (static_cast<errc>(code)) {
      case errc::node_unreachable:
        return "node unreachable";
      case errc::node_restarted:
        return "node restarted with a new incarnation";
      case errc::handshake_refused:
        return "handshake refused";
      case errc::bad_frame:
        return "malformed or oversized frame";
      case errc::unknown_manifest:
        return "unknown message manifest";
      case errc::decode_error:
        return "undecodable message";
      case errc::peer_queue_full:
        return "queue for an unconnected peer is full";
      case errc::transport_failure:
        return "transport failure";
      case errc::invalid_address:
        return "invalid node address or actor path";
      case errc::store_unavailable:
        return "consensus store unavailable";
      case errc::lease_not_found:
        return "lease not found (expired or revoked)";
      case errc::compacted:
        return "requested revision has been compacted";
      case errc::invalid_store_request:
        return "invalid consensus store request";
      case errc::node_left:
        return "node left the cluster";
    }
    return "unknown cluster error";
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const cluster_category category;
  return category;
}

}  // namespace troupe::cluster
