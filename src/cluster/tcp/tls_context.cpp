#include "cluster/tcp/tls_context.hpp"

#include <troupe/cluster/errc.hpp>

#include <openssl/x509.h>

#include <cerrno>
#include <cstdio>
#include <system_error>

namespace troupe::cluster::tcp {

namespace ssl = boost::asio::ssl;

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, const std::string& why) {
  throw cluster_error(errc::transport_failure, "tls: " + what + " '" + path + "': " + why);
}

// OpenSSL's own messages for a missing file are vague ("system lib"); say it plainly first.
void require_readable(const std::string& what, const std::string& path) {
  if (path.empty()) {
    throw cluster_error(errc::transport_failure, "tls: no " + what + " given");
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) fail(what, path, std::generic_category().message(errno));
  std::fclose(f);
}

}  // namespace

std::shared_ptr<ssl::context> make_tls_context(const tls_options& files) {
  require_readable("CA file", files.ca_file);
  require_readable("certificate file", files.cert_file);
  require_readable("key file", files.key_file);

  auto context = std::make_shared<ssl::context>(ssl::context::tls);
  SSL_CTX* native = context->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_3_VERSION);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_compression);
  // An encrypted key would make OpenSSL prompt on the terminal: answer with no passphrase, so
  // loading fails with an error instead of hanging.
  context->set_password_callback(
      [](std::size_t, ssl::context::password_purpose) { return std::string(); });

  boost::system::error_code ec;
  if (context->load_verify_file(files.ca_file, ec)) {
    fail("CA file", files.ca_file, "no usable certificate: " + ec.message());
  }
  if (context->use_certificate_chain_file(files.cert_file, ec)) {
    fail("certificate file", files.cert_file, "no usable certificate: " + ec.message());
  }
  if (context->use_private_key_file(files.key_file, ssl::context::pem, ec)) {
    fail("key file", files.key_file,
         "no usable private key matching '" + files.cert_file + "': " + ec.message());
  }
  if (SSL_CTX_check_private_key(native) != 1) {
    fail("key file", files.key_file, "does not match certificate '" + files.cert_file + "'");
  }
  context->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  // A node keeps its connections and never resumes a session: tickets would only cost work and
  // bytes after every handshake.
  SSL_CTX_set_num_tickets(native, 0);
  return context;
}

std::string tls_failure_reason(const boost::system::error_code& ec, SSL* ssl) {
  std::string reason = ec.message();
  if (ssl != nullptr) {
    const long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) {
      reason += "; ";
      reason += X509_verify_cert_error_string(verify);
    }
  }
  return reason;
}

}  // namespace troupe::cluster::tcp
