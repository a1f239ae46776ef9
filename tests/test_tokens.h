// API tokens for integration tests: an admin token (in a file, for the coordinator's
// --bootstrap_admin_token_file) with which tests create the tokens their clients and workers
// call with, through the real AdminService.
//
// Thread-safety: used by one test thread. Ownership: the token files live in a temporary
// directory deleted with the object.
#ifndef KFORGE_TESTS_TEST_TOKENS_H_
#define KFORGE_TESTS_TEST_TOKENS_H_

#include <string>
#include <vector>

#include "kforge/v1/admin.grpc.pb.h"
#include "tests/service_process.h"

namespace kforge {

class TestTokens {
 public:
  TestTokens();
  const std::string& admin() const { return admin_; }
  const std::string& admin_file() const { return admin_file_; }
  // The coordinator flag that makes admin() valid.
  std::string BootstrapFlag() const { return "--bootstrap_admin_token_file=" + admin_file_; }
  // A new token from the coordinator at `address` (fails the test when refused).
  v1::CreateTokenResponse Create(const std::string& address, const std::string& principal,
                                 const std::string& tenant, const std::vector<std::string>& roles);
  // A file holding `token`, for --token_file.
  std::string File(const std::string& name, const std::string& token);

 private:
  TempDir dir_;
  std::string admin_, admin_file_;
};

}  // namespace kforge

#endif  // KFORGE_TESTS_TEST_TOKENS_H_
