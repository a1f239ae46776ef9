#include "gpu_worker/slot_metrics.h"

#include <map>
#include <string>

#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace kforge {
namespace {

// The value of the series `name` with label slot=`slot`, or -1 if there is none.
double Value(prometheus::Registry& registry, const std::string& name, const std::string& slot) {
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& metric : family.metric) {
      std::map<std::string, std::string> labels;
      for (const auto& l : metric.label) labels[l.name] = l.value;
      if (labels["slot"] != slot) continue;
      return family.type == prometheus::MetricType::Counter ? metric.counter.value
                                                            : metric.gauge.value;
    }
  }
  return -1;
}

TEST(SlotMetricsTest, BusyTimeAndRatioPerSlot) {
  prometheus::Registry registry;
  double now = 100;
  SlotMetrics m(registry, "H200", {"cuda:0", "cuda:1"}, nullptr, [&] { return now; },
                /*window_s=*/10);
  m.Begin(0);
  now = 104;
  EXPECT_EQ(Value(registry, "kforge_worker_slot_busy", "0"), 1);
  EXPECT_EQ(Value(registry, "kforge_worker_slot_busy", "1"), 0);
  m.Sample();  // slot 0 busy for 4 of 4 s, slot 1 idle
  EXPECT_DOUBLE_EQ(Value(registry, "kforge_worker_slot_busy_seconds_total", "0"), 4);
  EXPECT_DOUBLE_EQ(Value(registry, "kforge_worker_slot_busy_ratio", "0"), 1);
  EXPECT_DOUBLE_EQ(Value(registry, "kforge_worker_slot_busy_ratio", "1"), 0);
  now = 106;
  m.End(0);
  m.Begin(1);
  now = 110;
  m.Sample();  // slot 0: 6 of 10 s; slot 1: 4 of 10 s and still running
  EXPECT_DOUBLE_EQ(Value(registry, "kforge_worker_slot_busy_seconds_total", "0"), 6);
  EXPECT_DOUBLE_EQ(Value(registry, "kforge_worker_slot_busy_seconds_total", "1"), 4);
  EXPECT_DOUBLE_EQ(Value(registry, "kforge_worker_slot_busy_ratio", "0"), 0.6);
  EXPECT_DOUBLE_EQ(Value(registry, "kforge_worker_slot_busy_ratio", "1"), 0.4);
  EXPECT_EQ(Value(registry, "kforge_worker_slot_evaluations_total", "0"), 1);
  EXPECT_EQ(Value(registry, "kforge_worker_slot_evaluations_total", "1"), 0);
  now = 120;
  m.Sample();  // the window (110..120) saw slot 0 idle and slot 1 busy throughout
  EXPECT_DOUBLE_EQ(Value(registry, "kforge_worker_slot_busy_ratio", "0"), 0);
  EXPECT_DOUBLE_EQ(Value(registry, "kforge_worker_slot_busy_ratio", "1"), 1);
  EXPECT_DOUBLE_EQ(Value(registry, "kforge_worker_slot_busy_seconds_total", "1"), 14);
}

TEST(SlotMetricsTest, NoGpuSeriesWithoutMonitor) {
  prometheus::Registry registry;
  SlotMetrics m(registry, "cpu", {"cpu"}, nullptr, [] { return 0.0; });
  m.Sample();
  EXPECT_EQ(Value(registry, "kforge_worker_gpu_utilization_ratio", "0"), -1);
  EXPECT_EQ(Value(registry, "kforge_worker_slot_busy", "0"), 0);
}

}  // namespace
}  // namespace kforge
