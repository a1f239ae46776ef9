#include "common/service.h"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/base/log.h"
#include "common/pg.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/support/server_interceptor.h"

namespace kforge {
namespace {

sigset_t TerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

// gRPC answers a request it cannot parse (random bytes, a string field that is not UTF-8)
// with INTERNAL and an empty message, before any handler runs. This turns that answer into
// INVALID_ARGUMENT naming the method, so that every call gets a status that says why.
class MalformedRequestInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit MalformedRequestInterceptor(std::string method) : method_(std::move(method)) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      grpc::Status s = methods->GetSendStatus();
      if (s.error_code() == grpc::StatusCode::INTERNAL && s.error_message().empty()) {
        methods->ModifySendStatus(grpc::Status(
            grpc::StatusCode::INVALID_ARGUMENT,
            absl::StrCat("the request to ", method_,
                         " is not a valid message (malformed protobuf, or a string field "
                         "that is not UTF-8)")));
      }
    }
    methods->Proceed();
  }

 private:
  const std::string method_;
};

class MalformedRequestInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new MalformedRequestInterceptor(info->method());  // gRPC owns interceptors
  }
};

}  // namespace

void BlockTerminationSignals() {
  sigset_t set = TerminationSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int WaitForTerminationSignal() {
  sigset_t set = TerminationSignals();
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  return sig;
}

ServiceHost::ServiceHost(ServiceOptions options) : options_(std::move(options)) {}

ServiceHost::~ServiceHost() {
  if (server_) Shutdown();
}

void ServiceHost::AddService(grpc::Service* service) { services_.push_back(service); }

absl::Status ServiceHost::Start() {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      ServerCredentialsFor(options_.tls, options_.name);
  if (!credentials.ok()) return credentials.status();
  builder.AddListeningPort(options_.grpc_address, *credentials, &grpc_port_);
  builder.SetMaxReceiveMessageSize(options_.max_message_bytes);
  builder.SetMaxSendMessageSize(options_.max_message_bytes);
  for (grpc::Service* s : services_) builder.RegisterService(s);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
  creators.push_back(std::make_unique<MalformedRequestInterceptorFactory>());
  builder.experimental().SetInterceptorCreators(std::move(creators));
  if (services_.empty()) {
    unimplemented_ = std::make_unique<grpc::CallbackGenericService>();
    builder.RegisterCallbackGenericService(unimplemented_.get());
  }
  server_ = builder.BuildAndStart();
  if (!server_ || grpc_port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve gRPC on ", options_.grpc_address));
  }
  if (auto* health = server_->GetHealthCheckService()) {
    health->SetServingStatus(true);
  }
  if (absl::Status s = metrics_.Start(options_.metrics_address); !s.ok()) return s;
  if (!options_.ready_file.empty()) {
    std::string tmp = options_.ready_file + ".tmp";
    {
      std::ofstream out(tmp);
      out << "{\"grpc_port\":" << grpc_port_ << ",\"metrics_port\":" << metrics_.port()
          << ",\"pid\":" << getpid() << "}\n";
    }
    if (std::rename(tmp.c_str(), options_.ready_file.c_str()) != 0) {
      return absl::InternalError("cannot write ready file " + options_.ready_file);
    }
  }
  LogInfo("serving", {{"grpc_port", std::to_string(grpc_port_)},
                      {"metrics_port", std::to_string(metrics_.port())}});
  return absl::OkStatus();
}

void ServiceHost::Shutdown() {
  if (!server_) return;
  if (auto* health = server_->GetHealthCheckService()) health->SetServingStatus(false);
  auto deadline = std::chrono::system_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(options_.shutdown_grace_s * 1000));
  server_->Shutdown(deadline);
  server_->Wait();
  server_.reset();
  LogInfo("stopped");
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const auto code = static_cast<grpc::StatusCode>(status.code());
  if (auto sqlstate = status.GetPayload(kDatabaseErrorPayload)) {
    static std::atomic<uint64_t> next_ref{1};
    const std::string ref = absl::StrCat(getpid(), "-", next_ref.fetch_add(1));
    LogError("database error (not shown to the client)",
             {{"ref", ref}, {"sqlstate", std::string(*sqlstate)},
              {"error", std::string(status.message())}});
    return grpc::Status(code, absl::StrCat("database error ", std::string(*sqlstate), " (ref ",
                                           ref, "; the service's log has the details)"));
  }
  return grpc::Status(code, std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

}  // namespace kforge
