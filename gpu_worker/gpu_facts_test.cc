#include "gpu_worker/gpu_facts.h"

#include "gtest/gtest.h"

namespace kforge {
namespace {

TEST(GpuFactsTest, TypeFromName) {
  EXPECT_EQ(GpuTypeFromName("NVIDIA H200"), "H200");
  EXPECT_EQ(GpuTypeFromName("NVIDIA A100-SXM4-80GB"), "A100");
  EXPECT_EQ(GpuTypeFromName("NVIDIA GeForce RTX 3090"), "RTX3090");
  EXPECT_EQ(GpuTypeFromName("NVIDIA L40S"), "L40S");
  EXPECT_EQ(GpuTypeFromName("NVIDIA H100 80GB HBM3"), "H100");
}

}  // namespace
}  // namespace kforge
