// kforge: the command-line client.
//
//   kforge health ADDRESS          exit 0 when the server at ADDRESS reports SERVING
//   kforge task add FILE [--name]  store a KernelBench task; prints its id
//   kforge workers                 list registered workers
//   kforge worker drain|undrain ID no new leases for a worker / leases again (operator)
//   kforge eval --task ID|FILE [--gpu T] CANDIDATE...   evaluate, streaming results
//   kforge results [--task ID] [--gpu T] [--verdict V]  stored evaluations
//   kforge job submit|watch|get|list|cancel ...     optimization jobs
//   kforge best --task ID | --job ID                best candidates per GPU type
//   kforge export rollouts JOB [--out FILE]         (prompt, completion, reward) as JSONL
//   kforge token create|revoke|list                 API tokens (admin role)
//   kforge audit [--principal P] [--action A]       the audit trail (operator or admin)
//
// Exit codes: 0 success, 1 the server answered with an error, 2 bad usage or input,
// 3 the server could not be reached.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/flags/flag.h"
#include "grpcpp/grpcpp.h"
#include "cli/cli_common.h"
#include "common/channel.h"
#include "common/config.h"
#include "common/tls.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "kforge/v1/jobs.grpc.pb.h"

ABSL_FLAG(std::string, name, "", "task name (task add); default: the file name");
ABSL_FLAG(std::string, task, "", "eval: a task id, or a KernelBench file to submit first");
ABSL_FLAG(std::string, gpu, "any", "eval: comma-separated GPU types to evaluate on");
ABSL_FLAG(std::string, batch, "", "eval: re-attach to this batch instead of submitting");
ABSL_FLAG(int, priority, 0, "eval: higher runs first");
ABSL_FLAG(std::string, verdict, "", "results: only this verdict (ok, incorrect, ...)");
ABSL_FLAG(int, limit, 50, "results: at most this many rows");

namespace kforge::cli {
namespace {

const char kUsage[] =
    "kforge: client for the kforge service\n"
    "  kforge health ADDRESS\n"
    "  kforge task add FILE [--name NAME]\n"
    "  kforge workers\n"
    "  kforge worker drain|undrain WORKER_ID   (operator: no new leases / lease again)\n"
    "  kforge eval --task ID|FILE [--gpu TYPE[,TYPE]] CANDIDATE...\n"
    "  kforge eval --batch BATCH_ID          (re-attach to a batch's results)\n"
    "  kforge results [--task ID] [--gpu TYPE] [--verdict V] [--limit N]\n"
    "  kforge job submit --task ID|FILE [--gpu TYPE[,TYPE]] [--strategy S] [--params K=V,...]\n"
    "             [--rounds N] [--max_candidates N] [--max_tokens N] [--max_wall_s S]\n"
    "             [--target_speedup X] [--seed N] [--dialect D] [--provider P] [--model M]\n"
    "             [--base_url URL] [--temperature T] [--watch] [SEED_CANDIDATE...]\n"
    "  kforge job watch|get|cancel|trajectory JOB_ID\n"
    "  kforge job list [--task ID] [--limit N]\n"
    "  kforge best --task ID | --job JOB_ID [--gpu TYPE] [--top N] [--out DIR]\n"
    "  kforge export rollouts JOB_ID [--out FILE.jsonl]\n"
    "  kforge token create --principal NAME [--tenant T] --roles R[,R] [--ttl_s S]\n"
    "  kforge token revoke TOKEN_ID | kforge token list\n"
    "  kforge audit [--principal P] [--action A] [--limit N]\n"
    "Calls carry the API token of --token_file FILE (or $KFORGE_TOKEN) and verify the server\n"
    "against --tls_ca_file (or use --insecure).\n"
    "Flags may also come from a config file ($KFORGE_CONFIG, else ~/.config/kforge/config):\n"
    "lines `flag = value`, e.g. coordinator = host:50051, token_file = ..., tls_ca_file = ...\n"
    "Flags may also come from the environment (KFORGE_COORDINATOR, ...).";

int Health(const std::string& address) {
  auto stub = grpc::health::v1::Health::NewStub(
      MakeChannel(address, {"", TlsFromFlags()}));
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  grpc::Status s = stub->Check(&ctx, req, &resp);
  if (!s.ok()) return Fail(s);
  bool serving = resp.status() == grpc::health::v1::HealthCheckResponse::SERVING;
  std::printf("%s\n", serving ? "SERVING" : "NOT_SERVING");
  return serving ? 0 : kExitRpcError;
}

int TaskAdd(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "kforge: cannot read %s\n", path.c_str());
    return kExitUsage;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  v1::SubmitTaskRequest req;
  std::string name = absl::GetFlag(FLAGS_name);
  if (name.empty()) {
    name = path.substr(path.find_last_of('/') + 1);
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".py") == 0) name.resize(name.size() - 3);
  }
  req.set_name(name);
  req.set_source(buf.str());
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::SubmitTaskResponse resp;
  grpc::Status s = JobStub()->SubmitTask(&ctx, req, &resp);
  if (!s.ok()) return Fail(s);
  std::printf("%s\t%s\t%s\n", resp.task_id().c_str(), name.c_str(),
              resp.created() ? "created" : "exists");
  return 0;
}

