#include "gpu_worker/sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <utility>

#include "common/base/files.h"
#include "common/base/log.h"
#include "gpu_worker/sandbox_enter.h"

namespace kforge {

struct SandboxChildPlan {
  struct Limit {
    int resource;
    rlim_t soft;
    rlim_t hard;
  };
  Limit limits[8];
  int num_limits = 0;
  bool no_network = false;
  bool drop_privileges = false;
  bool require_namespaces = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<sock_filter> filter;
  sock_fprog prog{};  // points into `filter`; len 0: no filter
  bool view = false;  // build `view_steps` when the mount namespace is there
  std::vector<MountStep> view_steps;
  std::string scratch;
  std::vector<std::string> executables;  // empty: no restriction
  int lifeline = -1;                     // read end of the worker's lifeline (WorkerLifeline)
  int pass_fd = -1;                      // SandboxPolicy::pass_fd
};

namespace {

// ---- In the child, between fork and exec: async-signal-safe calls only. ----

// Says on the child's stderr which setup step failed (and on which path); the child then
// exits with 126.
bool Fail(const char* step, const char* path = nullptr) {
  int e = errno;
  char buf[512];
  size_t n = 0;
  auto put = [&](const char* s) {
    while (*s && n < sizeof buf - 1) buf[n++] = *s++;
  };
  put("kforge sandbox: ");
  put(step);
  if (path && *path) {
    put(" (");
    put(path);
    put(")");
  }
  put(" failed, errno ");
  char digits[12];
  int d = 0;
  do {
    digits[d++] = static_cast<char>('0' + e % 10);
    e /= 10;
  } while (e > 0 && d < 12);
  while (d > 0 && n < sizeof buf - 1) buf[n++] = digits[--d];
  buf[n++] = '\n';
  (void)!write(2, buf, n);
  return false;
}

void SetAllSignals(void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  for (int sig = 1; sig < 32; ++sig) {
    // SIGCHLD stays default: ignoring it would make the kernel reap children we wait for.
    if (sig == SIGKILL || sig == SIGSTOP || (sig == SIGCHLD && handler == SIG_IGN)) continue;
    sigaction(sig, &sa, nullptr);
  }
}

// The relay and the init keep no descriptor of the worker's (pipes, sockets) but `keep` and
// `also` (-1: none).
void CloseAllBut(int keep, int also = -1) {
  unsigned lo = static_cast<unsigned>(also < 0 || keep < also ? keep : also);
  unsigned hi = static_cast<unsigned>(also < 0 || keep > also ? keep : also);
  if (lo > 0) close_range(0, lo - 1, 0);
  if (hi > lo + 1) close_range(lo + 1, hi - 1, 0);
  close_range(hi + 1, ~0U, 0);
}

// Ends this process the way `status` (a wait status) says the child ended.
[[noreturn]] void ExitLike(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    sigaction(sig, &sa, nullptr);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
    kill(getpid(), sig);
    _exit(128 + sig);
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 126);
}

// The process the worker forked, outside the new PID namespace: waits for the namespace's
// init and ends like the child did. It ignores signals so that SignalGroup reaches the child.
// When the worker's process ends (its lifeline reads end-of-file, whatever killed it) it kills
// the init, and with it everything in the namespace: a fork server outlives no worker.
[[noreturn]] void RelayUntilExit(pid_t init, int status_fd, int lifeline) {
  SetAllSignals(SIG_IGN);
  CloseAllBut(status_fd, lifeline);
  int status = 126 << 8;
  const int init_fd = static_cast<int>(syscall(SYS_pidfd_open, init, 0));
  for (bool killed = false;;) {
    const pid_t r = waitpid(init, &status, killed ? 0 : WNOHANG);
    if (r == init || (r < 0 && errno != EINTR)) break;
    if (r != 0) continue;
    // Both descriptors at once where pidfd_open exists (Linux 5.3); else a 100 ms poll.
    struct pollfd fds[2] = {{lifeline, POLLIN, 0}, {init_fd, POLLIN, 0}};
    const int n = poll(fds, init_fd >= 0 ? 2 : 1, init_fd >= 0 ? -1 : 100);
    if (n > 0 && fds[0].revents != 0) {
      kill(init, SIGKILL);
      killed = true;
    } else if (n < 0 && errno != EINTR) {
      usleep(100 * 1000);  // no busy loop where poll itself fails; waitpid above still reaps
    }
  }
  int child_status;
  if (read(status_fd, &child_status, sizeof child_status) == sizeof child_status) {
    ExitLike(child_status);
  }
  ExitLike(status);
}

// PID 1 of the namespace: reaps orphans until the child ends, reports its status and exits,
// upon which the kernel kills whatever is left in the namespace.
[[noreturn]] void InitUntilExit(pid_t child, int status_fd) {
  SetAllSignals(SIG_IGN);
  CloseAllBut(status_fd);
  for (;;) {
    int status;
    pid_t r = waitpid(-1, &status, 0);
    if (r == child) {
      (void)!write(status_fd, &status, sizeof status);
      _exit(0);
    }
    if (r < 0 && errno != EINTR) _exit(126);
  }
}

// Network, mount and PID namespaces where permitted (root). Returns true in the process that
// goes on to confine itself and exec: the caller, or the second process of the new PID
// namespace (the caller becomes the relay, the first process the init).
bool EnterNamespaces(const SandboxChildPlan& plan) {
  // Without permission the seccomp socket rule still keeps the child off the network.
  if (plan.no_network) unshare(CLONE_NEWNET);
  if (unshare(CLONE_NEWNS) != 0) {
    return plan.require_namespaces ? Fail("unshare of the mount namespace (CAP_SYS_ADMIN)") : true;
  }
  // Private first, so the /proc mounted below never propagates to the worker's namespace.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Fail("making mounts private");
  }
  if (unshare(CLONE_NEWPID) != 0) {
    return plan.require_namespaces ? Fail("unshare of the PID namespace (CAP_SYS_ADMIN)") : true;
  }
  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0) return Fail("pipe");
  pid_t init = _Fork();
  if (init < 0) return Fail("fork");
  if (init > 0) {
    close(status_pipe[1]);
    RelayUntilExit(init, status_pipe[0], plan.lifeline);
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The view has its own /proc of this PID namespace; without it the host's is covered.
  const char* where = nullptr;
  if (plan.view) {
    if (const char* failed = EnterView(plan.view_steps, plan.scratch, plan.scratch, &where)) {
      Fail(failed, where);
      _exit(126);
    }
  } else if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    Fail("mounting /proc");
    _exit(126);
  }
  pid_t child = _Fork();
  if (child < 0) {
    Fail("fork");
    _exit(126);
  }
  if (child > 0) {
    close(status_pipe[0]);
    InitUntilExit(child, status_pipe[1]);
  }
  close(status_pipe[0]);
  close(status_pipe[1]);
  return true;
}

