// Background upkeep of the queue: every interval, reclaims expired leases (back to the queue,
// or finished as worker_lost after the last attempt) and refreshes the queue-depth and
// live-worker gauges.
//
// Threading: owns one thread, started by the constructor, stopped by Stop() or destruction.
#ifndef KFORGE_COORDINATOR_REAPER_H_
#define KFORGE_COORDINATOR_REAPER_H_

#include <map>
#include <set>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "coordinator/notifier.h"
#include "coordinator/queue_store.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace kforge {

class Reaper {
 public:
  Reaper(QueueStore& queue, Notifier& notifier, prometheus::Registry& metrics, double interval_s);
  ~Reaper();
  void Stop();

 private:
  void Loop();
  static void Publish(const std::map<std::string, int64_t>& counts,
                      prometheus::Family<prometheus::Gauge>& family, std::set<std::string>& seen);

  QueueStore& queue_;
  Notifier& notifier_;
  prometheus::Family<prometheus::Gauge>& depth_;
  prometheus::Family<prometheus::Gauge>& workers_;
  const double interval_s_;
  std::set<std::string> seen_types_;         // used by the reaper thread only
  std::set<std::string> seen_worker_types_;  // used by the reaper thread only
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_REAPER_H_
