#include "gpu_worker/eval/fs_lock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

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

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

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
  Fd ruleset;
  ruleset.fd = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (ruleset.fd < 0) {
    out.error = std::string("landlock_create_ruleset: ") + std::strerror(errno);
    return out;
  }
  for (const std::string& dir : writable_dirs) {
    Fd parent;
    parent.fd = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
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
  return out;
}

bool PathIsBeneath(const std::string& path, const std::string& dir) {
  if (dir.empty() || path.compare(0, dir.size(), dir) != 0) return false;
  return path.size() == dir.size() || dir.back() == '/' || path[dir.size()] == '/';
}

}  // namespace kforge::eval
