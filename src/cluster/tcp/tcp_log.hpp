#pragma once
// What the TCP transport logs (to the runtime's logger, "troupe"), in one place.

#include <troupe/cluster/node_address.hpp>

#include <string_view>

namespace troupe::cluster::tcp {

/// A listener dropped a connection whose TLS handshake failed (bad or missing certificate, not
/// TLS at all, too slow). Warning: a misconfigured node or someone knocking.
void log_tls_refused(std::string_view remote, std::string_view local, std::string_view reason);

/// A connect failed. A failed TLS handshake is a warning (certificates disagree); an unreachable
/// peer is debug only, since the node layer retries and decides what to report.
void log_connect_failed(const node_address& peer, std::string_view reason, bool tls_failed);

/// Accepting failed for a reason other than shutdown (e.g. out of file descriptors); the
/// listener retries shortly.
void log_accept_failed(std::string_view local, std::string_view reason);

/// A socket option could not be set on a new connection; the connection goes on without it.
void log_socket_option_failed(std::string_view option, std::string_view reason);

}  // namespace troupe::cluster::tcp
