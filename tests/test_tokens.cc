#include "tests/test_tokens.h"

#include <chrono>
#include <fstream>

#include "common/channel.h"
#include "common/secrets.h"
#include "gtest/gtest.h"
#include "tests/test_pki.h"

namespace kforge {

TestTokens::TestTokens() : admin_(NewToken().value()), admin_file_(File("admin.token", admin_)) {}

v1::CreateTokenResponse TestTokens::Create(const std::string& address,
                                           const std::string& principal,
                                           const std::string& tenant,
                                           const std::vector<std::string>& roles) {
  v1::CreateTokenRequest req;
  req.set_principal(principal);
  req.set_tenant(tenant);
  for (const std::string& r : roles) req.add_roles(r);
  v1::CreateTokenResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  grpc::Status s =
      v1::AdminService::NewStub(MakeChannel(address, {admin_, TestPki::Shared().Client()}))
          ->CreateToken(&ctx, req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return resp;
}

std::string TestTokens::File(const std::string& name, const std::string& token) {
  std::string path = dir_.path() + "/" + name;
  std::ofstream(path) << token << "\n";
  return path;
}

}  // namespace kforge
