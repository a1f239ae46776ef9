// The worker's sandbox view (issue 15) with the real kforge-eval in CPU mode, configured as
// kforge-worker configures it: a candidate that tries to leave its view (another evaluation's
// scratch, the host's /tmp, the checkout, a Unix socket, the coordinator's port, a program that
// is not a compiler) fails at each attempt and its output says how, while the same candidate
// without the view reaches them all; compilers (g++ and nvcc through load_inline, ninja and
// /bin/sh; the cpp dialect's g++ and NVRTC) still work inside it.
#include "gpu_worker/eval_view.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "common/base/files.h"
#include "gmock/gmock.h"
#include "gpu_worker/sandbox_evaluator.h"
#include "gpu_worker/sandboxed_engine_for_tests.h"
#include "gpu_worker/unix_listener_for_tests.h"
#include "gtest/gtest.h"

namespace kforge {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

void Replace(std::string* s, const std::string& from, const std::string& to) {
  size_t at = s->find(from);
  ASSERT_NE(at, std::string::npos) << from;
  s->replace(at, from.size(), to);
}

class EvalViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "the view needs the sandbox's mount namespace (root)";
    setenv("KFORGE_EVAL_SERVER", "off", 1);  // one-shot children: a fresh policy per test
    dir_ = MakeDir("/tmp/kforge-view-test-XXXXXX", 0711);
    ASSERT_TRUE(SandboxedCpuOptions(dir_, &options_).ok());
  }
  void TearDown() override {
    if (unix_fd_ >= 0) close(unix_fd_);
    if (tcp_fd_ >= 0) close(tcp_fd_);
    for (const std::string& d : cleanup_) std::system(("rm -rf " + d).c_str());
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

  std::string MakeDir(std::string tmpl, mode_t mode) {
    EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
    chmod(tmpl.c_str(), mode);
    return tmpl;
  }

  v1::EvalResult Evaluate(const std::string& candidate_source) {
    v1::EvalRequest r;
    r.set_task_source(Source("examples/tasks/tiny/tiny_relu.py"));
    r.set_candidate_source(candidate_source);
    r.mutable_limits()->set_build_s(600);
    r.mutable_limits()->set_correctness_s(60);
    return RunEvaluation(options_, r, "cpu");
  }

  // view_probe.py aimed at baits within the sandbox user's reach but outside its view:
  // another evaluation's scratch directory, as the sandbox makes them (its user's, 0700), a
  // file in the host's /tmp, the checkout's README, a socket standing for the database's and
  // a TCP port on loopback standing for the coordinator's.
  std::string BaitedProbe() {
    std::string other = MakeDir(dir_ + "/kforge-sandbox-XXXXXX", 0700);
    EXPECT_TRUE(WriteFileAtomically(other + "/kernel.py", "other's work"));
    struct passwd* nobody = getpwnam("nobody");
    EXPECT_NE(nobody, nullptr);
    EXPECT_EQ(chown(other.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
    std::string host_tmp = MakeDir("/tmp/kforge-view-planted-XXXXXX", 0755);
    cleanup_.push_back(host_tmp);
    EXPECT_TRUE(WriteFileAtomically(host_tmp + "/secret.txt", "planted"));
    chmod((host_tmp + "/secret.txt").c_str(), 0644);
    std::string socket_path = host_tmp + "/.s.PGSQL.5432";
    unix_fd_ = ListenOnUnixSocket(socket_path);
    EXPECT_GE(unix_fd_, 0);
    tcp_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in ta{};
    ta.sin_family = AF_INET;
    ta.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof ta;
    EXPECT_EQ(bind(tcp_fd_, reinterpret_cast<sockaddr*>(&ta), sizeof ta), 0);
    EXPECT_EQ(listen(tcp_fd_, 8), 0);
    EXPECT_EQ(getsockname(tcp_fd_, reinterpret_cast<sockaddr*>(&ta), &len), 0);

    std::string probe = Source("tests/security/view_probe.py");
    Replace(&probe, "@OTHER_SCRATCH@", other);
    Replace(&probe, "@PLANTED@", host_tmp + "/secret.txt");
    Replace(&probe, "@README@", std::string(std::getenv("KFORGE_SOURCE_DIR")) + "/README.md");
    Replace(&probe, "@SOCKET@", socket_path);
    Replace(&probe, "@PORT@", std::to_string(ntohs(ta.sin_port)));
    return probe;
  }

  std::string dir_;
  std::vector<std::string> cleanup_;
  int unix_fd_ = -1, tcp_fd_ = -1;
  WorkerOptions options_;
};

TEST_F(EvalViewTest, ACandidateThatTriesToLeaveItsViewFailsAtEveryAttempt) {
  v1::EvalResult r = Evaluate(BaitedProbe());
  const std::string& out = r.output_log();
  ASSERT_THAT(out, HasSubstr("VIEW tmp-listing")) << r.verdict() << " " << r.reason();
  EXPECT_EQ(r.verdict(), v1::VERDICT_OK) << r.reason();
  EXPECT_THAT(out, Not(HasSubstr("succeeded"))) << out;
  EXPECT_THAT(out, Not(HasSubstr("kforge-view-planted"))) << out;
  const std::string enoent = "failed: FileNotFoundError No such file or directory";
  EXPECT_THAT(out, HasSubstr("VIEW other-scratch " + enoent)) << out;
  EXPECT_THAT(out, HasSubstr("VIEW host-tmp-file " + enoent)) << out;
  EXPECT_THAT(out, HasSubstr("VIEW checkout-file " + enoent)) << out;
  EXPECT_THAT(out, HasSubstr("VIEW database-socket " + enoent)) << out;
  EXPECT_THAT(out, HasSubstr("VIEW coordinator-port failed: PermissionError")) << out;
  const std::string eacces = "failed: PermissionError Permission denied";
  EXPECT_THAT(out, HasSubstr("VIEW exec-id " + eacces)) << out;
  EXPECT_THAT(out, HasSubstr("VIEW exec-own-script " + eacces)) << out;
}

TEST_F(EvalViewTest, WithoutTheViewTheSameCandidateReachesTheBaits) {
  // The control for the test above: the failures come from the view and the program list.
  options_.sandbox_view.enabled = false;
  options_.sandbox_executables.clear();
  v1::EvalResult r = Evaluate(BaitedProbe());
  const std::string& out = r.output_log();
  EXPECT_THAT(out, HasSubstr("kforge-view-planted")) << out;
  for (const char* reached : {"other-scratch", "host-tmp-file", "checkout-file",
                              "database-socket", "exec-id", "exec-own-script"}) {
    EXPECT_THAT(out, HasSubstr(std::string("VIEW ") + reached + " succeeded")) << out;
  }
  // The seccomp rule refuses Internet sockets with or without the view.
  EXPECT_THAT(out, HasSubstr("VIEW coordinator-port failed: PermissionError")) << out;
}

// Sets an environment variable for a scope and restores what it was.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST_F(EvalViewTest, AnMpsDaemonsPipeDirectoryIsReachableAndReadOnly) {
  // A node running an MPS daemon (docs/operations.md, "MPS"): the worker passes its pipe
  // directory on, and the view holds it read-only. No daemon here: a socket stands for its
  // control socket. The directory is writable by everyone (01777), so only the read-only mount
  // can refuse the writes.
  std::string pipe = MakeDir("/tmp/kforge-mps-pipe-XXXXXX", 01777);
  cleanup_.push_back(pipe);
  const int control = ListenOnUnixSocket(pipe + "/control");
  ASSERT_GE(control, 0);
  v1::EvalResult r;
  {
    ScopedEnv env("CUDA_MPS_PIPE_DIRECTORY", pipe);
    options_.sandbox_view = WorkerOptions().sandbox_view;
    options_.sandbox_executables = DefaultCompilerExecutables();
    absl::Status added = AddEnginePaths(options_.eval_binary, options_.cache_dir,
                                        &options_.sandbox_view, &options_.sandbox_executables);
    ASSERT_TRUE(added.ok()) << added;
    r = Evaluate(Source("tests/security/mps_pipe_probe.py"));
  }
  close(control);
  const std::string& out = r.output_log();
  EXPECT_EQ(r.verdict(), v1::VERDICT_OK) << r.reason() << "\n" << out;
  EXPECT_THAT(out, HasSubstr("MPS env '" + pipe + "'")) << out;
  EXPECT_THAT(out, HasSubstr("MPS connect succeeded")) << out;
  EXPECT_THAT(out, HasSubstr("MPS unlink failed: OSError Read-only file system")) << out;
  EXPECT_THAT(out, HasSubstr("MPS plant failed: OSError Read-only file system")) << out;
  struct stat st;
  EXPECT_EQ(stat((pipe + "/control").c_str(), &st), 0) << "the control socket is still there";
  EXPECT_NE(stat((pipe + "/planted").c_str(), &st), 0) << "nothing was planted beside it";
}

TEST_F(EvalViewTest, AnMpsPipeDirectoryThatIsSharedOrMissingStopsTheWorker) {
  // The children would see the whole directory: /tmp's sockets, say.
  for (const char* bad : {"/tmp", "/tmp/", "/", "relative/pipe", "/nonexistent-kforge-mps"}) {
    ScopedEnv env("CUDA_MPS_PIPE_DIRECTORY", bad);
    SandboxView view;
    std::vector<std::string> executables;
    absl::Status added = AddEnginePaths(options_.eval_binary, "", &view, &executables);
    EXPECT_EQ(added.code(), absl::StatusCode::kFailedPrecondition) << bad;
    EXPECT_THAT(std::string(added.message()), HasSubstr("of the MPS daemon's own")) << bad;
  }
}

TEST_F(EvalViewTest, CompilersRunInsideTheView) {
  v1::EvalResult inline_cpu = Evaluate(Source("tests/security/view_load_inline_cpu.py"));
  EXPECT_EQ(inline_cpu.verdict(), v1::VERDICT_OK)
      << inline_cpu.reason() << "\n" << inline_cpu.compiler_log() << inline_cpu.output_log();
  // The cpp dialect: g++ builds the host code and NVRTC the kernels; only the launch needs a GPU.
  v1::EvalResult cpp = Evaluate(Source("examples/candidates/tiny_relu/cpp_relu.cpp"));
  EXPECT_EQ(cpp.verdict(), v1::VERDICT_RUNTIME_ERROR) << cpp.reason() << "\n" << cpp.compiler_log();
  EXPECT_EQ(cpp.rule(), "no_gpu") << cpp.reason() << "\n" << cpp.compiler_log();
}

// torch.compile's Inductor inside the view and its program list: its compile workers would be
// Python processes, which the list does not hold (a second process running Python could do a
// candidate's GPU work where the judge does not trace it; on the H200 such candidates failed
// with "Permission denied: .../bin/python3"), so the children are told to compile in process
// (sandbox_evaluator.cc). On a GPU the candidate compiles with Triton (session 25's corpus run)
// and Triton runs the ptxas Inductor names, torch's own (refused until session 30).
TEST_F(EvalViewTest, TorchCompileIsToldToCompileInProcess) {
  v1::EvalResult compiled = Evaluate(Source("tests/security/view_torch_compile.py"));
  EXPECT_EQ(compiled.verdict(), v1::VERDICT_OK) << compiled.reason();
  EXPECT_THAT(compiled.output_log(), HasSubstr("INDUCTOR env 1\n"));
  EXPECT_THAT(compiled.output_log(), HasSubstr("INDUCTOR compile_threads 1\n"));
  // The ptxas Inductor tells Triton to run (torch's own, where torch ships one) is on the
  // program list.
  if (compiled.output_log().find("PTXAS absent\n") == std::string::npos) {
    EXPECT_THAT(compiled.output_log(), HasSubstr("/torch/bin/ptxas rc 0\n"));
  }
}

// nvcc and its tools (cicc, ptxas, fatbinary, nvlink through the host compiler) inside the
// view and its program list, as a GPU worker's build ahead runs them: load_inline with CUDA
// sources, no GPU visible, the slots' arch named. The first nvcc on PATH is a wrapper outside
// the toolkit and the program list (as /usr/local/bin/nvcc is on CI's machines, where this
// failed with "nvcc: Permission denied"): the child is told the toolkit's CUDA_HOME instead.
TEST_F(EvalViewTest, NvccBuildsACudaExtensionInsideTheView) {
  const std::string decoy_bin = options_.cache_dir + "/decoy-bin";
  ASSERT_EQ(mkdir(decoy_bin.c_str(), 0755), 0);
  ASSERT_TRUE(WriteFileAtomically(decoy_bin + "/nvcc",
                                  "#!/bin/sh\nexec " + CudaToolkitDir() + "/bin/nvcc \"$@\"\n"));
  chmod((decoy_bin + "/nvcc").c_str(), 0755);
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("PATH", (decoy_bin + ":" + path).c_str(), 1);
  setenv("TORCH_CUDA_ARCH_LIST", "9.0", 1);  // what kforge-worker sets from its GPUs
  v1::EvalRequest r;
  r.set_task_source(Source("examples/tasks/tiny/tiny_relu.py"));
  r.set_candidate_source(Source("tests/engine/guarded_load_inline.py"));
  r.set_build_only(true);
  r.set_arch("sm_90");
  r.mutable_limits()->set_build_s(900);
  v1::EvalResult built = RunEvaluation(options_, r, "cpu");
  unsetenv("TORCH_CUDA_ARCH_LIST");
  setenv("PATH", path.c_str(), 1);
  EXPECT_EQ(built.verdict(), v1::VERDICT_OK)
      << built.reason() << "\n" << built.compiler_log() << built.output_log();
  EXPECT_GT(built.stages().build_s(), 1.0) << "nvcc did not run";
}

}  // namespace
}  // namespace kforge
