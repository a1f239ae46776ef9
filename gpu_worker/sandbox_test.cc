#include "gpu_worker/sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "gpu_worker/unix_listener_for_tests.h"
#include "gtest/gtest.h"

namespace kforge {
namespace {

const char kPython[] = "/usr/bin/python3";

std::vector<std::string> Sh(const std::string& script) { return {"/bin/sh", "-c", script}; }

bool IsRoot() { return geteuid() == 0; }

SandboxPolicy TestPolicy() {
  SandboxPolicy p;
  p.wall_limit_s = 60;
  p.cpu_seconds = 60;
  return p;
}

std::string ReadLink(const std::string& path) {
  char buf[256];
  ssize_t n = readlink(path.c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// Processes (of the whole machine) whose command line contains `marker`.
int CountProcessesWithArg(const std::string& marker) {
  int count = 0;
  DIR* proc = opendir("/proc");
  while (dirent* e = readdir(proc)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/cmdline");
    std::stringstream ss;
    ss << f.rdbuf();
    if (ss.str().find(marker) != std::string::npos) ++count;
  }
  closedir(proc);
  return count;
}

// A fresh directory for scratch_root, traversable by the sandbox's user.
std::string MakeScratchRoot() {
  std::string dir = testing::TempDir() + "kforge-sandbox-test-XXXXXX";
  EXPECT_NE(mkdtemp(dir.data()), nullptr);
  chmod(dir.c_str(), 0711);
  return dir;
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (!d) return names;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  return names;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// Tries each syscall named in argv and prints "<name> ok" or "<name> <errno name>".
std::vector<std::string> SyscallProbe(std::vector<std::string> names) {
  std::string script =
      "import ctypes, errno, os, sys\n"
      "libc = ctypes.CDLL(None, use_errno=True)\n"
      "calls = {\n"
      "  'ptrace': lambda: libc.ptrace(0, 0, None, None),\n"  // PTRACE_TRACEME
      "  'mount': lambda: libc.mount(b'none', b'.', b'tmpfs', 0, None),\n"
      "  'umount2': lambda: libc.umount2(b'/proc', 2),\n"
      "  'chroot': lambda: libc.chroot(b'.'),\n"
      "  'unshare': lambda: libc.unshare(0),\n"
      "  'setns': lambda: libc.setns(-1, 0),\n"
      "  'clone_newuser': lambda: libc.syscall(" +
      std::to_string(SYS_clone) +
      ", 0x10000000 | 17, 0, 0, 0, 0),\n"
      "  'clone3': lambda: libc.syscall(" +
      std::to_string(SYS_clone3) +
      ", 0, 0),\n"
      "  'keyctl': lambda: libc.syscall(" +
      std::to_string(SYS_keyctl) +
      ", 0, -3, 0),\n"
      "  'bpf': lambda: libc.syscall(" +
      std::to_string(SYS_bpf) +
      ", 0, 0, 0),\n"
      "  'perf_event_open': lambda: libc.syscall(" +
      std::to_string(SYS_perf_event_open) +
      ", 0, 0, -1, -1, 0),\n"
      "  'process_vm_readv': lambda: libc.syscall(" +
      std::to_string(SYS_process_vm_readv) +
      ", os.getpid(), 0, 0, 0, 0, 0),\n"
      "  'io_uring_setup': lambda: libc.syscall(" +
      std::to_string(SYS_io_uring_setup) +
      ", 1, 0),\n"
      "}\n"
      "for name in sys.argv[1:]:\n"
      "    rc = calls[name]()\n"
      "    print(name, 'ok' if rc >= 0 else errno.errorcode[ctypes.get_errno()])\n";
  std::vector<std::string> argv = {kPython, "-c", script};
  argv.insert(argv.end(), names.begin(), names.end());
  return argv;
}

const char kSocketProbe[] =
    "import errno, os, socket\n"
    "out = []\n"
    "S = socket\n"
    "for fam, typ in ((S.AF_INET, S.SOCK_STREAM), (S.AF_INET, S.SOCK_DGRAM),\n"
    "                 (S.AF_INET6, S.SOCK_STREAM), (S.AF_PACKET, S.SOCK_RAW)):\n"
    "    try:\n"
    "        socket.socket(fam, typ).close()\n"
    "        out.append('open')\n"
    "    except OSError as e:\n"
    "        out.append(errno.errorcode[e.errno])\n"
    "a, b = socket.socketpair()\n"
    "a.sendall(b'x')\n"
    "out.append('unix-ok' if b.recv(1) == b'x' else 'unix-broken')\n"
    "same = os.readlink('/proc/self/ns/net') == os.environ['PARENT_NETNS']\n"
    "out.append('same-netns' if same else 'own-netns')\n"
    "print(' '.join(out))\n";

TEST(SandboxTest, OutputExitCodeStdinAndEnvironmentPassThrough) {
  setenv("KFORGE_SANDBOX_TEST_SECRET", "leaked", 1);
  SubprocessResult r = RunSandboxed(
      TestPolicy(),
      Sh("read line; echo \"$line-$EXTRA-${KFORGE_SANDBOX_TEST_SECRET-unset}\"; echo err >&2; "
         "exit 3"),
      {"EXTRA=extra"}, "hello\n");
  unsetenv("KFORGE_SANDBOX_TEST_SECRET");
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.stdout_data, "hello-extra-unset\n");
  EXPECT_EQ(r.stderr_data, "err\n");
}

TEST(SandboxTest, SignalDeathIsReportedAsSuch) {
  SubprocessResult r = RunSandboxed(TestPolicy(), Sh("kill -SEGV $$"));
  EXPECT_EQ(r.term_signal, SIGSEGV) << r.Describe() << r.stderr_data;
}

TEST(SandboxTest, MissingProgramIsAnErrorAndLeavesNothingBehind) {
  SandboxPolicy p = TestPolicy();
  p.scratch_root = MakeScratchRoot();
  SubprocessResult r = RunSandboxed(p, {"/nonexistent/kforge-eval"});
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.error.find("No such file or directory"), std::string::npos) << r.error;
  EXPECT_TRUE(ListDir(p.scratch_root).empty());
  rmdir(p.scratch_root.c_str());
}

TEST(SandboxTest, UnknownUserIsAnError) {
  if (!IsRoot()) GTEST_SKIP() << "run_as_user only applies to a root worker";
  SandboxPolicy p = TestPolicy();
  p.run_as_user = "kforge-no-such-user";
  SubprocessResult r = RunSandboxed(p, Sh("true"));
  EXPECT_FALSE(r.started);
  EXPECT_EQ(r.error, "sandbox: unknown user 'kforge-no-such-user' (run_as_user)");
}

TEST(SandboxTest, InternetSocketsAreRefusedUnixSocketsWork) {
  std::string netns = ReadLink("/proc/self/ns/net");
  SubprocessResult r =
      RunSandboxed(TestPolicy(), {kPython, "-c", kSocketProbe}, {"PARENT_NETNS=" + netns});
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.stderr_data;
  std::string ns = IsRoot() ? "own-netns" : "same-netns";
  EXPECT_EQ(r.stdout_data, "EPERM EPERM EPERM EPERM unix-ok " + ns + "\n");
}

TEST(SandboxTest, RootWorkerGivesTheChildAnEmptyNetworkNamespace) {
  if (!IsRoot()) GTEST_SKIP() << "network namespaces need root";
  SubprocessResult r = RunSandboxed(
      TestPolicy(), Sh("readlink /proc/self/ns/net; tail -n +3 /proc/net/dev | cut -d: -f1"));
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.stderr_data;
  std::string ours = ReadLink("/proc/self/ns/net");
  ASSERT_FALSE(ours.empty());
  EXPECT_EQ(r.stdout_data.find(ours), std::string::npos) << r.stdout_data;
  EXPECT_NE(r.stdout_data.find("net:["), std::string::npos) << r.stdout_data;
  EXPECT_NE(r.stdout_data.find("\n    lo\n"), std::string::npos) << r.stdout_data;
  // Only loopback (and it is down): nothing else after it.
  EXPECT_EQ(r.stdout_data.substr(r.stdout_data.find("\n    lo\n") + 8), "");
}

TEST(SandboxTest, DeniedSyscallsFailWithEperm) {
  // As root (when we are), only the filter can refuse these.
  SandboxPolicy p = TestPolicy();
  p.run_as_user = "";
  SubprocessResult r = RunSandboxed(
      p, SyscallProbe({"ptrace", "mount", "umount2", "chroot", "unshare", "setns",
                       "clone_newuser", "clone3", "keyctl", "bpf", "perf_event_open",
                       "process_vm_readv", "io_uring_setup"}));
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.stderr_data;
  EXPECT_EQ(r.stdout_data,
            "ptrace EPERM\nmount EPERM\numount2 EPERM\nchroot EPERM\nunshare EPERM\n"
            "setns EPERM\nclone_newuser EPERM\nclone3 ENOSYS\nkeyctl EPERM\nbpf EPERM\n"
            "perf_event_open EPERM\nprocess_vm_readv EPERM\nio_uring_setup EPERM\n");
}

TEST(SandboxTest, WithoutSeccompThoseSyscallsReachTheKernel) {
  // The control for the test above: the EPERMs come from the filter.
  SandboxPolicy p = TestPolicy();
  p.run_as_user = "";
  p.seccomp = false;
  p.no_network = false;
  SubprocessResult r = RunSandboxed(p, SyscallProbe({"unshare", "setns", "clone3"}));
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "unshare ok\nsetns EBADF\nclone3 EINVAL\n");
}

TEST(SandboxTest, ThreadsAndForkStillWork) {
  SubprocessResult r = RunSandboxed(
      TestPolicy(),
      {kPython, "-c",
       "import os, threading\n"
       "hits = []\n"
       "ts = [threading.Thread(target=hits.append, args=(i,)) for i in range(8)]\n"
       "[t.start() for t in ts]; [t.join() for t in ts]\n"
       "pid = os.fork()\n"
       "if pid == 0:\n"
       "    os._exit(3)\n"
       "print('threads', len(hits), 'fork', os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n"});
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "threads 8 fork 3\n");

