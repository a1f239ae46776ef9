#include "gpu_worker/eval/serve.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pybind11/embed.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

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

// The template process (serve.h, "Template"): forked by Serve after its warm imports and before
// it reads any request, it forks every evaluation process, so that no process a candidate
// descends from ever held another request (the server's heap keeps freed requests and answers).
// It holds nothing of a request itself: each arrives as descriptors (a memfd with the request,
// the supervisor's pipes), which it hands on unread.
class Template {
 public:
  // Forks it (closing the server's channel and GPU lock descriptors in it); false with errno.
  bool Start(const std::vector<int>& close_in_template);
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // A Spawn failed: the template is gone or broken, and the server stops after its answer.
  bool broken() const { return broken_; }

  // In the server (ForkHooks::spawn): one evaluation process of `request`, a child of the
  // server and the leader of its process group by the time this returns; or -1 with errno
  // (then the template is gone or broken: the server stops).
  pid_t Spawn(const v1::EvalRequest& request, const EngineContext& context, int ctl, int out,
              int turn);

 private:
  pid_t SpawnOnce(const v1::EvalRequest& request, const EngineContext& context, int ctl, int out,
                  int turn);
  [[noreturn]] void Loop();
  [[noreturn]] void RunEvaluation(int request_fd, int ctl, int out, int turn);

  pid_t pid_ = -1;
  int sock_ = -1;  // the server's end in the server, the template's end in it
  bool broken_ = false;
};

Template g_template;
constexpr int kSpawnWaitMs = 10000;

// What travels in the request's memfd before the serialized EvalRequest.
struct SpawnHeader {
  int64_t process_start_ns;  // EngineContext::process_start, on the steady clock
  double timing_budget_s;
  double timing_limit_s;
  uint32_t cache_dir_size;  // then that many bytes of EngineContext::cache_dir
};

bool WriteAllTo(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool Template::Start(const std::vector<int>& close_in_template) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return false;
  const pid_t server = getpid();
  fflush(stdout);
  fflush(stderr);
  PyOS_BeforeFork();
  const pid_t pid = fork();
  if (pid == 0) {
    PyOS_AfterFork_Child();
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // it serves this server alone
    if (getppid() != server) _exit(0);
    close(sv[0]);
    for (int fd : close_in_template) {
      if (fd >= 0) close(fd);
    }
    sock_ = sv[1];
    Loop();
  }
  const int fork_errno = errno;
  PyOS_AfterFork_Parent();
  close(sv[1]);
  if (pid < 0) {
    close(sv[0]);
    errno = fork_errno;
    return false;
  }
  pid_ = pid;
  sock_ = sv[0];
  return true;
}

pid_t Template::Spawn(const v1::EvalRequest& request, const EngineContext& context, int ctl,
                      int out, int turn) {
  const pid_t pid = SpawnOnce(request, context, ctl, out, turn);
  if (pid < 0) broken_ = true;
  return pid;
}

