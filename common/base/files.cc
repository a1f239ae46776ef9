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
// link, and after giving it back 0700 where its mode keeps its owner out.
int OpenForRemoval(int parent, const char* name) {
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  // EACCES, not ELOOP: `name` is a directory, not a link, so the mode change does not follow one
  // (nothing else writes the tree now).
  if (fd < 0 && errno == EACCES && fchmodat(parent, name, 0700, 0) == 0) {
    fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd >= 0) fchmod(fd, 0700);
  return fd;
}

}  // namespace

bool RemoveTree(int dir_fd, const std::string& name) {
  if (unlinkat(dir_fd, name.c_str(), 0) == 0 || errno == ENOENT) return true;
  if (errno != EISDIR && errno != EPERM) return false;
  int fd = OpenForRemoval(dir_fd, name.c_str());
  if (fd < 0) return errno == ENOENT;
  std::vector<std::string> path;  // the names from `name` down to the directory `fd` holds
  std::vector<std::pair<std::string, unsigned char>> entries;
  // Each pass lists the current directory, removes its files and empty directories, and goes
  // down into the first directory that is not empty, or up once nothing is left. A bound on the
  // passes ends a walk that would not (entries that come back).
  for (uint64_t passes = 0; passes < (uint64_t{1} << 26); ++passes) {
    if (!ListDir(fd, &entries)) break;
    std::string down;
    bool failed = false;
    for (const auto& [entry, type] : entries) {
      if (type != DT_DIR && type != DT_UNKNOWN) {
        if (unlinkat(fd, entry.c_str(), 0) != 0 && errno != ENOENT) failed = true;
        continue;
      }
      if (unlinkat(fd, entry.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) continue;
      if (errno == ENOTDIR) {  // DT_UNKNOWN, a file
        if (unlinkat(fd, entry.c_str(), 0) != 0 && errno != ENOENT) failed = true;
        continue;
      }
      if (errno == ENOTEMPTY || errno == EEXIST || errno == EACCES || errno == EPERM) {
        down = entry;
        break;
      }
      failed = true;
    }
    if (failed) break;
    if (!down.empty()) {
      const int child = OpenForRemoval(fd, down.c_str());
      if (child < 0) break;
      close(fd);
      fd = child;
      path.push_back(down);
      continue;
    }
    // Empty now: up one level and remove it there.
    if (path.empty()) {
      close(fd);
      return unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT;
    }
    const int parent = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(fd);
    if (parent < 0) return false;
    fd = parent;
    if (unlinkat(fd, path.back().c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) break;
    path.pop_back();
  }
  close(fd);
  return false;
}

}  // namespace kforge
