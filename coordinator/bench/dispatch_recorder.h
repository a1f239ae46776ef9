// What one phase of the dispatch benchmark measured. The simulated workers (lease arrivals,
// results sent) and the batch client (submits, records read) feed it from gRPC callback
// threads; the bench's main thread starts phases and reads the report.
//
// Definitions, all on std::chrono::steady_clock within the bench process:
//   lease turnaround  a worker hands its result of lease k to gRPC -> lease k+1 arrives at the
//                     same worker, counted when committed work waited for a lease throughout
//                     (some committed batch had evaluations no worker had been leased, from the
//                     result until the lease). This is how long a free slot waits while work is
//                     there: both loopback hops, the coordinator storing the result, noticing
//                     the free slot and running its Lease query. A worker's first lease of a
//                     phase has no turnaround.
//   idle turnaround   the same when the committed work ran out in between: the slot also
//                     waited for the next batch's Enqueue to commit.
//   queue wait        the batch's EvaluateBatch call starts -> a lease of that batch arrives at
//                     a worker: the Enqueue transaction plus the wait behind earlier work.
//   enqueue           the EvaluateBatch call starts -> its initial metadata (the batch id)
//                     arrives, i.e. the batch's Enqueue transaction committed.
//   result to client  a worker hands a result to gRPC -> the client reads the evaluation's
//                     record from its EvaluateBatch stream.
//
// With no-op evaluations (--eval_ms=0) every slot always waits for its next lease, so by
// Little's law the mean turnaround is about slots / throughput: the saturation test measures
// capacity. Turnaround below saturation, the latency a real evaluation sees, needs an offered
// load under the capacity: --eval_ms > slots / capacity.
//
// Thread-safe.
#ifndef KFORGE_COORDINATOR_BENCH_DISPATCH_RECORDER_H_
#define KFORGE_COORDINATOR_BENCH_DISPATCH_RECORDER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/bench/latency_summary.h"

namespace kforge {

using BenchClock = std::chrono::steady_clock;

struct DispatchReport {
  double elapsed_s = 0;           // phase start -> last record read by the client
  double results_elapsed_s = 0;   // phase start -> last result handed to gRPC by a worker
  double steady_evals_per_s = 0;  // results sent between the 10th and 90th percentile times
  int64_t leases = 0;
  int64_t results_sent = 0;
  int64_t records = 0;  // distinct evaluations read by the client
  int64_t duplicate_records = 0;
  int64_t retried = 0;  // records with attempts > 1
  int64_t not_ok = 0;   // records whose verdict is not ok
  LatencySummary turnaround, idle_turnaround, queue_wait, enqueue, result_to_client;
};

class DispatchRecorder {
 public:
  // Starts a phase at `start`, dropping everything recorded before.
  void StartPhase(BenchClock::time_point start);
  int phase() const { return phase_.load(); }

  // A worker's result as the recorder saw it go out.
  struct SentResult {
    BenchClock::time_point at;
    bool work_queued = false;  // committed evaluations were waiting for a lease then
    int64_t dry_spells = 0;    // how often committed work had run out before
  };

  void BatchSubmitted(int batch, int evaluations, BenchClock::time_point t);
  void BatchEnqueued(int batch, BenchClock::time_point t);
  // `previous_result`: this worker's previous result of this phase, nullopt for its first
  // lease of the phase. `batch` is -1 when the lease names no batch of ours.
  void LeaseArrived(int batch, std::optional<SentResult> previous_result, BenchClock::time_point t);
  SentResult ResultSent(int64_t evaluation_id, BenchClock::time_point t);
  void RecordReceived(int64_t evaluation_id, uint32_t attempts, bool ok, BenchClock::time_point t);

  int64_t records() const;
  DispatchReport Report() const;

 private:
  std::atomic<int> phase_{0};
  mutable absl::Mutex mu_;
  BenchClock::time_point start_ ABSL_GUARDED_BY(mu_);
  struct Batch {
    BenchClock::time_point submitted;
    int evaluations = 0;
    int leased = 0;
    bool committed = false;
  };
  std::map<int, Batch> batches_ ABSL_GUARDED_BY(mu_);
  // Evaluations of committed batches not leased yet (as far as the workers have seen).
  int64_t waiting_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t dry_spells_ ABSL_GUARDED_BY(mu_) = 0;  // times waiting_ dropped to zero
  std::map<int64_t, BenchClock::time_point> result_sent_ ABSL_GUARDED_BY(mu_);
  std::vector<BenchClock::time_point> result_times_ ABSL_GUARDED_BY(mu_);
  std::set<int64_t> received_ ABSL_GUARDED_BY(mu_);
  std::optional<BenchClock::time_point> last_record_ ABSL_GUARDED_BY(mu_);
  int64_t leases_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t duplicates_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t retried_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t not_ok_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<double> turnaround_ ABSL_GUARDED_BY(mu_);
  std::vector<double> idle_turnaround_ ABSL_GUARDED_BY(mu_);
  std::vector<double> queue_wait_ ABSL_GUARDED_BY(mu_);
  std::vector<double> enqueue_ ABSL_GUARDED_BY(mu_);
  std::vector<double> result_to_client_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_BENCH_DISPATCH_RECORDER_H_
