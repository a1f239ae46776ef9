#include "gpu_worker/eval/fs_lock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/base/files.h"
#include "gpu_worker/eval/seccomp_prologue.h"

namespace kforge::eval {
namespace {

// Rights newer than the system header may know.
constexpr uint64_t kTruncate = 1ULL << 14;  // ABI 3
constexpr uint64_t kRefer = 1ULL << 13;     // ABI 2
constexpr uint64_t kWriteRightsAbi1 =
    LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
    LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
    LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
    LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
constexpr uint32_t kCreateRulesetVersion = 1U << 0;

// ABI 1 always refuses renames and links across directories; from ABI 2 they are a right
// (REFER) that the allowed directories get.
uint64_t WriteRights(int abi) {
  uint64_t rights = kWriteRightsAbi1;
  if (abi >= 2) rights |= kRefer;
  if (abi >= 3) rights |= kTruncate;
  return rights;
}

int CountThreads() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return 0;
  int n = 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// Every system call that changes a file's mode, owner, times or extended attributes, and
// io_uring, which can set extended attributes without them. Numbers
// from 424 on are the same on every architecture; the system headers may predate them.
const std::vector<uint32_t>& MetadataSyscalls() {
  static const std::vector<uint32_t> calls = {
#ifdef SYS_chmod
      SYS_chmod,
#endif
#ifdef SYS_chown
      SYS_chown,
#endif
#ifdef SYS_lchown
      SYS_lchown,
#endif
#ifdef SYS_utime
      SYS_utime,
#endif
#ifdef SYS_utimes
      SYS_utimes,
#endif
#ifdef SYS_futimesat
      SYS_futimesat,
#endif
      SYS_fchmod,
      SYS_fchmodat,
      452,  // fchmodat2
      SYS_fchown,
      SYS_fchownat,
      SYS_utimensat,
      SYS_setxattr,
      SYS_lsetxattr,
      SYS_fsetxattr,
      SYS_removexattr,
      SYS_lremovexattr,
      SYS_fremovexattr,
      463,  // setxattrat
      466,  // removexattrat
      // io_uring can set xattrs (IORING_OP_SETXATTR, FSETXATTR) without these system calls.
      425,  // io_uring_setup
      426,  // io_uring_enter
      427,  // io_uring_register
  };
  return calls;
}

// A filter answering EPERM to MetadataSyscalls() and to every call of a foreign ABI (i386
// through int 0x80, x32), which would reach the same operations by other numbers.
std::vector<sock_filter> MetadataFilter() {
  const uint32_t deny = SECCOMP_RET_ERRNO | EPERM;
  const auto& calls = MetadataSyscalls();
  std::vector<sock_filter> f;
  AppendNativeArchCheck(&f, deny);
  for (size_t i = 0; i < calls.size(); ++i) {
    // Jump to the deny at the end, past the remaining checks and the allow.
    auto to_deny = static_cast<uint8_t>(calls.size() - i);
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, calls[i], to_deny, 0));
  }
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  f.push_back(BPF_STMT(BPF_RET | BPF_K, deny));
  return f;
}

}  // namespace

int LandlockAbi() {
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  return abi > 0 ? static_cast<int>(abi) : 0;
}

FsLockOutcome LockWritesBeneath(const std::vector<std::string>& writable_dirs) {
  FsLockOutcome out;
  out.abi = LandlockAbi();
  if (out.abi == 0) {
    out.error = std::string("Landlock is unavailable: ") + std::strerror(errno);
    return out;
  }
  const uint64_t rights = WriteRights(out.abi);
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = rights;
  ScopedFd ruleset(static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0)));
  if (ruleset.fd < 0) {
    out.error = std::string("landlock_create_ruleset: ") + std::strerror(errno);
    return out;
  }
  for (const std::string& dir : writable_dirs) {
    ScopedFd parent(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (parent.fd < 0) continue;  // a missing directory cannot be written anyway
    landlock_path_beneath_attr rule{};
    rule.allowed_access = rights;
    rule.parent_fd = parent.fd;
    if (syscall(SYS_landlock_add_rule, ruleset.fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
      out.error = "landlock_add_rule " + dir + ": " + std::strerror(errno);
      return out;
    }
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    out.error = std::string("no_new_privs: ") + std::strerror(errno);
    return out;
  }
  out.threads = CountThreads();
  if (syscall(SYS_landlock_restrict_self, ruleset.fd, 0) != 0) {
    out.error = std::string("landlock_restrict_self: ") + std::strerror(errno);
    return out;
  }
  out.applied = true;
  std::vector<sock_filter> filter = MetadataFilter();
  sock_fprog prog{static_cast<unsigned short>(filter.size()), filter.data()};
  // TSYNC: every thread of the process gets the filter, not only this one.
  // With TSYNC a positive result is the id of a thread that could not take the filter.
  if (long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
      r != 0) {
    out.error = "seccomp (metadata changes): " +
                (r > 0 ? "thread " + std::to_string(r) + " could not be synchronised"
                       : std::string(std::strerror(errno)));
    return out;
  }
  out.metadata_locked = true;
  return out;
}

bool PathIsBeneath(const std::string& path, const std::string& dir) {
  if (dir.empty() || path.compare(0, dir.size(), dir) != 0) return false;
  return path.size() == dir.size() || dir.back() == '/' || path[dir.size()] == '/';
}

}  // namespace kforge::eval
