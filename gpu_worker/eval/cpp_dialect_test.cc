#include "gpu_worker/eval/cpp_dialect.h"

#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#include <ftw.h>
#include <glob.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace kforge::eval {
namespace {

std::string ReadExample(const std::string& relative) {
  const char* root = std::getenv("KFORGE_SOURCE_DIR");
  std::string path = std::string(root ? root : ".") + "/examples/candidates/" + relative;
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool HaveGpu() {
  int n = 0;
  bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  cudaGetLastError();
  return ok;
}

const char* kHostRelu = R"(// kforge: dialect=cpp
#include <kforge/candidate.h>
std::vector<at::Tensor> forward(kforge::Context& ctx, const std::vector<at::Tensor>& in) {
  return {at::clamp_min(in[0], 0)};
}
)";

// Every test shares one cache directory, so the precompiled header is built once (by whichever
// test builds first) and the later builds show the cost of a compile with it.
class CppDialectTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string tmpl = "/tmp/kforge-cpp-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    cache_dir_ = new std::string(tmpl);
  }
  static void TearDownTestSuite() {
    // POSIX: libtorch.so exports an incompatible std::filesystem that may be bound instead.
    nftw(
        cache_dir_->c_str(),
        [](const char* path, const struct stat*, int, struct FTW*) { return std::remove(path); },
        16, FTW_DEPTH | FTW_PHYS);
    delete cache_dir_;
  }

  static CppBuildConfig Config(bool gpu = false) {
    CppBuildConfig c;
    c.cache_dir = *cache_dir_;
    c.arch = "sm_90";
    c.gpu_available = gpu;
    return c;
  }

  // Builds and prints the wall time, which the reply to the brief quotes.
  static CppBuildResult Build(const std::string& source, bool gpu = false) {
    CppBuildStats before = GetCppBuildStats();
    CppBuildResult r = BuildCppCandidate(source, Config(gpu));
    CppBuildStats after = GetCppBuildStats();
    std::printf("[build] %.2f s (cache_hit=%d, pch_builds +%d %.2f s, compiler_runs +%d)\n",
                r.seconds, r.cache_hit, after.pch_builds - before.pch_builds,
                after.pch_s - before.pch_s, after.compiler_runs - before.compiler_runs);
    if (!r.candidate) std::printf("[build] error: %.600s\n", r.error.c_str());
    return r;
  }

  static std::string* cache_dir_;
};
std::string* CppDialectTest::cache_dir_ = nullptr;

TEST_F(CppDialectTest, HostOnlyReluBuildsAndMatches) {
  CppBuildResult r = Build(kHostRelu);
  ASSERT_NE(r.candidate, nullptr) << r.error;
  EXPECT_FALSE(r.candidate->has_kernels());
  EXPECT_FALSE(r.candidate->has_init());
  EXPECT_TRUE(r.candidate->Init({}).ok());
  at::Tensor x = at::randn({4096});
  std::vector<at::Tensor> out;
  CppCallStatus s = r.candidate->Forward({x}, &out);
  ASSERT_TRUE(s.ok()) << s.error;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(at::equal(out[0], at::relu(x)));
  EXPECT_EQ(r.candidate->launches(), 0u);
}

