// Transport security of every gRPC hop (docs/security.md, "TLS"): gRPC's own TLS with
// certificates and keys from PEM files, re-read while the process runs (a rotated certificate
// is picked up without a restart), or plaintext only when asked for with --insecure, which is
// logged as a warning.
//
// The flags are shared by every kforge binary (and settable as KFORGE_TLS_CERT_FILE, ...):
//   --tls_cert_file, --tls_key_file  this process's certificate chain and key: what a service
//                                    presents to its clients
//   --tls_ca_file                    the CA bundle a client verifies the servers it calls
//                                    with (empty: the system's roots)
//   --tls_server_name                the name the servers' certificates must carry when it is
//                                    not the address's host (a list of addresses)
//   --tls_reload_s                   how often the files are re-read
//   --insecure                       plaintext, both serving and calling
//
// Thread-safe after flags are parsed.
#ifndef KFORGE_COMMON_TLS_H_
#define KFORGE_COMMON_TLS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"

namespace kforge {

struct TlsSettings {
  std::string cert_file, key_file, ca_file;
  std::string server_name;  // empty: the host of the address called
  unsigned reload_s = 10;
  bool insecure = false;
};

// The settings given by the flags above.
TlsSettings TlsFromFlags();

// A service's credentials. FAILED_PRECONDITION naming the missing flag when TLS lacks a
// certificate or key (and --insecure was not given) or a file cannot be read. Plaintext logs
// a warning naming `service`.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(
    const TlsSettings& tls, const std::string& service);

// A client's credentials: TLS verifying the server's certificate against ca_file (the system's
// roots when empty) and its name against the address's host; plaintext with --insecure.
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentialsFor(const TlsSettings& tls);

}  // namespace kforge

#endif  // KFORGE_COMMON_TLS_H_