pid_t Template::SpawnOnce(const v1::EvalRequest& request, const EngineContext& context, int ctl,
                          int out, int turn) {
  const int memfd = memfd_create("kforge-request", MFD_CLOEXEC);
  if (memfd < 0) return -1;
  SpawnHeader header{};
  header.process_start_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(context.process_start.time_since_epoch())
          .count();
  header.timing_budget_s = context.timing_budget_s;
  header.timing_limit_s = context.timing_limit_s;
  header.cache_dir_size = static_cast<uint32_t>(context.cache_dir.size());
  const std::string bytes = request.SerializeAsString();
  if (!WriteAllTo(memfd, &header, sizeof header) ||
      !WriteAllTo(memfd, context.cache_dir.data(), context.cache_dir.size()) ||
      !WriteAllTo(memfd, bytes.data(), bytes.size())) {
    const int e = errno;
    close(memfd);
    errno = e;
    return -1;
  }
  int fds[4] = {memfd, ctl, out, turn};
  const size_t nfds = turn >= 0 ? 4 : 3;
  char byte = 'e';
  struct iovec iov = {&byte, 1};
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  struct msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
  struct cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(nfds * sizeof(int));
  std::memcpy(CMSG_DATA(cmsg), fds, nfds * sizeof(int));
  ssize_t sent;
  do {
    sent = sendmsg(sock_, &msg, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  close(memfd);
  if (sent != 1) return -1;
  int32_t answer = 0;
  ssize_t got = -1;
  // A fork takes milliseconds: a template that does not answer in kSpawnWaitMs is stopped or
  // wedged, and taken for gone rather than waited on for the whole request.
  struct pollfd pfd = {sock_, POLLIN, 0};
  int ready;
  do {
    ready = poll(&pfd, 1, kSpawnWaitMs);
  } while (ready < 0 && errno == EINTR);
  if (ready == 0) errno = ETIMEDOUT;
  if (ready > 0) {
    do {
      got = read(sock_, &answer, sizeof answer);
    } while (got < 0 && errno == EINTR);
  }
  if (got != sizeof answer || answer == 0) {
    errno = got < 0 ? errno : EPIPE;  // the template is gone
    return -1;
  }
  if (answer < 0) {
    errno = -answer;
    return -1;
  }
  return static_cast<pid_t>(answer);
}

void Template::Loop() {
  for (;;) {
    char byte;
    struct iovec iov = {&byte, 1};
    alignas(struct cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))] = {};
    struct msghdr msg = {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n;
    do {
      n = recvmsg(sock_, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) _exit(0);  // the server is gone
    int fds[4] = {-1, -1, -1, -1};
    struct cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    size_t nfds = 0;
    if (cmsg != nullptr && cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS) {
      nfds = std::min<size_t>(4, (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      std::memcpy(fds, CMSG_DATA(cmsg), nfds * sizeof(int));
    }
    int32_t answer = -EPROTO;
    int pid_pipe[2] = {-1, -1};
    if (nfds >= 3 && !(msg.msg_flags & MSG_CTRUNC) && pipe2(pid_pipe, O_CLOEXEC) == 0) {
      // Two forks: the evaluation process's parent leaves at once, so that it is orphaned to
      // the server (a child subreaper: RunSupervised), which waits for it as its own child.
      PyOS_BeforeFork();
      const pid_t middle = fork();
      if (middle == 0) {
        const pid_t evaluation = fork();
        if (evaluation == 0) {
          close(pid_pipe[0]);
          close(pid_pipe[1]);
          RunEvaluation(fds[0], fds[1], fds[2], fds[3]);
        }
        int32_t v = evaluation > 0 ? evaluation : -errno;
        if (evaluation > 0) setpgid(evaluation, evaluation);
        WriteAllTo(pid_pipe[1], &v, sizeof v);
        _exit(0);
      }
      answer = middle > 0 ? -EIO : -errno;
      PyOS_AfterFork_Parent();
      close(pid_pipe[1]);
      if (middle > 0) {
        // Once the middle process is reaped, its child is the server's.
        while (waitpid(middle, nullptr, 0) < 0 && errno == EINTR) {
        }
        int32_t v = 0;
        if (read(pid_pipe[0], &v, sizeof v) == sizeof v && v != 0) answer = v;
      }
      close(pid_pipe[0]);
    }
    for (size_t i = 0; i < nfds; ++i) close(fds[i]);
    if (!WriteAllTo(sock_, &answer, sizeof answer)) _exit(0);
  }
}

void Template::RunEvaluation(int request_fd, int ctl, int out, int turn) {
  close(sock_);
  BecomeEvaluationProcess(out);
  PyOS_AfterFork_Child();
  signal(SIGPIPE, SIG_DFL);  // as in a one-shot evaluation process
  std::string data;
  struct stat st;
  if (fstat(request_fd, &st) == 0 && st.st_size > 0) {
    data.resize(static_cast<size_t>(st.st_size));
    if (pread(request_fd, data.data(), data.size(), 0) != st.st_size) data.clear();
  }
  close(request_fd);
  SpawnHeader header;
  v1::EvalRequest request;
  if (data.size() < sizeof header) _exit(127);
  std::memcpy(&header, data.data(), sizeof header);
  if (data.size() < sizeof header + header.cache_dir_size ||
      !request.ParseFromArray(
          data.data() + sizeof header + header.cache_dir_size,
          static_cast<int>(data.size() - sizeof header - header.cache_dir_size))) {
    _exit(127);
  }
  EngineContext context;
  context.cache_dir.assign(data.data() + sizeof header, header.cache_dir_size);
  context.process_start =
      std::chrono::steady_clock::time_point(std::chrono::nanoseconds(header.process_start_ns));
  context.timing_budget_s = header.timing_budget_s;
  context.timing_limit_s = header.timing_limit_s;
  data.clear();
  data.shrink_to_fit();
  // The request directory EvaluateSupervised made is TMPDIR, HOME and cwd.
  const char* dir = g_request_dir.c_str();
  setenv("TMPDIR", dir, 1);
  setenv("HOME", dir, 1);
  if (chdir(dir) != 0) _exit(127);
  {
    // os.environ and tempfile keep their own copies of the environment.
    py::dict scope;
    scope["d"] = dir;
    py::exec(R"(
import os, tempfile
os.environ["TMPDIR"] = os.environ["HOME"] = d
tempfile.tempdir = None
)",
             scope);
  }
  RunEvaluationAndExit(
      ctl, turn, [&](StageReporter& reporter) { return Evaluate(request, context, reporter); });
}

constexpr char kDevShm[] = "/dev/shm";

// The names in /dev/shm, or nothing with errno where it does not open (never through a link).
std::optional<std::vector<std::string>> DevShmEntries(int* dir_fd) {
  *dir_fd = open(kDevShm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (*dir_fd < 0) return std::nullopt;
  DIR* dir = fdopendir(dup(*dir_fd));
  if (dir == nullptr) {
    close(*dir_fd);
    return std::nullopt;
  }
  std::vector<std::string> names;
  while (struct dirent* e = readdir(dir)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      names.emplace_back(e->d_name);
    }
  }
  closedir(dir);
  return names;
}

// ServeOptions::clear_dev_shm, after an evaluation: false when something of this server's user
// is left there.
bool ClearDevShm() {
  int dir_fd;
  std::optional<std::vector<std::string>> names = DevShmEntries(&dir_fd);
  if (!names) return errno == ENOENT;
  bool all = true;
  for (const std::string& name : *names) {
    struct stat st;
    if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    // Another user's entry cannot come from this server's evaluations.
    if (st.st_uid != geteuid()) continue;
    const bool gone = S_ISDIR(st.st_mode)
                          ? RemoveTree(dir_fd, name)
                          : unlinkat(dir_fd, name.c_str(), 0) == 0 || errno == ENOENT;
    if (!gone) {
      std::fprintf(stderr, "kforge-eval: %s/%s was not removed\n", kDevShm, name.c_str());
      all = false;
    }
  }
  close(dir_fd);
  return all;
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
  if (g_template.running()) {
    // The fork server's evaluation process comes from its template, never from this process.
    in_dir.spawn = [&](int ctl, int out, int turn) {
      return g_template.Spawn(request, context, ctl, out, turn);
    };
    in_dir.spare = g_template.pid();
  }
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
  // The template, from which every evaluation process comes: made here, before any request.
  if (!g_template.Start({in_fd, out_fd, lock_fd})) {
    std::fprintf(stderr, "kforge-eval --serve: cannot fork the template process: %s\n",
                 strerror(errno));
    return 1;
  }
  // A /dev/shm this server may clear is its own: the sandbox's fresh one is empty at its start.
  bool clear_dev_shm = options.clear_dev_shm;
  if (clear_dev_shm) {
    int dir_fd;
    std::optional<std::vector<std::string>> names = DevShmEntries(&dir_fd);
    if (names) close(dir_fd);
    if (!names || !names->empty()) {
      std::fprintf(stderr,
                   "kforge-eval --serve: --clear-dev-shm: %s is %s, so not this server's own; "
                   "it is not cleared\n",
                   kDevShm, names ? "not empty" : "not a directory that opens");
      clear_dev_shm = false;
    }
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
      bool client_keeps_samples = request.keep_samples();
      if (share) {
        client_keeps_samples = shares.Prepare(&request, context.process_start);
      } else {
        ClearSharedReference(&request);
      }
      result = EvaluateSupervised(request, context, {}, options.turns);
      if (g_template.broken()) {
        // No evaluation ran: the template is gone (killed, stopped, out of memory), which is
        // not this candidate's doing. No answer, so that the client evaluates the request
        // elsewhere (the worker: a one-shot child) instead of storing the failure as its
        // verdict.
        std::fprintf(stderr,
                     "kforge-eval --serve: its template process is gone (%s); the server "
                     "stops without an answer\n",
                     result.reason().c_str());
        return 1;
      }
      // What the evaluation left in /dev/shm goes with it, unless its processes may still run
      // (the server stops then anyway).
      if (clear_dev_shm && !ProcessesOutlivedTheirKill() && !ClearDevShm()) {
        g_scratch_left = true;
      }
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
      return ProcessesOutlivedTheirKill() ? 3 : g_scratch_left ? 4 : 1;
    }
  }
}

}  // namespace kforge::eval
