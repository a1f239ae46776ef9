// kforge job ..., kforge best, kforge export rollouts.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "cli/cli_common.h"
#include "common/dialect.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"

ABSL_DECLARE_FLAG(std::string, task);
ABSL_DECLARE_FLAG(std::string, gpu);
ABSL_DECLARE_FLAG(int, limit);

ABSL_FLAG(std::string, strategy, "contrastive", "job submit: contrastive, idea_branching or islands");
ABSL_FLAG(std::string, params, "", "job submit: strategy parameters, K=V,K=V");
ABSL_FLAG(int, rounds, 0, "job submit: rounds (0: the default, 5)");
ABSL_FLAG(int, max_candidates, 0, "job submit: generated candidates at most (0: no limit)");
ABSL_FLAG(int64_t, max_tokens, 0, "job submit: LLM tokens at most (0: no limit)");
ABSL_FLAG(double, max_wall_s, 0, "job submit: wall time at most (0: no limit)");
ABSL_FLAG(double, target_speedup, 0, "job submit: stop once reached on every GPU type");
ABSL_FLAG(uint64_t, seed, 0, "job submit: search seed (0: random)");
ABSL_FLAG(std::string, dialect, "", "job submit: dialect of generated candidates (default nvrtc)");
ABSL_FLAG(std::string, provider, "", "job submit: LLM provider (offline, openai, anthropic)");
ABSL_FLAG(std::string, model, "", "job submit: the provider's model");
ABSL_FLAG(std::string, base_url, "", "job submit: the provider's endpoint (e.g. a vLLM server)");
ABSL_FLAG(double, temperature, 0, "job submit: sampling temperature (0: the gateway's default)");
ABSL_FLAG(bool, watch, false, "job submit: follow the job until it ends");
ABSL_FLAG(std::string, job, "", "best: a job id");
ABSL_FLAG(int, top, 1, "best: candidates per GPU type");
ABSL_FLAG(std::string, out, "", "best: write sources to this directory; export: the JSONL file");

