#include "gpu_worker/sandbox_view.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/str_split.h"

namespace kforge {

std::vector<std::string> DefaultReadOnlyPaths() {
  // /usr holds the compilers, Python's standard library, /usr/local/cuda and, on GPU nodes,
  // the driver's libraries (/usr/lib/x86_64-linux-gnu, /usr/local/nvidia); the others are
  // links into it on merged-/usr systems. /etc: the loader's cache, alternatives (c++ ->
  // g++), users and groups. /opt: vendor toolkits and the GPU machine's torch venv.
  return {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
          "/sys"};
}

std::vector<std::string> DefaultDevices() {
  return {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/nvidia*"};
}

std::vector<std::string> DefaultMaskedPaths() {
  return {"/etc/shadow",  "/etc/shadow-", "/etc/gshadow",     "/etc/gshadow-",
          "/etc/sudoers", "/etc/sudoers.d", "/etc/ssh",       "/etc/ssl/private",
          "/etc/kforge"};
}

PathProbe::Kind SystemPathProbe::Lstat(const std::string& path) const {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return kMissing;
  if (S_ISLNK(st.st_mode)) return kSymlink;
  return S_ISDIR(st.st_mode) ? kDirectory : kFile;
}

std::string SystemPathProbe::ReadLink(const std::string& path) const {
  char buf[4096];
  ssize_t n = readlink(path.c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

std::vector<std::string> SystemPathProbe::List(const std::string& dir) const {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> ExpandPrefixPatterns(const std::vector<std::string>& patterns,
                                              const PathProbe& probe) {
  std::vector<std::string> out;
  for (const std::string& p : patterns) {
    if (p.empty() || p.back() != '*') {
      out.push_back(p);
      continue;
    }
    size_t slash = p.find_last_of('/');
    std::string dir = p.substr(0, slash), prefix = p.substr(slash + 1, p.size() - slash - 2);
    for (const std::string& name : probe.List(dir.empty() ? "/" : dir)) {
      if (name.rfind(prefix, 0) == 0) out.push_back(dir + "/" + name);
    }
  }
  return out;
}

namespace {

bool IsBeneath(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

std::vector<std::string> Components(const std::string& path) {
  return absl::StrSplit(path, '/', absl::SkipEmpty());
}

absl::Status CheckPath(const std::string& path, bool device) {
  auto bad = [&](const char* why) {
    return absl::InvalidArgumentError("sandbox view path '" + path + "': " + why);
  };
  if (path.empty() || path[0] != '/') return bad("not absolute");
  for (const std::string& c : Components(path)) {
    if (c == "." || c == "..") return bad("has . or .. components");
  }
  if (device) return IsBeneath(path, "/dev") ? absl::OkStatus() : bad("a device not in /dev");
  if (Components(path).empty()) return bad("the whole root");
  if (IsBeneath(path, "/proc") || IsBeneath(path, "/dev")) return bad("in /proc or /dev");
  if (path == "/tmp") return bad("the host's /tmp (the view has a private one)");
  return absl::OkStatus();
}

struct Resolved {
  std::string path;  // "" when missing or a loop
  std::vector<std::pair<std::string, std::string>> links;  // (where, text) on the way
};

// `path` with every symbolic link on the way followed, as the kernel would.
Resolved Resolve(const std::string& path, const PathProbe& probe) {
  Resolved r;
  std::vector<std::string> todo = Components(path);
  std::reverse(todo.begin(), todo.end());  // a stack: next component at the back
  std::vector<std::string> done;
  auto joined = [&] {
    std::string s;
    for (const auto& c : done) s += "/" + c;
    return s.empty() ? std::string("/") : s;
  };
  int links = 0;
  while (!todo.empty()) {
    std::string c = todo.back();
    todo.pop_back();
    if (c == ".") continue;
    if (c == "..") {
      if (!done.empty()) done.pop_back();
      continue;
    }
    done.push_back(c);
    std::string here = joined();
    PathProbe::Kind kind = probe.Lstat(here);
    if (kind == PathProbe::kMissing) return {};
    if (kind != PathProbe::kSymlink) continue;
    if (++links > 40) return {};
    std::string text = probe.ReadLink(here);
    r.links.emplace_back(here, text);
    done.pop_back();
    if (!text.empty() && text[0] == '/') done.clear();
    std::vector<std::string> more = Components(text);
    todo.insert(todo.end(), more.rbegin(), more.rend());
  }
  r.path = joined();
  return r;
}

struct Bind {
  bool is_dir = true;
  bool writable = false;
  bool device = false;
};

}  // namespace

absl::Status CheckViewPath(const std::string& path) { return CheckPath(path, false); }

absl::StatusOr<std::vector<MountStep>> PlanView(const SandboxView& view,
                                                const std::string& scratch,
                                                const PathProbe& probe) {
  std::map<std::string, Bind> binds;             // by target, which is the host path
  std::map<std::string, std::string> links;      // where -> text
  std::vector<std::pair<std::string, bool>> wanted;  // (path, writable)
  for (const auto& p : view.read_only) wanted.emplace_back(p, false);
  for (const auto& p : view.read_write) wanted.emplace_back(p, true);
  wanted.emplace_back(scratch, true);
  for (const auto& [path, writable] : wanted) {
    if (absl::Status s = CheckPath(path, false); !s.ok()) return s;
  }
  std::vector<std::string> devices = ExpandPrefixPatterns(view.devices, probe);
  for (const auto& d : devices) {
    if (absl::Status s = CheckPath(d, true); !s.ok()) return s;
  }
  auto add = [&](const std::string& path, bool writable, bool device) {
    Resolved r = Resolve(path, probe);
    if (r.path.empty() || IsBeneath(r.path, "/proc") || r.path == "/tmp" || r.path == "/" ||
        IsBeneath(r.path, "/dev") != device) {
      return;
    }
    for (const auto& [where, text] : r.links) links[where] = text;
    Bind& b = binds[r.path];
    b.is_dir = probe.Lstat(r.path) == PathProbe::kDirectory;
    b.writable = b.writable || writable;
    b.device = device;
  };
  for (const auto& [path, writable] : wanted) add(path, writable, false);
  for (const auto& d : devices) add(d, true, true);

  // Where each path of the view comes from: the nearest bind or fresh filesystem above it.
  const std::vector<std::string> fresh = {"/", "/dev", "/dev/shm", "/proc", "/tmp"};
  auto nearest = [&](const std::string& path, const std::string& except) {
    std::string best = "/";
    for (const auto& [target, b] : binds) {
      if (target != except && IsBeneath(path, target) && target.size() > best.size()) best = target;
    }
    for (const auto& f : fresh) {
      if (IsBeneath(path, f) && f.size() > best.size()) best = f;
    }
    return best;
  };
  auto from_bind = [&](const std::string& mount) { return binds.count(mount) > 0; };

  std::vector<MountStep> steps;
  const std::string size = "size=" + std::to_string(view.tmpfs_bytes);
  steps.push_back({MountStep::kTmpfs, "/dev", "", "mode=0755", true, false, false});
  steps.push_back({MountStep::kTmpfs, "/dev/shm", "", "mode=1777," + size, true, true, false});
  steps.push_back({MountStep::kProc, "/proc", "", "", true, false, false});
  steps.push_back({MountStep::kTmpfs, "/tmp", "", "mode=1777," + size, true, true, false});
  for (const char* fd : {"fd", "stdin", "stdout", "stderr"}) {
    std::string name = fd;
    std::string text = name == "fd" ? "/proc/self/fd" : "/proc/self/fd/" +
                       std::to_string(name == "stdin" ? 0 : name == "stdout" ? 1 : 2);
    steps.push_back({MountStep::kSymlink, "/dev/" + name, text, "", false, false, false});
  }
  for (const auto& [target, b] : binds) {
    std::string above = nearest(target, target);
    // Shown already by a bind above it with the same access.
    if (from_bind(above) && binds[above].writable == b.writable && !b.device) continue;
    steps.push_back({MountStep::kBind, target, target, "", b.is_dir, b.writable, b.device});
  }
  for (const auto& [where, text] : links) {
    std::string above = nearest(where, "");
    if (from_bind(above) || where == above) continue;  // the bound directory shows it
    steps.push_back({MountStep::kSymlink, where, text, "", false, false, false});
  }
  for (const auto& m : view.masked) {
    Resolved r = Resolve(m, probe);
    if (r.path.empty() || !from_bind(nearest(r.path, ""))) continue;  // not in the view
    bool dir = probe.Lstat(r.path) == PathProbe::kDirectory;
    steps.push_back({dir ? MountStep::kMaskDir : MountStep::kMaskFile, r.path, "", "", dir,
                     false, false});
  }
  // Parents before children (a path sorts after its prefixes); a mask after its bind.
  std::stable_sort(steps.begin(), steps.end(), [](const MountStep& a, const MountStep& b) {
    return a.target < b.target;
  });
  return steps;
}

}  // namespace kforge