  SubprocessResult sh = RunSandboxed(TestPolicy(), Sh("(echo background) & wait; echo done"));
  ASSERT_TRUE(sh.Succeeded()) << sh.Describe() << sh.stderr_data;
  EXPECT_EQ(sh.stdout_data, "background\ndone\n");
}

TEST(SandboxTest, WallLimitKillsTheChildAndItsChildren) {
  SandboxPolicy p = TestPolicy();
  p.wall_limit_s = 0.5;
  SubprocessResult r = RunSandboxed(p, Sh("sleep 31.4159 & sleep 31.4159; echo never"));
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.term_signal, SIGKILL);
  EXPECT_LT(r.wall_s, 10.0);
  EXPECT_EQ(r.stdout_data, "");
  EXPECT_EQ(CountProcessesWithArg("31.4159"), 0);
}

TEST(SandboxTest, ProcessesThatLeaveTheGroupDieWithTheSandbox) {
  if (!IsRoot()) GTEST_SKIP() << "the PID namespace needs root";
  // The grandchild starts its own session (out of reach of the group kill); the child
  // waits until it runs, then exits normally.
  SubprocessResult r = RunSandboxed(
      TestPolicy(),
      {kPython, "-c",
       "import os, time\n"
       "pid = os.fork()\n"
       "if pid == 0:\n"
       "    os.setsid()\n"
       "    null = os.open('/dev/null', os.O_RDWR)\n"
       "    for fd in (0, 1, 2): os.dup2(null, fd)\n"
       "    os.execv('/bin/sleep', ['sleep', '27.1828'])\n"
       "for _ in range(1000):\n"
       "    try:\n"
       "        if open('/proc/%d/cmdline' % pid, 'rb').read().startswith(b'sleep'): break\n"
       "    except OSError: pass\n"
       "    time.sleep(0.01)\n"
       "print('escaped' if os.getsid(pid) != os.getsid(0) else 'same-session')\n"});
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "escaped\n");
  EXPECT_EQ(CountProcessesWithArg("27.1828"), 0);
}