namespace kforge::cli {
namespace {

const char* StateWord(v1::JobState s) {
  switch (s) {
    case v1::JOB_STATE_QUEUED:
      return "queued";
    case v1::JOB_STATE_RUNNING:
      return "running";
    case v1::JOB_STATE_SUCCEEDED:
      return "succeeded";
    case v1::JOB_STATE_FAILED:
      return "failed";
    case v1::JOB_STATE_CANCELLED:
      return "cancelled";
    default:
      return "unknown";
  }
}

// The clock `speedup` is, then both clocks' speedups (docs/evaluation.md, "Two clocks").
void PrintBest(const v1::BestCandidate& b) {
  std::printf("  %-10s %8.3fx %-6s dev %7s call %7s  ref %9.4f ms  best %9.4f ms  %s\n",
              b.gpu_type().c_str(), b.speedup(),
              b.speedup_clock().empty() ? "-" : b.speedup_clock().c_str(),
              Speedup(b.has_speedup_device(), b.speedup_device()).c_str(),
              Speedup(b.has_speedup_call(), b.speedup_call()).c_str(), b.reference_ms(),
              b.candidate_ms(), b.candidate_id().substr(0, 16).c_str());
}

void PrintJob(const v1::Job& j) {
  std::printf("job %s  %s  task %s\n", j.job_id().c_str(), StateWord(j.state()),
              j.task_id().substr(0, 16).c_str());
  std::printf("  strategy %s, rounds %u, candidates generated %u, evaluated %u, tokens %llu\n",
              j.strategy().c_str(), j.rounds_done(), j.candidates_generated(),
              j.candidates_evaluated(), static_cast<unsigned long long>(j.tokens_used()));
  if (!j.stop_reason().empty()) std::printf("  stopped: %s\n", j.stop_reason().c_str());
  if (!j.error().empty()) std::printf("  error: %s\n", j.error().c_str());
  for (const auto& b : j.best()) PrintBest(b);
}

int GetJob(const std::string& id, v1::Job* job) {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::GetJobRequest req;
  req.set_job_id(id);
  grpc::Status s = JobStub()->GetJob(&ctx, req, job);
  return s.ok() ? 0 : Fail(s);
}

// Follows a job, one line per event; exit 0 when it succeeded.
int Watch(const std::string& id) {
  grpc::ClientContext ctx;
  v1::WatchJobRequest req;
  req.set_job_id(id);
  auto stub = JobStub();
  auto reader = stub->WatchJob(&ctx, req);
  v1::JobEvent ev;
  int results = 0, ok = 0;
  while (reader->Read(&ev)) {
    switch (ev.event_case()) {
      case v1::JobEvent::kRoundStarted:
        if (ev.round_started() == 0) {
          std::printf("round 0: measuring the seed candidates\n");
        } else {
          std::printf("round %u started\n", ev.round_started());
        }
        break;
      case v1::JobEvent::kCandidatesGenerated:
        std::printf("  %u new candidates queued\n", ev.candidates_generated());
        break;
      case v1::JobEvent::kResult: {
        const v1::EvalResult& r = ev.result().result();
        ++results;
        ok += r.verdict() == v1::VERDICT_OK;
        std::string reason = r.reason().substr(0, 80);
        for (char& c : reason) c = c == '\n' ? ' ' : c;
        std::printf(
            "  [%d] %-8s %-14s %8s %-6s  %s  %s\n", results, ev.result().gpu_type().c_str(),
            VerdictWord(r.verdict()).c_str(),
            r.has_speedup() ? (std::to_string(r.speedup()).substr(0, 6) + "x").c_str() : "-",
            r.has_speedup() ? r.speedup_clock().substr(0, 6).c_str() : "",
            ev.result().candidate_id().substr(0, 12).c_str(), reason.c_str());
        break;
      }
      case v1::JobEvent::kNewBest:
        std::printf("  new best on %s: %.3fx (%s)\n", ev.new_best().gpu_type().c_str(),
                    ev.new_best().speedup(), ev.new_best().candidate_id().substr(0, 12).c_str());
        break;
      case v1::JobEvent::kFinished:
        std::printf("job %s: %d evaluations, %d ok\n", StateWord(ev.finished()), results, ok);
        break;
      default:
        break;
    }
    std::fflush(stdout);
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return Fail(s);
  v1::Job job;
  if (int code = GetJob(id, &job); code != 0) return code;
  PrintJob(job);
  return job.state() == v1::JOB_STATE_SUCCEEDED ? 0 : kExitRpcError;
}

int Submit(const std::vector<std::string>& seed_files) {
  std::string task = absl::GetFlag(FLAGS_task);
  if (task.empty()) {
    std::fprintf(stderr, "kforge job submit: --task is needed\n");
    return kExitUsage;
  }
  v1::SubmitJobRequest req;
  for (const std::string& path : seed_files) {
    if (!ReadFile(path, req.add_seed_candidates())) {
      std::fprintf(stderr, "kforge: cannot read %s\n", path.c_str());
      return kExitUsage;
    }
  }
  for (const std::string& kv : SplitList(absl::GetFlag(FLAGS_params))) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::fprintf(stderr, "kforge job submit: --params wants K=V pairs, got '%s'\n", kv.c_str());
      return kExitUsage;
    }
    (*req.mutable_strategy_params())[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  std::string dialect = absl::GetFlag(FLAGS_dialect);
  if (!dialect.empty()) {
    v1::Dialect d;
    if (!ParseDialect(dialect, &d)) {
      std::fprintf(stderr, "kforge job submit: unknown dialect %s\n", dialect.c_str());
      return kExitUsage;
    }
    req.set_dialect(d);
  }
  if (!NotNegative("rounds", absl::GetFlag(FLAGS_rounds)) ||
      !NotNegative("max_candidates", absl::GetFlag(FLAGS_max_candidates)) ||
      !NotNegative("max_tokens", absl::GetFlag(FLAGS_max_tokens))) {
    return kExitUsage;
  }
  int code = 0;
  std::optional<std::string> task_id = ResolveTask(task, &code);
  if (!task_id) return code;
  req.set_task_id(*task_id);
  for (const std::string& t : SplitList(absl::GetFlag(FLAGS_gpu))) req.add_gpu_types(t);
  req.set_strategy(absl::GetFlag(FLAGS_strategy));
  v1::JobBudget* b = req.mutable_budget();
  b->set_max_rounds(static_cast<uint32_t>(absl::GetFlag(FLAGS_rounds)));
  b->set_max_candidates(static_cast<uint32_t>(absl::GetFlag(FLAGS_max_candidates)));
  b->set_max_tokens(static_cast<uint64_t>(absl::GetFlag(FLAGS_max_tokens)));
  b->set_max_wall_s(absl::GetFlag(FLAGS_max_wall_s));
  b->set_target_speedup(absl::GetFlag(FLAGS_target_speedup));
  req.set_seed(absl::GetFlag(FLAGS_seed));
  v1::LlmSettings* llm = req.mutable_llm();
  llm->set_provider(absl::GetFlag(FLAGS_provider));
  llm->set_model(absl::GetFlag(FLAGS_model));
  llm->set_base_url(absl::GetFlag(FLAGS_base_url));
  llm->set_temperature(absl::GetFlag(FLAGS_temperature));
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::SubmitJobResponse resp;
  grpc::Status s = JobStub()->SubmitJob(&ctx, req, &resp);
  if (!s.ok()) return Fail(s);
  std::printf("%s\n", resp.job_id().c_str());
  std::fflush(stdout);
  return absl::GetFlag(FLAGS_watch) ? Watch(resp.job_id()) : 0;
}

int List() {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::ListJobsRequest req;
  req.set_task_id(absl::GetFlag(FLAGS_task));
  if (!NotNegative("limit", absl::GetFlag(FLAGS_limit))) return kExitUsage;
  req.set_limit(static_cast<uint32_t>(absl::GetFlag(FLAGS_limit)));
  v1::ListJobsResponse resp;
  grpc::Status s = JobStub()->ListJobs(&ctx, req, &resp);
  if (!s.ok()) return Fail(s);
  std::printf("%-36s  %-10s  %-14s  %6s  %5s  %9s  %s\n", "JOB", "STATE", "STRATEGY", "ROUNDS",
              "EVALS", "BEST", "CREATED");
  for (const v1::Job& j : resp.jobs()) {
    double best = 0;
    for (const auto& b : j.best()) best = std::max(best, b.speedup());
    std::printf("%-36s  %-10s  %-14s  %6u  %5u  %8.3fx  %s\n", j.job_id().c_str(),
                StateWord(j.state()), j.strategy().c_str(), j.rounds_done(),
                j.candidates_evaluated(), best, j.created_at().c_str());
  }
  return 0;
}

int Cancel(const std::string& id) {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::CancelJobRequest req;
  req.set_job_id(id);
  v1::CancelJobResponse resp;
  grpc::Status s = JobStub()->CancelJob(&ctx, req, &resp);
  if (!s.ok()) return Fail(s);
  std::printf("%s\n", StateWord(resp.state()));
  return 0;
}

int Trajectory(const std::string& id) {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::JobTrajectoryRequest req;
  req.set_job_id(id);
  v1::JobTrajectoryResponse resp;
  grpc::Status s = JobStub()->GetJobTrajectory(&ctx, req, &resp);
  if (!s.ok()) return Fail(s);
  std::printf("%-24s  %5s  %-10s  %-14s  %9s  %-6s  %9s  %s\n", "FINISHED", "ROUND", "GPU",
              "VERDICT", "SPEEDUP", "CLOCK", "BEST", "CANDIDATE");
  for (const auto& p : resp.points()) {
    std::printf("%-24s  %5u  %-10s  %-14s  %9s  %-6s  %8.3fx  %s\n", p.finished_at().c_str(),
                p.round(), p.gpu_type().c_str(), VerdictWord(p.verdict()).c_str(),
                p.has_speedup() ? (std::to_string(p.speedup()).substr(0, 6) + "x").c_str() : "-",
                p.has_speedup() && !p.speedup_clock().empty() ? p.speedup_clock().c_str() : "-",
                p.best_so_far(), p.candidate_id().substr(0, 12).c_str());
  }
  return 0;
}

}  // namespace

int JobCommand(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::fprintf(stderr, "kforge job: submit, watch, get, list, cancel or trajectory\n");
    return kExitUsage;
  }
  const std::string& sub = args[0];
  if (sub == "submit") return Submit({args.begin() + 1, args.end()});
  if (sub == "list" && args.size() == 1) return List();
  if (args.size() != 2) {
    std::fprintf(stderr, "kforge job %s: expects one job id\n", sub.c_str());
    return kExitUsage;
  }
  if (sub == "watch") return Watch(args[1]);
  if (sub == "cancel") return Cancel(args[1]);
  if (sub == "trajectory") return Trajectory(args[1]);
  if (sub == "get") {
    v1::Job job;
    if (int code = GetJob(args[1], &job); code != 0) return code;
    PrintJob(job);
    return 0;
  }
  std::fprintf(stderr, "kforge job: unknown command %s\n", sub.c_str());
  return kExitUsage;
}

int Best() {
  v1::BestCandidatesRequest req;
  req.set_task_id(absl::GetFlag(FLAGS_task));
  req.set_job_id(absl::GetFlag(FLAGS_job));
  std::string gpu = absl::GetFlag(FLAGS_gpu);
  if (gpu != "any") req.set_gpu_type(gpu);
  req.set_limit(static_cast<uint32_t>(std::clamp(absl::GetFlag(FLAGS_top), 1, 100)));
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::BestCandidatesResponse resp;
  grpc::Status s = JobStub()->GetBestCandidates(&ctx, req, &resp);
  if (!s.ok()) return Fail(s);
  std::string dir = absl::GetFlag(FLAGS_out);
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      std::fprintf(stderr, "kforge: cannot create %s: %s\n", dir.c_str(), ec.message().c_str());
      return kExitUsage;
    }
  }
  for (const auto& b : resp.best()) {
    PrintBest(b);
    if (dir.empty()) continue;
    std::string path = dir + "/" + b.gpu_type() + "_" + b.candidate_id().substr(0, 16) + ".src";
    std::ofstream out(path);
    out << resp.sources().at(b.candidate_id());
    if (!out) {
      std::fprintf(stderr, "kforge: cannot write %s\n", path.c_str());
      return kExitUsage;
    }
  }
  if (resp.best().empty()) std::printf("no correct candidate yet\n");
  return 0;
}