// Limits, identity, no_new_privs and the filter, in the process that execs.
bool Confine(const SandboxChildPlan& plan) {
  SetAllSignals(SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // A descriptor the worker forgot to mark close-on-exec must not reach the child.
  if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) return Fail("close_range");
  if (plan.pass_fd >= 0 && fcntl(plan.pass_fd, F_SETFD, 0) != 0) {
    return Fail("keeping the passed descriptor");
  }
  for (int i = 0; i < plan.num_limits; ++i) {
    struct rlimit r = {plan.limits[i].soft, plan.limits[i].hard};
    if (setrlimit(plan.limits[i].resource, &r) != 0) return Fail("setrlimit");
  }
  if (plan.drop_privileges) {
    // Raw syscalls: glibc's wrappers would try to change every thread of the parent.
    if (syscall(SYS_setgroups, 0, nullptr) != 0) return Fail("setgroups");
    if (syscall(SYS_setresgid, plan.gid, plan.gid, plan.gid) != 0) return Fail("setresgid");
    if (syscall(SYS_setresuid, plan.uid, plan.uid, plan.uid) != 0) return Fail("setresuid");
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return Fail("no_new_privs");
  const char* where = nullptr;
  if (const char* failed = RestrictExecution(plan.executables, &where)) {
    return Fail(failed, where);
  }
  if (plan.prog.len > 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &plan.prog) != 0) {
    return Fail("seccomp");
  }
  return true;
}

