#include "gpu_worker/gpu_monitor.h"

#include "gtest/gtest.h"

namespace kforge {
namespace {

// Without NVML (CI) and with it alike, a device NVML does not know gives no monitor, so the
// worker exports no made-up utilisation.
TEST(GpuMonitorTest, NoMonitorForUnknownDevices) {
  EXPECT_EQ(GpuMonitor::Open({}), nullptr);
  EXPECT_EQ(GpuMonitor::Open({""}), nullptr);
  EXPECT_EQ(GpuMonitor::Open({"FFFF:FF:1F.7"}), nullptr);
}

}  // namespace
}  // namespace kforge
