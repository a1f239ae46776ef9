#include "coordinator/job_runner.h"

#include <chrono>

#include "common/base/log.h"
#include "common/base/sha256.h"
#include "common/dialect.h"
#include "common/result_json.h"
#include "common/service.h"
#include "common/status_macros.h"

namespace kforge {
namespace {

bool IsTransient(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s) || absl::IsResourceExhausted(s) ||
         absl::IsAborted(s) || IsRetryablePgError(s);
}

}  // namespace

nlohmann::json JobParams::ToJson() const {
  const search::Budget& b = spec.budget;
  return {{"gpu_types", spec.gpu_types},
          {"strategy", spec.strategy},
          {"params", spec.params},
          {"dialect", spec.dialect},
          {"seed", spec.seed},
          {"budget",
           {{"max_rounds", b.max_rounds},
            {"max_candidates", b.max_candidates},
            {"max_tokens", b.max_tokens},
            {"max_wall_s", b.max_wall_s},
            {"target_speedup", b.target_speedup},
            {"max_stale_rounds", b.max_stale_rounds}}},
          {"llm",
           {{"provider", llm.provider()},
            {"model", llm.model()},
            {"temperature", llm.temperature()},
            {"max_tokens", llm.max_tokens()},
            {"base_url", llm.base_url()}}}};
}

absl::StatusOr<JobParams> JobParams::FromJson(const nlohmann::json& j) {
  try {
    JobParams p;
    p.spec.gpu_types = j.at("gpu_types").get<std::vector<std::string>>();
    p.spec.strategy = j.at("strategy").get<std::string>();
    p.spec.params = j.value("params", std::map<std::string, std::string>());
    p.spec.dialect = j.value("dialect", std::string("nvrtc"));
    p.spec.seed = j.value("seed", uint64_t{1});
    const nlohmann::json& b = j.at("budget");
    p.spec.budget.max_rounds = b.value("max_rounds", 5);
    p.spec.budget.max_candidates = b.value("max_candidates", 0);
    p.spec.budget.max_tokens = b.value("max_tokens", uint64_t{0});
    p.spec.budget.max_wall_s = b.value("max_wall_s", 0.0);
    p.spec.budget.target_speedup = b.value("target_speedup", 0.0);
    p.spec.budget.max_stale_rounds = b.value("max_stale_rounds", 2);
    const nlohmann::json& llm = j.at("llm");
    p.llm.set_provider(llm.value("provider", ""));
    p.llm.set_model(llm.value("model", ""));
    p.llm.set_temperature(llm.value("temperature", 0.0));
    p.llm.set_max_tokens(llm.value("max_tokens", 0u));
    p.llm.set_base_url(llm.value("base_url", ""));
    return p;
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(std::string("stored job parameters are malformed: ") +
                                      e.what());
  }
}

// The outside world of one job's search: the gateway, the queue, the journal.
class JobEnv : public search::SearchEnv {
 public:
  JobEnv(JobRunner& runner, const JobRow& job, const JobParams& params, std::string task_source)
      : runner_(runner),
        job_(job),
        params_(params),
        task_source_(std::move(task_source)) {}

  absl::StatusOr<search::GenerateReply> Generate(const search::GenerateAsk& ask) override {
    ASSIGN_OR_RETURN(nlohmann::json payload, Journalled(ask.round, ask.step, "generate",
                                                        [&]() { return AskGenerate(ask); }));
    search::GenerateReply reply;
    if (payload.is_null()) return reply;  // stopping
    reply.tokens = payload.value("tokens", uint64_t{0});
    for (const nlohmann::json& p : payload["proposals"]) {
      search::Proposal prop;
      prop.source = p.value("source", "");
      prop.dialect = p.value("dialect", "");
      prop.analysis = p.value("analysis", "");
      prop.parse_error = p.value("parse_error", "");
      prop.llm_call_id = std::atoll(p.value("llm_call_id", "0").c_str());
      if (!prop.source.empty()) {
        pending_[Sha256Hex(prop.source)] = {p.value("prompt", ""), p.value("completion", ""),
                                            prop.llm_call_id};
      }
      reply.proposals.push_back(std::move(prop));
    }
    return reply;
  }

  absl::StatusOr<search::IdeasReply> ProposeIdeas(const search::IdeasAsk& ask) override {
    ASSIGN_OR_RETURN(nlohmann::json payload,
                     Journalled(ask.round, ask.step, "ideas", [&]() { return AskIdeas(ask); }));
    search::IdeasReply reply;
    if (payload.is_null()) return reply;  // stopping
    reply.tokens = payload.value("tokens", uint64_t{0});
    reply.ideas = payload.value("ideas", std::vector<std::string>());
    return reply;
  }

