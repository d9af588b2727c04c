#include "cluster/tcp/tcp_log.hpp"

#include <troupe/core/actor.hpp>

#include <spdlog/spdlog.h>

namespace troupe::cluster::tcp {

void log_tls_refused(std::string_view remote, std::string_view local, std::string_view reason) {
  troupe::logger()->warn("tcp: refused a TLS connection from {} to {}: {}", remote, local, reason);
}

void log_connect_failed(const node_address& peer, std::string_view reason, bool tls_failed) {
  if (tls_failed) {
    troupe::logger()->warn("tcp: TLS handshake with {} failed: {}", to_string(peer), reason);
  } else {
    troupe::logger()->debug("tcp: cannot connect to {}: {}", to_string(peer), reason);
  }
}

void log_accept_failed(std::string_view local, std::string_view reason) {
  troupe::logger()->warn("tcp: accepting on {} failed: {}; retrying", local, reason);
}

void log_socket_option_failed(std::string_view option, std::string_view reason) {
  troupe::logger()->debug("tcp: cannot set {}: {}", option, reason);
}

}  // namespace troupe::cluster::tcp
