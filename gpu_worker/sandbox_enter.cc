#include "gpu_worker/sandbox_enter.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace kforge {
namespace {

// Where the host's root stays reachable while the view is built.
constexpr char kHostRoot[] = "/.kforge-host";

// Creates the missing directories above `path` (errors show in the mount that follows).
void MakeParents(const char* path) {
  char buf[4096];
  size_t n = std::strlen(path);
  if (n >= sizeof buf) return;
  std::memcpy(buf, path, n + 1);
  for (size_t i = 1; i < n; ++i) {
    if (buf[i] != '/') continue;
    buf[i] = '\0';
    mkdir(buf, 0755);
    buf[i] = '/';
  }
}

bool MakeMountPoint(const char* path, bool dir) {
  MakeParents(path);
  if (dir) return mkdir(path, 0755) == 0 || errno == EEXIST;
  int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0444);
  if (fd < 0) return false;
  close(fd);
  return true;
}

// Read-only (unless writable), nosuid, and nodev or noexec, for the bind and every mount
// beneath it (a GPU container's driver libraries are bind mounts inside /usr).
bool SetBindAttributes(const char* target, bool writable, bool device) {
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_NOSUID | (device ? MOUNT_ATTR_NOEXEC : MOUNT_ATTR_NODEV) |
                  (writable ? 0 : MOUNT_ATTR_RDONLY);
  if (syscall(SYS_mount_setattr, AT_FDCWD, target, AT_RECURSIVE, &attr, sizeof attr) == 0) {
    return true;
  }
  if (errno != ENOSYS) return false;
  // Before Linux 5.12: the top mount only.
  unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID | (device ? MS_NOEXEC : MS_NODEV) |
                        (writable ? 0 : MS_RDONLY);
  return mount(nullptr, target, nullptr, flags, nullptr) == 0;
}

const char* RunStep(const MountStep& s, const char** where) {
  const char* target = s.target.c_str();
  *where = target;
  switch (s.kind) {
    case MountStep::kTmpfs: {
      unsigned long flags = MS_NOSUID | (s.target == "/dev" ? MS_NOEXEC : MS_NODEV);
      if (!MakeMountPoint(target, true)) return "view: creating a mount point";
      if (mount("tmpfs", target, "tmpfs", flags, s.data.c_str()) != 0) return "view: tmpfs";
      return nullptr;
    }
    case MountStep::kProc:
      if (!MakeMountPoint(target, true)) return "view: creating a mount point";
      if (mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
        return "view: mounting /proc";
      }
      return nullptr;
    case MountStep::kBind: {
      char source[4096];
      if (sizeof kHostRoot + s.source.size() > sizeof source) {
        errno = ENAMETOOLONG;
        return "view: bind";
      }
      std::memcpy(source, kHostRoot, sizeof kHostRoot - 1);
      std::memcpy(source + sizeof kHostRoot - 1, s.source.c_str(), s.source.size() + 1);
      if (!MakeMountPoint(target, s.is_dir)) return "view: creating a mount point";
      if (mount(source, target, nullptr, MS_BIND | MS_REC, nullptr) != 0) return "view: bind";
      if (!SetBindAttributes(target, s.writable, s.device)) return "view: bind attributes";
      return nullptr;
    }
    case MountStep::kSymlink:
      MakeParents(target);
      if (symlink(s.source.c_str(), target) != 0 && errno != EEXIST) return "view: symlink";
      return nullptr;
    case MountStep::kMaskDir:
      if (mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                "mode=0755,size=4k") != 0) {
        return "view: masking a directory";
      }
      return nullptr;
    case MountStep::kMaskFile:
      if (mount("/dev/null", target, nullptr, MS_BIND, nullptr) != 0) return "view: masking a file";
      return nullptr;
  }
  return "view: unknown step";
}

}  // namespace

const char* EnterView(const std::vector<MountStep>& steps, const std::string& base,
                      const std::string& cwd, const char** where) {
  *where = base.c_str();
  if (mount("tmpfs", base.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) {
    return "view: tmpfs root";
  }
  if (chdir(base.c_str()) != 0) return "view: chdir to the new root";
  if (mkdir(kHostRoot + 1, 0700) != 0) return "view: mkdir for the host root";
  if (syscall(SYS_pivot_root, ".", kHostRoot + 1) != 0) return "view: pivot_root";
  if (chdir("/") != 0) return "view: chdir /";
  for (const MountStep& s : steps) {
    // /dev/null is bound before a masked file needs it (/dev sorts before /etc).
    if (const char* failed = RunStep(s, where)) return failed;
  }
  *where = kHostRoot;
  if (umount2(kHostRoot, MNT_DETACH) != 0) return "view: detaching the host root";
  if (rmdir(kHostRoot) != 0) return "view: removing the host root's mount point";
  *where = "/";
  if (mount(nullptr, "/", nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0) {
    return "view: making the root read-only";
  }
  *where = cwd.c_str();
  if (chdir(cwd.c_str()) != 0) return "view: chdir to the scratch directory";
  return nullptr;
}

const char* RestrictExecution(const std::vector<std::string>& allowed, const char** where) {
  *where = "";
  if (allowed.empty()) return nullptr;
  // Landlock (ABI 2 on) refuses to move or link a file into another directory (EXDEV) unless
  // a rule grants REFER there, whatever the ruleset handles: Triton's cache, which renames its
  // builds out of a temporary directory, failed so. Granted on the whole view, a move is still
  // refused where more may be executed at its destination than at its source.
  constexpr uint64_t kRefer = 1ULL << 13;  // ABI 2; newer than some system headers
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, 1U /* the ABI version */);
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = LANDLOCK_ACCESS_FS_EXECUTE | (abi >= 2 ? kRefer : 0);
  int ruleset = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (ruleset < 0) return "landlock unavailable (landlock_create_ruleset)";
  auto add = [ruleset](const char* path, uint64_t access) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return true;  // not there: nothing to allow
    landlock_path_beneath_attr rule{};
    rule.allowed_access = access;
    rule.parent_fd = fd;
    long rc = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
    close(fd);
    return rc == 0;
  };
  for (const std::string& path : allowed) {
    if (!add(path.c_str(), LANDLOCK_ACCESS_FS_EXECUTE)) {
      *where = path.c_str();
      close(ruleset);
      return "landlock_add_rule";
    }
  }
  if (abi >= 2 && !add("/", kRefer)) {
    *where = "/";
    close(ruleset);
    return "landlock_add_rule";
  }
  long rc = syscall(SYS_landlock_restrict_self, ruleset, 0);
  close(ruleset);
  return rc == 0 ? nullptr : "landlock_restrict_self";
}

}  // namespace kforge