std::string WorkerState(const v1::WorkerInfo& w) {
  if (!w.draining()) return "active";
  return "draining (by " + w.drained_by() + " at " + w.drained_at() + ")";
}

int Workers() {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::ListWorkersResponse resp;
  grpc::Status s = JobStub()->ListWorkers(&ctx, v1::ListWorkersRequest(), &resp);
  if (!s.ok()) return Fail(s);
  std::printf("%-36s  %-20s  %-8s  %5s  %6s  %-5s  %-24s  %s\n", "WORKER", "HOST", "GPU",
              "SLOTS", "LEASES", "ALIVE", "LAST HEARTBEAT", "STATE");
  for (const auto& w : resp.workers()) {
    std::printf("%-36s  %-20s  %-8s  %5u  %6u  %-5s  %-24s  %s\n", w.worker_id().c_str(),
                w.hostname().c_str(), w.gpu_type().c_str(), w.slots(), w.leases_held(),
                w.alive() ? "yes" : "no", w.last_heartbeat().c_str(), WorkerState(w).c_str());
  }
  return 0;
}

// kforge worker drain|undrain ID
int WorkerCommand(const std::vector<std::string>& args) {
  if (args.size() != 2 || (args[0] != "drain" && args[0] != "undrain")) {
    std::fprintf(stderr, "kforge: usage: kforge worker drain|undrain WORKER_ID\n");
    return kExitUsage;
  }
  const bool drain = args[0] == "drain";
  v1::DrainWorkerRequest req;
  req.set_worker_id(args[1]);
  v1::DrainWorkerResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  grpc::Status s = drain ? JobStub()->DrainWorker(&ctx, req, &resp)
                         : JobStub()->UndrainWorker(&ctx, req, &resp);
  if (!s.ok()) return Fail(s);
  const v1::WorkerInfo& w = resp.worker();
  if (drain) {
    std::printf("%s\t%s\t%s\tdraining%s: %u leases still to finish\n", w.worker_id().c_str(),
                w.hostname().c_str(), w.gpu_type().c_str(),
                resp.was_draining() ? " (already)" : "", w.leases_held());
  } else {
    std::printf("%s\t%s\t%s\t%s\n", w.worker_id().c_str(), w.hostname().c_str(),
                w.gpu_type().c_str(), resp.was_draining() ? "undrained" : "was not draining");
  }
  return 0;
}

int Results() {
  v1::ResultsQuery q;
  q.set_task_id(absl::GetFlag(FLAGS_task));
  std::string gpu = absl::GetFlag(FLAGS_gpu);
  if (gpu != "any") q.set_gpu_type(gpu);
  std::string verdict = absl::GetFlag(FLAGS_verdict);
  if (!verdict.empty()) {
    std::string upper = "VERDICT_";
    for (char c : verdict) upper.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
    v1::Verdict v;
    if (!v1::Verdict_Parse(upper, &v)) {
      std::fprintf(stderr, "kforge results: unknown verdict %s\n", verdict.c_str());
      return kExitUsage;
    }
    q.set_verdict(v);
  }
  if (!NotNegative("limit", absl::GetFlag(FLAGS_limit))) return kExitUsage;
  q.set_limit(static_cast<uint32_t>(absl::GetFlag(FLAGS_limit)));
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::ResultsResponse resp;
  grpc::Status s = JobStub()->QueryResults(&ctx, q, &resp);
  if (!s.ok()) return Fail(s);
  PrintHeader();
  int i = 0;
  for (const auto& rec : resp.evaluations()) PrintRecord(rec, std::to_string(++i));
  return 0;
}

