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

}  // namespace kforge
