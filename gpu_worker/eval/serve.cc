#include "gpu_worker/eval/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <pybind11/embed.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/base/files.h"
#include "common/base/frames.h"
#include "common/dialect.h"
#include "common/result_json.h"
#include "gpu_worker/eval/compare.h"
#include "gpu_worker/eval/python_runtime.h"
#include "gpu_worker/eval/reference_share.h"

namespace py = pybind11;

namespace kforge::eval {
namespace {

// A fresh directory under $TMPDIR (the sandbox's scratch), named $TMPDIR/<prefix>XXXXXX, or ""
// on failure.
std::string MakeUniqueDir(const char* prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) return "";
  return tmpl;
}

// The fork server's request directory: one path, made empty and private again for each request
// (Serve), so that the paths its warm imports took from TMPDIR, HOME and the cwd are the
// request's own. Empty: a fresh directory per request.
std::string g_request_dir;

// A private, empty directory for one request, or "" on failure.
std::string MakeRequestDir() {
  if (g_request_dir.empty()) return MakeUniqueDir("kforge-req-");
  // Serve emptied it after the warm imports, EvaluateSupervised after each request (or the
  // server stopped): it does not exist here.
  return mkdir(g_request_dir.c_str(), 0700) == 0 ? g_request_dir : "";
}

// Set once a request's directory could not be removed (what is left could reach later
// requests) or made again: the server stops after its answer.
bool g_scratch_left = false;

constexpr int kConnectS = 120;  // as in the message below

// Opens the channel: FIFOs in `dir`, or duplicates of stdin/stdout. Either way fd 0 becomes
// /dev/null and fd 1 a copy of stderr, so only the returned descriptors carry frames.
bool OpenChannel(const std::string& fifo_dir, int* in_fd, int* out_fd) {
  if (fifo_dir.empty()) {
    *in_fd = fcntl(0, F_DUPFD_CLOEXEC, 3);
    *out_fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
  } else {
    std::string req = fifo_dir + "/requests", res = fifo_dir + "/results";
    for (const std::string& p : {req, res}) {
      unlink(p.c_str());
      if (mkfifo(p.c_str(), 0600) != 0) {
        std::fprintf(stderr, "kforge-eval --serve: mkfifo %s: %s\n", p.c_str(), strerror(errno));
        return false;
      }
    }
    // The client opens "requests" for writing (possible once it is open here for reading),
    // then "results" for reading. A client that never comes (a worker killed while its server
    // started) must not leave the server waiting for ever: give up after kConnectS.
    *in_fd = open(req.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kConnectS);
    while (*in_fd >= 0 &&
           (*out_fd = open(res.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0 &&
           errno == ENXIO && std::chrono::steady_clock::now() < deadline) {
      usleep(10000);
    }
    // Connected, or not: either way the names go, so an evaluation cannot open "results" and
    // write a forged answer.
    unlink(req.c_str());
    unlink(res.c_str());
    for (int fd : {*in_fd, *out_fd}) {
      if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    }
  }
  if (*in_fd < 0 || *out_fd < 0) {
    std::fprintf(stderr, "kforge-eval --serve: cannot open the channel: %s\n",
                 errno == ENXIO ? "no client connected within 120 s" : strerror(errno));
    return false;
  }
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  dup2(null, 0);
  close(null);
  dup2(2, 1);
  return true;
}

v1::EvalResult BadRequest(const std::string& why) {
  v1::EvalResult r;
  r.set_verdict(v1::VERDICT_RUNTIME_ERROR);
  r.set_rule("bad_request");
  r.set_reason(why);
  return r;
}

}  // namespace

v1::EvalResult EvaluateSupervised(const v1::EvalRequest& request, EngineContext context,
                                  const ForkHooks& hooks, const GpuTurns& turns) {
  std::string dir = MakeRequestDir();
  if (dir.empty()) {
    v1::EvalResult result =
        BadRequest(std::string("cannot create a scratch directory: ") + strerror(errno));
    result.set_rule("engine_error");
    // A fork server's one request directory that cannot be made again: every later request
    // would fail the same way, and a fresh server starts with a fresh one.
    if (!g_request_dir.empty()) g_scratch_left = true;
    return result;
  }
  ForkHooks in_dir = hooks;
  in_dir.child = [&] {
    setenv("TMPDIR", dir.c_str(), 1);
    if (hooks.child) hooks.child();
  };
  SupervisorLimits limits = LimitsFor(request);
  // Sampling stops well inside the stage limit, leaving time for the post-timing check.
  context.timing_budget_s = std::max(1.0, 0.6 * limits.timing_s);
  context.timing_limit_s = limits.timing_s;
  v1::EvalResult result = RunSupervised(
      limits, [&](StageReporter& r) { return Evaluate(request, context, r); }, in_dir, turns);
  if (ProcessesOutlivedTheirKill()) {
    // Processes of the evaluation may still run in it (and rename beneath it): the directory
    // stays, and the server stops (the worker's sandbox removes its scratch once its PID
    // namespace is gone).
    std::fprintf(stderr, "kforge-eval: the evaluation's scratch directory %s is left as it is\n",
                 dir.c_str());
  } else if (!RemoveTree(AT_FDCWD, dir)) {
    g_scratch_left = true;
    std::fprintf(stderr, "kforge-eval: the evaluation's scratch directory %s was not removed\n",
                 dir.c_str());
  }
  if (result.dialect() == v1::DIALECT_UNSPECIFIED) {
    result.set_dialect(InferDialect(request.candidate_source()));
  }
  return result;
}

int Serve(const ServeOptions& options) {
  signal(SIGPIPE, SIG_IGN);  // a vanished client shows up as a failed write
  // From the start, not from the first request's supervisor on: with GPU turns another lane's
  // candidate runs while this server starts, and must not open /proc/<server>/fd or mem.
  prctl(PR_SET_DUMPABLE, 0);
  const int lock_fd = options.turns.lock_fd;
  if (lock_fd >= 0) {
    struct stat st;
    if (lock_fd <= 2 || fstat(lock_fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      std::fprintf(stderr, "kforge-eval --serve: --gpu-lock-fd %d is not an open regular file\n",
                   lock_fd);
      return 1;
    }
    fcntl(lock_fd, F_SETFD, FD_CLOEXEC);  // nothing this server starts keeps it
  }
  int in_fd = -1, out_fd = -1;
  if (!OpenChannel(options.fifo_dir, &in_fd, &out_fd)) return 1;
  std::string error;
  auto interpreter = StartPython(&error);
  if (!interpreter) {
    std::fprintf(stderr, "kforge-eval --serve: %s\n", error.c_str());
    return 1;
  }
  // The warm imports (docs/evaluation.md, "Fork server"), made with the request directory as
  // TMPDIR, HOME and cwd: what they keep of those paths is each request's own directory.
  g_request_dir = MakeUniqueDir("kforge-req-");
  if (g_request_dir.empty()) {
    std::fprintf(stderr, "kforge-eval --serve: cannot create the request directory: %s\n",
                 strerror(errno));
    return 1;
  }
  const char* warm_env = std::getenv("KFORGE_WARM_IMPORTS");
  const std::string warm = warm_env ? warm_env : kWarmImports;
  std::vector<std::string> not_warm;
  if (!warm.empty() && !WarmImports(warm, g_request_dir, &not_warm, &error)) {
    std::fprintf(stderr, "kforge-eval --serve: the warm imports failed: %s\n", error.c_str());
    return 1;
  }
  for (const std::string& w : not_warm) {
    std::fprintf(stderr, "kforge-eval --serve: warm imports: %s\n", w.c_str());
  }
  if (!RemoveTree(AT_FDCWD, g_request_dir)) {
    std::fprintf(stderr, "kforge-eval --serve: cannot empty the request directory %s\n",
                 g_request_dir.c_str());
    return 1;
  }
  // The comparison kernels, compiled once here rather than in every evaluation (compare.h):
  // for the GPU the worker names (it sets TORCH_CUDA_ARCH_LIST from the slot's device).
  if (const char* arch_list = std::getenv("TORCH_CUDA_ARCH_LIST"); arch_list && *arch_list) {
    std::fprintf(stderr, "kforge-eval --serve: %d comparison kernels prepared for %s\n",
                 PrepareCompareKernels(arch_list), arch_list);
  }
  EngineContext context;
  context.cache_dir = options.cache_dir;
  // The reference's timings per task, shared between the slot's evaluations (reference_share.h):
  // KFORGE_SHARE_REFERENCE in the server's environment, "device" (the default: the device
  // clock's), "all" (the call clock's too) or "off".
  const char* share_env = std::getenv("KFORGE_SHARE_REFERENCE");
  std::string share_mode = share_env && *share_env ? share_env : "device";
  if (share_mode != "device" && share_mode != "all" && share_mode != "off") {
    std::fprintf(stderr,
                 "kforge-eval --serve: KFORGE_SHARE_REFERENCE=%s is not device, all or off; "
                 "nothing is shared\n",
                 share_mode.c_str());
    share_mode = "off";
  }
  const bool share = share_mode != "off";
  ReferenceShares shares(share_mode == "all");
  for (;;) {
    std::string frame;
    FrameStatus s = ReadFrame(in_fd, &frame);
    if (s == FrameStatus::kEnd) return 0;
    if (s != FrameStatus::kOk) {
      std::fprintf(stderr, "kforge-eval --serve: the request channel broke mid-frame\n");
      return 1;
    }
    context.process_start = std::chrono::steady_clock::now();
    v1::EvalRequest request;
    v1::EvalResult result;
    if (!request.ParseFromString(frame)) {
      result = BadRequest("the request is not a serialized EvalRequest");
    } else if (lock_fd >= 0 && request.build_only()) {
      // A build runs candidate code from the start of load, before a turn could be taken.
      result = BadRequest(
          "a fork server with GPU turns takes no build-only request (builds ahead run on a "
          "server of their own, with no GPU visible)");
    } else {
      ForkHooks hooks;
      hooks.before = [] { PyOS_BeforeFork(); };
      hooks.parent = [] { PyOS_AfterFork_Parent(); };
      hooks.child = [&] {
        PyOS_AfterFork_Child();
        signal(SIGPIPE, SIG_DFL);  // as in a one-shot evaluation process
        close(in_fd);
        close(out_fd);
        // The scratch directory EvaluateSupervised made becomes HOME and cwd as well.
        const char* dir = std::getenv("TMPDIR");
        if (chdir(dir) != 0) _exit(127);
        // os.environ and tempfile keep their own copies of the environment.
        py::dict scope;
        scope["d"] = dir;
        py::exec(R"(
import os, tempfile
os.environ["TMPDIR"] = os.environ["HOME"] = d
tempfile.tempdir = None
)",
                 scope);
      };
      bool client_keeps_samples = request.keep_samples();
      if (share) {
        client_keeps_samples = shares.Prepare(&request, context.process_start);
      } else {
        ClearSharedReference(&request);
      }
      result = EvaluateSupervised(request, context, hooks, options.turns);
      if (share) {
        shares.Record(request, client_keeps_samples, &result, std::chrono::steady_clock::now());
      }
    }
    // The server stops once it has answered where what the evaluation left could reach the
    // next request: processes that outlived their kill (supervisor.h; ending here ends the
    // worker's sandbox, its PID namespace and everything in it, the GPU turn too), or files in
    // the request directory that could not be removed (the sandbox's scratch goes with it).
    const char* stop = ProcessesOutlivedTheirKill()
                           ? "processes of an evaluation outlived their SIGKILL"
                       : g_scratch_left ? "an evaluation left files that could not be removed"
                                        : nullptr;
    if (stop) result.set_server_stops(true);
    std::string answer =
        options.json_results ? ResultToJson(result) : result.SerializeAsString();
    if (!WriteFrame(out_fd, answer)) {
      std::fprintf(stderr, "kforge-eval --serve: the result channel is closed\n");
      return 1;
    }
    if (stop) {
      std::fprintf(stderr, "kforge-eval --serve: %s; the server stops\n", stop);
      return ProcessesOutlivedTheirKill() ? 3 : 4;
    }
  }
}

}  // namespace kforge::eval