 private:
  // The journalled payload of step (round, step); when there is none yet, `ask` makes it and
  // it is journalled before it is returned. Null when the job is stopping.
  absl::StatusOr<nlohmann::json> Journalled(
      int round, int step_number, const char* kind,
      const std::function<absl::StatusOr<nlohmann::json>()>& ask) {
    ASSIGN_OR_RETURN(std::optional<JobStep> step,
                     runner_.jobs_.GetStep(job_.job_id, round, step_number));
    if (step) return step->payload;
    if (ShouldStop(/*fresh=*/true)) return nlohmann::json();
    ASSIGN_OR_RETURN(nlohmann::json payload, ask());
    RETURN_IF_ERROR(runner_.jobs_.PutStep(job_.job_id, {round, step_number, kind, payload, ""},
                                          payload.value("tokens", uint64_t{0})));
    return payload;
  }

  absl::StatusOr<nlohmann::json> AskGenerate(const search::GenerateAsk& ask) {
    v1::GenerateRequest req;
    req.set_job_id(job_.job_id);
    req.set_task_source(task_source_);
    for (const search::Member* m : ask.exemplars) AddExemplar(*m, req.add_exemplars());
    req.set_strategy(ask.strategy);
    v1::Dialect dialect = v1::DIALECT_NVRTC;
    ParseDialect(params_.spec.dialect, &dialect);
    req.set_dialect(dialect);
    req.set_num_candidates(static_cast<uint32_t>(ask.num_candidates));
    *req.mutable_llm() = params_.llm;
    req.set_seed(ask.seed);
    req.set_idea(ask.idea);
    v1::GenerateResponse resp;
    RETURN_IF_ERROR(CallGateway([&](bool wait_for_ready) -> absl::Status {
      ASSIGN_OR_RETURN(resp, runner_.gateway_.Generate(req, runner_.options_.gateway_timeout_s,
                                                       wait_for_ready));
      return absl::OkStatus();
    }));
    nlohmann::json proposals = nlohmann::json::array();
    for (const v1::GeneratedCandidate& c : resp.candidates()) {
      proposals.push_back({{"source", c.source()},
                           {"candidate_id", c.source().empty() ? "" : Sha256Hex(c.source())},
                           {"dialect", c.source().empty() ? "" : DialectName(c.dialect())},
                           {"analysis", c.analysis()},
                           {"prompt", c.prompt()},
                           {"completion", c.completion()},
                           {"parse_error", c.parse_error()},
                           {"status", c.status()},
                           {"llm_call_id", c.llm_call_id()}});
    }
    return nlohmann::json{{"proposals", proposals},
                          {"tokens", resp.tokens_in() + resp.tokens_out()},
                          {"idea", ask.idea}};
  }

  absl::StatusOr<nlohmann::json> AskIdeas(const search::IdeasAsk& ask) {
    v1::ProposeIdeasRequest req;
    req.set_job_id(job_.job_id);
    req.set_task_source(task_source_);
    for (const search::Member* m : ask.exemplars) AddExemplar(*m, req.add_exemplars());
    for (const search::IdeaRecord& r : ask.earlier) {
      v1::IdeaOutcome* o = req.add_earlier_ideas();
      o->set_idea(r.idea);
      o->set_best_speedup(r.best_speedup);
    }
    req.set_num_ideas(static_cast<uint32_t>(ask.num_ideas));
    *req.mutable_llm() = params_.llm;
    req.set_seed(ask.seed);
    v1::ProposeIdeasResponse resp;
    RETURN_IF_ERROR(CallGateway([&](bool wait_for_ready) -> absl::Status {
      ASSIGN_OR_RETURN(resp, runner_.gateway_.ProposeIdeas(
                                 req, runner_.options_.gateway_timeout_s, wait_for_ready));
      return absl::OkStatus();
    }));
    return nlohmann::json{
        {"ideas", std::vector<std::string>(resp.ideas().begin(), resp.ideas().end())},
        {"tokens", resp.tokens_in() + resp.tokens_out()},
        {"prompt", resp.prompt()},
        {"completion", resp.completion()},
        {"parse_error", resp.parse_error()},
        {"llm_call_id", resp.llm_call_id()}};
  }

