// The worker's sandbox: runs one kforge-eval (or any) child confined, so that a candidate
// kernel cannot reach the network, the worker's files or other evaluations, and cannot outlive
// its evaluation.
//
// What a sandboxed child gets (Linux 5.11 or later):
//   - its own process group, rlimits (CPU seconds, address space, open files, processes, file
//     size, no core dumps), a clean environment (a few names passed through, plus extra_env);
//   - a private scratch directory <scratch_root>/kforge-sandbox-XXXXXX (0700), its cwd, HOME
//     and TMPDIR, removed after the child ends;
//   - no network: its own empty network namespace when the worker may create one (root), and
//     in every case a seccomp rule that fails socket(AF_INET/AF_INET6/AF_PACKET) with EPERM
//     (AF_UNIX stays: CUDA and Python use it) and denies io_uring (which can open sockets);
//   - no_new_privs and a seccomp filter failing with EPERM (not killing, so the child reports a
//     clear error): ptrace, process_vm_readv/writev, mount and the new mount API, umount2,
//     pivot_root, chroot, reboot, kexec_*, *_module, bpf, perf_event_open, keyctl, add_key,
//     request_key, setns, unshare, userfaultfd, and clone with any CLONE_NEW* flag. clone3 fails
//     with ENOSYS because seccomp cannot read its flags; glibc then falls back to clone, which
//     it can. Syscalls of another ABI (32-bit int 0x80, x32) kill the process.
//   - when the worker runs as root: the child runs as `run_as_user` (nobody by default), with
//     no supplementary groups, owning its scratch directory. That protects the worker's files
//     and the worker process itself (/proc/<pid>/mem, signals), and makes RLIMIT_NPROC count
//     the sandbox's processes rather than the worker's.
//   - when the worker runs as root: its own PID and mount namespaces, with a fresh /proc that
//     shows only the sandbox's processes. A tiny init (PID 1 of the namespace) reaps orphans;
//     when the child ends, the init exits and the kernel kills every process left in the
//     namespace, including those that left the process group with setsid()/setpgid().
//   - when the worker runs as root (the mount namespace): a file view of its own (`view`,
//     sandbox_view.h; issue 15). The child's root is a fresh read-only tmpfs holding only the
//     system paths (/usr, /etc minus secrets, /sys...), what its program reads (the worker
//     adds kforge-eval's packages, compiler and libraries: eval_view.h), all read-only; its
//     scratch directory and the build cache, writable; a /dev with only null, zero, full,
//     random, urandom, /dev/nvidia* and a private /dev/shm; a private /tmp; a fresh /proc. The
//     host's /tmp, the checkout, other evaluations' scratch directories and every Unix socket
//     outside those paths do not exist there. Paths keep their host names, so the worker and
//     the child agree on the scratch directory's. Programs such as g++, nvcc and ninja run in
//     the same view.
//   - when `executables` is set (the worker sets compilers, eval_view.h): only those files may
//     be executed by any process of the sandbox, besides argv[0] (Landlock, Linux 5.13+;
//     with or without root). A program the candidate wrote, or /usr/bin/id, fails with EACCES.
//
// Decision on fork. The child must be able to fork: kforge-eval's supervisor forks the
// evaluation process, Python's subprocess and torch's compile steps fork too. So fork, vfork
// and clone without namespace flags are allowed, and processes are bounded this way:
//   - count: RLIMIT_NPROC (`processes`). It is per uid, so it is only meaningful when the
//     child runs as its own uid (worker is root). It counts threads too (torch and CUDA start
//     dozens) and it counts every process of that uid, so sandboxes that share run_as_user
//     share one budget: give each GPU slot its own user for separate budgets and isolation
//     between concurrent evaluations. As the worker's own uid (non-root worker) it would
//     include the worker's threads, so leave it 0 there.
//   - lifetime: the wall limit SIGKILLs the process group; with the PID namespace (root) the
//     kill also reaches processes that left the group, and nothing survives a normal exit
//     either. RLIMIT_CPU is per process: each forked process gets its own budget.
// Without root (no namespaces, no uid change) the sandbox is seccomp + rlimits + the group
// kill (+ the `executables` rule) only: the group kill misses processes in other groups
// (kforge-eval's own supervisor puts the evaluation process in a group of its own, and a child
// can call setsid()), its processes count against the worker's RLIMIT_NPROC, it can read the
// worker's files and memory (same uid), and it has no file view: it sees the host's
// filesystem as the worker's uid may, /tmp and the checkout included. Run the worker as root
// for the full sandbox.
//
// Not covered: inside the view, everything under the read-only paths is readable as far as
// run_as_user may (a checkout under /opt or /usr would be); the build cache is shared by all
// the worker's evaluations at the sandbox's level (kforge-eval's evaluation process narrows its
// own writes to its candidate's namespace with Landlock: gpu_worker/eval/candidate_files.h).
// Without the view the child can write into world-writable directories (/tmp, /dev/shm)
// outside its scratch directory. Files it must use (kforge-eval, the artifact cache, the
// /dev/nvidia* nodes) must be accessible to run_as_user, and scratch_root traversable by it.
//
// Thread-safety: RunSandboxed may be called from several threads at once. A Sandboxed object
// is used by one thread. The child's setup between fork and exec makes only async-signal-safe
// calls: the seccomp filter is compiled to BPF before the fork and only loaded in the child.
// Ownership: a Sandboxed owns its child (destroying it kills the group) and its scratch
// directory (removed by Wait or by the destructor). A worker killed with SIGKILL runs neither:
// its scratch directories stay, and a later worker's SweepStaleScratch removes them.
#ifndef KFORGE_GPU_WORKER_SANDBOX_H_
#define KFORGE_GPU_WORKER_SANDBOX_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/base/subprocess.h"
#include "gpu_worker/sandbox_view.h"

