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

  void Start();
  void Join();

 private:
  void RunSlot(int slot);

  LeaseQueue& leases_;
  Evaluator& evaluator_;
  ResultWriter& writer_;
  const std::vector<std::string> devices_;
  prometheus::Family<prometheus::Counter>& evaluations_;
  SlotMetrics* const slot_metrics_;
  prometheus::Gauge& busy_;
  prometheus::Histogram& duration_;
  prometheus::Family<prometheus::Histogram>& stages_;
  std::vector<std::thread> threads_;
};

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_SLOTS_H_
