#include "gpu_worker/eval/candidate_files.h"

#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "common/base/files.h"
#include "common/base/sha256.h"
#include "gpu_worker/eval/fs_lock.h"

namespace kforge::eval {
namespace {

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

std::string EnvOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string(fallback);
}

// Creates `dir` (and parents) and opens it to every uid: evaluations of one node may run as
// different users (one per GPU slot), and Landlock, not the mode, keeps candidates apart.
void MakeShared(const std::string& dir, mode_t mode) {
  MakeDirs(dir, 0700);
  chmod(dir.c_str(), mode);  // fails harmlessly on a directory another uid made
}

}  // namespace

CandidateFiles CandidateFilesFor(const std::string& cache_dir, const std::string& task_source,
                                 const std::string& candidate_source) {
  CandidateFiles f;
  if (cache_dir.empty()) return f;
  f.dir = cache_dir + "/c/" + Sha256Hex(Sha256Hex(task_source) + "/" + Sha256Hex(candidate_source));
  f.nvrtc_dir = f.dir + "/nvrtc";
  f.torch_extensions_dir = f.dir + "/torch_extensions";
  f.cpp_objects_dir = f.dir + "/cpp";
  f.torch_compile_dir = f.dir + "/torch_compile";
  return f;
}

// nftw's callback has no argument of its own: the walk's state (one walk at a time: the
// evaluation's main thread).
namespace {
std::string* g_host_code = nullptr;

int CheckHostCode(const char* path, const struct stat* st, int type, struct FTW*) {
  constexpr uint16_t kEmCuda = 190;
  if (type != FTW_F || !S_ISREG(st->st_mode)) return 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return 0;
  unsigned char h[20] = {};
  ssize_t n = read(fd, h, sizeof h);
  close(fd);
  if (n != static_cast<ssize_t>(sizeof h) || h[0] != 0x7f || h[1] != 'E' || h[2] != 'L' ||
      h[3] != 'F') {
    return 0;
  }
  const bool little = h[5] == 1;  // EI_DATA
  const uint16_t machine = little ? static_cast<uint16_t>(h[18] | h[19] << 8)
                                  : static_cast<uint16_t>(h[18] << 8 | h[19]);
  if (machine == kEmCuda) return 0;
  *g_host_code = path;
  return 1;  // stops the walk
}
}  // namespace

std::string HostCodeIn(const std::string& dir) {
  // POSIX nftw, not std::filesystem: libtorch.so exports an incompatible one that may be bound.
  std::string found;
  g_host_code = &found;
  nftw(dir.c_str(), CheckHostCode, 16, FTW_PHYS);
  g_host_code = nullptr;
  if (found.empty()) return found;
  return found.compare(0, dir.size() + 1, dir + "/") == 0 ? found.substr(dir.size() + 1) : found;
}

void LockToCandidateFiles(const std::string& cache_dir, CandidateFiles* files) {
  std::vector<std::string> scratch = {EnvOr("TMPDIR", "/tmp"), "/dev"};
  if (std::string home = EnvOr("HOME", ""); !home.empty()) scratch.push_back(home);
  std::vector<std::string> writable = scratch;
  // The CUDA driver's initialisation writes beneath /proc or /sys: without them cuInit fails
  // with CUDA_ERROR_OPERATING_SYSTEM (measured on the H200 machine). Neither holds a cache.
  writable.push_back("/proc");
  writable.push_back("/sys");
  if (!files->dir.empty()) {
    MakeShared(cache_dir + "/c", 01777);
    for (const std::string* d : {&files->dir, &files->nvrtc_dir, &files->torch_extensions_dir,
                                 &files->cpp_objects_dir, &files->torch_compile_dir}) {
      MakeShared(*d, 0777);
    }
    // The caches torch.compile and cupy make beneath (candidate_process.cc): open to the
    // node's other slot users too, as the rest of the namespace.
    for (const char* sub : {"/inductor", "/triton", "/cupy"}) {
      MakeShared(files->torch_compile_dir + sub, 0777);
    }
    writable.push_back(files->dir);
  }
  FsLockOutcome lock = LockWritesBeneath(writable);
  std::string cache = RealPath(cache_dir);
  bool overlaps = false;
  for (const std::string& dir : scratch) {
    std::string real = RealPath(dir);
    overlaps |= !real.empty() && (PathIsBeneath(cache, real) || PathIsBeneath(real, cache));
  }
  // ABI 3 is the first that refuses truncate(2): below it another candidate's binaries could
  // be emptied. Without the metadata filter they could be made unreadable.
  files->isolated = lock.applied && lock.metadata_locked && lock.abi >= 3 && lock.threads == 1 &&
                    !cache.empty() && !overlaps;
}

}  // namespace kforge::eval