// ---- In the worker, before the fork. ----

// The read end of a pipe whose write end this process alone keeps (close-on-exec, never
// closed): each sandbox's relay polls it and reads end-of-file once this process has ended,
// however it ended (RelayUntilExit). One per process: a forked process makes its own.
int WorkerLifeline() {
  static std::mutex mu;
  static pid_t owner = 0;
  static int read_end = -1;
  std::lock_guard<std::mutex> lock(mu);
  if (owner != getpid()) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    // Above the standard descriptors, which a child replaces (a worker started with stdin
    // closed would otherwise get the pipe there).
    for (int& fd : fds) {
      const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
      if (moved >= 0) {
        close(fd);
        fd = moved;
      }
    }
    owner = getpid();
    read_end = fds[0];
  }
  return read_end;
}

bool CompileFilter(const SandboxPolicy& policy, std::vector<sock_filter>* out,
                   std::string* error) {
  std::unique_ptr<void, void (*)(scmp_filter_ctx)> ctx(seccomp_init(SCMP_ACT_ALLOW),
                                                        seccomp_release);
  if (!ctx) {
    *error = "seccomp_init failed";
    return false;
  }
  int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  std::string failed = "bad-arch action";
  auto add = [&](uint32_t action, const char* name, std::vector<scmp_arg_cmp> args = {}) {
    if (rc != 0) return;
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return;  // not a syscall of this architecture
    rc = seccomp_rule_add_array(ctx.get(), action, nr, static_cast<unsigned>(args.size()),
                                args.data());
    failed = name;
  };
  const uint32_t deny = SCMP_ACT_ERRNO(EPERM);
  if (policy.no_network) {
    for (int family : {AF_INET, AF_INET6, AF_PACKET}) {
      add(deny, "socket", {{0, SCMP_CMP_EQ, static_cast<scmp_datum_t>(family), 0}});
    }
  }
  if (policy.no_network || policy.seccomp) {
    // io_uring can open and connect sockets without the socket() syscall.
    for (const char* name : {"io_uring_setup", "io_uring_enter", "io_uring_register"}) {
      add(deny, name);
    }
  }
  if (policy.seccomp) {
    for (const char* name :
         {"ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2", "pivot_root",
          "chroot", "reboot", "kexec_load", "kexec_file_load", "init_module", "finit_module",
          "delete_module", "bpf", "perf_event_open", "keyctl", "add_key", "request_key",
          "setns", "unshare", "userfaultfd", "fsopen", "fsconfig", "fsmount", "fspick",
          "move_mount", "open_tree", "mount_setattr"}) {
      add(deny, name);
    }
    for (uint64_t flag : {CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                          CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET}) {
      add(deny, "clone", {{0, SCMP_CMP_MASKED_EQ, flag, flag}});
    }
    // clone3 passes its flags in memory seccomp cannot read; ENOSYS makes glibc use clone.
    add(SCMP_ACT_ERRNO(ENOSYS), "clone3");
  }
  if (rc != 0) {
    *error = "seccomp rule for " + failed + ": " + std::strerror(-rc);
    return false;
  }
  int fd = memfd_create("kforge-seccomp", MFD_CLOEXEC);
  if (fd < 0) {
    *error = std::string("memfd_create: ") + std::strerror(errno);
    return false;
  }
  rc = seccomp_export_bpf(ctx.get(), fd);
  struct stat st;
  bool ok = rc == 0 && fstat(fd, &st) == 0 && st.st_size > 0 &&
            st.st_size % static_cast<off_t>(sizeof(sock_filter)) == 0;
  if (ok) {
    out->resize(static_cast<size_t>(st.st_size) / sizeof(sock_filter));
    ok = pread(fd, out->data(), static_cast<size_t>(st.st_size), 0) == st.st_size;
  }
  close(fd);
  if (!ok) *error = "seccomp_export_bpf failed";
  return ok;
}

