#include "gpu_worker/eval/process_tree.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kforge::eval {

std::vector<pid_t> ChildrenOfSelf() {
  std::vector<pid_t> out;
  const pid_t self = getpid();
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return out;
  while (struct dirent* e = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE* f = std::fopen(path, "r");
    if (f == nullptr) continue;
    char buf[512];
    size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    const char* paren = std::strrchr(buf, ')');  // the command name may hold spaces
    char state = 0;
    long ppid = 0;
    if (paren != nullptr && std::sscanf(paren + 1, " %c %ld", &state, &ppid) == 2 && ppid == self) {
      out.push_back(static_cast<pid_t>(pid));
    }
  }
  closedir(proc);
  return out;
}

bool KillChildren(double wait_s, pid_t spare) {
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int>(wait_s * 1000));
  while (std::chrono::steady_clock::now() < until) {
    std::vector<pid_t> children = ChildrenOfSelf();
    children.erase(std::remove(children.begin(), children.end(), spare), children.end());
    if (children.empty()) return true;
    for (pid_t c : children) kill(c, SIGKILL);
    for (pid_t c : children) waitpid(c, nullptr, WNOHANG);
    usleep(1000);
  }
  return false;
}

}  // namespace kforge::eval
