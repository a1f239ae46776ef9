#include "common/channel.h"

#include <vector>

#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/client_interceptor.h"

namespace kforge {
namespace {

class BearerInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit BearerInterceptor(const std::string& header) : header_(header) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->insert({"authorization", header_});
    }
    methods->Proceed();
  }

 private:
  const std::string& header_;
};

class BearerFactory final : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerFactory(std::string token) : header_("Bearer " + std::move(token)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo*) override {
    return new BearerInterceptor(header_);  // gRPC owns interceptors
  }

 private:
  const std::string header_;
};

}  // namespace

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           const ClientCredentials& credentials) {
  std::shared_ptr<grpc::ChannelCredentials> channel_creds = ChannelCredentialsFor(credentials.tls);
  grpc::ChannelArguments args;
  if (!credentials.tls.server_name.empty()) {
    args.SetSslTargetNameOverride(credentials.tls.server_name);
  }
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> factories;
  if (!credentials.token.empty()) {
    factories.push_back(std::make_unique<BearerFactory>(credentials.token));
  }
  return grpc::experimental::CreateCustomChannelWithInterceptors(address, channel_creds, args,
                                                                 std::move(factories));
}

}  // namespace kforge