int ExportRollouts(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    std::fprintf(stderr, "kforge export rollouts: expects one job id\n");
    return kExitUsage;
  }
  std::string path = absl::GetFlag(FLAGS_out);
  std::ofstream file;
  if (!path.empty()) {
    file.open(path);
    if (!file) {
      std::fprintf(stderr, "kforge: cannot write %s\n", path.c_str());
      return kExitUsage;
    }
  }
  grpc::ClientContext ctx;
  v1::ExportRolloutsRequest req;
  req.set_job_id(args[0]);
  auto stub = JobStub();
  auto reader = stub->ExportRollouts(&ctx, req);
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  opts.always_print_primitive_fields = true;
  v1::Rollout r;
  int n = 0;
  while (reader->Read(&r)) {
    std::string json;
    (void)google::protobuf::util::MessageToJsonString(r, &json, opts);
    // Verdicts as the rest of kforge's JSON writes them: "ok", "incorrect", ...
    nlohmann::json row = nlohmann::json::parse(json);
    row["verdict"] = VerdictWord(r.verdict());
    const std::string line = row.dump();
    if (file.is_open()) {
      file << line << "\n";
    } else {
      std::printf("%s\n", line.c_str());
    }
    ++n;
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return Fail(s);
  if (file.is_open()) std::fprintf(stderr, "%d rollouts written to %s\n", n, path.c_str());
  return 0;
}

}  // namespace kforge::cli