bool LookUpUser(const std::string& name, uid_t* uid, gid_t* gid, std::string* error) {
  struct passwd pw, *found = nullptr;
  std::vector<char> buf(16384);
  if (getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || !found) {
    *error = "unknown user '" + name + "' (run_as_user)";
    return false;
  }
  *uid = pw.pw_uid;
  *gid = pw.pw_gid;
  return true;
}

void AddLimit(SandboxChildPlan* plan, int resource, uint64_t soft, uint64_t hard) {
  if (soft == 0) return;  // not set: the worker's own limit applies
  // A sandbox never grants more than the worker has (and could not without privileges).
  struct rlimit own;
  if (getrlimit(resource, &own) == 0 && own.rlim_max != RLIM_INFINITY) {
    soft = std::min<uint64_t>(soft, own.rlim_max);
    hard = std::min<uint64_t>(hard, own.rlim_max);
  }
  plan->limits[plan->num_limits++] = {resource, soft, hard};
}

bool BuildPlan(const SandboxPolicy& policy, SandboxChildPlan* plan, std::string* error) {
  // SIGXCPU at the soft limit; the hard limit's SIGKILL a second later if it is handled.
  AddLimit(plan, RLIMIT_CPU, policy.cpu_seconds, policy.cpu_seconds + 1);
  AddLimit(plan, RLIMIT_AS, policy.address_space_bytes, policy.address_space_bytes);
  AddLimit(plan, RLIMIT_NOFILE, policy.open_files, policy.open_files);
  AddLimit(plan, RLIMIT_NPROC, policy.processes, policy.processes);
  AddLimit(plan, RLIMIT_FSIZE, policy.file_size_bytes, policy.file_size_bytes);
  plan->limits[plan->num_limits++] = {RLIMIT_CORE, 0, 0};  // a crashed CUDA process is huge
  plan->no_network = policy.no_network;
  plan->require_namespaces = policy.require_namespaces;
  if (geteuid() == 0 && !policy.run_as_user.empty()) {
    plan->drop_privileges = true;
    if (!LookUpUser(policy.run_as_user, &plan->uid, &plan->gid, error)) return false;
  }
  if (!policy.executables.empty()) {
    plan->executables = ExpandPrefixPatterns(policy.executables, SystemPathProbe());
  }
  if (policy.no_network || policy.seccomp) {
    if (!CompileFilter(policy, &plan->filter, error)) return false;
    plan->prog.len = static_cast<unsigned short>(plan->filter.size());
    plan->prog.filter = plan->filter.data();
  }
  return true;
}

std::vector<std::string> ChildEnvironment(const SandboxPolicy& policy,
                                          const std::string& scratch,
                                          std::vector<std::string> extra_env) {
  std::vector<std::string> env;
  for (const auto& name : policy.pass_env) {
    if (const char* value = std::getenv(name.c_str())) env.push_back(name + "=" + value);
  }
  for (const char* name : {"HOME=", "TMPDIR=", "PWD="}) env.push_back(name + scratch);
  for (auto& e : extra_env) env.push_back(std::move(e));
  return env;
}

}  // namespace

Sandboxed::Sandboxed(SandboxPolicy policy) : policy_(std::move(policy)) {}

