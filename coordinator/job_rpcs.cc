// JobService's optimization-job RPCs: SubmitJob, GetJob, ListJobs, CancelJob, WatchJob,
// GetBestCandidates, ExportRollouts. They read and write PostgreSQL only; the JobRunner picks
// submitted jobs up from there.
#include <algorithm>
#include <cmath>
#include <random>

#include "common/base/log.h"
#include "common/dialect.h"
#include "common/result_json.h"
#include "common/service.h"
#include "coordinator/job_runner.h"
#include "coordinator/job_service.h"
#include "coordinator/search/reward.h"
#include "coordinator/task_validation.h"

namespace kforge {
namespace {

constexpr int kMaxSeedCandidates = 100;
constexpr uint32_t kMaxRounds = 1000;
constexpr double kMaxWallS = 30 * 24 * 3600;  // a month
constexpr double kGatewayCheckTimeoutS = 10;  // SubmitJob asking the gateway about llm

// NOT_FOUND (as for a job that does not exist) unless `p` may read what the job's tenant owns.
grpc::Status CheckReadable(const Principal& p, const JobRow& job) {
  if (CanRead(p, job.tenant)) return grpc::Status::OK;
  return {grpc::StatusCode::NOT_FOUND, "no job " + job.job_id};
}

// INVALID_ARGUMENT unless `job_id` is a UUID (PostgreSQL's own complaint would quote it).
grpc::Status CheckJobId(const std::string& job_id) {
  return ToGrpcStatus(ValidateUuid(job_id, "job_id"));
}

grpc::Status BadRequest(const std::string& why) {
  return {grpc::StatusCode::INVALID_ARGUMENT, why};
}

grpc::Status NoJobs() {
  return {grpc::StatusCode::UNIMPLEMENTED, "this coordinator does not run optimization jobs"};
}

v1::JobState StateFromName(const std::string& s) {
  if (s == "queued") return v1::JOB_STATE_QUEUED;
  if (s == "running") return v1::JOB_STATE_RUNNING;
  if (s == "succeeded") return v1::JOB_STATE_SUCCEEDED;
  if (s == "failed") return v1::JOB_STATE_FAILED;
  if (s == "cancelled") return v1::JOB_STATE_CANCELLED;
  return v1::JOB_STATE_UNSPECIFIED;
}

bool Terminal(const std::string& state) {
  return state == "succeeded" || state == "failed" || state == "cancelled";
}

// BestCandidate, TrajectoryPoint and Rollout name the clocks with the same fields.
template <typename Message>
void SetClocks(const ClockSpeedups& c, Message* out) {
  out->set_speedup_clock(c.clock);
  if (c.device) out->set_speedup_device(*c.device);
  if (c.call) out->set_speedup_call(*c.call);
}

void ToBest(const BestRow& b, v1::BestCandidate* out) {
  out->set_gpu_type(b.gpu_type);
  out->set_candidate_id(b.candidate_id);
  out->set_speedup(b.speedup);
  out->set_reference_ms(b.reference_ms);
  out->set_candidate_ms(b.candidate_ms);
  SetClocks(b.clocks, out);
}

// Builds the stored parameters of a job from the request; INVALID_ARGUMENT with the reason.
grpc::Status ParseJobRequest(const v1::SubmitJobRequest& req, JobParams* out,
                             std::vector<SeedCandidate>* seeds, size_t max_source_bytes) {
  if (req.task_id().empty()) return BadRequest("task_id is required");
  if (req.gpu_types_size() == 0) {
    return BadRequest("gpu_types must name at least one type (or \"any\")");
  }
  for (const std::string& g : req.gpu_types()) {
    if (g.empty() || g.size() > 64) return BadRequest("gpu_types entries must be 1..64 characters");
    out->spec.gpu_types.push_back(g);
  }
  out->spec.strategy = req.strategy().empty() ? "contrastive" : req.strategy();
  for (const auto& [k, v] : req.strategy_params()) out->spec.params[k] = v;
  if (auto s = search::MakeStrategy(out->spec); !s.ok()) {
    return BadRequest(std::string(s.status().message()));
  }
  if (req.dialect() != v1::DIALECT_UNSPECIFIED && !v1::Dialect_IsValid(req.dialect())) {
    return BadRequest("unknown dialect");
  }
  out->spec.dialect =
      req.dialect() == v1::DIALECT_UNSPECIFIED ? "nvrtc" : DialectName(req.dialect());
  uint64_t seed = req.seed();
  if (seed == 0) seed = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  out->spec.seed = seed;
  const v1::JobBudget& b = req.budget();
  if (b.max_rounds() > kMaxRounds) {
    return BadRequest("budget.max_rounds must be at most " + std::to_string(kMaxRounds));
  }
  // Written so that NaN fails too.
  if (!(b.max_wall_s() >= 0 && b.max_wall_s() <= kMaxWallS)) {
    return BadRequest("budget.max_wall_s must be within [0, " + std::to_string(int(kMaxWallS)) +
                      "] seconds (0: no limit)");
  }
  if (!(b.target_speedup() >= 0 && std::isfinite(b.target_speedup()))) {
    return BadRequest("budget.target_speedup must be finite and not negative (0: none)");
  }
  out->spec.budget.max_rounds = b.max_rounds() == 0 ? 5 : static_cast<int>(b.max_rounds());
  out->spec.budget.max_candidates =
      static_cast<int>(std::min<uint32_t>(b.max_candidates(), 1 << 30));
  out->spec.budget.max_tokens = b.max_tokens();
  out->spec.budget.max_wall_s = b.max_wall_s();
  out->spec.budget.target_speedup = b.target_speedup();
  const std::string& provider = req.llm().provider();
  if (!provider.empty() && provider != "offline" && provider != "openai" &&
      provider != "anthropic") {
    return BadRequest("llm.provider must be offline, openai or anthropic, not '" + provider + "'");
  }
  if (!(req.llm().temperature() >= 0 && req.llm().temperature() <= 2)) {
    return BadRequest("llm.temperature must be within [0, 2]");
  }
  out->llm = req.llm();
  if (req.seed_candidates_size() > kMaxSeedCandidates) {
    return BadRequest("at most " + std::to_string(kMaxSeedCandidates) + " seed candidates");
  }
  for (int i = 0; i < req.seed_candidates_size(); ++i) {
    const std::string& src = req.seed_candidates(i);
    if (src.empty()) return BadRequest("seed candidate " + std::to_string(i) + " is empty");
    if (absl::Status s = ValidateUtf8(src, "seed candidate " + std::to_string(i)); !s.ok()) {
      return ToGrpcStatus(s);
    }
    if (src.size() > max_source_bytes) {
      return BadRequest("seed candidate " + std::to_string(i) + " is larger than " +
                        std::to_string(max_source_bytes) + " bytes");
    }
    seeds->push_back({src, DialectName(InferDialect(src))});
  }
  return grpc::Status::OK;
}

}  // namespace

grpc::Status JobServiceImpl::FillJob(const JobRow& row, v1::Job* out) {
  out->set_job_id(row.job_id);
  out->set_task_id(row.task_id);
  out->set_state(StateFromName(row.state));
  for (const std::string& g : row.gpu_types) out->add_gpu_types(g);
  out->set_strategy(row.strategy);
  out->set_rounds_done(static_cast<uint32_t>(row.rounds_done));
  out->set_candidates_evaluated(static_cast<uint32_t>(row.candidates_evaluated));
  out->set_created_at(row.created_at);
  out->set_updated_at(row.updated_at);
  out->set_error(row.error);
  out->set_tokens_used(static_cast<uint64_t>(row.tokens_used));
  search::SearchState st = search::SearchState::FromJson(row.search_state);
  out->set_candidates_generated(static_cast<uint32_t>(st.candidates_generated));
  out->set_stop_reason(row.state == "cancelled" ? "cancelled" : st.stop_reason);
  auto best = jobs_->Best("", row.job_id, "", 1);
  if (!best.ok()) return ToGrpcStatus(best.status());
  for (const BestRow& b : *best) ToBest(b, out->add_best());
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::CheckLlmEndpoint(const v1::LlmSettings& llm) {
  // Only a job that names an endpoint depends on the gateway being up to be submitted.
  if (gateway_ == nullptr || llm.base_url().empty()) return grpc::Status::OK;
  absl::Status s = gateway_->CheckLlmSettings(llm, kGatewayCheckTimeoutS);
  if (s.ok()) return grpc::Status::OK;
  if (absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s) || absl::IsUnauthenticated(s) ||
      absl::IsCancelled(s) || absl::IsUnimplemented(s)) {
    LogWarning("cannot check a job's llm settings with the gateway",
               {{"code", absl::StatusCodeToString(s.code())}, {"error", std::string(s.message())}});
    return {grpc::StatusCode::UNAVAILABLE,
            "cannot check llm.base_url with the LLM gateway now (" +
                absl::StatusCodeToString(s.code()) + "); try again"};
  }
  return ToGrpcStatus(s);
}

grpc::Status JobServiceImpl::SubmitJob(grpc::ServerContext* ctx, const v1::SubmitJobRequest* req,
                                       v1::SubmitJobResponse* resp) {
  if (!jobs_) return NoJobs();
  auto caller = auth_.Check(*ctx, {Role::kResearcher}, "submit jobs");
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  JobParams params;
  std::vector<SeedCandidate> seeds;
  if (grpc::Status s = ParseJobRequest(*req, &params, &seeds, limits_.max_candidate_bytes);
      !s.ok()) {
    return s;
  }
  if (grpc::Status s = CheckGpuTypes(params.spec.gpu_types); !s.ok()) return s;
  if (grpc::Status s = CheckLlmEndpoint(req->llm()); !s.ok()) return s;
  if (limits_.max_tenant_active_jobs > 0) {
    auto active = jobs_->ActiveJobs(caller->tenant);
    if (!active.ok()) return ToGrpcStatus(active.status());
    if (*active >= limits_.max_tenant_active_jobs) {
      return {grpc::StatusCode::RESOURCE_EXHAUSTED,
              "tenant " + caller->tenant + " has " + std::to_string(*active) +
                  " jobs queued or running; its quota is " +
                  std::to_string(limits_.max_tenant_active_jobs) +
                  "; wait for one to finish or cancel one"};
    }
  }
  auto id = jobs_->CreateJob(req->task_id(), params.spec.gpu_types, params.spec.strategy,
                             params.ToJson(), seeds, caller->name, caller->tenant);
  if (!id.ok()) return ToGrpcStatus(id.status());
  resp->set_job_id(*id);
  Audit(audit_, *caller, "submit_job", *id, {{"task_id", req->task_id()}});
  LogInfo("job submitted", {{"job_id", *id},
                            {"task_id", req->task_id()},
                            {"strategy", params.spec.strategy},
                            {"seeds", std::to_string(seeds.size())},
                            {"principal", caller->name}});
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::GetJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req,
                                    v1::Job* resp) {
  if (!jobs_) return NoJobs();
  auto caller = auth_.Check(*ctx, {Role::kResearcher, Role::kOperator}, "read jobs");
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (grpc::Status s = CheckJobId(req->job_id()); !s.ok()) return s;
  auto row = jobs_->GetJob(req->job_id());
  if (!row.ok()) return ToGrpcStatus(row.status());
  if (grpc::Status s = CheckReadable(*caller, *row); !s.ok()) return s;
  return FillJob(*row, resp);
}

grpc::Status JobServiceImpl::ListJobs(grpc::ServerContext* ctx, const v1::ListJobsRequest* req,
                                      v1::ListJobsResponse* resp) {
  if (!jobs_) return NoJobs();
  auto caller = auth_.Check(*ctx, {Role::kResearcher, Role::kOperator}, "read jobs");
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  int limit = req->limit() == 0 ? 50 : static_cast<int>(std::min<uint32_t>(req->limit(), 1000));
  auto rows = jobs_->ListJobs(limit, req->task_id(), ReadableTenants(*caller));
  if (!rows.ok()) return ToGrpcStatus(rows.status());
  for (const JobRow& row : *rows) {
    if (grpc::Status s = FillJob(row, resp->add_jobs()); !s.ok()) return s;
  }
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::CancelJob(grpc::ServerContext* ctx, const v1::CancelJobRequest* req,
                                       v1::CancelJobResponse* resp) {
  if (!jobs_) return NoJobs();
  auto caller = auth_.Check(*ctx, {Role::kResearcher, Role::kOperator}, "cancel jobs");
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (grpc::Status s = CheckJobId(req->job_id()); !s.ok()) return s;
  auto job = jobs_->GetJob(req->job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  if (grpc::Status s = CheckReadable(*caller, *job); !s.ok()) return s;
  // A principal is its name within its tenant: "alice" of one tenant is not "alice" of
  // another (tenants name their principals independently).
  if (!caller->Has(Role::kOperator) &&
      (job->owner != caller->name || job->tenant != caller->tenant)) {
    return {grpc::StatusCode::PERMISSION_DENIED,
            caller->name + " of tenant " + caller->tenant + " may not cancel job " + req->job_id() +
                ": it belongs to " +
                (job->owner.empty() ? std::string("nobody")
                                    : job->owner + " of tenant " + job->tenant) +
                " (only its owner or an operator may cancel it)"};
  }
  auto state = jobs_->CancelJob(req->job_id());
  if (!state.ok()) return ToGrpcStatus(state.status());
  resp->set_state(StateFromName(*state));
  Audit(audit_, *caller, "cancel_job", req->job_id(), {{"state", *state}});
  LogInfo("job cancel requested",
          {{"job_id", req->job_id()}, {"state", *state}, {"principal", caller->name}});
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::WatchJob(grpc::ServerContext* ctx, const v1::WatchJobRequest* req,
                                      grpc::ServerWriter<v1::JobEvent>* writer) {
  if (!jobs_) return NoJobs();
  auto caller = auth_.Check(*ctx, {Role::kResearcher, Role::kOperator}, "read jobs");
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  const std::string& job_id = req->job_id();
  if (grpc::Status s = CheckJobId(job_id); !s.ok()) return s;
  if (auto row = jobs_->GetJob(job_id); !row.ok()) {
    return ToGrpcStatus(row.status());
  } else if (grpc::Status s = CheckReadable(*caller, *row); !s.ok()) {
    return s;
  }
  std::set<std::pair<int, int>> steps_sent;
  std::set<int64_t> results_sent;
  std::map<std::string, double> best;
  int round_sent = -1;
  ResultCursor cursor;  // each poll reads only results not read before
  StreamCredentials credentials(auth_, *ctx);
  while (!ctx->IsCancelled()) {
    if (absl::Status s = credentials.Recheck(); !s.ok()) return ToGrpcStatus(s);
    // Read the state first: whatever it says, the events read after it are complete.
    auto row = jobs_->GetJob(job_id);
    if (!row.ok()) return ToGrpcStatus(row.status());
    auto steps = jobs_->Steps(job_id);
    if (!steps.ok()) return ToGrpcStatus(steps.status());
    auto evals = queue_.JobFinishedSince(job_id, cursor);
    if (!evals.ok()) return ToGrpcStatus(evals.status());
    // New events of both kinds, merged by time (a step sorts before a result of the same
    // millisecond), so a replay reads like the live stream.
    std::vector<std::pair<std::string, std::vector<v1::JobEvent>>> pending;
    for (const JobStep& step : *steps) {
      if (!steps_sent.insert({step.round, step.step}).second) continue;
      std::vector<v1::JobEvent> evs;
      if (step.round > round_sent) {
        round_sent = step.round;
        evs.emplace_back().set_round_started(static_cast<uint32_t>(step.round));
      }
      if (step.kind == "evaluate" && step.round > 0) {
        evs.emplace_back().set_candidates_generated(
            static_cast<uint32_t>(step.payload["candidates"].size()));
      }
      if (!evs.empty()) pending.emplace_back(step.created_at + " 0", std::move(evs));
    }
    for (auto it = evals->begin(); it != evals->end(); ++it) {  // sorted by time below
      if (!results_sent.insert(it->evaluation_id).second) continue;
      std::vector<v1::JobEvent> evs(1);
      ToRecord(*it, evs[0].mutable_result());
      const v1::EvalResult& r = evs[0].result().result();
      std::string gpu = it->ran_on_gpu_type.empty() ? it->gpu_type : it->ran_on_gpu_type;
      if (r.verdict() == v1::VERDICT_OK && r.has_speedup()) {
        BestRow b{gpu,         it->candidate_id,          "",
                  r.speedup(), r.reference().median_ms(), r.candidate().median_ms(),
                  ClockSpeedups{r.speedup_clock(),
                                r.has_speedup_device() ? std::optional(r.speedup_device())
                                                       : std::nullopt,
                                r.has_speedup_call() ? std::optional(r.speedup_call())
                                                     : std::nullopt}};
        ToBest(b, evs.emplace_back().mutable_new_best());  // dropped below unless a new best
      }
      pending.emplace_back(it->finished_at + " 1", std::move(evs));
    }
    std::stable_sort(pending.begin(), pending.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [when, evs] : pending) {
      for (v1::JobEvent& ev : evs) {
        if (ev.has_new_best()) {
          double& b = best[ev.new_best().gpu_type()];
          if (ev.new_best().speedup() <= b) continue;
          b = ev.new_best().speedup();
        }
        ev.set_job_id(job_id);
        if (!writer->Write(ev))
          return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
      }
    }
    if (Terminal(row->state)) {
      v1::JobEvent ev;
      ev.set_job_id(job_id);
      ev.set_finished(StateFromName(row->state));
      writer->Write(ev);
      return grpc::Status::OK;
    }
    for (int i = 0; i < 5 && !ctx->IsCancelled(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return grpc::Status(grpc::StatusCode::CANCELLED, "client cancelled");
}

grpc::Status JobServiceImpl::GetBestCandidates(grpc::ServerContext* ctx,
                                               const v1::BestCandidatesRequest* req,
                                               v1::BestCandidatesResponse* resp) {
  if (!jobs_) return NoJobs();
  auto caller = auth_.Check(*ctx, {Role::kResearcher, Role::kOperator}, "read candidates");
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (req->task_id().empty() && req->job_id().empty()) {
    return BadRequest("task_id or job_id is required");
  }
  if (!req->job_id().empty()) {
    if (grpc::Status s = CheckJobId(req->job_id()); !s.ok()) return s;
  }
  int per_type = req->limit() == 0 ? 1 : static_cast<int>(std::min<uint32_t>(req->limit(), 100));
  auto rows = jobs_->Best(req->task_id(), req->job_id(), req->gpu_type(), per_type,
                          ReadableTenants(*caller));
  if (!rows.ok()) return ToGrpcStatus(rows.status());
  for (const BestRow& b : *rows) {
    ToBest(b, resp->add_best());
    (*resp->mutable_sources())[b.candidate_id] = b.source;
  }
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::GetJobTrajectory(grpc::ServerContext* ctx,
                                              const v1::JobTrajectoryRequest* req,
                                              v1::JobTrajectoryResponse* resp) {
  if (!jobs_) return NoJobs();
  auto caller = auth_.Check(*ctx, {Role::kResearcher, Role::kOperator}, "read jobs");
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (grpc::Status s = CheckJobId(req->job_id()); !s.ok()) return s;
  if (auto row = jobs_->GetJob(req->job_id()); !row.ok()) {
    return ToGrpcStatus(row.status());
  } else if (grpc::Status s = CheckReadable(*caller, *row); !s.ok()) {
    return s;
  }
  auto points = jobs_->Trajectory(req->job_id());
  if (!points.ok()) return ToGrpcStatus(points.status());
  for (const TrajectoryRow& t : *points) {
    v1::TrajectoryPoint* p = resp->add_points();
    p->set_evaluation_id(t.evaluation_id);
    p->set_finished_at(t.finished_at);
    p->set_round(static_cast<uint32_t>(t.round));
    p->set_gpu_type(t.gpu_type);
    p->set_candidate_id(t.candidate_id);
    p->set_verdict(VerdictFromName(t.verdict));
    if (t.speedup) p->set_speedup(*t.speedup);
    p->set_best_so_far(t.best_so_far);
    SetClocks(t.clocks, p);
  }
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::ExportRollouts(grpc::ServerContext* ctx,
                                            const v1::ExportRolloutsRequest* req,
                                            grpc::ServerWriter<v1::Rollout>* writer) {
  if (!jobs_) return NoJobs();
  auto caller = auth_.Check(*ctx, {Role::kResearcher, Role::kTrainer, Role::kOperator}, "export rollouts");
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (grpc::Status s = CheckJobId(req->job_id()); !s.ok()) return s;
  auto row = jobs_->GetJob(req->job_id());
  if (!row.ok()) return ToGrpcStatus(row.status());
  if (grpc::Status s = CheckReadable(*caller, *row); !s.ok()) return s;
  auto steps = jobs_->Steps(row->job_id);
  if (!steps.ok()) return ToGrpcStatus(steps.status());
  auto results = jobs_->JobResults(row->job_id);
  if (!results.ok()) return ToGrpcStatus(results.status());
  std::map<std::pair<std::string, std::string>, JobEvaluation> latest;  // (candidate, gpu)
  for (const JobEvaluation& e : *results) latest[{e.candidate_id, e.gpu_type}] = e;
  std::map<std::string, search::RewardNormalizer> normalizers;  // one per GPU type
  for (const JobStep& step : *steps) {
    if (step.kind != "generate") continue;
    for (const nlohmann::json& p : step.payload["proposals"]) {
      const std::string id = p.value("candidate_id", "");
      for (const std::string& gpu : row->gpu_types) {
        v1::Rollout r;
        r.set_job_id(row->job_id);
        r.set_round(static_cast<uint32_t>(step.round));
        r.set_prompt(p.value("prompt", ""));
        r.set_completion(p.value("completion", ""));
        r.set_candidate_id(id);
        r.set_parse_error(p.value("parse_error", ""));
        r.set_gpu_type(gpu);
        r.set_llm_call_id(p.value("llm_call_id", ""));
        std::string verdict;
        std::optional<double> speedup;
        if (!id.empty()) {
          auto it = latest.find({id, gpu});
          if (it == latest.end()) continue;  // not measured (yet): no reward to give
          verdict = it->second.verdict;
          speedup = it->second.speedup;
          r.set_verdict(VerdictFromName(verdict));
          if (speedup) r.set_speedup(*speedup);
          SetClocks(it->second.clocks, &r);
        }
        double raw = search::RawReward(verdict, speedup);
        r.set_raw_reward(raw);
        r.set_reward(normalizers[gpu].Add(raw));
        if (!writer->Write(r)) return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
      }
    }
  }
  return grpc::Status::OK;
}

}  // namespace kforge
