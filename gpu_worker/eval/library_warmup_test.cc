#include "gpu_worker/eval/library_warmup.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

namespace kforge::eval {
namespace {

// The measurement switch: no warm-up, and it says so.
TEST(LibraryWarmupTest, SwitchedOffByTheEnvironment) {
  setenv("KFORGE_NO_LIBRARY_WARMUP", "1", 1);
  std::string error;
  EXPECT_EQ(WarmUpLibraries(0, &error), -1);
  EXPECT_EQ(error, "");
  unsetenv("KFORGE_NO_LIBRARY_WARMUP");
}

// On a GPU: it runs, reports no error, and draws no random numbers from either generator (the
// trials' inputs are drawn from seeds after it, and must not depend on whether it ran).
TEST(LibraryWarmupGpuTest, RunsAndLeavesTheGeneratorsAlone) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    GTEST_SKIP() << "no GPU";
  }
  at::manual_seed(7);
  auto cuda_gen = at::cuda::detail::getDefaultCUDAGenerator(0);
  const at::Tensor cuda_before = cuda_gen.get_state();
  const at::Tensor cpu_before = at::detail::getDefaultCPUGenerator().get_state();
  std::string error;
  const double s = WarmUpLibraries(0, &error);
  EXPECT_EQ(error, "");
  EXPECT_GT(s, 0);
  EXPECT_TRUE(at::equal(cuda_gen.get_state(), cuda_before));
  EXPECT_TRUE(at::equal(at::detail::getDefaultCPUGenerator().get_state(), cpu_before));
}

}  // namespace
}  // namespace kforge::eval
