#include "common/tls.h"

#include <unistd.h>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "common/base/log.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_certificate_verifier.h"
#include "grpcpp/security/tls_credentials_options.h"

ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM certificate chain this process presents when it serves gRPC");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of --tls_cert_file");
ABSL_FLAG(std::string, tls_ca_file, "",
          "PEM CA bundle that the servers this process calls are verified against (empty: the "
          "system's roots)");
ABSL_FLAG(std::string, tls_server_name, "",
          "the name servers' certificates must carry when it is not the called address's host "
          "(e.g. with a list of addresses, ipv4:A,B)");
ABSL_FLAG(int32_t, tls_reload_s, 10, "how often the TLS files are re-read (rotation)");
ABSL_FLAG(bool, insecure, false,
          "plaintext gRPC, serving and calling (no TLS): only on a trusted loopback; logged as "
          "a warning");

namespace kforge {
namespace {

absl::Status Readable(const std::string& path, const char* flag) {
  if (access(path.c_str(), R_OK) == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat("--", flag, "=", path, " cannot be read"));
}

}  // namespace

TlsSettings TlsFromFlags() {
  TlsSettings t;
  t.cert_file = absl::GetFlag(FLAGS_tls_cert_file);
  t.key_file = absl::GetFlag(FLAGS_tls_key_file);
  t.ca_file = absl::GetFlag(FLAGS_tls_ca_file);
  t.server_name = absl::GetFlag(FLAGS_tls_server_name);
  t.reload_s = static_cast<unsigned>(std::max(1, absl::GetFlag(FLAGS_tls_reload_s)));
  t.insecure = absl::GetFlag(FLAGS_insecure);
  return t;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFor(
    const TlsSettings& tls, const std::string& service) {
  if (tls.insecure) {
    LogWarning("serving gRPC in plaintext (--insecure): peers are not verified and tokens "
               "cross the network readable",
               {{"service", service}});
    return grpc::InsecureServerCredentials();
  }
  if (tls.cert_file.empty() || tls.key_file.empty()) {
    return absl::FailedPreconditionError(
        "TLS needs --tls_cert_file and --tls_key_file (or --insecure to serve plaintext on a "
        "trusted loopback)");
  }
  if (absl::Status s = Readable(tls.cert_file, "tls_cert_file"); !s.ok()) return s;
  if (absl::Status s = Readable(tls.key_file, "tls_key_file"); !s.ok()) return s;
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      tls.key_file, tls.cert_file, tls.reload_s);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  return grpc::experimental::TlsServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentialsFor(const TlsSettings& tls) {
  if (tls.insecure) return grpc::InsecureChannelCredentials();
  if (tls.ca_file.empty()) return grpc::SslCredentials(grpc::SslCredentialsOptions());
  auto provider =
      std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(tls.ca_file, tls.reload_s);
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(provider);
  options.watch_root_certs();
  options.set_verify_server_certs(true);
  options.set_certificate_verifier(
      std::make_shared<grpc::experimental::HostNameCertificateVerifier>());
  return grpc::experimental::TlsCredentials(options);
}

}  // namespace kforge
