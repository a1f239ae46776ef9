// The life of a kforge service process: a gRPC server (with grpc.health.v1 and reflection-
// free services), /metrics, a ready file naming the bound ports, and a clean stop on SIGTERM
// or SIGINT.
//
// Usage in a main():
//   BlockTerminationSignals();               // first, before any thread starts
//   ServiceHost host(options);
//   host.AddService(&my_service);
//   RETURN_IF_ERROR(host.Start());
//   host.WaitForTerminationSignal();
//   host.Shutdown();
//
// Thread-safety: one thread calls Start, WaitForTerminationSignal and Shutdown; the gRPC
// server runs its own threads.
#ifndef KFORGE_COMMON_SERVICE_H_
#define KFORGE_COMMON_SERVICE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/metrics.h"
#include "common/tls.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/grpcpp.h"

namespace kforge {

struct ServiceOptions {
  std::string name;              // "coordinator", "gateway", "worker"
  std::string grpc_address;      // e.g. "0.0.0.0:50051"; port 0 picks one
  std::string metrics_address;   // e.g. "0.0.0.0:9464"; port 0 picks one; empty: none
  std::string ready_file;        // if set, a JSON file {"grpc_port":..,"metrics_port":..}
                                 // written once serving (tests and scripts wait for it)
  double shutdown_grace_s = 10;  // in-flight RPCs get this long after SIGTERM
  TlsSettings tls;               // certificate and key to serve with, or insecure (common/tls.h)
  int max_message_bytes = 64 << 20;
};

// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (and every thread it starts later),
// so that WaitForTerminationSignal() receives them synchronously.
void BlockTerminationSignals();
// Waits for one of the blocked signals; returns its number.
int WaitForTerminationSignal();

class ServiceHost {
 public:
  explicit ServiceHost(ServiceOptions options);
  ~ServiceHost();

  // Services must outlive the host.
  void AddService(grpc::Service* service);
  absl::Status Start();
  // Marks the server NOT_SERVING, stops accepting RPCs, waits up to the grace period.
  void Shutdown();

  MetricsServer& metrics() { return metrics_; }
  int grpc_port() const { return grpc_port_; }
  grpc::Server* server() { return server_.get(); }

 private:
  ServiceOptions options_;
  std::vector<grpc::Service*> services_;
  // gRPC builds no server without a polled completion queue, which only services bring; a
  // host serving nothing but health (the worker) registers this generic service instead,
  // which answers UNIMPLEMENTED to every other method.
  std::unique_ptr<grpc::CallbackGenericService> unimplemented_;
  MetricsServer metrics_;
  std::unique_ptr<grpc::Server> server_;
  int grpc_port_ = 0;
};

// absl::Status -> grpc::Status at the RPC edge: same canonical code, same message, except for
// PostgreSQL's errors (kDatabaseErrorPayload), whose text is logged with a reference and
// replaced by "database error SQLSTATE (ref R; ...)".
grpc::Status ToGrpcStatus(const absl::Status& status);
// grpc::Status -> absl::Status for clients.
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace kforge

#endif  // KFORGE_COMMON_SERVICE_H_
