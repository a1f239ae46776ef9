// The worker's per-slot metrics: whether each slot runs an evaluation, how much of the time it
// did (busy seconds, busy fraction over a recent window), how many it ran, and, where NVML is
// available, the utilisation and memory of the slot's GPU, sampled by the worker every second
// or so while evaluations run. Every series is labelled slot ("0", "1", ...), device
// ("cuda:0", "cpu") and gpu_type ("H200", "cpu"):
//
//   kforge_worker_slot_busy                  gauge, 1 while an evaluation runs
//   kforge_worker_slot_busy_seconds_total    counter; rate() of it is the busy fraction
//   kforge_worker_slot_busy_ratio            gauge, busy fraction over the last window_s
//   kforge_worker_slot_evaluations_total     counter, evaluations finished by the slot
//   kforge_worker_gpu_utilization_ratio      gauge, NVML's kernel-running fraction (0..1)
//   kforge_worker_gpu_memory_used_bytes      gauge, NVML's used device memory
//
// Thread-safety: every method may be called from any thread (slot threads call Begin/End, a
// sampler thread calls Sample). The registry and the monitor must outlive this object.
#ifndef KFORGE_GPU_WORKER_SLOT_METRICS_H_
#define KFORGE_GPU_WORKER_SLOT_METRICS_H_

#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "gpu_worker/gpu_monitor.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace kforge {

class SlotMetrics {
 public:
  using Clock = std::function<double()>;  // monotonic seconds

  // One slot per entry of `devices`. `monitor` may be null (CPU mode, no NVML): the GPU
  // series are then not exported.
  SlotMetrics(prometheus::Registry& registry, const std::string& gpu_type,
              const std::vector<std::string>& devices, const GpuMonitor* monitor, Clock now,
              double window_s = 10);

  void Begin(int slot);
  void End(int slot);
  // Refreshes busy seconds and ratios, and reads the GPUs.
  void Sample();

 private:
  struct Slot {
    prometheus::Gauge* busy = nullptr;
    prometheus::Counter* busy_seconds = nullptr;
    prometheus::Gauge* busy_ratio = nullptr;
    prometheus::Counter* evaluations = nullptr;
    prometheus::Gauge* utilization = nullptr;
    prometheus::Gauge* memory_used = nullptr;
    double busy_since = -1;   // start of the running evaluation; -1 when idle
    double busy_done = 0;     // busy seconds of finished evaluations
    double busy_counted = 0;  // busy seconds already added to busy_seconds
    std::deque<std::pair<double, double>> history;  // (time, busy seconds) within the window
  };
  double BusyTotal(const Slot& s, double now) const;

  const GpuMonitor* monitor_;
  Clock now_;
  double window_s_;
  absl::Mutex mu_;
  std::vector<Slot> slots_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_SLOT_METRICS_H_
