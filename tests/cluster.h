// A kforge cluster for integration tests: a database on the test PostgreSQL server, the
// coordinator (and, with AddCoordinator, more coordinators on the same database), optionally
// the LLM gateway (offline proposer), and CPU-mode workers, all real processes on loopback.
// Authentication is on: every coordinator accepts a bootstrap admin token, with which the
// cluster creates a "tester" token (researcher, trainer, operator: what Stub() calls with) and
// a worker token (every worker's --token_file).
//
// Thread-safety: used by one test thread.
#ifndef KFORGE_TESTS_CLUSTER_H_
#define KFORGE_TESTS_CLUSTER_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/pg.h"
#include "grpcpp/grpcpp.h"
#include "kforge/v1/admin.grpc.pb.h"
#include "kforge/v1/jobs.grpc.pb.h"
#include "tests/service_process.h"
#include "tests/source_file.h"  // ReadSourceFile, for the tests that use a Cluster
#include "tests/test_tokens.h"

namespace kforge {

class Cluster {
 public:
  // Creates database `db` and starts the coordinator; with `gateway`, also kforge-gateway
  // (started after the coordinator has applied the migrations) for optimization jobs.
  // `coordinator_flags` are appended to every coordinator's (e.g. quotas), `gateway_flags`
  // to the gateway's (e.g. --allowed_base_urls).
  explicit Cluster(const std::string& db, bool gateway = false,
                   std::vector<std::string> coordinator_flags = {},
                   const std::vector<std::string>& gateway_flags = {});

  // (Re)starts coordinator `i` on its own fixed port (a restart keeps the port).
  void StartCoordinator(size_t i = 0);
  // Starts one more coordinator on the same database; returns its index.
  size_t AddCoordinator();
  void KillCoordinator(size_t i = 0) { coordinators_[i]->Kill(); }
  ServiceProcess* coordinator(size_t i = 0) { return coordinators_[i].get(); }
  const std::string& coordinator_address(size_t i = 0) const { return addresses_[i]; }
  ServiceProcess* gateway() { return gateway_.get(); }  // null without a gateway
  // A CPU-mode worker of coordinator 0; `extra` flags are appended (e.g. "--prefetch=1").
  ServiceProcess* StartWorker(const std::string& gpu_type, int slots = 1,
                              const std::vector<std::string>& extra = {});
  // A CPU-mode worker whose channel knows the coordinators in `order` (gRPC's pick_first over
  // their addresses, as behind a Kubernetes Service): it connects to the first that answers and,
  // when that one dies, reconnects to the next.
  ServiceProcess* StartWorkerOf(const std::vector<size_t>& order, const std::string& gpu_type);
  // JobService of coordinator i as "tester".
  std::unique_ptr<v1::JobService::Stub> Stub(size_t i = 0);
  // JobService of coordinator 0 with `token` ("" calls without credentials).
  std::unique_ptr<v1::JobService::Stub> StubWithToken(const std::string& token);
  std::unique_ptr<v1::AdminService::Stub> Admin();
  // A new token of `principal` with `roles` (fails the test when refused).
  v1::CreateTokenResponse CreateToken(const std::string& principal, const std::string& tenant,
                                      const std::vector<std::string>& roles);
  const std::string& worker_token() const { return worker_token_; }
  const std::string& admin_token_file() const { return tokens_.admin_file(); }
  // A file holding `token`, for --token_file.
  std::string TokenFile(const std::string& name, const std::string& token) {
    return tokens_.File(name, token);
  }
  std::string SubmitTask(const std::string& relative, const v1::TaskOptions& options = {});
  // SELECT helper on the cluster's database (a failed query fails the test).
  PgResult Query(const std::string& sql);
  // The same, returning the error instead.
  absl::StatusOr<PgResult> TryQuery(const std::string& sql);
  // Waits (bounded) until `sql` returns a first cell equal to `want`.
  bool WaitFor(const std::string& sql, const std::string& want, double limit_s = 60);

 private:
  ServiceProcess* StartWorkerAt(const std::string& coordinator, const std::string& gpu_type,
                                int slots, const std::vector<std::string>& extra);

  std::string url_, gateway_address_;
  std::vector<std::string> coordinator_flags_;
  TestTokens tokens_;
  std::string tester_token_, worker_token_, worker_token_file_, gateway_token_file_;
  std::vector<std::string> addresses_;  // coordinator i serves on addresses_[i]
  std::vector<std::unique_ptr<ServiceProcess>> coordinators_;
  std::unique_ptr<ServiceProcess> gateway_;
  std::vector<std::unique_ptr<ServiceProcess>> workers_;
};

// A contrastive job on tiny_relu's task `task_id` for the CPU workers (GPU type "cpu"): the
// host-only seed candidate torch_chunked.py (kernelbench dialect, tuning knobs the offline
// proposer varies), one prompt of two candidates per round, `rounds` rounds.
v1::SubmitJobRequest ReluJobRequest(const std::string& task_id, int rounds, uint64_t seed);

// An RPC deadline `seconds` from now.
std::chrono::system_clock::time_point In(double seconds);

// Reads a whole EvaluateBatch stream into *out; `batch_id` (if not null) gets the id from the
// initial metadata.
grpc::Status ReadBatch(v1::JobService::Stub& stub, const v1::EvaluateBatchRequest& req,
                       std::vector<v1::EvaluationRecord>* out, std::string* batch_id,
                       double limit_s = 240);

// SubmitJob; the job id ("" after a failed call, which fails the test).
std::string SubmitJob(v1::JobService::Stub& stub, const v1::SubmitJobRequest& req);

// WatchJob until the stream ends (the job finished) or `limit_s` passed; a stream that ends
// with an error fails the test.
std::vector<v1::JobEvent> WatchJob(v1::JobService::Stub& stub, const std::string& job_id,
                                   double limit_s);

// Nothing measured twice, no LLM call made twice: one evaluation per candidate and GPU type,
// and every llm_calls row of the job is one the journal's completions and ideas name (the
// offline proposer makes one call per completion, with no retries).
void ExpectJobDidNothingTwice(Cluster& cluster, const std::string& job_id);

// GetJob (a failed call fails the test).
v1::Job GetJob(v1::JobService::Stub& stub, const std::string& job_id);

}  // namespace kforge

#endif  // KFORGE_TESTS_CLUSTER_H_