TEST(SandboxTest, TheSandboxDiesWithAWorkerKilledWithSigkill) {
  if (!IsRoot()) GTEST_SKIP() << "the relay that watches the worker exists with the PID namespace";
  // A worker killed with SIGKILL runs no destructor: its fork servers (`kforge-eval --serve`,
  // each holding a CUDA context) outlived it until the relay watched the worker's lifeline.
  pid_t worker = fork();
  ASSERT_GE(worker, 0);
  if (worker == 0) {
    SandboxPolicy p = TestPolicy();
    p.require_namespaces = true;
    RunSandboxed(p, Sh("sleep 23.1406; echo never"));
    _exit(0);
  }
  for (int i = 0; i < 1000 && CountProcessesWithArg("23.1406") == 0; ++i) usleep(10000);
  ASSERT_GT(CountProcessesWithArg("23.1406"), 0) << "the sandboxed child never started";
  ASSERT_EQ(kill(worker, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(worker, &status, 0), worker);
  int left = 0;
  for (int i = 0; i < 500 && (left = CountProcessesWithArg("23.1406")) > 0; ++i) usleep(10000);
  EXPECT_EQ(left, 0) << "the sandboxed child outlived its worker";
}

TEST(SandboxTest, TheNextWorkerRemovesADeadWorkersScratchButNotALiveOnes) {
  // A worker killed with SIGKILL leaves its scratch directories (no destructor runs); the next
  // worker's sweep removes them, and never one a live sandbox holds, however old.
  std::string root = testing::TempDir() + "kforge-sweep-test-XXXXXX";
  ASSERT_NE(mkdtemp(root.data()), nullptr);
  chmod(root.c_str(), 0711);
  SandboxPolicy p = TestPolicy();
  p.scratch_root = root;
  pid_t worker = fork();
  ASSERT_GE(worker, 0);
  if (worker == 0) {
    RunSandboxed(p, Sh("touch left.txt; sleep 31.4159"));
    _exit(0);
  }
  Sandboxed live(p);
  ASSERT_TRUE(live.Start(Sh("sleep 27.1828"))) << live.result().error;
  for (int i = 0; i < 1000 && CountProcessesWithArg("31.4159") == 0; ++i) usleep(10000);
  ASSERT_GT(CountProcessesWithArg("31.4159"), 0) << "the dead worker's child never started";
  ASSERT_EQ(kill(worker, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(worker, &status, 0), worker);
  // A directory named like a scratch directory but a link: neither followed nor removed.
  const std::string target = root + "/kept";
  ASSERT_EQ(mkdir(target.c_str(), 0700), 0);
  ASSERT_EQ(symlink(target.c_str(), (root + "/kforge-sandbox-linked").c_str()), 0);
  auto scratch_dirs = [&] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(root)) {
      n += e.path().filename().string().rfind("kforge-sandbox-", 0) == 0 && !e.is_symlink();
    }
    return n;
  };
  // Without namespaces the dead worker's child outlives it (as an orphan it holds no lock:
  // the descriptor is close-on-exec); with them it is ending.
  if (!IsRoot()) std::system("pkill -f 'sleep 31.4159'");
  EXPECT_EQ(scratch_dirs(), 2);
  EXPECT_EQ(SweepStaleScratch(root), 0) << "both are newer than the minimum age";
  int swept = 0;
  for (int i = 0; i < 500 && (swept = SweepStaleScratch(root, 0)) == 0; ++i) usleep(10000);
  EXPECT_EQ(swept, 1);
  EXPECT_EQ(scratch_dirs(), 1);
  struct stat st;
  EXPECT_EQ(stat(live.scratch_dir().c_str(), &st), 0) << "the live sandbox's directory stays";
  EXPECT_EQ(lstat((root + "/kforge-sandbox-linked").c_str(), &st), 0);
  EXPECT_EQ(stat(target.c_str(), &st), 0);
  live.SignalGroup(SIGKILL);
  live.Wait();
  EXPECT_EQ(scratch_dirs(), 0);
  std::system(("rm -rf " + root).c_str());
}