namespace kforge {

// Limits of 0 are not set (the worker's own apply); none is ever raised above the worker's.
struct SandboxPolicy {
  double wall_limit_s = 600;              // whole child, then the group is SIGKILLed
  uint64_t cpu_seconds = 1200;            // RLIMIT_CPU per process: SIGXCPU, SIGKILL 1 s later
  uint64_t address_space_bytes = 0;       // RLIMIT_AS; 0: not set (CUDA reserves huge ranges)
  uint64_t open_files = 1024;             // RLIMIT_NOFILE
  uint64_t processes = 0;                 // RLIMIT_NPROC (per uid, see above); 0: not set
  uint64_t file_size_bytes = 1ull << 30;  // RLIMIT_FSIZE: SIGXFSZ past it
  bool no_network = true;                 // network namespace + socket() seccomp rule
  bool seccomp = true;                    // the syscall denials listed above
  // The mount and PID namespaces (which need CAP_SYS_ADMIN) or nothing: without them the
  // child fails to start ("kforge sandbox: unshare ... failed") instead of running without.
  bool require_namespaces = false;
  std::string scratch_root = "/tmp";      // where the private scratch directory is created
  // The user the child runs as when the worker is root; empty keeps root (tests only).
  std::string run_as_user = "nobody";
  // Variables copied from the worker's environment; nothing else of it reaches the child
  // (the worker's may hold credentials). HOME, TMPDIR and PWD are the scratch directory.
  std::vector<std::string> pass_env = {"PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH"};
  size_t max_output_bytes = 1 << 20;      // per stream, as in SpawnOptions
  // What the child sees of the host's files when the sandbox has its mount namespace
  // (sandbox_view.h); the scratch directory is always in it, writable.
  SandboxView view;
  // When not empty: the only files the child's processes may execute (a directory: every
  // file beneath it; a trailing '*' matches names by prefix), besides argv[0]. Landlock.
  std::vector<std::string> executables;
  // A descriptor of the worker's (above 2) that the child keeps open across its exec, at the
  // same number; -1: none. Every other descriptor is closed at the exec. The fork server's
  // GPU lock (`kforge-eval --serve ... --gpu-lock-fd N`, eval_server_client.h) travels so,
  // without a path the child could open.
  int pass_fd = -1;
};

// The plan the child follows between fork and exec; built before the fork.
struct SandboxChildPlan;

// An exclusive flock on a directory the worker made and owns, held from Claim until Release
// or destruction: the mark by which SweepStaleScratch tells a live owner's directory from a
// dead worker's (the kernel drops the lock with the process, however it ended). The descriptor
// is close-on-exec, so a child never holds it past its exec. Move-only.
class DirectoryClaim {
 public:
  DirectoryClaim() = default;
  ~DirectoryClaim() { Release(); }
  DirectoryClaim(DirectoryClaim&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  DirectoryClaim& operator=(DirectoryClaim&& other) noexcept;
  DirectoryClaim(const DirectoryClaim&) = delete;
  DirectoryClaim& operator=(const DirectoryClaim&) = delete;

  // False with *error where `dir` cannot be opened (never through a link) or another holds
  // its lock. On a file system that cannot lock directories (flock's EBADF on NFS) it returns
  // true unlocked, logged once: no sweep can lock such a directory either.
  bool Claim(const std::string& dir, std::string* error);
  void Release();

 private:
  int fd_ = -1;
};

class Sandboxed {
 public:
  explicit Sandboxed(SandboxPolicy policy);
  ~Sandboxed();
  Sandboxed(const Sandboxed&) = delete;
  Sandboxed& operator=(const Sandboxed&) = delete;

