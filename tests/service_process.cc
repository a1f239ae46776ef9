#include "tests/service_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/channel.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "tests/test_pki.h"

namespace kforge {
namespace {

using Clock = std::chrono::steady_clock;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// True once `pid` has exited; leaves it to be reaped by its Subprocess.
bool HasExited(pid_t pid) {
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

}  // namespace

std::string BuiltBinary(const std::string& relative) {
  const char* dir = std::getenv("KFORGE_BINARY_DIR");
  if (dir != nullptr && *dir != '\0') return absl::StrCat(dir, "/", relative);
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  return (self.parent_path().parent_path() / relative).string();
}

TempDir::TempDir() {
  std::string templ = "/tmp/kforge-test-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) {
    std::perror("mkdtemp");
    std::abort();
  }
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

absl::StatusOr<std::unique_ptr<ServiceProcess>> ServiceProcess::Start(
    const std::string& binary, std::vector<std::string> flags, double ready_timeout_s) {
  std::unique_ptr<ServiceProcess> service(new ServiceProcess());
  const std::string ready_file = service->dir_.path() + "/ready.json";
  const std::string log_file = service->dir_.path() + "/service.log";

  SpawnOptions o;
  o.argv = {binary, "--grpc_address=127.0.0.1:0", "--metrics_address=127.0.0.1:0",
            "--ready_file=" + ready_file};
  // TLS with the test CA; a test's own --tls_* flags come later and win.
  for (const std::string& f : TestPki::Shared().Flags()) o.argv.push_back(f);
  o.argv.insert(o.argv.end(), flags.begin(), flags.end());
  o.child_setup = [log_file] {
    int fd = open(log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    return fd >= 0 && dup2(fd, STDOUT_FILENO) >= 0 && dup2(fd, STDERR_FILENO) >= 0;
  };
  if (!service->process_.Start(std::move(o))) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot start ", binary, ": ", service->process_.result().error));
  }

  // Polling a file is the bounded wait the child offers: it writes the file once serving.
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(ready_timeout_s * 1000));
  while (!std::filesystem::exists(ready_file)) {
    if (HasExited(service->process_.pid())) {
      const SubprocessResult& r = service->process_.Wait();
      return absl::FailedPreconditionError(absl::StrCat(
          binary, " exited before it was ready (", r.Describe(), "); its log:\n", service->log()));
    }
    if (Clock::now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          binary, " was not ready within ", ready_timeout_s, " s; its log:\n", service->log()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  nlohmann::json ready = nlohmann::json::parse(ReadFile(ready_file), nullptr, false);
  if (ready.is_discarded() || !ready.contains("grpc_port") || !ready.contains("metrics_port")) {
    return absl::InternalError(
        absl::StrCat("bad ready file from ", binary, ": ", ReadFile(ready_file)));
  }
  service->grpc_port_ = ready["grpc_port"].get<int>();
  service->metrics_port_ = ready["metrics_port"].get<int>();
  return service;
}

ServiceProcess::~ServiceProcess() = default;

std::string ServiceProcess::grpc_address() const { return absl::StrCat("127.0.0.1:", grpc_port_); }

std::string ServiceProcess::log() const { return ReadFile(dir_.path() + "/service.log"); }

SubprocessResult ServiceProcess::Terminate(double limit_s) {
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::milliseconds(static_cast<int64_t>(limit_s * 1000));
  if (!HasExited(process_.pid())) kill(process_.pid(), SIGTERM);
  while (!HasExited(process_.pid()) && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const bool exited_in_time = HasExited(process_.pid());
  if (!exited_in_time) process_.SignalGroup(SIGKILL);
  SubprocessResult result = process_.Wait();
  result.timed_out = !exited_in_time;
  result.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

void ServiceProcess::Kill() {
  process_.SignalGroup(SIGKILL);
  process_.Wait();
}

absl::StatusOr<std::string> HealthStatus(const std::string& address, double deadline_s) {
  auto stub = grpc::health::v1::Health::NewStub(
      MakeChannel(address, {"", TestPki::Shared().Client()}));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(static_cast<int64_t>(deadline_s * 1000)));
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status s = stub->Check(&ctx, request, &response);
  if (!s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  }
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
}

}  // namespace kforge
