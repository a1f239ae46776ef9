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

TEST(GpuFactsTest, CudaVersionText) {
  EXPECT_EQ(CudaVersionText(13000), "13.0");
  EXPECT_EQ(CudaVersionText(12080), "12.8");
}

// On a node without a GPU (CI) the probe finds none and says so with zeros, never garbage.
TEST(GpuFactsTest, ProbeIsConsistent) {
  GpuFacts f = ProbeGpus();
  if (f.count == 0) {
    EXPECT_EQ(f.type, "");
    EXPECT_EQ(f.l2_cache_bytes, 0u);
  } else {
    EXPECT_EQ(f.type, GpuTypeFromName(f.name));
    EXPECT_GT(f.memory_bytes, 0u);
  }
}

}  // namespace
}  // namespace kforge
