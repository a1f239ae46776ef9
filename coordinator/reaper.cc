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
      workers_(prometheus::BuildGauge()
                   .Name("kforge_workers")
                   .Help("Workers that heartbeated in the last 30 s, by GPU type")
                   .Register(metrics)),
      interval_s_(interval_s),
      thread_([this] { Loop(); }) {}

Reaper::~Reaper() { Stop(); }

void Reaper::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void Reaper::Publish(const std::map<std::string, int64_t>& counts,
                     prometheus::Family<prometheus::Gauge>& family, std::set<std::string>& seen) {
  // Types that dropped to nothing read 0, not their last value.
  for (const std::string& type : seen) {
    if (!counts.count(type)) family.Add({{"gpu_type", type}}).Set(0);
  }
  for (const auto& [type, n] : counts) {
    family.Add({{"gpu_type", type}}).Set(static_cast<double>(n));
    seen.insert(type);
  }
}

void Reaper::Loop() {
  while (!stop_.WaitForNotificationWithTimeout(absl::Seconds(interval_s_))) {
    auto stats = queue_.ReclaimExpired();
    if (!stats.ok()) {
      LogWarning("reclaim failed", {{"error", std::string(stats.status().message())}});
    } else if (stats->requeued + stats->abandoned > 0) {
      LogInfo("expired leases reclaimed", {{"requeued", std::to_string(stats->requeued)},
                                           {"abandoned", std::to_string(stats->abandoned)}});
      for (const auto& [type, n] : stats->requeued_per_type) notifier_.WorkAdded(type, n);
      for (const std::string& batch : stats->abandoned_batches) notifier_.BatchChanged(batch);
    }
    auto live = queue_.LiveWorkers(30);
    if (auto depth = queue_.QueueDepth(); depth.ok()) {
      // A pool with live workers and nothing waiting reads 0, not "no data".
      if (live.ok()) {
        for (const auto& [type, n] : *live) depth->emplace(type, 0);
      }
      Publish(*depth, depth_, seen_types_);
    }
    if (live.ok()) Publish(*live, workers_, seen_worker_types_);
  }
}

}  // namespace kforge
