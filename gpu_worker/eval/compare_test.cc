#include "gpu_worker/eval/compare.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gpu_worker/eval/nvrtc_compile.h"

namespace kforge::eval {
namespace {

const Tolerance kFp32 = DefaultTolerance(at::kFloat, 0, 0);

Comparison Compare(const at::Tensor& ref, const at::Tensor& cand, Tolerance tol = kFp32) {
  return CompareOutputs({ref}, {cand}, tol);
}

bool HaveGpu() {
  int n = 0;
  bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  cudaGetLastError();
  return ok;
}

TEST(CompareTest, EqualOutputsPassWithZeroErrors) {
  at::Tensor r = at::randn({64, 33});
  Comparison c = Compare(r, r.clone());
  EXPECT_TRUE(c.ok) << c.reason;
  EXPECT_EQ(c.max_abs_error, 0);
  EXPECT_EQ(c.whole_rel_error, 0);
}

TEST(CompareTest, ElementOutsideToleranceIsCountedAndNamed) {
  at::Tensor r = at::ones({1000});
  at::Tensor k = r.clone();
  k[7] = 1.5;
  k[9] = 1 + 1e-5;  // inside atol + rtol * |r| = 2e-4
  Comparison c = Compare(r, k);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.reason,
            "output 0: 1 of 1000 elements outside atol=0.0001 rtol=0.0001 (max abs error 0.5)");
  EXPECT_DOUBLE_EQ(c.max_abs_error, 0.5);
  EXPECT_DOUBLE_EQ(c.max_rel_error, 0.5);
}

TEST(CompareTest, BoundaryIsDecidedInFloat64) {
  // |c - r| exactly atol + rtol * |r| passes; one float step more fails.
  at::Tensor r = at::zeros({4}, at::kDouble);
  at::Tensor k = at::full({4}, 1e-4, at::kDouble);
  EXPECT_TRUE(Compare(r, k).ok);
  k[0] = std::nextafter(1e-4, 1.0);
  EXPECT_FALSE(Compare(r, k).ok);
}

TEST(CompareTest, NanOrInfWhereTheReferenceIsFiniteFails) {
  at::Tensor r = at::ones({10});
  at::Tensor k = r.clone();
  k[3] = std::numeric_limits<float>::quiet_NaN();
  k[4] = std::numeric_limits<float>::infinity();
  Comparison c = Compare(r, k);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.reason.find("2 of 10 elements are NaN or Inf"), std::string::npos) << c.reason;
}

TEST(CompareTest, NanAndInfOfTheReferenceMustBeRepeated) {
  at::Tensor r = at::ones({6});
  r[1] = std::numeric_limits<float>::quiet_NaN();
  r[2] = -std::numeric_limits<float>::infinity();
  at::Tensor k = r.clone();
  EXPECT_TRUE(Compare(r, k).ok);
  k[2] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Compare(r, k).reason, "output 0: NaN/Inf positions differ from the reference");
  k = r.clone();
  k[1] = 1;
  EXPECT_EQ(Compare(r, k).reason, "output 0: NaN/Inf positions differ from the reference");
}

TEST(CompareTest, ZerosForTinyOutputsFailTheWholeOutputBound) {
  at::Tensor r = at::full({100}, 1e-5);
  Comparison c = Compare(r, at::zeros({100}));
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.reason.find("relative error of the whole output 1 exceeds 0.01"), std::string::npos)
      << c.reason;
}

TEST(CompareTest, HalfIntegerAndComplexOutputs) {
  Tolerance fp16 = DefaultTolerance(at::kHalf, 0, 0);
  at::Tensor h = at::randn({300}).to(at::kHalf);
  EXPECT_TRUE(Compare(h, h.clone(), fp16).ok);
  EXPECT_FALSE(Compare(h, h + 1, fp16).ok);
  at::Tensor i = at::arange(50, at::kLong);
  EXPECT_TRUE(Compare(i, i.clone()).ok);
  EXPECT_EQ(Compare(i, i + 1).reason,
            "output 0: 50 of 50 elements outside atol=0.0001 rtol=0.0001 (max abs error 1)");
  at::Tensor z = at::randn({20}, at::kComplexFloat);
  EXPECT_TRUE(Compare(z, z.clone()).ok);
  EXPECT_FALSE(Compare(z, z.conj()).ok) << "the imaginary parts are compared too";
}

TEST(CompareTest, ShapeAndDtypeMismatchesAreNamed) {
  EXPECT_EQ(Compare(at::zeros({2, 3}), at::zeros({3, 2})).reason,
            "output 0: shape [3, 2], expected [2, 3]");
  EXPECT_EQ(Compare(at::zeros({2}), at::zeros({2}, at::kDouble)).reason,
            "output 0: dtype Double, expected Float");
  // An output on another device than the reference's (a host tensor for a GPU task, say: the
  // timing stage counts only GPU work) is named too.
  EXPECT_EQ(Compare(at::zeros({2}), at::empty({2}, at::TensorOptions().device(at::kMeta))).reason,
            "output 0: is on meta, expected cpu");
}

TEST(CompareTest, KernelSourceCompilesWithNvrtc) {
  for (at::ScalarType t : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kChar, at::kByte,
                           at::kBool, at::kShort, at::kInt, at::kLong}) {
    NvrtcCompileRequest req;
    req.source = CompareKernelSource(t);
    req.arch = "sm_90";
    NvrtcCompileOutput out = CompileWithNvrtc(req);
    EXPECT_TRUE(out.ok) << c10::toString(t) << ": " << out.log;
    EXPECT_FALSE(out.cubin.empty()) << c10::toString(t);
  }
  EXPECT_THROW(CompareKernelSource(at::kComplexFloat), std::invalid_argument);
}

