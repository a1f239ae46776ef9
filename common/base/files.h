// Whole-file reads and atomic writes.
//
// Pure functions over the file system; thread-safe. Standard library only (the engine uses
// them on GPU machines).
#ifndef KFORGE_COMMON_BASE_FILES_H_
#define KFORGE_COMMON_BASE_FILES_H_

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <string>

namespace kforge {

// Closes a file descriptor when it goes out of scope (-1: none).
struct ScopedFd {
  ScopedFd() = default;
  explicit ScopedFd(int f) : fd(f) {}
  ~ScopedFd() {
    if (fd >= 0) close(fd);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;

  int fd = -1;
};

// The file's bytes, or "" when it cannot be read.
std::string ReadFileOrEmpty(const std::string& path);
// Writes through a temporary name and a rename, so readers (other processes too) never see a
// partial file. False when it could not be written.
bool WriteFileAtomically(const std::string& path, const std::string& data);
// A name beside `path` for writing it before a rename: `path` + ".tmp." + 16 random hex
// digits. Not the pid: sandboxed processes each have their own PID namespace, so two of them
// writing the same cache entry would otherwise pick the same name.
std::string TempNameFor(const std::string& path);
// Removes, beneath `dir`, the files named like TempNameFor's that were last modified more than
// `older_than_s` seconds ago: what writers killed before their rename left behind. Symbolic
// links are never followed (each directory is opened relative to its parent with O_NOFOLLOW,
// and entries are removed relative to it), so a tree other processes can write cannot steer it
// outside `dir`. Returns the number of files removed.
int RemoveStaleTemporaries(const std::string& dir, double older_than_s);
// Removes `name` under the directory `dir_fd` (AT_FDCWD: a path) and everything beneath it,
// as the owner of a tree that processes of the same user could write: symbolic links are
// removed as links, never followed (each directory is opened relative to its parent with
// O_NOFOLLOW); a directory made unreadable or unwritable (created with such a mode) is given
// back 0700 first (never through a link); the walk holds at most two descriptors whatever the
// depth, keeping the names on its way down and going back up through "..", so a tree deeper
// than PATH_MAX or than the descriptor limit is removed too; each directory is listed once, so
// the time is linear in the entries; and it goes up only into the directory it came from (the
// same device and inode) and never onto another file system, so a directory moved while it is
// inside cannot lead it out (it stops, false). Meant for a tree no process still writes. True
// when nothing of it is left (also when it did not exist).
// `watch` (tests): counts what the walk read, and is told each time it entered a directory.
struct RemoveTreeWatch {
  uint64_t listed = 0;   // directories listed
  uint64_t entries = 0;  // entries read in all
  std::function<void(const std::string& name)> entered;
};
// `only`: remove it only if `name` is, when opened, the directory `only` describes (its
// device and inode); where another directory took the name since, nothing beneath it is
// touched (false). Only its last step, the removal of the emptied directory by name, could
// still meet a directory swapped in meanwhile, and only an empty one.
bool RemoveTree(int dir_fd, const std::string& name, RemoveTreeWatch* watch = nullptr,
                const struct stat* only = nullptr);
// mkdir -p: creates `path` and its missing parents with `mode` (less the umask). Returns an
// error message, empty on success (also when it existed).
std::string MakeDirs(const std::string& path, unsigned mode = 0700);

}  // namespace kforge

#endif  // KFORGE_COMMON_BASE_FILES_H_
