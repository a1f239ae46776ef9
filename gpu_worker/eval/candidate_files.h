// Where one candidate's builds are cached, and the lock that keeps the evaluation process from
// writing anywhere else once task or candidate code can run (issue: shared build caches).
//
// Layout under the cache directory (docs/evaluation.md, "Build caches"), <key> the SHA-256 of
// "<sha256 of the task source>/<sha256 of the candidate source>":
//   <cache>/c/<key>/nvrtc/             kforge.cuda and cpp kernels
//   <cache>/c/<key>/torch_extensions/  load_inline builds (and remembered failures)
//   <cache>/c/<key>/cpp/               cpp shared objects
//   <cache>/c/<key>/torch_compile/     torch.compile's caches (inductor/, triton/), cupy's
//                                      (cupy/)
//   <cache>/cpp/...                    the shared cpp PCH
// Evaluations of the same candidate file on the same task file share a namespace (the build
// ahead and the timed run of one lease among them); nothing else does. The task is part of the
// key because the task's code runs in the candidate's process too: keyed on the candidate
// alone, a task of another tenant's choosing could plant builds or failure markers for a
// public candidate. Everything shared (the PCH) is written by the engine before the lock.
//
// The lock (fs_lock.h) allows writes beneath the candidate's namespace, the evaluation's
// scratch ($TMPDIR, else /tmp) and $HOME, and /dev (GPU nodes, /dev/null, /dev/shm); reads stay
// free. It is applied in the evaluation process, never in a fork server or a supervisor, and
// must be applied while that process is single-threaded (a thread started before it would
// stay free).
//
// Thread-safety: call from the evaluation's main thread.
#ifndef KFORGE_GPU_WORKER_EVAL_CANDIDATE_FILES_H_
#define KFORGE_GPU_WORKER_EVAL_CANDIDATE_FILES_H_

#include <string>

namespace kforge::eval {

struct CandidateFiles {
  // All empty without a cache directory (no disk caches, nothing shared).
  std::string dir;  // <cache>/c/<key>
  std::string nvrtc_dir;
  std::string torch_extensions_dir;
  std::string cpp_objects_dir;
  std::string torch_compile_dir;
  // The lock (Landlock ABI >= 3) is in force for the whole process and no directory it may
  // write overlaps the cache directory outside `dir`: no other candidate could have planted
  // what this one loads from the cache, and this one can plant nothing for others; and the
  // metadata filter refuses chmod, chown, utime and xattr changes (which Landlock does not
  // cover), so no candidate can make others' entries unreadable either.
  bool isolated = false;
};

// The namespace's paths for a task and a candidate (their sources); creates nothing.
CandidateFiles CandidateFilesFor(const std::string& cache_dir, const std::string& task_source,
                                 const std::string& candidate_source);

// The first file beneath `dir` (relative to it) that is host code a process could load: an
// ELF object for another machine than EM_CUDA (a shared library, an executable; a cubin is
// device code), or "" when there is none. Symbolic links are not followed. A candidate's
// namespace is written by the candidate's own (untrusted) processes: the audit hook sees the
// write in the process that makes it, but a later process can load what an earlier one left
// without writing anything (a library's constructor runs when it is loaded), so a process
// whose namespace holds host code is taken to have reached native code.
std::string HostCodeIn(const std::string& dir);

// Creates the namespace's directories, then restricts the process's writes as described
// above and sets files->isolated. Without Landlock the evaluation goes on unrestricted
// (isolated stays false).
void LockToCandidateFiles(const std::string& cache_dir, CandidateFiles* files);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_CANDIDATE_FILES_H_
