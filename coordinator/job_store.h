// PostgreSQL adapter for optimization jobs: the jobs table, the job's candidates, its journal
// of round steps (job_steps), and the reads the job RPCs need. Plain C++ types in and out.
//
// Thread-safe: each call takes a pooled connection for its own duration.
#ifndef KFORGE_COORDINATOR_JOB_STORE_H_
#define KFORGE_COORDINATOR_JOB_STORE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/pg.h"
#include "coordinator/search/population.h"
#include "nlohmann/json.hpp"

namespace kforge {

struct JobRow {
  std::string job_id, task_id, state, strategy, error;
  std::vector<std::string> gpu_types;
  nlohmann::json params;        // the whole submitted spec (see JobRunner)
  nlohmann::json search_state;  // SearchState::ToJson(), null before the first checkpoint
  int rounds_done = 0;
  int candidates_evaluated = 0;
  int64_t tokens_used = 0;
  std::string created_at, updated_at;  // RFC 3339
  std::string owner, tenant;           // the submitting principal; "" for jobs from before 0005
};

struct SeedCandidate {
  std::string source, dialect;
};

// Which clock made an evaluation's `speedup`, and both clocks' speedups where measured
// (docs/evaluation.md, "Two clocks"; unset before migration 0007 and for verdicts but ok).
struct ClockSpeedups {
  std::string clock;  // "device", "call" or ""
  std::optional<double> device, call;
};

struct BestRow {
  std::string gpu_type, candidate_id, source;
  double speedup = 0, reference_ms = 0, candidate_ms = 0;
  ClockSpeedups clocks;
};

struct JobStep {
  int round = 0, step = 0;
  std::string kind;
  nlohmann::json payload;
  std::string created_at;  // RFC 3339 with milliseconds (Steps only)
};

// One finished evaluation of a job, as the search and the rollout export read it.
struct JobEvaluation {
  std::string candidate_id, gpu_type, verdict;
  std::optional<double> speedup;
  ClockSpeedups clocks;
};

struct TrajectoryRow {
  std::string evaluation_id, finished_at, gpu_type, candidate_id, verdict;
  int round = 0;
  std::optional<double> speedup;
  double best_so_far = 0;
  ClockSpeedups clocks;
};

class JobStore {
 public:
  explicit JobStore(PgPool& pool) : pool_(pool) {}

  // Creates the job and stores its seed candidates as round-0 members, in one transaction.
  // NOT_FOUND for an unknown task. `owner` of `tenant` submitted it.
  absl::StatusOr<std::string> CreateJob(const std::string& task_id,
                                        const std::vector<std::string>& gpu_types,
                                        const std::string& strategy, const nlohmann::json& params,
                                        const std::vector<SeedCandidate>& seeds,
                                        const std::string& owner, const std::string& tenant);
  // Jobs of `tenant` that are queued or running.
  absl::StatusOr<int64_t> ActiveJobs(const std::string& tenant);
  // NOT_FOUND for an unknown (or malformed) id.
  absl::StatusOr<JobRow> GetJob(const std::string& job_id);
  // `tenants`: only jobs of these (empty: every job).
  absl::StatusOr<std::vector<JobRow>> ListJobs(int limit, const std::string& task_id,
                                               const std::vector<std::string>& tenants = {});
  // Queued or running jobs, oldest first.
  absl::StatusOr<std::vector<std::string>> ActiveJobs();
  // Cancels a queued or running job and drops its evaluations that no worker holds yet.
  // Returns the state afterwards (a finished job keeps its state).
  absl::StatusOr<std::string> CancelJob(const std::string& job_id);

  // Deletes the job's evaluations that no worker holds yet.
  absl::Status DropQueued(const std::string& job_id);
  absl::Status MarkRunning(const std::string& job_id);
  absl::Status Checkpoint(const std::string& job_id, const nlohmann::json& search_state,
                          int rounds_done, uint64_t tokens_used);
  // Moves a running/queued job to a final state; a job already cancelled stays cancelled.
  absl::Status Finish(const std::string& job_id, const std::string& state,
                      const std::string& error);
  absl::StatusOr<double> ElapsedS(const std::string& job_id);
  absl::StatusOr<std::string> TaskSource(const std::string& task_id);

  // The job's members with their latest finished result per requested GPU type.
  absl::StatusOr<std::vector<search::Member>> LoadPopulation(const std::string& job_id);
  absl::Status AddMember(const std::string& job_id, const search::Member& m,
                         const std::string& prompt, const std::string& completion,
                         int64_t llm_call_id);

  absl::StatusOr<std::optional<JobStep>> GetStep(const std::string& job_id, int round, int step);
  // Records a step; a step already recorded (a racing replay) keeps its first payload.
  absl::Status PutStep(const std::string& job_id, const JobStep& step, uint64_t tokens);
  absl::StatusOr<std::vector<JobStep>> Steps(const std::string& job_id);

  // Done and total evaluations of a batch.
  absl::StatusOr<std::pair<int, int>> BatchProgress(const std::string& batch_id);
  absl::StatusOr<std::vector<JobEvaluation>> BatchResults(const std::string& batch_id);
  // Every finished evaluation of the job, in finishing order.
  absl::StatusOr<std::vector<JobEvaluation>> JobResults(const std::string& job_id);

  // The job_trajectory view of the job, in finishing order.
  absl::StatusOr<std::vector<TrajectoryRow>> Trajectory(const std::string& job_id);
  // Best correct candidates per GPU type the evaluation ran on; filters may be empty
  // (`tenants` empty: evaluations of every tenant).
  absl::StatusOr<std::vector<BestRow>> Best(const std::string& task_id, const std::string& job_id,
                                            const std::string& gpu_type, int per_type,
                                            const std::vector<std::string>& tenants = {});

 private:
  // Finished evaluations matching `where` (with $1 = id), in finishing order.
  absl::StatusOr<std::vector<JobEvaluation>> FinishedEvaluations(const std::string& where,
                                                                 const std::string& id);

  PgPool& pool_;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_JOB_STORE_H_
