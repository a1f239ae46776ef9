// A kforge cluster for integration tests: a database on the test PostgreSQL server, the
// coordinator, optionally the LLM gateway (offline proposer), and CPU-mode workers, all real
// processes on loopback.
//
// Thread-safety: used by one test thread.
#ifndef KFORGE_TESTS_CLUSTER_H_
#define KFORGE_TESTS_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "common/pg.h"
#include "kforge/v1/jobs.grpc.pb.h"
#include "tests/service_process.h"
#include "tests/source_file.h"  // ReadSourceFile, for the tests that use a Cluster

namespace kforge {

class Cluster {
 public:
  // Creates database `db` and starts the coordinator; with `gateway`, also kforge-gateway
  // (started after the coordinator has applied the migrations) for optimization jobs.
  explicit Cluster(const std::string& db, bool gateway = false);

  void StartCoordinator();
  void KillCoordinator() { coordinator_->Kill(); }
  ServiceProcess* coordinator() { return coordinator_.get(); }
  ServiceProcess* gateway() { return gateway_.get(); }  // null without a gateway
  // A CPU-mode worker; `extra` flags are appended (e.g. "--prefetch=1").
  ServiceProcess* StartWorker(const std::string& gpu_type, int slots = 1,
                              const std::vector<std::string>& extra = {});
  std::unique_ptr<v1::JobService::Stub> Stub();
  std::string SubmitTask(const std::string& relative);
  // SELECT helper on the cluster's database (a failed query fails the test).
  PgResult Query(const std::string& sql);
  // The same, returning the error instead.
  absl::StatusOr<PgResult> TryQuery(const std::string& sql);
  // Waits (bounded) until `sql` returns a first cell equal to `want`.
  bool WaitFor(const std::string& sql, const std::string& want, double limit_s = 60);

 private:
  std::string url_, address_, gateway_address_;
  std::unique_ptr<ServiceProcess> coordinator_;
  std::unique_ptr<ServiceProcess> gateway_;
  std::vector<std::unique_ptr<ServiceProcess>> workers_;
};

// A contrastive job on tiny_relu's task `task_id` for the CPU workers (GPU type "cpu"): the
// host-only seed candidate torch_chunked.py (kernelbench dialect, tuning knobs the offline
// proposer varies), one prompt of two candidates per round, `rounds` rounds.
v1::SubmitJobRequest ReluJobRequest(const std::string& task_id, int rounds, uint64_t seed);

}  // namespace kforge

#endif  // KFORGE_TESTS_CLUSTER_H_