// In a child of the test without CAP_SYS_ADMIN (a worker pod without it): 0 when a sandbox that
// requires its namespaces refuses to start, saying why, and one that does not runs without.
int WithoutSysAdmin() {
  __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return 10;
  const unsigned bit = 1u << CAP_SYS_ADMIN;  // CAP_SYS_ADMIN < 32: data[0]
  data[0].effective &= ~bit;
  data[0].permitted &= ~bit;
  data[0].inheritable &= ~bit;
  if (prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) != 0) return 11;
  if (syscall(SYS_capset, &header, data) != 0) return 12;
  SandboxPolicy required = TestPolicy();
  required.require_namespaces = true;
  SubprocessResult r = RunSandboxed(required, Sh("echo ran"));
  if (r.Succeeded() || r.stdout_data == "ran\n") return 1;
  if (r.stderr_data.find("unshare of the mount namespace (CAP_SYS_ADMIN) failed") ==
      std::string::npos) {
    return 2;
  }
  SubprocessResult weaker = RunSandboxed(TestPolicy(), Sh("echo ran"));
  if (!weaker.Succeeded() || weaker.stdout_data != "ran\n") return 3;
  return 0;
}

TEST(SandboxTest, RequiredNamespacesWithoutCapSysAdminRefuseToStart) {
  if (!IsRoot()) GTEST_SKIP() << "dropping CAP_SYS_ADMIN needs a process that has it";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(WithoutSysAdmin());
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: ran without its namespaces; 2: no reason on stderr; "
                                       "3: the optional sandbox did not run; 1x: capabilities";
}

