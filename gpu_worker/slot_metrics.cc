#include "gpu_worker/slot_metrics.h"

#include <map>

namespace kforge {

SlotMetrics::SlotMetrics(prometheus::Registry& registry, const std::string& gpu_type,
                         const std::vector<std::string>& devices, const GpuMonitor* monitor,
                         Clock now, double window_s)
    : monitor_(monitor), now_(std::move(now)), window_s_(window_s) {
  auto& busy = prometheus::BuildGauge()
                   .Name("kforge_worker_slot_busy")
                   .Help("1 while the slot runs an evaluation")
                   .Register(registry);
  auto& busy_seconds = prometheus::BuildCounter()
                           .Name("kforge_worker_slot_busy_seconds_total")
                           .Help("Seconds the slot ran evaluations (rate() = busy fraction)")
                           .Register(registry);
  auto& busy_ratio = prometheus::BuildGauge()
                         .Name("kforge_worker_slot_busy_ratio")
                         .Help("Fraction of the last window_s the slot ran evaluations")
                         .Register(registry);
  auto& evaluations = prometheus::BuildCounter()
                          .Name("kforge_worker_slot_evaluations_total")
                          .Help("Evaluations finished by the slot")
                          .Register(registry);
  auto& utilization = prometheus::BuildGauge()
                          .Name("kforge_worker_gpu_utilization_ratio")
                          .Help("NVML: fraction of the last sample period a kernel ran on "
                                "the slot's GPU")
                          .Register(registry);
  auto& memory = prometheus::BuildGauge()
                     .Name("kforge_worker_gpu_memory_used_bytes")
                     .Help("NVML: device memory in use on the slot's GPU")
                     .Register(registry);
  double t0 = now_();
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < devices.size(); ++i) {
    const std::map<std::string, std::string> labels = {
        {"slot", std::to_string(i)}, {"device", devices[i]}, {"gpu_type", gpu_type}};
    Slot s;
    s.busy = &busy.Add(labels);
    s.busy_seconds = &busy_seconds.Add(labels);
    s.busy_ratio = &busy_ratio.Add(labels);
    s.evaluations = &evaluations.Add(labels);
    if (monitor_) {
      s.utilization = &utilization.Add(labels);
      s.memory_used = &memory.Add(labels);
    }
    s.history.emplace_back(t0, 0);
    slots_.push_back(std::move(s));
  }
}

double SlotMetrics::BusyTotal(const Slot& s, double now) const {
  return s.busy_done + (s.busy_since >= 0 ? now - s.busy_since : 0);
}

void SlotMetrics::Begin(int slot) {
  absl::MutexLock lock(&mu_);
  Slot& s = slots_.at(static_cast<size_t>(slot));
  s.busy_since = now_();
  s.busy->Set(1);
}

void SlotMetrics::End(int slot) {
  absl::MutexLock lock(&mu_);
  Slot& s = slots_.at(static_cast<size_t>(slot));
  if (s.busy_since >= 0) s.busy_done += now_() - s.busy_since;
  s.busy_since = -1;
  s.busy->Set(0);
  s.evaluations->Increment();
}

void SlotMetrics::Sample() {
  absl::MutexLock lock(&mu_);
  double now = now_();
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    double total = BusyTotal(s, now);
    s.busy_seconds->Increment(total - s.busy_counted);
    s.busy_counted = total;
    s.history.emplace_back(now, total);
    // Keep the newest sample at or before the window's start, so the ratio spans the window.
    while (s.history.size() > 2 && s.history[1].first <= now - window_s_) s.history.pop_front();
    const auto& [t_first, busy_first] = s.history.front();
    if (now > t_first) s.busy_ratio->Set((total - busy_first) / (now - t_first));
    GpuMonitor::Reading r;
    if (monitor_ && monitor_->Read(i, &r)) {
      s.utilization->Set(r.utilization);
      s.memory_used->Set(static_cast<double>(r.memory_used_bytes));
    }
  }
}

}  // namespace kforge