 public:
  absl::Status Accept(const search::Member& m) override {
    Pending p = pending_[m.candidate_id];
    return runner_.jobs_.AddMember(job_.job_id, m, p.prompt, p.completion, p.llm_call_id);
  }

  absl::Status Evaluate(int round, int step_number,
                        const std::vector<search::Member*>& members) override {
    ASSIGN_OR_RETURN(std::optional<JobStep> step,
                     runner_.jobs_.GetStep(job_.job_id, round, step_number));
    std::string batch_id;
    if (step) {
      batch_id = step->payload.value("batch_id", "");
    } else {
      if (ShouldStop(/*fresh=*/true)) return absl::OkStatus();
      BatchSpec spec;
      spec.task_id = job_.task_id;
      spec.gpu_types = params_.spec.gpu_types;
      spec.job_id = job_.job_id;
      spec.owner = job_.owner;
      spec.tenant = job_.tenant;
      nlohmann::json ids = nlohmann::json::array();
      for (const search::Member* m : members) {
        spec.candidates.push_back({m->source, m->dialect, m->candidate_id});
        ids.push_back(m->candidate_id);
      }
      while (true) {
        auto batch = runner_.queue_.Enqueue(spec, runner_.options_.max_queue_depth,
                                            runner_.options_.max_tenant_queued);
        if (batch.ok()) {
          batch_id = batch->batch_id;
          for (const auto& [type, n] : batch->queued_per_type) runner_.notifier_.WorkAdded(type, n);
          break;
        }
        // A full queue makes the job wait, it does not fail it (until its wall time is over).
        if (!absl::IsResourceExhausted(batch.status()) || ShouldStop()) return batch.status();
        if (OutOfWallTime()) return absl::OkStatus();
        SleepUnlessStopping(runner_.options_.retry_after_s);
      }
      RETURN_IF_ERROR(runner_.jobs_.PutStep(
          job_.job_id,
          {round, step_number, "evaluate", {{"batch_id", batch_id}, {"candidates", ids}}, ""}, 0));
      // A cancellation that came between the check above and the enqueue: drop the batch.
      if (ShouldStop(/*fresh=*/true)) return runner_.jobs_.DropQueued(job_.job_id);
    }
    Notifier::BatchWatch watch(runner_.notifier_, batch_id);
    while (!ShouldStop()) {
      // The wall-time budget holds while the job waits for workers too (a pool with no worker
      // would keep it waiting forever): what has not run by then is dropped, and the search
      // stops with max_wall_time.
      if (OutOfWallTime()) return runner_.jobs_.DropQueued(job_.job_id);
      uint64_t seen = watch.generation();
      ASSIGN_OR_RETURN(auto progress, runner_.jobs_.BatchProgress(batch_id));
      // A batch emptied by a cancellation counts as done: look at the job before going on.
      if (progress.second == 0 && ShouldStop(/*fresh=*/true)) return absl::OkStatus();
      if (progress.first >= progress.second) break;
      watch.WaitChange(seen, absl::Now() + absl::Milliseconds(500));
    }
    if (ShouldStop()) return absl::OkStatus();
    ASSIGN_OR_RETURN(std::vector<JobEvaluation> results, runner_.jobs_.BatchResults(batch_id));
    std::map<std::string, search::Member*> by_id;
    for (search::Member* m : members) by_id[m->candidate_id] = m;
    for (const JobEvaluation& e : results) {
      auto it = by_id.find(e.candidate_id);
      if (it != by_id.end()) it->second->scores[e.gpu_type] = {e.verdict, e.speedup};
    }
    return absl::OkStatus();
  }

  bool ShouldStop() override { return ShouldStop(/*fresh=*/false); }

  // `fresh`: read the job's state now rather than trust a reading up to a second old.
  bool ShouldStop(bool fresh) {
    if (runner_.stopping()) return true;
    auto now = std::chrono::steady_clock::now();
    if (fresh || now - last_state_check_ > std::chrono::seconds(1)) {
      last_state_check_ = now;
      auto job = runner_.jobs_.GetJob(job_.job_id);
      // A database hiccup is not a cancellation: keep going and look again.
      if (job.ok()) cancelled_ = job->state != "running";
    }
    return cancelled_;
  }

  bool OutOfWallTime() {
    const double limit = params_.spec.budget.max_wall_s;
    return limit > 0 && ElapsedS() >= limit;
  }

  double ElapsedS() override {
    auto s = runner_.jobs_.ElapsedS(job_.job_id);
    return s.ok() ? *s : 0;
  }