TEST(SandboxTest, FileAndDescriptorLimitsAreInForce) {
  SandboxPolicy p = TestPolicy();
  p.open_files = 64;
  p.file_size_bytes = 1 << 20;
  SubprocessResult r = RunSandboxed(
      p, Sh("ulimit -n; ulimit -f; head -c 2000000 /dev/zero > big; echo \"rc=$?\"; "
            "wc -c < big"));
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.stderr_data;
  // dash reports -f in 512-byte blocks; head dies of SIGXFSZ (25) at the limit.
  EXPECT_EQ(r.stdout_data, "64\n2048\nrc=153\n1048576\n");
}

// The fork server's GPU lock travels so (eval_server_client.h): the passed descriptor reaches
// the child at its number, and one the worker left without close-on-exec does not.
TEST(SandboxTest, OnlyThePassedDescriptorCrossesTheExec) {
  const int passed = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int leaked = open("/dev/zero", O_RDONLY);  // no close-on-exec: the worker's mistake
  ASSERT_GE(passed, 3);
  ASSERT_GE(leaked, 3);
  SandboxPolicy p = TestPolicy();
  p.pass_fd = passed;
  const std::string probe = "readlink /proc/self/fd/" + std::to_string(passed) +
                            "; readlink /proc/self/fd/" + std::to_string(leaked) +
                            " || echo closed";
  SubprocessResult r = RunSandboxed(p, Sh(probe));
  SubprocessResult without = RunSandboxed(TestPolicy(), Sh(probe));
  close(passed);
  close(leaked);
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "/dev/null\nclosed\n");
  EXPECT_EQ(without.stdout_data, "closed\n") << "not passed, not kept";
}

TEST(SandboxTest, CpuLimitEndsABusyLoop) {
  SandboxPolicy p = TestPolicy();
  p.cpu_seconds = 1;
  SubprocessResult r = RunSandboxed(p, Sh("while :; do :; done"));
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.term_signal, SIGXCPU) << r.Describe();
  EXPECT_LT(r.wall_s, 30.0);
}

TEST(SandboxTest, AddressSpaceLimitFailsLargeAllocations) {
  SandboxPolicy p = TestPolicy();
  p.address_space_bytes = 512ull << 20;
  SubprocessResult r = RunSandboxed(p, {kPython, "-c",
                                        "try:\n"
                                        "    bytearray(1 << 30)\n"
                                        "    print('allocated')\n"
                                        "except MemoryError:\n"
                                        "    print('MemoryError')\n"});
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "MemoryError\n");
}

TEST(SandboxTest, ProcessLimitBoundsForksOfTheSandboxUser) {
  if (!IsRoot()) GTEST_SKIP() << "RLIMIT_NPROC is only meaningful with a uid of its own";
  SandboxPolicy p = TestPolicy();
  p.processes = 8;
  SubprocessResult r = RunSandboxed(p, {kPython, "-c",
                                        "import os, time\n"
                                        "n = 0\n"
                                        "try:\n"
                                        "    while n < 100:\n"
                                        "        if os.fork() == 0:\n"
                                        "            time.sleep(30)\n"
                                        "            os._exit(0)\n"
                                        "        n += 1\n"
                                        "    print('unbounded')\n"
                                        "except BlockingIOError:\n"
                                        "    print('EAGAIN after', n)\n"});
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.stderr_data;
  // The python process itself counts; other processes of that user would count too.
  ASSERT_EQ(r.stdout_data.rfind("EAGAIN after ", 0), 0u) << r.stdout_data;
  EXPECT_LE(std::stoi(r.stdout_data.substr(13)), 7);
}