// Streams a batch's results: one line per evaluation, a summary at the end.
int Eval(const std::vector<std::string>& candidates) {
  v1::EvaluateBatchRequest req;
  req.set_batch_id(absl::GetFlag(FLAGS_batch));
  if (req.batch_id().empty()) {
    std::string task = absl::GetFlag(FLAGS_task);
    if (task.empty() || candidates.empty()) {
      std::fprintf(stderr, "kforge eval: --task and at least one candidate file are needed\n");
      return kExitUsage;
    }
    int code = 0;
    std::optional<std::string> task_id = ResolveTask(task, &code);
    if (!task_id) return code;
    task = *task_id;
    req.set_task_id(task);
    for (const std::string& path : candidates) {
      v1::CandidateSpec* c = req.add_candidates();
      if (!ReadFile(path, c->mutable_source())) {
        std::fprintf(stderr, "kforge: cannot read %s\n", path.c_str());
        return kExitUsage;
      }
      c->set_client_ref(path);
    }
    for (const std::string& t : SplitList(absl::GetFlag(FLAGS_gpu))) req.add_gpu_types(t);
    if (!NotNegative("priority", absl::GetFlag(FLAGS_priority))) return kExitUsage;
    req.set_priority(static_cast<uint32_t>(absl::GetFlag(FLAGS_priority)));
  }
  grpc::ClientContext ctx;  // no deadline: a batch takes as long as its evaluations
  auto stub = JobStub();
  auto reader = stub->EvaluateBatch(&ctx, req);
  reader->WaitForInitialMetadata();
  auto md = ctx.GetServerInitialMetadata();
  auto it = md.find("kforge-batch-id");
  if (it != md.end()) {
    std::fprintf(stderr, "batch %.*s (re-attach: kforge eval --batch %.*s)\n",
                 static_cast<int>(it->second.size()), it->second.data(),
                 static_cast<int>(it->second.size()), it->second.data());
  }
  int total = req.candidates_size() * req.gpu_types_size();
  int n = 0, ok = 0;
  v1::EvaluationRecord rec;
  PrintHeader();
  while (reader->Read(&rec)) {
    ++n;
    ok += rec.result().verdict() == v1::VERDICT_OK;
    PrintRecord(rec, total > 0 ? std::to_string(n) + "/" + std::to_string(total)
                               : std::to_string(n));
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return Fail(s);
  std::printf("%d evaluations, %d ok\n", n, ok);
  return 0;
}

int Main(const std::vector<std::string>& args) {
  auto usage = [] {
    std::fprintf(stderr, "%s\n", kUsage);
    return kExitUsage;
  };
  if (args.size() < 2) return usage();
  const std::string& cmd = args[1];
  if (cmd == "health" && args.size() == 3) return Health(args[2]);
  if (cmd == "task" && args.size() == 4 && args[2] == "add") return TaskAdd(args[3]);
  if (cmd == "workers" && args.size() == 2) return Workers();
  if (cmd == "worker") return WorkerCommand({args.begin() + 2, args.end()});
  if (cmd == "eval") return Eval({args.begin() + 2, args.end()});
  if (cmd == "results" && args.size() == 2) return Results();
  if (cmd == "job") return JobCommand({args.begin() + 2, args.end()});
  if (cmd == "token") return TokenCommand({args.begin() + 2, args.end()});
  if (cmd == "audit" && args.size() == 2) return AuditCommand();
  if (cmd == "best" && args.size() == 2) return Best();
  if (cmd == "export" && args.size() >= 3 && args[2] == "rollouts") {
    return ExportRollouts({args.begin() + 3, args.end()});
  }
  return usage();
}

}  // namespace
}  // namespace kforge::cli

int main(int argc, char** argv) {
  kforge::ApplyConfigFile(kforge::ClientConfigPath(), "kforge");
  auto args = kforge::InitFromFlagsAndEnv(argc, argv, "cli", kforge::cli::kUsage);
  return kforge::cli::Main(args);
}