 private:
  struct Pending {
    std::string prompt, completion;
    int64_t llm_call_id = 0;
  };

  void AddExemplar(const search::Member& m, v1::Exemplar* ex) {
    ex->set_candidate_id(m.candidate_id);
    ex->set_source(m.source);
    v1::Dialect d = v1::DIALECT_UNSPECIFIED;
    ParseDialect(m.dialect, &d);
    ex->set_dialect(d);
    ex->set_analysis(m.analysis);
    // The speedup shown is the one measured on the first target GPU type.
    const std::string& gpu = params_.spec.gpu_types.front();
    auto it = m.scores.find(gpu);
    ex->set_gpu_type(gpu);
    if (it != m.scores.end()) {
      ex->set_verdict(VerdictFromName(it->second.verdict));
      ex->set_speedup(it->second.speedup.value_or(0));
    }
  }

  // Calls the gateway, retrying while it is unreachable or busy (with backoff, up to about a
  // minute); the call can be cancelled by JobRunner::Stop.
  // `call(wait_for_ready)` makes one attempt; the first does not wait for an unreachable
  // gateway, the retries do.
  absl::Status CallGateway(const std::function<absl::Status(bool)>& call) {
    double backoff = 0.5;
    for (int attempt = 0;; ++attempt) {
      absl::Status st = runner_.stopping() ? absl::CancelledError("stopping") : call(attempt > 0);
      if (st.ok()) return absl::OkStatus();
      if (!IsTransient(st) || attempt >= 6 || runner_.stopping()) {
        return absl::Status(st.code(), "LLM gateway: " + std::string(st.message()));
      }
      LogWarning("gateway call failed, retrying",
                 {{"job_id", job_.job_id}, {"error", std::string(st.message())}});
      SleepUnlessStopping(backoff);
      backoff = std::min(backoff * 2, 16.0);
    }
  }

