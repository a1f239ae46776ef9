// The sandbox's steps in the child, between fork and exec, that need the plans computed before
// the fork: building the file view (sandbox_view.h) and restricting which files may be
// executed. Only async-signal-safe calls (raw syscalls on strings made before the fork).
//
// Each returns nullptr on success, or the step that failed (errno says why; `*where` names the
// path concerned, when there is one).
#ifndef KFORGE_GPU_WORKER_SANDBOX_ENTER_H_
#define KFORGE_GPU_WORKER_SANDBOX_ENTER_H_

#include <string>
#include <vector>

#include "gpu_worker/sandbox_view.h"

namespace kforge {

// In a private mount namespace, as root: mounts a tmpfs on `base` (an empty directory that
// the view does not need from the host: the scratch directory), makes it the root with
// pivot_root, runs `steps` with host paths taken from the old root, detaches the old root,
// makes the new root read-only and changes to `cwd` (a path of the view).
const char* EnterView(const std::vector<MountStep>& steps, const std::string& base,
                      const std::string& cwd, const char** where);

// With Landlock (no_new_privs set): from now on only files at or beneath `allowed` may be
// executed (by execve, or as an ELF interpreter or script interpreter), in this process and its
// descendants. A path that does not exist is left out. An empty list restricts nothing.
// "landlock unavailable" when the kernel has no Landlock and the list is not empty. Files may
// still be moved between directories (Landlock's REFER, granted everywhere), except to where
// more may be executed than where they were.
const char* RestrictExecution(const std::vector<std::string>& allowed, const char** where);

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_SANDBOX_ENTER_H_
