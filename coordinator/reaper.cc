#include "coordinator/reaper.h"

#include "common/base/log.h"

namespace kforge {

Reaper::Reaper(QueueStore& queue, Notifier& notifier, prometheus::Registry& metrics,
               double interval_s)
    : queue_(queue),
      notifier_(notifier),
      depth_(prometheus::BuildGauge()
                 .Name("kforge_queue_depth")
                 .Help("Evaluations waiting for a worker, by GPU type")
                 .Register(metrics)),
      interval_s_(interval_s),
      thread_([this] { Loop(); }) {}

Reaper::~Reaper() { Stop(); }

void Reaper::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void Reaper::Loop() {
  while (!stop_.WaitForNotificationWithTimeout(absl::Seconds(interval_s_))) {
    auto stats = queue_.ReclaimExpired();
    if (!stats.ok()) {
      LogWarning("reclaim failed", {{"error", std::string(stats.status().message())}});
    } else if (stats->requeued + stats->abandoned > 0) {
      LogInfo("expired leases reclaimed", {{"requeued", std::to_string(stats->requeued)},
                                           {"abandoned", std::to_string(stats->abandoned)}});
      notifier_.Notify();
    }
    auto depth = queue_.QueueDepth();
    if (depth.ok()) {
      // Types whose queue emptied read 0, not their last value.
      for (const std::string& type : seen_types_) {
        if (!depth->count(type)) depth_.Add({{"gpu_type", type}}).Set(0);
      }
      for (auto& [type, n] : *depth) {
        depth_.Add({{"gpu_type", type}}).Set(static_cast<double>(n));
        seen_types_.insert(type);
      }
    }
  }
}

}  // namespace kforge