  void SleepUnlessStopping(double seconds) {
    auto until = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
    while (!runner_.stopping() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  JobRunner& runner_;
  const JobRow& job_;
  const JobParams& params_;
  const std::string task_source_;
  std::map<std::string, Pending> pending_;  // proposals of this session by candidate id
  std::chrono::steady_clock::time_point last_state_check_{};
  bool cancelled_ = false;
};

JobRunner::JobRunner(PgPool& pool, JobStore& jobs, QueueStore& queue, Notifier& notifier,
                     GatewayClient& gateway, Options options)
    : pool_(pool),
      jobs_(jobs),
      queue_(queue),
      notifier_(notifier),
      gateway_(gateway),
      options_(options) {
  if (prometheus::Registry* m = options_.metrics) {
    running_gauge_ = &prometheus::BuildGauge()
                          .Name("kforge_jobs_running")
                          .Help("Optimization jobs this coordinator is running")
                          .Register(*m)
                          .Add({});
    rounds_ = &prometheus::BuildCounter()
                   .Name("kforge_job_rounds_total")
                   .Help("Search rounds completed, by strategy")
                   .Register(*m);
    candidates_ = &prometheus::BuildCounter()
                       .Name("kforge_job_candidates_total")
                       .Help("New distinct candidates the searches produced, by strategy")
                       .Register(*m);
    tokens_ = &prometheus::BuildCounter()
                   .Name("kforge_job_llm_tokens_total")
                   .Help("LLM tokens (prompt + completion) the searches spent, by strategy")
                   .Register(*m);
    finished_jobs_ = &prometheus::BuildCounter()
                          .Name("kforge_jobs_finished_total")
                          .Help("Jobs this coordinator finished, by final state and stop reason")
                          .Register(*m);
  }
}

JobRunner::~JobRunner() { Stop(); }

void JobRunner::Start() {
  scanner_ = std::thread([this] { ScanLoop(); });
}

void JobRunner::Stop() {
  if (stopping_.exchange(true)) return;
  gateway_.CancelAll();
  if (scanner_.joinable()) scanner_.join();
  std::map<std::string, std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    threads.swap(running_);
  }
  for (auto& [id, t] : threads) t.join();
}

void JobRunner::ScanLoop() {
  while (!stopping()) {
    {
      absl::MutexLock lock(&mu_);
      for (auto it = finished_.begin(); it != finished_.end();) {
        running_[it->first].join();
        running_.erase(it->first);
        it = finished_.erase(it);
      }
    }
    auto active = jobs_.ActiveJobs();
    if (!active.ok()) {
      LogWarning("cannot list jobs", {{"error", std::string(active.status().message())}});
    } else {
      absl::MutexLock lock(&mu_);
      for (const std::string& id : *active) {
        if (running_.count(id) || static_cast<int>(running_.size()) >= options_.max_running_jobs) {
          continue;
        }
        running_[id] = std::thread([this, id] { RunJob(id); });
      }
      if (running_gauge_) running_gauge_->Set(static_cast<double>(running_.size()));
    }
    for (int i = 0; i < static_cast<int>(options_.scan_interval_s * 10) && !stopping(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

void JobRunner::RunJob(const std::string& job_id) {
  // The advisory lock lives as long as this connection: if this coordinator dies, PostgreSQL
  // releases it and another coordinator (or this one restarted) takes the job over.
  auto conn = PgConnection::Connect(pool_.url());
  bool locked = false;
  if (conn.ok()) {
    auto r = (*conn)->Exec(
        "SELECT pg_try_advisory_lock(hashtextextended('kforge-job:' || $1, 0)) "
        "AS locked",
        {job_id});
    locked = r.ok() && r->Get(0, "locked") == "t";
  }
  while (locked && !stopping()) {
    absl::Status s = RunOnce(job_id);
    if (s.ok()) break;
    if (IsTransient(s)) {
      LogWarning("job interrupted, resuming",
                 {{"job_id", job_id}, {"error", std::string(s.message())}});
      for (int i = 0; i < static_cast<int>(options_.retry_after_s * 10) && !stopping(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      continue;
    }
    LogError("job failed", {{"job_id", job_id}, {"error", std::string(s.message())}});
    (void)jobs_.Finish(job_id, "failed", std::string(s.message()));
    if (finished_jobs_) finished_jobs_->Add({{"state", "failed"}, {"reason", "error"}}).Increment();
    break;
  }
  absl::MutexLock lock(&mu_);
  finished_[job_id] = true;
}

absl::Status JobRunner::RunOnce(const std::string& job_id) {
  ASSIGN_OR_RETURN(JobRow job, jobs_.GetJob(job_id));
  if (job.state != "queued" && job.state != "running") return absl::OkStatus();
  ASSIGN_OR_RETURN(JobParams params, JobParams::FromJson(job.params));
  ASSIGN_OR_RETURN(std::string task_source, jobs_.TaskSource(job.task_id));
  RETURN_IF_ERROR(jobs_.MarkRunning(job_id));
  job.state = "running";

  search::Population population;
  ASSIGN_OR_RETURN(std::vector<search::Member> members, jobs_.LoadPopulation(job_id));
  for (search::Member& m : members) population.Add(std::move(m));
  search::SearchState state = search::SearchState::FromJson(job.search_state);
  LogInfo("job running", {{"job_id", job_id},
                          {"round", std::to_string(state.rounds_done + 1)},
                          {"members", std::to_string(population.size())}});

  JobEnv env(*this, job, params, task_source);
  search::Search search(params.spec, env, population, state);
  search::SearchState counted = state;  // what the metrics have seen of this job
  ASSIGN_OR_RETURN(std::string reason, search.Run([&](const search::SearchState& s) {
    if (rounds_) {
      const std::map<std::string, std::string> labels = {{"strategy", params.spec.strategy}};
      rounds_->Add(labels).Increment(s.rounds_done - counted.rounds_done);
      candidates_->Add(labels).Increment(s.candidates_generated - counted.candidates_generated);
      tokens_->Add(labels).Increment(static_cast<double>(s.tokens_used - counted.tokens_used));
      counted = s;
    }
    return jobs_.Checkpoint(job_id, s.ToJson(), s.rounds_done, s.tokens_used);
  }));
  if (reason == "stopped") return absl::OkStatus();  // cancelled, or this coordinator stops
  RETURN_IF_ERROR(jobs_.Checkpoint(job_id, state.ToJson(), state.rounds_done, state.tokens_used));
  RETURN_IF_ERROR(jobs_.Finish(job_id, "succeeded", ""));
  if (finished_jobs_) finished_jobs_->Add({{"state", "succeeded"}, {"reason", reason}}).Increment();
  LogInfo("job finished", {{"job_id", job_id},
                           {"stop_reason", reason},
                           {"rounds", std::to_string(state.rounds_done)},
                           {"candidates", std::to_string(state.candidates_generated)}});
  return absl::OkStatus();
}

}  // namespace kforge