  // Call once. Creates the scratch directory, compiles the filter, forks and execs argv. extra_env
  // entries ("NAME=value") are added to the child's environment. On failure returns false
  // with result().error set (and nothing left behind).
  bool Start(std::vector<std::string> argv, std::vector<std::string> extra_env = {},
             std::string stdin_data = "");
  // The child's pid in the worker's PID namespace (with namespaces: the relay that mirrors
  // the child's exit status). -1 before Start.
  pid_t pid() const;
  // Valid from a successful Start until Wait returns.
  const std::string& scratch_dir() const { return scratch_dir_; }
  // Signals the child's process group, e.g. SIGTERM when the worker drains.
  void SignalGroup(int sig);
  // Pumps output until the child ends or the wall limit passes, kills what is left, removes
  // the scratch directory and returns the result. A child that failed inside the sandbox's
  // own setup exits with 126 and says why on stderr.
  const SubprocessResult& Wait();
  const SubprocessResult& result() const { return result_; }

 private:
  void RemoveScratch();

  SandboxPolicy policy_;
  DirectoryClaim scratch_claim_;  // the scratch directory, while it is ours (SweepStaleScratch)
  std::unique_ptr<SandboxChildPlan> plan_;
  std::unique_ptr<Subprocess> process_;
  std::string scratch_dir_;
  SubprocessResult result_;
};

// Removes the directories under `root` that a worker made and no live process owns: the
// sandboxes' scratch directories (<root>/kforge-sandbox-XXXXXX) and a worker's GPU turns'
// locks (<root>/kforge-gpu-turns-XXXXXX, MakeGpuLockDir). Their owners hold a DirectoryClaim
// on each from its creation until it is removed. Ones changed less than `min_age_s` ago are
// left (a directory made but not yet claimed). A directory is removed only while its name
// still leads to the one that was locked, and links are never followed. Returns how many it
// removed, and logs that count; a directory it could not remove is logged. The worker calls it
// at its start, and Start at most once a minute. Workers of a version that did not claim their
// directories (scratch before session 28, GPU turns before session 29) must not share a
// scratch_root with newer ones: theirs would be taken for dead ones.
int SweepStaleScratch(const std::string& root, double min_age_s = 10);

// Start + Wait in one call.
SubprocessResult RunSandboxed(const SandboxPolicy& policy, std::vector<std::string> argv,
                              std::vector<std::string> extra_env = {},
                              std::string stdin_data = "");

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_SANDBOX_H_
