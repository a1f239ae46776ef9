// The sandbox's file view: which host paths a sandboxed child sees, and the plan of mounts
// that builds that view in its own mount namespace (issue 15, "the evaluation sandbox sees
// only what an evaluation needs"). This unit only computes; gpu_worker/sandbox_mounts.h runs
// the plan between fork and exec.
//
// The view is a fresh tmpfs root (read-only once built) holding:
//   - `read_only` paths bound read-only, nosuid, nodev, with every mount beneath them;
//   - the scratch directory and `read_write` paths bound writable (nosuid, nodev);
//   - /dev: a tmpfs with only the `devices` nodes bound in (a trailing '*' matches names by
//     prefix: "/dev/nvidia*"), the /dev/fd and /dev/std* links, and /dev/shm, a private tmpfs;
//   - a private /tmp (tmpfs, 1777) and a fresh /proc (the sandbox's PID namespace);
//   - `masked` paths (inside a bound path) covered: a directory by an empty tmpfs, a file by
//     /dev/null.
// Paths keep their host names. A path that does not exist is left out; a symbolic link on the
// way to a path (/lib -> usr/lib, $REPO/.venv -> elsewhere) is recreated in the view unless a
// bound directory already shows it, and its target is bound in its place. A path inside an
// already bound one with the same access adds nothing. Bound paths must not be "/" or lie
// under /proc, /dev or /tmp's mount points other than through the scratch directory and
// `read_write`.
//
// Thread-safety: PlanView and the probes are thread-compatible. Pure except through the probe.
#ifndef KFORGE_GPU_WORKER_SANDBOX_VIEW_H_
#define KFORGE_GPU_WORKER_SANDBOX_VIEW_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kforge {

// The system paths every child may read: programs, libraries, configuration (minus the
// secrets in `masked`), the CUDA toolkit and driver files, and /sys (CUDA reads the PCI tree).
std::vector<std::string> DefaultReadOnlyPaths();
std::vector<std::string> DefaultDevices();
std::vector<std::string> DefaultMaskedPaths();

struct SandboxView {
  bool enabled = true;  // only where the sandbox has its mount namespace (root)
  std::vector<std::string> read_only = DefaultReadOnlyPaths();
  std::vector<std::string> read_write;  // besides the scratch directory
  std::vector<std::string> devices = DefaultDevices();
  std::vector<std::string> masked = DefaultMaskedPaths();
  uint64_t tmpfs_bytes = 1ull << 30;  // size of the private /tmp and /dev/shm each
};

struct MountStep {
  enum Kind {
    kTmpfs,     // a fresh tmpfs at target (options in `data`)
    kProc,      // a fresh proc at target
    kBind,      // host `source` at target
    kSymlink,   // a symbolic link at target pointing to `source`
    kMaskDir,   // an empty read-only tmpfs over target
    kMaskFile,  // /dev/null over target
  };
  Kind kind;
  std::string target;  // a path in the view
  std::string source;  // kBind: a host path; kSymlink: the link's text
  std::string data;    // kTmpfs: mount options
  bool is_dir = true;  // kBind: the source is a directory (else a file or a device node)
  bool writable = false;  // kBind
  bool device = false;    // kBind: device nodes stay usable (no nodev)
};

// What PlanView needs to know of the host's files; the real one is SystemPathProbe.
class PathProbe {
 public:
  enum Kind { kMissing, kDirectory, kFile, kSymlink };
  virtual ~PathProbe() = default;
  virtual Kind Lstat(const std::string& path) const = 0;
  virtual std::string ReadLink(const std::string& path) const = 0;
  virtual std::vector<std::string> List(const std::string& dir) const = 0;  // names, sorted
};

class SystemPathProbe : public PathProbe {
 public:
  Kind Lstat(const std::string& path) const override;
  std::string ReadLink(const std::string& path) const override;
  std::vector<std::string> List(const std::string& dir) const override;
};

// The steps, in order, that build `view` for a child whose scratch directory is `scratch`
// (writable). INVALID_ARGUMENT for a path that is relative, contains "." or "..", is "/", or
// lies under /proc or /dev (devices belong in `devices`).
// OK when `path` may be one of a view's read-only or read-write paths: absolute, without . or
// .., and not the root, /proc, /dev or the host's /tmp (which the view replaces); PlanView
// refuses a view that names another. INVALID_ARGUMENT saying why otherwise.
absl::Status CheckViewPath(const std::string& path);

absl::StatusOr<std::vector<MountStep>> PlanView(const SandboxView& view,
                                                const std::string& scratch,
                                                const PathProbe& probe);

// `patterns` with each trailing '*' expanded to the existing names of its directory that start
// with what precedes it; other entries are kept as they are.
std::vector<std::string> ExpandPrefixPatterns(const std::vector<std::string>& patterns,
                                              const PathProbe& probe);

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_SANDBOX_VIEW_H_
