// Certificates for integration tests, made with the openssl command (scripts/setup.sh installs
// it): a CA and a server certificate for 127.0.0.1 and localhost signed by it. Every service a
// test starts serves TLS with them (ServiceProcess adds the flags) and every test client
// verifies against the CA.
//
// Thread-safety: Shared() is made on first use by the test thread; the files are then only
// read.
#ifndef KFORGE_TESTS_TEST_PKI_H_
#define KFORGE_TESTS_TEST_PKI_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/tls.h"

namespace kforge {

class TestPki {
 public:
  // A CA named `name` and a server certificate signed by it, written into `dir`.
  static absl::StatusOr<TestPki> Create(const std::string& dir, const std::string& name);
  // One for the whole test binary (a failure to make it aborts with openssl's output).
  static const TestPki& Shared();

  std::string ca_file, cert_file, key_file;

  // --tls_cert_file, --tls_key_file and --tls_ca_file: what a service serves and calls with.
  std::vector<std::string> Flags() const;
  // A client verifying servers against this CA.
  TlsSettings Client() const;
};

}  // namespace kforge

#endif  // KFORGE_TESTS_TEST_PKI_H_