TEST(SandboxTest, ScratchIsCwdHomeTmpdirPrivateAndRemoved) {
  SandboxPolicy p = TestPolicy();
  p.scratch_root = MakeScratchRoot();
  SubprocessResult r = RunSandboxed(
      p, Sh("pwd; echo \"$HOME\"; echo \"$TMPDIR\"; stat -c '%a' .; test \"$(stat -c %u .)\" = "
            "\"$(id -u)\" && echo owned; echo data > f; ls -A"));
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.stderr_data;
  std::istringstream lines(r.stdout_data);
  std::string pwd, home, tmpdir, mode, owned, files;
  std::getline(lines, pwd);
  std::getline(lines, home);
  std::getline(lines, tmpdir);
  std::getline(lines, mode);
  std::getline(lines, owned);
  std::getline(lines, files);
  EXPECT_EQ(pwd.rfind(p.scratch_root + "/kforge-sandbox-", 0), 0u) << pwd;
  EXPECT_EQ(home, pwd);
  EXPECT_EQ(tmpdir, pwd);
  EXPECT_EQ(mode, "700");
  EXPECT_EQ(owned, "owned");
  EXPECT_EQ(files, "f");
  EXPECT_FALSE(Exists(pwd));
  EXPECT_TRUE(ListDir(p.scratch_root).empty());

  // A second run starts empty: nothing of the first persists.
  SubprocessResult again = RunSandboxed(p, Sh("ls -A; pwd"));
  ASSERT_TRUE(again.Succeeded()) << again.Describe() << again.stderr_data;
  EXPECT_NE(again.stdout_data, pwd + "\n");
  EXPECT_EQ(again.stdout_data.find('\n'), again.stdout_data.size() - 1);  // only pwd's line
  EXPECT_TRUE(ListDir(p.scratch_root).empty());
  rmdir(p.scratch_root.c_str());
}

TEST(SandboxTest, ScratchExistsWhileRunningAndSignalGroupReachesTheChild) {
  Sandboxed s(TestPolicy());
  ASSERT_TRUE(s.Start(Sh("trap 'echo term; exit 7' TERM; touch ready; "
                         "while :; do sleep 0.05; done")))
      << s.result().error;
  std::string dir = s.scratch_dir();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!Exists(dir + "/ready") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(Exists(dir + "/ready"));
  s.SignalGroup(SIGTERM);
  const SubprocessResult& r = s.Wait();
  EXPECT_EQ(r.exit_code, 7) << r.Describe() << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "term\n");
  EXPECT_FALSE(Exists(dir));
}

TEST(SandboxTest, RootWorkerRunsTheChildAsAnUnprivilegedUser) {
  if (!IsRoot()) GTEST_SKIP() << "needs a root worker";
  // In the view (read-only), so that only the user keeps the child from reading it.
  std::string dir = MakeScratchRoot();
  std::string secret = dir + "/secret";
  int fd = open(secret.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "secret\n", 7), 7);
  close(fd);
  struct passwd* nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  std::string uid = std::to_string(nobody->pw_uid), gid = std::to_string(nobody->pw_gid);

  SandboxPolicy p = TestPolicy();
  p.view.read_only.push_back(dir);
  SubprocessResult r = RunSandboxed(
      p, Sh("id -u; id -g; id -G; cat " + secret +
            "; echo \"rc=$?\"; grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status"));
  unlink(secret.c_str());
  rmdir(dir.c_str());
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.stderr_data;
  EXPECT_EQ(r.stdout_data,
            uid + "\n" + gid + "\n" + gid + "\nrc=1\nNoNewPrivs:\t1\nSeccomp:\t2\n");
  EXPECT_NE(r.stderr_data.find("Permission denied"), std::string::npos) << r.stderr_data;
}

