// Runs optimization jobs: finds queued and running jobs in PostgreSQL, takes each under a
// PostgreSQL advisory lock (so two coordinators never run the same job), and drives its
// search (coordinator/search) with an env that asks the LLM gateway for candidates and the
// evaluation queue for measurements. Every step of a round is journalled in job_steps before
// it is used, so a coordinator killed at any moment resumes the job from PostgreSQL: the
// interrupted round is replayed from the journal, without asking the LLM or queueing the same
// evaluations twice.
//
// Thread-safety: Start/Stop from one thread; one thread per running job inside.
#ifndef KFORGE_COORDINATOR_JOB_RUNNER_H_
#define KFORGE_COORDINATOR_JOB_RUNNER_H_

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/job_store.h"
#include "coordinator/notifier.h"
#include "coordinator/queue_store.h"
#include "coordinator/search/search.h"
#include "coordinator/gateway_client.h"
#include "kforge/v1/gateway.pb.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace kforge {

// A job's submitted settings, as stored in jobs.params.
struct JobParams {
  search::JobSpec spec;
  v1::LlmSettings llm;

  nlohmann::json ToJson() const;
  static absl::StatusOr<JobParams> FromJson(const nlohmann::json& j);
};

class JobRunner {
 public:
  struct Options {
    double scan_interval_s = 1.0;  // how often to look for jobs to run
    int max_running_jobs = 16;
    double gateway_timeout_s = 600;  // one Generate call (an LLM may take minutes)
    double retry_after_s = 5;        // pause before resuming a job after a transient error
    int64_t max_queue_depth = 100000;
    int64_t max_tenant_queued = 0;  // a job's batches count against its tenant's quota
    // Where to export kforge_jobs_running, kforge_job_rounds_total,
    // kforge_job_candidates_total, kforge_job_llm_tokens_total and kforge_jobs_finished_total;
    // none when null.
    prometheus::Registry* metrics = nullptr;
  };
  // `gateway` must outlive the runner.
  JobRunner(PgPool& pool, JobStore& jobs, QueueStore& queue, Notifier& notifier,
            GatewayClient& gateway, Options options);
  ~JobRunner();

  void Start();
  // Stops every job's thread at its next step; the jobs stay 'running' in PostgreSQL and
  // resume when a coordinator starts again.
  void Stop();

 private:
  friend class JobEnv;
  void ScanLoop();
  void RunJob(const std::string& job_id);
  // One attempt at running the job to its end; UNAVAILABLE-like errors are retried by RunJob.
  absl::Status RunOnce(const std::string& job_id);
  bool stopping() const { return stopping_.load(); }

  PgPool& pool_;
  JobStore& jobs_;
  QueueStore& queue_;
  Notifier& notifier_;
  GatewayClient& gateway_;
  const Options options_;
  // Metrics (null without a registry).
  prometheus::Gauge* running_gauge_ = nullptr;
  prometheus::Family<prometheus::Counter>* rounds_ = nullptr;
  prometheus::Family<prometheus::Counter>* candidates_ = nullptr;
  prometheus::Family<prometheus::Counter>* tokens_ = nullptr;
  prometheus::Family<prometheus::Counter>* finished_jobs_ = nullptr;
  std::atomic<bool> stopping_{false};
  std::thread scanner_;
  absl::Mutex mu_;
  std::map<std::string, std::thread> running_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, bool> finished_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_JOB_RUNNER_H_
