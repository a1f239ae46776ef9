// The kforge service binaries (kforge-coordinator, kforge-gateway, kforge-worker) run as real
// child processes for integration tests, with the gRPC health probe and the paths of the
// built binaries.
//
// A ServiceProcess starts a binary with --grpc_address=127.0.0.1:0, --metrics_address=
// 127.0.0.1:0, TLS with the test CA (TestPki::Shared(), test_pki.h) and --ready_file in a
// private temporary directory, then waits (bounded) for the
// ready file that names the ports the service bound. The child's stdout and stderr go to a
// log file there (a pipe nobody reads could fill and block the service); log() reads it, and
// failures print it.
//
// Thread-safety: a ServiceProcess is used by one thread. Ownership: destroying it kills the
// child's process group if it still runs and deletes the temporary directory.
#ifndef KFORGE_TESTS_SERVICE_PROCESS_H_
#define KFORGE_TESTS_SERVICE_PROCESS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/base/subprocess.h"

namespace kforge {

// $KFORGE_BINARY_DIR/<relative> (set by kforge_cc_test); without it, the build directory is
// taken as the test binary's grandparent (build/tests/<test>).
std::string BuiltBinary(const std::string& relative);

// A fresh directory under /tmp, deleted by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class ServiceProcess {
 public:
  // Starts `binary` with `flags` plus the address and ready-file flags, and waits up to
  // `ready_timeout_s` for the ready file. DEADLINE_EXCEEDED when it did not come,
  // FAILED_PRECONDITION when the child exited first; the message carries the child's log.
  static absl::StatusOr<std::unique_ptr<ServiceProcess>> Start(const std::string& binary,
                                                               std::vector<std::string> flags,
                                                               double ready_timeout_s = 30);
  ~ServiceProcess();

  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return metrics_port_; }
  std::string grpc_address() const;  // "127.0.0.1:<grpc_port>"
  // Everything the child wrote so far.
  std::string log() const;
  // Sends SIGTERM and waits for the exit. Past `limit_s` the group is killed and the result
  // says timed_out; wall_s is the time from the signal to the exit.
  SubprocessResult Terminate(double limit_s);
  // kill -9 of the service's process group: no chance to clean up.
  void Kill();

 private:
  ServiceProcess() = default;

  TempDir dir_;
  Subprocess process_;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
};

// grpc.health.v1 Check of the whole server: "SERVING", "NOT_SERVING"..., or the RPC's error.
absl::StatusOr<std::string> HealthStatus(const std::string& address, double deadline_s = 5);

}  // namespace kforge

#endif  // KFORGE_TESTS_SERVICE_PROCESS_H_
