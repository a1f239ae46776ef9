// What the kforge commands share: exit codes, the coordinator stub, deadlines, error
// reporting, reading files, printing evaluation records.
#ifndef KFORGE_CLI_CLI_COMMON_H_
#define KFORGE_CLI_CLI_COMMON_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "kforge/v1/jobs.grpc.pb.h"

ABSL_DECLARE_FLAG(std::string, coordinator);
ABSL_DECLARE_FLAG(double, timeout_s);

namespace kforge::cli {

// Exit codes: 0 success, 1 the server answered with an error, 2 bad usage or input,
// 3 the server could not be reached.
constexpr int kExitRpcError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnreachable = 3;

void SetDeadline(grpc::ClientContext& ctx);
// Prints the error; returns the exit code for it.
int Fail(const grpc::Status& s);
// The coordinator's channel, calling with the token of --token_file or $KFORGE_TOKEN (exits
// with kExitUsage when the file cannot be read).
std::shared_ptr<grpc::Channel> CoordinatorChannel();
std::unique_ptr<v1::JobService::Stub> JobStub();
bool ReadFile(const std::string& path, std::string* out);

// A speedup as the tables print it: 7 characters, or "-" when `has` is false (not measured,
// or not trusted for this candidate).
std::string Speedup(bool has, double speedup);
// False (after printing "kforge: --FLAG must not be negative, got V") when `value` < 0: a
// negative count would otherwise wrap around or silently turn into "no limit".
bool NotNegative(const char* flag, int64_t value);
// A task id, or the path of a KernelBench file, which is submitted and its id returned.
// nullopt (with *exit_code set) when the submission failed.
std::optional<std::string> ResolveTask(const std::string& task, int* exit_code);
// "a,b,,c" -> {"a", "b", "c"}
std::vector<std::string> SplitList(const std::string& text);
std::string VerdictWord(v1::Verdict v);
void PrintHeader();
void PrintRecord(const v1::EvaluationRecord& rec, const std::string& position);

// kforge job ..., kforge best, kforge export rollouts (jobs.cc)
int JobCommand(const std::vector<std::string>& args);
int Best();
int ExportRollouts(const std::vector<std::string>& args);
// kforge token create|revoke|list (tokens.cc)
int TokenCommand(const std::vector<std::string>& args);
int AuditCommand();

}  // namespace kforge::cli

#endif  // KFORGE_CLI_CLI_COMMON_H_
