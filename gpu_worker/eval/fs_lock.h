// Restricts the calling process, for the rest of its life, to writing files only beneath a few
// directories, with Landlock (Linux 5.13+, raw syscalls). Reads, execution and device ioctls
// stay unrestricted: only the write-type access rights are handled (write, truncate, create,
// remove, rename/link across directories), chosen by the Landlock ABI the kernel offers.
// Landlock does not cover a file's metadata, so a seccomp filter then refuses (EPERM) every
// change of mode, owner, times or extended attributes, anywhere: without it a process could
// make files it may not write unreadable (chmod 000) for everyone of its uid.
//
// The restriction is irreversible and inherited by every child and every thread created
// afterwards. Landlock restricts the calling thread only: threads that already exist stay
// free, so call LockWritesBeneath while the process is single-threaded (the result says how
// many threads there were).
//
// Thread-safety: call from the thread that will go on to run the restricted code.
#ifndef KFORGE_GPU_WORKER_EVAL_FS_LOCK_H_
#define KFORGE_GPU_WORKER_EVAL_FS_LOCK_H_

#include <string>
#include <vector>

namespace kforge::eval {

// The kernel's Landlock ABI version; 0 when Landlock is missing or disabled (or a seccomp
// filter refuses it).
int LandlockAbi();

struct FsLockOutcome {
  bool applied = false;  // the write restriction is in force for this thread and descendants
  bool metadata_locked = false;  // chmod/chown/utime/xattr changes refused, in every thread
  int abi = 0;           // Landlock ABI used (0: unavailable)
  int threads = 0;       // threads of the process when the lock was applied (1: all covered)
  std::string error;     // why it was not applied (empty when applied)
};

// Allows writes only beneath `writable_dirs` (directories; a missing one is left out). Sets
// no_new_privs first, as Landlock requires of an unprivileged process.
FsLockOutcome LockWritesBeneath(const std::vector<std::string>& writable_dirs);

// True when `path` equals `dir` or lies beneath it (textually; both absolute, no "..").
bool PathIsBeneath(const std::string& path, const std::string& dir);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_FS_LOCK_H_
