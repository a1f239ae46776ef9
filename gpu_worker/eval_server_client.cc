#include "gpu_worker/eval_server_client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/base/frames.h"

namespace kforge {
namespace {

using Clock = std::chrono::steady_clock;

// Never negative: the frame functions read a negative timeout as "wait for ever".
double SecondsLeft(Clock::time_point deadline) {
  return std::max(0.0, std::chrono::duration<double>(deadline - Clock::now()).count());
}

std::string Tail(const std::string& s, size_t n) {
  return s.size() > n ? s.substr(s.size() - n) : s;
}

}  // namespace

EvalServerClient::EvalServerClient(EvalServerConfig config) : config_(std::move(config)) {
  config_.policy.wall_limit_s = 0;  // lives across requests; each request has its deadline
}

EvalServerClient::~EvalServerClient() { Stop(false); }

bool EvalServerClient::Start(std::string* why_not) {
  std::vector<std::string> argv = {config_.eval_binary, "--serve", "."};
  if (!config_.cache_dir.empty()) {
    argv.push_back("--cache-dir");
    argv.push_back(config_.cache_dir);
  }
  SandboxPolicy policy = config_.policy;
  // With the file view (root, namespaces required: a sandbox that may run without them builds
  // no view, and its /dev/shm is the machine's, other lanes' files included) the server's
  // /dev/shm is the sandbox's own: what an evaluation leaves there goes before the next
  // (serve.h). The server also checks that it starts empty.
  if (geteuid() == 0 && policy.view.enabled && policy.require_namespaces) {
    argv.push_back("--clear-dev-shm");
  }
  int lock_fd = -1;
  if (!config_.gpu_lock_path.empty()) {
    const int opened = open(config_.gpu_lock_path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    // Above the standard descriptors, which the child replaces (a worker started with one of
    // them closed would otherwise get the lock there, and its server would refuse it).
    lock_fd = opened < 0 ? -1 : fcntl(opened, F_DUPFD_CLOEXEC, 3);
    if (lock_fd < 0) {
      *why_not =
          "the GPU's lock file " + config_.gpu_lock_path + " did not open: " + strerror(errno);
      if (opened >= 0) close(opened);
      return false;
    }
    close(opened);
    policy.pass_fd = lock_fd;
    argv.insert(argv.end(), {"--gpu-lock-fd", std::to_string(lock_fd)});
    if (config_.gpu_wait_s > 0) {
      argv.insert(argv.end(), {"--gpu-wait-s", std::to_string(config_.gpu_wait_s)});
    }
  }
  sandbox_ = std::make_unique<Sandboxed>(policy);
  const bool started = sandbox_->Start(argv, config_.extra_env);
  if (lock_fd >= 0) close(lock_fd);  // the server has its own now
  if (!started) {
    *why_not = "the server did not start: " + sandbox_->result().error;
    sandbox_.reset();
    return false;
  }
  pid_ = sandbox_->pid();
  const std::string dir = sandbox_->scratch_dir();  // valid until Wait returns
  running_ = true;
  waiter_ = std::thread([this] {
    sandbox_->Wait();
    running_ = false;
  });
  // The server makes both FIFOs, then blocks opening "requests" for reading: once that open
  // can succeed for writing, "results" exists too.
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(config_.start_timeout_s));
  const std::string requests = dir + "/requests", results = dir + "/results";
  while ((request_fd_ = open(requests.c_str(),
                             O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)) < 0) {
    if ((errno != ENOENT && errno != ENXIO) || !running_ || Clock::now() > deadline) {
      *why_not = std::string("the server's request channel did not open: ") +
                 (running_ ? strerror(errno) : "the server ended");
      Stop(true);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the server is starting
  }
  result_fd_ = open(results.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (result_fd_ < 0) {
    *why_not = std::string("the server's result channel did not open: ") + strerror(errno);
    Stop(true);
    return false;
  }
  fcntl(result_fd_, F_SETFL, fcntl(result_fd_, F_GETFL) & ~O_NONBLOCK);
  return true;
}

void EvalServerClient::Stop(bool kill_now) {
  if (request_fd_ >= 0) close(request_fd_);  // end of input: the server exits
  request_fd_ = -1;
  if (waiter_.joinable()) {
    auto grace = Clock::now() + std::chrono::seconds(kill_now ? 0 : 5);
    while (running_ && Clock::now() < grace) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (running_) kill(-pid_, SIGKILL);
    waiter_.join();
    last_stderr_ = Tail(sandbox_->result().stderr_data, 500);
  }
  if (result_fd_ >= 0) close(result_fd_);
  result_fd_ = -1;
  sandbox_.reset();  // removes the scratch directory
  pid_ = -1;
}

// A server that died leaves a FIFO without a reader: the write fails with EPIPE and a
// SIGPIPE for this thread, which is blocked here and consumed rather than ending the worker.
bool EvalServerClient::WriteRequest(const std::string& bytes, double timeout_s) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  bool ok = WriteFrame(request_fd_, bytes, timeout_s);
  if (!ok) {
    struct timespec zero = {0, 0};
    sigtimedwait(&pipe_set, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

std::optional<v1::EvalResult> EvalServerClient::Evaluate(const v1::EvalRequest& request,
                                                         double deadline_s,
                                                         std::string* why_not,
                                                         const std::atomic<bool>* cancel,
                                                         bool* cancelled) {
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(deadline_s));
  if (sandbox_ && !running_) Stop(true);  // died since the last request: start afresh
  if (!sandbox_ && !Start(why_not)) return std::nullopt;
  std::string answer;
  FrameStatus status = FrameStatus::kBroken;
  if (WriteRequest(request.SerializeAsString(), SecondsLeft(deadline))) {
    // Until the answer starts arriving, look at `cancel` every 0.1 s; the frame itself then
    // comes at once.
    while (cancel && !cancel->load() && SecondsLeft(deadline) > 0) {
      pollfd p{result_fd_, POLLIN, 0};
      int ms = static_cast<int>(std::min(100.0, SecondsLeft(deadline) * 1000) + 1);
      int ready = poll(&p, 1, ms);
      if (ready < 0 && errno == EINTR) continue;
      if (ready != 0) break;  // readable, hung up, or an error: ReadFrame says which
    }
    if (cancel && cancel->load()) {
      Stop(true);
      if (cancelled) *cancelled = true;
      *why_not = "cancelled before the server answered; the server was killed";
      return std::nullopt;
    }
    status = ReadFrame(result_fd_, &answer, SecondsLeft(deadline));
  }
  v1::EvalResult result;
  if (status == FrameStatus::kOk && result.ParseFromString(answer)) {
    // The server stops after this answer (processes of that evaluation outlived their kill,
    // gpu_worker/eval/supervisor.h, or it left files it could not remove: serve.h); the next
    // request goes to a fresh one.
    if (result.server_stops()) Stop(false);
    return result;
  }
  bool timed_out = status == FrameStatus::kTimeout;
  Stop(true);
  *why_not = timed_out ? "the server gave no answer within " + std::to_string(deadline_s) +
                             " s and was killed"
                       : "the server ended or broke the protocol mid-request";
  if (!last_stderr_.empty()) *why_not += "; its last output: " + last_stderr_;
  return std::nullopt;
}

}  // namespace kforge