TEST_F(CppDialectTest, CompileErrorReturnsTheLogWithTheLine) {
  CppBuildResult r = Build(ReadExample("tiny_relu/cpp_compile_error.cpp"));
  ASSERT_EQ(r.candidate, nullptr);
  EXPECT_TRUE(r.compile_error);
  EXPECT_NE(r.error.find("the candidate did not compile (exit code 1)"), std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("candidate.cpp:9:"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("undefined_method"), std::string::npos) << r.error;
  EXPECT_EQ(r.log, r.error.substr(r.error.size() - r.log.size()));
}

TEST_F(CppDialectTest, MissingForwardIsALoadError) {
  CppBuildResult r = Build("#include <kforge/candidate.h>\nint unrelated() { return 1; }\n");
  ASSERT_EQ(r.candidate, nullptr);
  EXPECT_TRUE(r.compile_error);
  EXPECT_NE(r.error.find("did not load"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("undefined symbol forward(kforge::Context&"), std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("at global scope"), std::string::npos) << r.error;
}

TEST_F(CppDialectTest, UnknownFunctionIsALoadErrorWithItsName) {
  CppBuildResult r = Build(std::string(kHostRelu) + "int helper(int);\nint use = helper(1);\n");
  ASSERT_EQ(r.candidate, nullptr);
  EXPECT_TRUE(r.compile_error);
  EXPECT_NE(r.error.find("undefined symbol helper(int)"), std::string::npos) << r.error;
  EXPECT_EQ(r.error.find("at global scope"), std::string::npos) << r.error;
}

TEST_F(CppDialectTest, CallsIntoOtherLoadedLibrariesAreRefused) {
  // The test links the CUDA runtime; a candidate linked with -z defs against LibTorch could not
  // call it, and the unlinked one may not either.
  CppBuildResult r = Build(std::string(kHostRelu) +
                           "extern \"C\" int cudaGetDeviceCount(int*);\n"
                           "int count_devices() { int n = 0; cudaGetDeviceCount(&n); return n; }\n");
  ASSERT_EQ(r.candidate, nullptr);
  EXPECT_TRUE(r.compile_error);
  EXPECT_NE(r.error.find("the candidate calls cudaGetDeviceCount from "), std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("libcudart"), std::string::npos) << r.error;
}

TEST_F(CppDialectTest, CompilerTimeLimitIsACompileError) {
  ASSERT_NE(Build(kHostRelu).candidate, nullptr);  // the PCH exists: only the compile is cut
  CppBuildConfig c = Config();
  c.toolchain.compile_timeout_s = 0.2;
  CppBuildResult r = BuildCppCandidate(std::string(kHostRelu) + "// slow compile\n", c);
  ASSERT_EQ(r.candidate, nullptr);
  EXPECT_TRUE(r.compile_error);
  EXPECT_NE(r.error.find("the candidate did not compile (timed out after 0."), std::string::npos)
      << r.error;
}

TEST_F(CppDialectTest, CompilesWithoutPath) {
  // A sandbox may clear the environment; collect2 still has to find ld.
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  unsetenv("PATH");
  CppBuildResult r = Build(std::string(kHostRelu) + "// without PATH\n");
  setenv("PATH", path.c_str(), 1);
  EXPECT_NE(r.candidate, nullptr) << r.error;
}

TEST_F(CppDialectTest, SecondBuildIsACacheHitWithoutTheCompiler) {
  std::string source = std::string(kHostRelu) + "// cache test\n";
  CppBuildResult first = Build(source);
  ASSERT_NE(first.candidate, nullptr) << first.error;
  EXPECT_FALSE(first.cache_hit);
  CppBuildStats before = GetCppBuildStats();
  CppBuildResult second = Build(source);
  CppBuildStats after = GetCppBuildStats();
  ASSERT_NE(second.candidate, nullptr) << second.error;
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(after.compiler_runs, before.compiler_runs);
  EXPECT_EQ(after.pch_builds, before.pch_builds);
  EXPECT_EQ(after.cache_hits, before.cache_hits + 1);
  EXPECT_LT(second.seconds, first.seconds);
  EXPECT_LT(second.seconds, 0.5);
  std::vector<at::Tensor> out;
  EXPECT_TRUE(second.candidate->Forward({at::randn({8})}, &out).ok());
}

TEST_F(CppDialectTest, ForwardExceptionsComeBackAsMessages) {
  CppBuildResult r = Build(R"cand(#include <kforge/candidate.h>
#include <stdexcept>
std::vector<at::Tensor> forward(kforge::Context& ctx, const std::vector<at::Tensor>& in) {
  if (in.size() == 1) TORCH_CHECK(false, "boom from ATen, got ", in.size(), " input");
  throw std::runtime_error("plain std exception");
}
)cand");
  ASSERT_NE(r.candidate, nullptr) << r.error;
  std::vector<at::Tensor> out;
  CppCallStatus s = r.candidate->Forward({at::ones({2})}, &out);
  EXPECT_EQ(s.error, "boom from ATen, got 1 input");
  EXPECT_FALSE(s.no_gpu);
  s = r.candidate->Forward({}, &out);
  EXPECT_EQ(s.error, "plain std exception");
}

TEST_F(CppDialectTest, InitReceivesTheParameters) {
  CppBuildResult r = Build(ReadExample("tiny_linear/cpp_linear.cpp"));
  ASSERT_NE(r.candidate, nullptr) << r.error;
  EXPECT_TRUE(r.candidate->has_init());
  at::Tensor w = at::randn({32, 64}), b = at::randn({32}), x = at::randn({16, 64});
  std::vector<at::Tensor> out;
  CppCallStatus s = r.candidate->Forward({x}, &out);
  EXPECT_NE(s.error.find("init was not called"), std::string::npos) << s.error;
  s = r.candidate->Init({w});
  EXPECT_NE(s.error.find("expects linear.weight and linear.bias, got 1 tensors"), std::string::npos)
      << s.error;
  ASSERT_TRUE(r.candidate->Init({w, b}).ok());
  s = r.candidate->Forward({x}, &out);
  ASSERT_TRUE(s.ok()) << s.error;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(at::allclose(out[0], at::linear(x, w, b), 1e-5, 1e-5));
}

TEST_F(CppDialectTest, LaunchWithoutGpuReportsNoGpu) {
  CppBuildResult r = Build(ReadExample("tiny_relu/cpp_relu.cpp"));
  ASSERT_NE(r.candidate, nullptr) << r.error;
  EXPECT_TRUE(r.candidate->has_kernels());
  std::vector<at::Tensor> out;
  CppCallStatus s = r.candidate->Forward({at::randn({4096})}, &out);
  EXPECT_TRUE(s.no_gpu);
  EXPECT_EQ(s.error,
            "kforge: no GPU (CPU mode): kernel relu_kernel was compiled for sm_90 but cannot run");
  EXPECT_EQ(r.candidate->launches(), 0u);
}

TEST_F(CppDialectTest, SwallowedLaunchErrorStillReportsNoGpu) {
  CppBuildResult r = Build(R"cand(#include <kforge/candidate.h>
KFORGE_KERNELS(R"k(extern "C" __global__ void noop() {})k")
std::vector<at::Tensor> forward(kforge::Context& ctx, const std::vector<at::Tensor>& in) {
  try {
    ctx.launch("noop", 1, 1, 0, {});
  } catch (const std::exception&) {
  }
  return {at::clamp_min(in[0], 0)};
}
)cand");
  ASSERT_NE(r.candidate, nullptr) << r.error;
  std::vector<at::Tensor> out;
  CppCallStatus s = r.candidate->Forward({at::randn({4})}, &out);
  EXPECT_TRUE(s.no_gpu);
  EXPECT_NE(s.error.find("forward caught the error of a kernel launch"), std::string::npos)
      << s.error;
}

TEST_F(CppDialectTest, NvrtcSyntaxErrorIsACompileErrorWithTheFileLine) {
  CppBuildResult r = Build(R"cand(#include <kforge/candidate.h>
KFORGE_KERNELS(R"(
extern "C" __global__ void broken(float* y) {
  y[threadIdx.x] = 1.0f
}
)")
std::vector<at::Tensor> forward(kforge::Context& ctx, const std::vector<at::Tensor>& in) {
  return in;
}
)cand");
  ASSERT_EQ(r.candidate, nullptr);
  EXPECT_TRUE(r.compile_error);
  EXPECT_NE(r.error.find("the candidate's kernels did not compile (NVRTC, sm_90)"),
            std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("candidate.cpp(5): error"), std::string::npos) << r.error;
}

TEST_F(CppDialectTest, StalePchIsRebuilt) {
  ASSERT_NE(Build(kHostRelu).candidate, nullptr);
  glob_t found;
  ASSERT_EQ(glob((*cache_dir_ + "/cpp/pch-*/kforge_pch.h.gch").c_str(), 0, nullptr, &found), 0);
  size_t corrupted = found.gl_pathc;
  for (size_t i = 0; i < found.gl_pathc; ++i) {
    std::ofstream(found.gl_pathv[i], std::ios::trunc) << "not a precompiled header";
  }
  globfree(&found);
  ASSERT_EQ(corrupted, 1u);
  CppBuildStats before = GetCppBuildStats();
  CppBuildResult r = Build(std::string(kHostRelu) + "// after the PCH went stale\n");
  CppBuildStats after = GetCppBuildStats();
  ASSERT_NE(r.candidate, nullptr) << r.error;
  EXPECT_EQ(after.pch_builds, before.pch_builds + 1);
  EXPECT_EQ(after.compiler_runs, before.compiler_runs + 2);
}

TEST_F(CppDialectTest, GpuReluLaunchesOnTheCurrentStream) {
  if (!HaveGpu()) GTEST_SKIP() << "no GPU";
  CppBuildResult r = Build(ReadExample("tiny_relu/cpp_relu.cpp"), /*gpu=*/true);
  ASSERT_NE(r.candidate, nullptr) << r.error;
  at::Tensor x = at::randn({4099}, at::kCUDA);
  std::vector<at::Tensor> out;
  CppCallStatus s = r.candidate->Forward({x}, &out);
  ASSERT_TRUE(s.ok()) << s.error;
  EXPECT_TRUE(at::equal(out.at(0), at::relu(x)));
  EXPECT_EQ(r.candidate->launches(), 1u);
  {
    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
    c10::cuda::CUDAStreamGuard guard(side);
    at::Tensor big = at::randn({1 << 24}, at::kCUDA);
    ASSERT_TRUE(r.candidate->Forward({big}, &out).ok());
    side.synchronize();  // only the current stream: a launch elsewhere would race
    EXPECT_TRUE(at::equal(out.at(0), at::relu(big)));
  }
  s = r.candidate->Forward({x.cpu()}, &out);
  EXPECT_NE(s.error.find("argument 0: the tensor is on cpu, not on cuda:0"), std::string::npos)
      << s.error;
}

TEST_F(CppDialectTest, GpuArgumentsAreCheckedAgainstTheKernel) {
  if (!HaveGpu()) GTEST_SKIP() << "no GPU";
  CppBuildResult r = Build(R"cand(#include <kforge/candidate.h>
KFORGE_KERNELS(R"(
extern "C" __global__ void fill(float* y, int n, float v, double w, bool flag) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && flag) y[i] = v + (float)w;
}
)")
std::vector<at::Tensor> forward(kforge::Context& ctx, const std::vector<at::Tensor>& in) {
  at::Tensor y = at::zeros({100}, in[0].options());
  int64_t mode = in[0].size(0);
  if (mode == 1) ctx.launch("fill", 1, 128, 0, {y, 100, 1.5f, 2.0, true});
  if (mode == 2) ctx.launch("fill", 1, 128, 0, {y, 100});
  if (mode == 3) ctx.launch("fill", 1, 128, 0, {y, int64_t{1} << 40, 1.5f, 2.0, true});
  if (mode == 4) ctx.launch("missing", 1, 128, 0, {});
  if (mode == 5) ctx.launch("fill", 0, 128, 0, {y, 100, 1.5f, 2.0, true});
  return {y};
}
)cand",
                           /*gpu=*/true);
  ASSERT_NE(r.candidate, nullptr) << r.error;
  std::vector<at::Tensor> out;
  auto run = [&](int mode) { return r.candidate->Forward({at::zeros({mode}, at::kCUDA)}, &out); };
  CppCallStatus s = run(1);
  ASSERT_TRUE(s.ok()) << s.error;
  EXPECT_TRUE(at::equal(out.at(0), at::full({100}, 3.5, out[0].options())));
  EXPECT_EQ(run(2).error, "kforge: kernel fill takes 5 arguments, 2 given");
  EXPECT_EQ(run(3).error,
            "kforge: kernel fill argument 1: integer 1099511627776 does not fit a 4-byte "
            "parameter");
  EXPECT_NE(run(4).error.find("no kernel named 'missing'"), std::string::npos);
  EXPECT_EQ(run(5).error, "kforge: grid dimension 0 is outside [1, 2^31)");
  EXPECT_EQ(r.candidate->launches(), 1u);
}

}  // namespace
}  // namespace kforge::eval