// Tries to reach what the view leaves out; one line per attempt: "NAME ok ..." or "NAME ERRNO".
const char kViewProbe[] =
    "import errno, os, socket, sys\n"
    "def attempt(name, f):\n"
    "    try:\n"
    "        print(name, 'ok', f())\n"
    "    except OSError as e:\n"
    "        print(name, errno.errorcode[e.errno])\n"
    "def connect(path):\n"
    "    with socket.socket(socket.AF_UNIX) as s:\n"
    "        s.connect(path)\n"
    "planted, other, readme, sock = sys.argv[1:5]\n"
    "attempt('planted', lambda: open(planted).read().strip())\n"
    "attempt('other-scratch', lambda: ','.join(os.listdir(other)))\n"
    "attempt('checkout', lambda: len(open(readme).read()) > 0)\n"
    "attempt('socket', lambda: connect(sock))\n"
    "attempt('write-usr', lambda: os.mkdir('/usr/kforge-view-test'))\n"
    "attempt('write-root', lambda: os.mkdir('/kforge-view-test'))\n"
    "print('tmp', ','.join(sorted(os.listdir('/tmp'))))\n"
    "print('dev', ','.join(sorted(os.listdir('/dev'))))\n";

// What the view probe is given: a file in the host's /tmp, another sandbox's scratch, the
// checkout's README and a listening Unix socket, each open to the sandbox's user.
struct HostBait {
  HostBait() {
    dir = MakeScratchRoot();
    chmod(dir.c_str(), 0755);
    planted = dir + "/planted.txt";
    std::ofstream(planted) << "planted\n";
    chmod(planted.c_str(), 0644);
    other = dir + "/kforge-sandbox-other";
    mkdir(other.c_str(), 0777);
    std::ofstream(other + "/kernel.py") << "x";
    chmod((other + "/kernel.py").c_str(), 0644);
    socket_path = dir + "/.s.PGSQL.5432";
    fd = ListenOnUnixSocket(socket_path);
    EXPECT_GE(fd, 0);
  }
  ~HostBait() {
    close(fd);
    std::system(("rm -rf " + dir).c_str());
  }
  std::vector<std::string> Argv() const {
    return {kPython, "-c", kViewProbe, planted, other,
            std::string(std::getenv("KFORGE_SOURCE_DIR")) + "/README.md", socket_path};
  }
  std::string dir, planted, other, socket_path;
  int fd = -1;
};

TEST(SandboxTest, TheViewShowsOnlySystemPathsItsScratchAndChosenDevices) {
  if (!IsRoot()) GTEST_SKIP() << "the view needs the mount namespace (root)";
  HostBait bait;
  SandboxPolicy p = TestPolicy();
  p.scratch_root = MakeScratchRoot();
  SubprocessResult r = RunSandboxed(p, bait.Argv());
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.stderr_data;
  // The private /tmp holds only the way to the child's own scratch directory.
  std::string scratch_parent = p.scratch_root.substr(p.scratch_root.rfind('/') + 1);
  EXPECT_EQ(r.stdout_data,
            "planted ENOENT\nother-scratch ENOENT\ncheckout ENOENT\nsocket ENOENT\n"
            "write-usr EROFS\nwrite-root EROFS\ntmp " + scratch_parent + "\n"
            "dev fd,full,null,random,shm,stderr,stdin,stdout,urandom,zero\n");
  rmdir(p.scratch_root.c_str());
}

TEST(SandboxTest, WithoutTheViewTheSameChildReachesTheHostsFiles) {
  // The control for the test above: the baits are within the sandbox user's reach.
  HostBait bait;
  SandboxPolicy p = TestPolicy();
  p.view.enabled = false;
  SubprocessResult r = RunSandboxed(p, bait.Argv());
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.stderr_data;
  EXPECT_EQ(r.stdout_data.rfind("planted ok planted\nother-scratch ok kernel.py\n"
                                "checkout ok True\nsocket ok None\n",
                                0),
            0u)
      << r.stdout_data;
}

// The dynamic loaders, which a program list must hold for any dynamically linked program to run.
std::vector<std::string> DynamicLoaders() {
  return {"/lib64/ld-linux*", "/lib/ld-linux*", "/usr/lib/x86_64-linux-gnu/ld-linux*",
          "/usr/lib/aarch64-linux-gnu/ld-linux*"};
}

TEST(SandboxTest, OnlyListedProgramsMayBeExecuted) {
  SandboxPolicy p = TestPolicy();
  p.executables = DynamicLoaders();
  p.executables.push_back("/usr/bin/id");
  SubprocessResult r = RunSandboxed(
      p, {kPython, "-c",
          "import errno, os, subprocess\n"
          "with open('own.sh', 'w') as f: f.write('#!/bin/sh\\necho ran\\n')\n"
          "os.chmod('own.sh', 0o755)\n"
          "for prog in ('/usr/bin/id', '/usr/bin/whoami', './own.sh'):\n"
          "    try:\n"
          "        subprocess.run([prog], capture_output=True, check=True)\n"
          "        print(prog, 'ran')\n"
          "    except OSError as e:\n"
          "        print(prog, errno.errorcode[e.errno])\n"});
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "/usr/bin/id ran\n/usr/bin/whoami EACCES\n./own.sh EACCES\n");
}

