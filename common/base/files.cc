#include "common/base/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <sstream>
#include <utility>
#include <vector>

namespace kforge {

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TempNameFor(const std::string& path) {
  // Fresh entropy on every call: a generator's state would be copied into forked children.
  std::random_device rd;
  uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(v));
  return path + ".tmp." + hex;
}

bool WriteFileAtomically(const std::string& path, const std::string& data) {
  std::string tmp = TempNameFor(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) return false;
  }
  if (std::rename(tmp.c_str(), path.c_str()) == 0) return true;
  std::remove(tmp.c_str());
  return false;
}

namespace {

// "<anything>.tmp.<16 hex digits>", as TempNameFor makes them.
bool IsTempName(const char* name) {
  size_t n = std::strlen(name);
  if (n < 5 + 16 || std::strncmp(name + n - 21, ".tmp.", 5) != 0) return false;
  for (size_t i = n - 16; i < n; ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return false;
  }
  return true;
}

// Walks the directory open at `fd` (taking ownership of it), `depth` levels at most.
int RemoveStaleIn(int fd, time_t cutoff, int depth) {
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return 0;
  }
  int removed = 0;
  while (dirent* e = readdir(d)) {
    if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, "..")) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode) && depth > 0) {
      int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) removed += RemoveStaleIn(sub, cutoff, depth - 1);
    } else if (S_ISREG(st.st_mode) && st.st_mtime < cutoff && IsTempName(e->d_name)) {
      removed += unlinkat(dirfd(d), e->d_name, 0) == 0;
    }
  }
  closedir(d);
  return removed;
}

}  // namespace

int RemoveStaleTemporaries(const std::string& dir, double older_than_s) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 0;
  return RemoveStaleIn(fd, std::time(nullptr) - static_cast<time_t>(older_than_s), 16);
}

std::string MakeDirs(const std::string& path, unsigned mode) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    std::string prefix = path.substr(0, slash);
    if (mkdir(prefix.c_str(), static_cast<mode_t>(mode)) != 0 && errno != EEXIST) {
      return "cannot create " + prefix + ": " + std::strerror(errno);
    }
    if (slash == std::string::npos) return "";
  }
}

namespace {

// A directory's entries other than "." and ".." (`fd` itself stays open and unmoved).
bool ListDir(int fd, std::vector<std::pair<std::string, unsigned char>>* entries) {
  const int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return false;
  DIR* dir = fdopendir(dup_fd);
  if (!dir) {
    close(dup_fd);
    return false;
  }
  rewinddir(dir);
  entries->clear();
  while (dirent* e = readdir(dir)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      entries->emplace_back(e->d_name, e->d_type);
    }
  }
  closedir(dir);
  return true;
}

// Opens the directory `name` under `parent` for removing what it holds: without following a
// link, and after giving it back 0700 where its mode keeps its owner out. The mode is changed
// only where it cannot follow a link (AT_SYMLINK_NOFOLLOW; where the C library cannot do that,
// such a directory stays, and the removal fails).
int OpenForRemoval(int parent, const char* name) {
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == EACCES && fchmodat(parent, name, 0700, AT_SYMLINK_NOFOLLOW) == 0) {
    fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd >= 0) fchmod(fd, 0700);
  return fd;
}

struct DirId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const DirId& o) const { return dev == o.dev && ino == o.ino; }
};

bool IdOf(int fd, DirId* id) {
  struct stat st;
  if (fstat(fd, &st) != 0) return false;
  *id = {st.st_dev, st.st_ino};
  return true;
}

}  // namespace

bool RemoveTree(int dir_fd, const std::string& name, RemoveTreeWatch* watch,
                const struct stat* only) {
  if (!only) {
    if (unlinkat(dir_fd, name.c_str(), 0) == 0 || errno == ENOENT) return true;
    if (errno != EISDIR && errno != EPERM) return false;
  }
  int fd = OpenForRemoval(dir_fd, name.c_str());
  if (fd < 0) return !only && errno == ENOENT;
  DirId opened;
  if (only && (!IdOf(fd, &opened) || !(opened == DirId{only->st_dev, only->st_ino}))) {
    close(fd);
    return false;
  }
  // One level per directory on the way down from `name`: its identity, its name in the level
  // above, and the subdirectories it still holds. Each directory is listed once, when the walk
  // enters it; the walk goes back up through "..", and only into the directory it came from
  // (the same device and inode), so that a directory moved meanwhile cannot lead it out.
  struct Level {
    std::string name;
    DirId id;
    bool listed = false;
    std::vector<std::string> pending;  // subdirectories not emptied yet
  };
  std::vector<Level> path(1);
  path[0].name = name;
  bool ok = IdOf(fd, &path[0].id);
  std::vector<std::pair<std::string, unsigned char>> entries;
  for (uint64_t steps = 0; ok && steps < (uint64_t{1} << 32); ++steps) {
    Level& here = path.back();
    if (!here.listed) {
      here.listed = true;
      if (!ListDir(fd, &entries)) {
        ok = false;
        break;
      }
      if (watch) {
        ++watch->listed;
        watch->entries += entries.size();
      }
      for (const auto& [entry, type] : entries) {
        if (type != DT_DIR) {  // a file, a link, a FIFO, a socket, or not told
          if (unlinkat(fd, entry.c_str(), 0) == 0 || errno == ENOENT) continue;
          if (errno != EISDIR) {
            ok = false;
            continue;
          }
        }
        if (unlinkat(fd, entry.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) continue;
        here.pending.push_back(entry);  // not empty (or locked): emptied from inside
      }
      if (!ok) break;
    }
    if (!here.pending.empty()) {
      const std::string down = std::move(here.pending.back());
      here.pending.pop_back();
      const int child = OpenForRemoval(fd, down.c_str());
      Level next;
      next.name = down;
      // Never onto another file system (a mount point cannot be removed anyway).
      if (child < 0 || !IdOf(child, &next.id) || next.id.dev != here.id.dev) {
        if (child >= 0) close(child);
        ok = false;
        break;
      }
      close(fd);
      fd = child;
      path.push_back(std::move(next));
      if (watch && watch->entered) watch->entered(down);
      continue;
    }
    // Everything beneath it is gone: up one level, and remove it there.
    if (path.size() == 1) break;
    const int parent = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(fd);
    fd = parent;
    const std::string done = path.back().name;
    path.pop_back();
    DirId id;
    if (fd < 0 || !IdOf(fd, &id) || !(id == path.back().id)) {
      ok = false;  // moved while the walk was inside it: do not follow it out
      break;
    }
    if (unlinkat(fd, done.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) ok = false;
  }
  if (fd >= 0) close(fd);
  if (!ok || path.size() != 1 || !path[0].pending.empty()) return false;
  return unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT;
}

}  // namespace kforge
