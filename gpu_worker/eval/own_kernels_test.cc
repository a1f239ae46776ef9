#include "gpu_worker/eval/own_kernels.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kforge::eval {
namespace {

using Names = std::vector<std::string>;

TEST(DefinedKernelNamesTest, ReadsTheFunctionAfterEachGlobal) {
  const std::string source = R"py(
import torch
src = '''
extern "C" __global__ void tanh_kernel(float* x, float* y, int n) {}
template <int BLOCK> __global__ void __launch_bounds__(256, 2) tiled_gemm(const float* a) {}
__global__
void
relu_kernel (const float* __restrict__ x) {}
extern "C" __global__ void tanh_kernel(float* x) {}  // a second variant, same name
'''
)py";
  EXPECT_EQ(DefinedKernelNames(source), (Names{"tanh_kernel", "tiled_gemm", "relu_kernel"}));
}

TEST(DefinedKernelNamesTest, LeavesOutNamesItCannotRead) {
  // A macro's pasted name and its parameter, an f-string's placeholder, a word that merely
  // contains the keyword, a host function, comments (C++ and Python) that mention a kernel.
  const std::string source = R"py(
#define DEFINE(op) __global__ void op##_kernel(float* x) {}
#define K(name) __global__ void name(float* x)
code = f"__global__ void {name}(float* x) {{}}"
my__global__ = 3
__device__ float helper(float x) { return x; }
// the __global__ kernel (below) reads x
/* a __global__ void sketch(float* x) of the idea */
# the __global__ kernel (below)
)py";
  EXPECT_EQ(DefinedKernelNames(source), Names{});
}

TEST(DefinedKernelNamesTest, ReadsTritonAndNumbaKernelsButNotTorchScript) {
  const std::string source = R"py(
import triton
@triton.autotune(configs=[triton.Config({'BLOCK': 128})],
                 key=['n'])
@triton.jit
def fused_add(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pass

@cuda.jit
def numba_scale(x):
    pass

@numba.cuda.jit("void(float32[:])")
def numba_shift(x):
    pass

@torch.jit.script
def scripted(x):
    return x

class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x
)py";
  EXPECT_EQ(DefinedKernelNames(source), (Names{"fused_add", "numba_scale", "numba_shift"}));
}

TEST(IsOwnKernelTest, ExactNamesAndMangledSourceNames) {
  EXPECT_TRUE(IsOwnKernel("tanh_kernel", "tanh_kernel"));                // extern "C"
  EXPECT_TRUE(IsOwnKernel("_Z11relu_kernelPKfPfi", "relu_kernel"));      // C++ linkage
  EXPECT_TRUE(IsOwnKernel("_Z10tiled_gemmILi256EEvPKf", "tiled_gemm"));  // a template
  EXPECT_TRUE(IsOwnKernel("_ZN2my1kEPf", "k"));                          // in a namespace
  EXPECT_TRUE(IsOwnKernel("_ZN6cudapy8__main__11numba_scaleB2v1E5ArrayIfLi1E1C7mutable7alignedE",
                          "numba_scale"));                       // numba
  EXPECT_TRUE(IsOwnKernel("fused_add_0d1d2d3de", "fused_add"));  // Triton 2
  // Demangled.
  EXPECT_TRUE(IsOwnKernel("relu_kernel(float const*, float*, int)", "relu_kernel"));
  EXPECT_TRUE(IsOwnKernel("void my::tiled_gemm<256>(float const*)", "tiled_gemm"));
  EXPECT_FALSE(
      IsOwnKernel("void at::native::tanh_kernel_cuda(at::TensorIteratorBase&)", "tanh_kernel"));
  EXPECT_FALSE(IsOwnKernel("void at::native::my_relu_kernel(float*)", "relu_kernel"));
}

TEST(IsOwnKernelTest, KernelsInAnonymousAndNumberedNamespacesAndStaticOnes) {
  // The anonymous namespace's `_GLOBAL__N_1` and a namespace `v2` end in a digit right before
  // the kernel's length; a static kernel has internal linkage (`L`).
  EXPECT_TRUE(IsOwnKernel("_ZN12_GLOBAL__N_111relu_kernelEPKfPfi", "relu_kernel"));
  EXPECT_TRUE(IsOwnKernel("_ZN2v211relu_kernelEPf", "relu_kernel"));
  EXPECT_TRUE(IsOwnKernel("_ZL11relu_kernelPKfPfi", "relu_kernel"));
  EXPECT_TRUE(IsOwnKernel("_ZN12_GLOBAL__N_110tiled_gemmILi128EEEvPKfS2_Pf", "tiled_gemm"));
  // torch's own kernels in its anonymous namespaces stay torch's.
  EXPECT_FALSE(IsOwnKernel("_ZN2at6native12_GLOBAL__N_119elu_kernel_templateEv", "elu_kernel"));
}

TEST(IsOwnKernelTest, TorchsKernelsAreNotTheCandidates) {
  // torch's tanh kernel holds `tanh_kernel_cuda` (16), not the candidate's `tanh_kernel` (11).
  const std::string torch_tanh =
      "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_16tanh_kernel_cudaERNS_"
      "18TensorIteratorBaseEENKUlvE0_clEvENKUlvE0_clEvEUlfE_St5arrayIPcLm2EEEEviT0_T1_";
  EXPECT_FALSE(IsOwnKernel(torch_tanh, "tanh_kernel"));
  EXPECT_FALSE(IsOwnKernel(torch_tanh, "kernel"));  // `16tanh_kernel_cuda` is not `6kernel`
  // A length that continues a longer number: `13addcmul` holds `3add` but is not `add`.
  EXPECT_FALSE(IsOwnKernel("_ZN2at6native13addcmul_cudaEv", "add"));
  EXPECT_FALSE(IsOwnKernel("tanh_kernel_simple", "tanh_kernel"));  // another extern "C" kernel
  EXPECT_FALSE(IsOwnKernel("sm90_xmma_gemm_f32f32_tn_n", "gemm"));
  EXPECT_FALSE(IsOwnKernel("anything", ""));
}

TEST(LaunchedOwnKernelTest, AnyLaunchedKernelOfItsOwnCounts) {
  const Names defined = {"tanh_kernel", "tanh_kernel_simple"};
  EXPECT_TRUE(LaunchedOwnKernel({"sm90_xmma_gemm", "tanh_kernel_simple"}, defined));
  EXPECT_FALSE(LaunchedOwnKernel({"sm90_xmma_gemm"}, defined));
  EXPECT_FALSE(LaunchedOwnKernel({}, defined));
  EXPECT_FALSE(LaunchedOwnKernel({"tanh_kernel"}, {}));
}

TEST(MustLaunchOwnKernelsTest, OnlyACandidateThatBuiltTheKernelsItDefines) {
  EXPECT_TRUE(MustLaunchOwnKernels(2, 1, false));  // load_inline built
  EXPECT_TRUE(MustLaunchOwnKernels(1, 0, true));   // cupy loaded: its kernels compile at run time
  // Never built for this task (1_98 below its size threshold, 2_6's switch left off).
  EXPECT_FALSE(MustLaunchOwnKernels(1, 0, false));
  EXPECT_FALSE(MustLaunchOwnKernels(0, 3, true));  // nothing of its own to launch
}

}  // namespace
}  // namespace kforge::eval