TEST(CompareTest, TheForkServerPreparesTheUsualKernelsForItsArchitectures) {
  // TORCH_CUDA_ARCH_LIST's forms (spaces or semicolons); an entry that names no architecture
  // by its number is skipped. The prepared kernels stay in this process; the GPU tests after
  // this one load them as they would have compiled them.
  EXPECT_EQ(PrepareCompareKernels("9.0+PTX; 8.0;garbage;.5 Hopper"), 8);
  EXPECT_EQ(PrepareCompareKernels("8.0 8.6"), 4);
  for (const char* arch : {"sm_90", "sm_80", "sm_86"}) {
    for (at::ScalarType t : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
      EXPECT_TRUE(HasPreparedCompareKernel(arch, t)) << arch << " " << c10::toString(t);
    }
    EXPECT_FALSE(HasPreparedCompareKernel(arch, at::kInt)) << "compiled when needed";
  }
  EXPECT_FALSE(HasPreparedCompareKernel("sm_89", at::kFloat));
  EXPECT_EQ(PrepareCompareKernels("9.0"), 0) << "kept: not compiled again";
  EXPECT_EQ(PrepareCompareKernels(""), 0);
}

TEST(CompareTest, APreparedKernelIsTheOneAnEvaluationWouldHaveCompiled) {
  // The fork server's kernel decides correctness in every evaluation forked from it: it must be
  // exactly what the evaluation compiles itself (no fused multiply-adds, so that an element on
  // the tolerance boundary gets the host loop's decision), not merely a kernel of that name.
  ASSERT_GE(PrepareCompareKernels("9.0"), 0);
  const std::string prepared = PreparedCompareKernel("sm_90", at::kFloat);
  ASSERT_FALSE(prepared.empty());
  NvrtcCompileRequest req;
  req.source = CompareKernelSource(at::kFloat);
  req.name = "kforge_compare.cu";
  req.arch = "sm_90";
  req.options = {"--fmad=false"};
  NvrtcCompileOutput same = CompileWithNvrtc(req);
  ASSERT_TRUE(same.ok) << same.log;
  EXPECT_EQ(prepared, same.cubin);
  req.options = {};  // fused multiply-adds allowed: another kernel
  NvrtcCompileOutput fmad = CompileWithNvrtc(req);
  ASSERT_TRUE(fmad.ok) << fmad.log;
  EXPECT_NE(prepared, fmad.cubin);
  EXPECT_EQ(PreparedCompareKernel("sm_90", at::kInt), "");
}

TEST(CompareTest, PinnedHostMemoryTaggedAsCudaIsNotDeviceMemory) {
  EXPECT_TRUE(InDeviceMemory(at::zeros({4})));  // not a CUDA tensor
  if (!HaveGpu()) GTEST_SKIP() << "no GPU";
  at::Tensor dev = at::zeros({1 << 20}, at::TensorOptions().device(at::kCUDA, 0));
  EXPECT_TRUE(InDeviceMemory(dev));
  EXPECT_TRUE(InDeviceMemory(dev.narrow(0, 8, 16)));
  // The host_memory trick: pinned host memory wrapped as a CUDA tensor (UVA makes it usable
  // by kernels, and the host writes it directly).
  at::Tensor pinned = at::zeros({1024}, at::TensorOptions().pinned_memory(true));
  at::Tensor tagged = at::from_blob(pinned.data_ptr(), {1024},
                                    at::TensorOptions().device(at::kCUDA, 0));
  EXPECT_FALSE(InDeviceMemory(tagged));
}

// The kernel and the host loop decide alike on large outputs (the GPU path needs 2^20
// elements).
TEST(CompareTest, DeviceAndHostAgree) {
  if (!HaveGpu()) GTEST_SKIP() << "no GPU";
  for (at::ScalarType t : {at::kFloat, at::kHalf, at::kBFloat16, at::kDouble, at::kInt}) {
    at::Tensor r = (at::randn({3 << 20}) * 100).to(t);
    at::Tensor k = r.clone();
    k[12345] += 1;
    if (at::isFloatingType(t)) {
      r[99] = std::numeric_limits<float>::quiet_NaN();
      k[99] = std::numeric_limits<float>::quiet_NaN();
    }
    Tolerance tol = DefaultTolerance(t, 0, 0);
    Comparison host = Compare(r, k, tol);
    Comparison device = Compare(r.cuda(), k.cuda(), tol);
    EXPECT_EQ(device.ok, host.ok) << c10::toString(t);
    EXPECT_EQ(device.reason, host.reason) << c10::toString(t);
    EXPECT_DOUBLE_EQ(device.max_abs_error, host.max_abs_error) << c10::toString(t);
    EXPECT_DOUBLE_EQ(device.max_rel_error, host.max_rel_error) << c10::toString(t);
    EXPECT_NEAR(device.whole_rel_error, host.whole_rel_error, 1e-12) << c10::toString(t);
    at::Tensor same = r.cuda();
    EXPECT_TRUE(Compare(same, same.clone(), tol).ok) << c10::toString(t);
  }
}

}  // namespace
}  // namespace kforge::eval
