// The worker's slots: one thread per slot (one per GPU, or --slots in CPU mode), each taking
// the next lease from the LeaseQueue (a built one first), running it through the Evaluator on
// the slot's device, and answering it. Exports the slots' busy gauge, evaluation and stage
// durations, and (when given) the per-slot metrics of slot_metrics.h.
//
// Threading: Start() starts the slot threads; they end once the LeaseQueue is closed, and
// Join() waits for them. The queue, evaluator, writer, counter and slot metrics are borrowed
// and must outlive Join().
#ifndef KFORGE_GPU_WORKER_SLOTS_H_
#define KFORGE_GPU_WORKER_SLOTS_H_

#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpu_worker/evaluator.h"
#include "gpu_worker/lease_queue.h"
#include "gpu_worker/slot_metrics.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace kforge {

// Engine stage durations (startup, build, correctness, timing) of a result into `stages`.
void ObserveStages(const v1::EvalResult& result, prometheus::Family<prometheus::Histogram>& stages);
// The buckets of the stage and build-ahead histograms.
const prometheus::Histogram::BucketBoundaries& StageBuckets();

class Slots {
 public:
  // devices[i] is slot i's device ("cuda:<i>" or "cpu"). `evaluations`: results answered, by
  // verdict. `slot_metrics` may be null.
  Slots(LeaseQueue& leases, Evaluator& evaluator, ResultWriter& writer,
        std::vector<std::string> devices, prometheus::Registry& metrics,
        prometheus::Family<prometheus::Counter>& evaluations, SlotMetrics* slot_metrics);
  ~Slots();  // joins
  Slots(const Slots&) = delete;
  Slots& operator=(const Slots&) = delete;

  // How long a slot waits before each further try of an evaluation whose engine found no CUDA
  // device on a GPU slot (rule gpu_unavailable, which only the engine's own device check sets,
  // before any candidate code runs: the candidate cannot cause it; an MPS server recovering
  // from another client's fault answers so for a while). Rule no_gpu, which a candidate's
  // process can report, is never retried. The last try's result is answered, its reason saying
  // how many tries failed. Set before Start().
  void set_no_gpu_retry_delays_s(std::vector<double> delays) {
    no_gpu_retry_delays_s_ = std::move(delays);
  }

  void Start();
  void Join();

 private:
  void RunSlot(int slot);
  v1::EvalResult Evaluate(const v1::Lease& lease, const std::string& device);

  LeaseQueue& leases_;
  Evaluator& evaluator_;
  ResultWriter& writer_;
  const std::vector<std::string> devices_;
  prometheus::Family<prometheus::Counter>& evaluations_;
  SlotMetrics* const slot_metrics_;
  prometheus::Gauge& busy_;
  prometheus::Histogram& duration_;
  prometheus::Counter& gpu_retries_;
  prometheus::Family<prometheus::Histogram>& stages_;
  std::vector<double> no_gpu_retry_delays_s_ = {1, 2, 4};
  std::vector<std::thread> threads_;
};

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_SLOTS_H_
