#pragma once
// The OpenSSL side of the transport: one context for both roles (every node is a TLS client
// and a TLS server), and the words a log needs when a handshake fails.

#include <troupe/cluster/tcp_transport.hpp>

#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>
#include <openssl/ssl.h>

#include <memory>
#include <string>

namespace troupe::cluster::tcp {

/// Loads the CA, the certificate and the key, and requires a verified peer certificate on both
/// sides (TLS 1.3 only: every node runs this code). Throws cluster_error(transport_failure)
/// naming the file that is missing, unreadable or invalid, or the key that does not match.
std::shared_ptr<boost::asio::ssl::context> make_tls_context(const tls_options& files);

/// Why a handshake failed, in OpenSSL's words: the error, plus the certificate verification
/// result when that is what failed (e.g. "certificate verify failed (SSL routines); unable to get
/// local issuer certificate").
std::string tls_failure_reason(const boost::system::error_code& ec, SSL* ssl);

}  // namespace troupe::cluster::tcp