// Landlock refuses moves between directories unless a rule grants REFER, whatever the ruleset
// handles: Triton's cache (torch.compile) renames its builds out of a temporary directory, and
// failed with EXDEV under the program list. Moved, a file the child wrote is still not run.
TEST(SandboxTest, FilesMoveBetweenDirectoriesUnderTheProgramList) {
  SandboxPolicy p = TestPolicy();
  p.executables = DynamicLoaders();
  SubprocessResult r = RunSandboxed(
      p, {kPython, "-c",
          "import errno, os, subprocess\n"
          "os.makedirs('cache/tmp.1')\n"
          "with open('cache/tmp.1/own.sh', 'w') as f: f.write('#!/bin/sh\\necho ran\\n')\n"
          "os.chmod('cache/tmp.1/own.sh', 0o755)\n"
          "os.replace('cache/tmp.1/own.sh', 'cache/own.sh')\n"
          "print('moved', os.path.exists('cache/own.sh'))\n"
          "try:\n"
          "    subprocess.run(['cache/own.sh'], capture_output=True, check=True)\n"
          "    print('ran')\n"
          "except OSError as e:\n"
          "    print(errno.errorcode[e.errno])\n"});
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "moved True\nEACCES\n");
}

// ... but not into a directory whose programs may run (the worker's are all read-only; this one
// is writable, and seen without the view, so that only Landlock can refuse the move).
TEST(SandboxTest, AFileCannotBeMovedToWhereMoreMayBeExecuted) {
  const std::string root = MakeScratchRoot();
  const std::string bin = root + "/bin";
  ASSERT_EQ(mkdir(bin.c_str(), 0777), 0);
  chmod(bin.c_str(), 0777);
  SandboxPolicy p = TestPolicy();
  p.view.enabled = false;
  p.scratch_root = root;
  p.executables = DynamicLoaders();
  p.executables.push_back(bin);
  SubprocessResult r =
      RunSandboxed(p, {kPython, "-c",
                       "import errno, os, sys\n"
                       "with open('own.sh', 'w') as f: f.write('#!/bin/sh\\necho ran\\n')\n"
                       "try:\n"
                       "    os.replace('own.sh', sys.argv[1] + '/own.sh')\n"
                       "    print('moved')\n"
                       "except OSError as e:\n"
                       "    print(errno.errorcode[e.errno])\n",
                       bin});
  std::system(("rm -rf " + root).c_str());
  ASSERT_TRUE(r.Succeeded()) << r.Describe() << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "EXDEV\n");
}

// What an unprivileged worker gets: the seccomp rules, no namespaces.
void RunSocketProbeAsNonRootAndExit() {
  if (geteuid() == 0) {
    struct passwd* nobody = getpwnam("nobody");
    if (!nobody || setgroups(0, nullptr) != 0 ||
        setresgid(nobody->pw_gid, nobody->pw_gid, nobody->pw_gid) != 0 ||
        setresuid(nobody->pw_uid, nobody->pw_uid, nobody->pw_uid) != 0) {
      std::fprintf(stderr, "cannot become nobody\n");
      std::_Exit(2);
    }
  }
  SubprocessResult r = RunSandboxed(TestPolicy(), {kPython, "-c", kSocketProbe},
                                    {"PARENT_NETNS=" + ReadLink("/proc/self/ns/net")});
  std::fprintf(stderr, "%s%s%s\n", r.Describe().c_str(), r.stdout_data.c_str(),
               r.stderr_data.c_str());
  std::_Exit(r.Succeeded() ? 0 : 1);
}

TEST(SandboxDeathTest, NonRootWorkerStillRefusesInternetSockets) {
  EXPECT_EXIT(RunSocketProbeAsNonRootAndExit(), testing::ExitedWithCode(0),
              "EPERM EPERM EPERM EPERM unix-ok same-netns");
}

}  // namespace
}  // namespace kforge