Sandboxed::~Sandboxed() {
  process_.reset();  // kills the group first: nothing may still write into the scratch
  RemoveScratch();
}

namespace {

// flock's errors that mean the file system cannot lock, not that someone holds the lock.
bool LockUnsupported(int e) {
  return e == EBADF || e == ENOLCK || e == EOPNOTSUPP || e == ENOSYS || e == EINVAL;
}

}  // namespace

DirectoryClaim& DirectoryClaim::operator=(DirectoryClaim&& other) noexcept {
  if (this != &other) {
    Release();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

bool DirectoryClaim::Claim(const std::string& dir, std::string* error) {
  Release();
  fd_ = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd_ < 0) {
    *error = "cannot open the directory " + dir + " to claim it: " + std::strerror(errno);
    return false;
  }
  if (flock(fd_, LOCK_EX | LOCK_NB) == 0) return true;
  const int e = errno;
  if (LockUnsupported(e)) {
    // A file system without flock on directories (NFS wants a descriptor open for writing).
    static std::once_flag once;
    std::call_once(once, [&] {
      LogWarning("directories cannot be locked here; a dead worker's stay",
                 {{"path", dir}, {"error", std::strerror(e)}});
    });
    return true;
  }
  *error = "cannot lock the directory " + dir + ": " + std::strerror(e);
  Release();
  return false;
}

void DirectoryClaim::Release() {
  if (fd_ >= 0) close(fd_);  // drops the flock
  fd_ = -1;
}

namespace {

// SweepStaleScratch at most once a minute per process: a worker killed and restarted within
// the minimum age leaves directories its successor's first sweep is too early for.
void SweepNowAndThen(const std::string& root) {
  static std::atomic<int64_t> last{INT64_MIN / 2};
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t seen = last.load();
  if (now - seen < 60 || !last.compare_exchange_strong(seen, now)) return;
  SweepStaleScratch(root);
}

}  // namespace

bool Sandboxed::Start(std::vector<std::string> argv, std::vector<std::string> extra_env,
                      std::string stdin_data) {
  auto plan = std::make_unique<SandboxChildPlan>();
  std::string error;
  if (!BuildPlan(policy_, plan.get(), &error)) {
    result_.error = "sandbox: " + error;
    return false;
  }
  // Its real name: the view binds it where the child's HOME says it is.
  std::string root = policy_.scratch_root;
  if (char* real = realpath(root.c_str(), nullptr)) {
    root = real;
    free(real);
  }
  SweepNowAndThen(root);
  std::string dir = root + "/kforge-sandbox-XXXXXX";
  if (!mkdtemp(dir.data())) {
    result_.error = "sandbox: cannot create a scratch directory in " + policy_.scratch_root +
                    ": " + std::strerror(errno);
    return false;
  }
  scratch_dir_ = dir;
  // Held until the directory is removed, so that no worker's sweep takes it for a dead one's.
  if (!scratch_claim_.Claim(dir, &error)) {
    result_.error = "sandbox: " + error;
    RemoveScratch();
    return false;
  }
  if (plan->drop_privileges && chown(dir.c_str(), plan->uid, plan->gid) != 0) {
    result_.error = "sandbox: chown " + dir + ": " + std::strerror(errno);
    RemoveScratch();
    return false;
  }
  if (geteuid() == 0 && policy_.view.enabled) {
    absl::StatusOr<std::vector<MountStep>> steps =
        PlanView(policy_.view, scratch_dir_, SystemPathProbe());
    if (!steps.ok()) {
      result_.error = "sandbox: " + std::string(steps.status().message());
      RemoveScratch();
      return false;
    }
    plan->view = true;
    plan->view_steps = std::move(*steps);
    plan->scratch = scratch_dir_;
  }
  // The program the sandbox was asked to run may always be run.
  if (!plan->executables.empty() && !argv.empty()) plan->executables.push_back(argv[0]);
  SpawnOptions options;
  options.argv = std::move(argv);
  options.env = ChildEnvironment(policy_, scratch_dir_, std::move(extra_env));
  options.inherit_env = false;
  options.cwd = scratch_dir_;
  options.stdin_data = std::move(stdin_data);
  options.wall_limit_s = policy_.wall_limit_s;
  options.max_output_bytes = policy_.max_output_bytes;
  plan->lifeline = WorkerLifeline();
  plan->pass_fd = policy_.pass_fd;
  const SandboxChildPlan* p = plan.get();
  options.child_setup = [p] { return EnterNamespaces(*p) && Confine(*p); };
  plan_ = std::move(plan);
  process_ = std::make_unique<Subprocess>();
  if (!process_->Start(std::move(options))) {
    result_ = process_->result();
    process_.reset();
    RemoveScratch();
    return false;
  }
  return true;
}

pid_t Sandboxed::pid() const { return process_ ? process_->pid() : -1; }

void Sandboxed::SignalGroup(int sig) {
  if (process_) process_->SignalGroup(sig);
}

const SubprocessResult& Sandboxed::Wait() {
  if (!process_) return result_;
  result_ = process_->Wait();
  process_.reset();
  RemoveScratch();
  return result_;
}

void Sandboxed::RemoveScratch() {
  if (scratch_dir_.empty()) return;
  // Never following a link, so that a child which swapped a directory for one cannot make the
  // worker delete anything outside the scratch (kforge::RemoveTree).
  if (!RemoveTree(AT_FDCWD, scratch_dir_)) {
    LogWarning("sandbox scratch directory not fully removed", {{"path", scratch_dir_}});
  }
  scratch_dir_.clear();
  scratch_claim_.Release();
}

int SweepStaleScratch(const std::string& root, double min_age_s) {
  static constexpr size_t kSuffix = 6;  // mkdtemp's XXXXXX
  auto swept_kind = [](const std::string& name) {
    for (const std::string prefix : {"kforge-sandbox-", "kforge-gpu-turns-"}) {
      if (name.size() == prefix.size() + kSuffix && name.rfind(prefix, 0) == 0) return true;
    }
    return false;
  };
  const int root_fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) {
    if (errno != ENOENT) LogWarning("cannot read the scratch root", {{"root", root}});
    return 0;
  }
  std::vector<std::string> names;
  if (DIR* d = fdopendir(fcntl(root_fd, F_DUPFD_CLOEXEC, 0))) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (swept_kind(name)) names.push_back(std::move(name));
    }
    closedir(d);
  }
  int removed = 0;
  const time_t now = time(nullptr);
  for (const std::string& name : names) {
    // Opened and judged by one descriptor, and removed only while the name still leads to it:
    // a process that renames directories meanwhile cannot have a live one removed for it.
    const int fd = openat(root_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st;
    if (fstat(fd, &st) == 0 && difftime(now, std::max(st.st_mtime, st.st_ctime)) >= min_age_s &&
        flock(fd, LOCK_EX | LOCK_NB) == 0) {  // its owner is gone
      if (RemoveTree(root_fd, name, nullptr, &st)) {
        ++removed;
      } else {
        LogWarning("a dead worker's directory not fully removed", {{"path", root + "/" + name}});
      }
    }
    close(fd);
  }
  close(root_fd);
  if (removed > 0) {
    LogInfo("removed dead workers' scratch and GPU turns' directories",
            {{"count", std::to_string(removed)}, {"root", root}});
  }
  return removed;
}

SubprocessResult RunSandboxed(const SandboxPolicy& policy, std::vector<std::string> argv,
                              std::vector<std::string> extra_env, std::string stdin_data) {
  Sandboxed sandboxed(policy);
  if (!sandboxed.Start(std::move(argv), std::move(extra_env), std::move(stdin_data))) {
    return sandboxed.result();
  }
  return sandboxed.Wait();
}

}  // namespace kforge
