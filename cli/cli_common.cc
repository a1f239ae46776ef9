#include "cli/cli_common.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/flags/flag.h"
#include "common/channel.h"
#include "common/secrets.h"
#include "common/tls.h"
#include "grpcpp/grpcpp.h"

ABSL_FLAG(std::string, coordinator, "localhost:50051", "coordinator gRPC address");
ABSL_FLAG(double, timeout_s, 10, "RPC deadline in seconds");
ABSL_FLAG(std::string, token_file, "",
          "a file holding the API token to call with (else $KFORGE_TOKEN, else none)");

namespace kforge::cli {

void SetDeadline(grpc::ClientContext& ctx) {
  ctx.set_deadline(
      std::chrono::system_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(absl::GetFlag(FLAGS_timeout_s) * 1000)));
}

int Fail(const grpc::Status& s) {
  const char* kind = s.error_code() == grpc::StatusCode::UNAUTHENTICATED     ? "not authenticated: "
                     : s.error_code() == grpc::StatusCode::PERMISSION_DENIED ? "permission denied: "
                                                                             : "";
  std::fprintf(stderr, "kforge: %s%s\n", kind, s.error_message().c_str());
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                 s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
             ? kExitUnreachable
             : kExitRpcError;
}

std::shared_ptr<grpc::Channel> CoordinatorChannel() {
  ClientCredentials creds;
  creds.tls = TlsFromFlags();
  if (const std::string file = absl::GetFlag(FLAGS_token_file); !file.empty()) {
    auto token = ReadSecretFile(file);
    if (!token.ok()) {
      std::fprintf(stderr, "kforge: %s\n", std::string(token.status().message()).c_str());
      std::exit(kExitUsage);
    }
    creds.token = *token;
  } else if (const char* env = std::getenv("KFORGE_TOKEN"); env != nullptr) {
    creds.token = env;
  }
  return MakeChannel(absl::GetFlag(FLAGS_coordinator), creds);
}

std::unique_ptr<v1::JobService::Stub> JobStub() {
  return v1::JobService::NewStub(CoordinatorChannel());
}

bool NotNegative(const char* flag, int64_t value) {
  if (value >= 0) return true;
  std::fprintf(stderr, "kforge: --%s must not be negative, got %lld\n", flag,
               static_cast<long long>(value));
  return false;
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream buf;
  buf << in.rdbuf();
  *out = buf.str();
  return true;
}

std::string VerdictWord(v1::Verdict v) {
  std::string name = v1::Verdict_Name(v);
  std::string out = name.substr(name.find('_') + 1);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void PrintHeader() {
  std::printf("%-8s %-40s %-10s %-14s %9s %-6s %9s %9s %11s %11s  %s\n", "#", "CANDIDATE", "GPU",
              "VERDICT", "SPEEDUP", "CLOCK", "DEV", "CALL", "REF_MS", "CAND_MS", "REASON");
}

std::string Speedup(bool has, double speedup) {
  return has ? std::to_string(speedup).substr(0, 7) : "-";
}

void PrintRecord(const v1::EvaluationRecord& rec, const std::string& position) {
  const v1::EvalResult& r = rec.result();
  std::string ref = rec.client_ref().empty() ? rec.candidate_id().substr(0, 12) : rec.client_ref();
  if (ref.size() > 40) ref = "..." + ref.substr(ref.size() - 37);
  std::string reason = r.reason().substr(0, 100);
  for (char& c : reason) c = c == '\n' ? ' ' : c;
  // CLOCK is the clock SPEEDUP is; DEV and CALL are the speedups of the device and call
  // clocks ("-": not measured, or not trusted for this candidate).
  std::printf("%-8s %-40s %-10s %-14s %9s %-6s %9s %9s %11.4f %11.4f  %s\n", position.c_str(),
              ref.c_str(), rec.gpu_type().c_str(), VerdictWord(r.verdict()).c_str(),
              Speedup(r.has_speedup(), r.speedup()).c_str(),
              r.speedup_clock().empty() ? "-" : r.speedup_clock().substr(0, 6).c_str(),
              Speedup(r.has_speedup_device(), r.speedup_device()).c_str(),
              Speedup(r.has_speedup_call(), r.speedup_call()).c_str(), r.reference().median_ms(),
              r.candidate().median_ms(), reason.c_str());
  std::fflush(stdout);
}

std::optional<std::string> ResolveTask(const std::string& task, int* exit_code) {
  std::string source;
  if (!ReadFile(task, &source)) return task;  // not a file: a task id
  v1::SubmitTaskRequest sub;
  std::string name = task.substr(task.find_last_of('/') + 1);
  sub.set_name(name.size() > 3 ? name.substr(0, name.size() - 3) : name);
  sub.set_source(source);
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::SubmitTaskResponse resp;
  grpc::Status s = JobStub()->SubmitTask(&ctx, sub, &resp);
  if (!s.ok()) {
    *exit_code = Fail(s);
    return std::nullopt;
  }
  return resp.task_id();
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace kforge::cli
