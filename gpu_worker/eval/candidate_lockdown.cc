#include "gpu_worker/eval/candidate_lockdown.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gpu_worker/eval/seccomp_prologue.h"

namespace kforge::eval {
namespace {

constexpr uint32_t kDeny = SECCOMP_RET_ERRNO | EPERM;

// Appends: if nr == `nr` and the low 32 bits of args[0] are not `self`, deny.
void OnlySelf(std::vector<sock_filter>* f, uint32_t nr, uint32_t self) {
  f->push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
  f->push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 4));  // else past the block
  f->push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])));
  f->push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, 0, 1));
  f->push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  f->push_back(BPF_STMT(BPF_RET | BPF_K, kDeny));
}

std::vector<sock_filter> Filter(uint32_t self) {
  std::vector<sock_filter> f;
  AppendNativeArchCheck(&f, SECCOMP_RET_KILL_PROCESS);
  const std::vector<uint32_t> denied = {
      SYS_tkill,         SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo, SYS_pidfd_open,
      SYS_pidfd_getfd,   SYS_pidfd_send_signal, SYS_ptrace,           SYS_process_vm_readv,
      SYS_process_vm_writev, SYS_setsid,      SYS_kcmp};
  for (size_t i = 0; i < denied.size(); ++i) {
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, denied[i], 0, 1));
    f.push_back(BPF_STMT(BPF_RET | BPF_K, kDeny));
  }
  OnlySelf(&f, SYS_kill, self);
  OnlySelf(&f, SYS_tgkill, self);
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  return f;
}

bool DropCapabilities(std::string* error) {
  for (int cap = 0; cap <= 63; ++cap) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL && errno != EPERM) {
      *error = std::string("PR_CAPBSET_DROP: ") + std::strerror(errno);
      return false;
    }
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capset, &header, data) != 0) {
    *error = std::string("capset: ") + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

bool LockDownCandidateProcess(int channel_fd, int taint_fd, std::string* error) {
  // Both above 4 first, so that moving one cannot overwrite the other.
  for (int* fd : {&channel_fd, &taint_fd}) {
    int moved = fcntl(*fd, F_DUPFD_CLOEXEC, 5);
    if (moved < 0) {
      *error = std::string("F_DUPFD: ") + std::strerror(errno);
      return false;
    }
    close(*fd);
    *fd = moved;
  }
  if (dup3(channel_fd, 3, O_CLOEXEC) < 0 || dup3(taint_fd, 4, O_CLOEXEC) < 0) {
    *error = std::string("dup3: ") + std::strerror(errno);
    return false;
  }
  // close_range(5, ~0U, 0), by number: glibc 2.36 is not on every machine the engine builds on.
  if (syscall(436, 5U, ~0U, 0U) != 0) {
    for (int fd = 5; fd < 65536; ++fd) close(fd);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    *error = std::string("no_new_privs: ") + std::strerror(errno);
    return false;
  }
  if (!DropCapabilities(error)) return false;
  std::vector<sock_filter> filter = Filter(static_cast<uint32_t>(getpid()));
  struct sock_fprog prog = {static_cast<unsigned short>(filter.size()), filter.data()};
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0) {
    *error = std::string("seccomp: ") + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace kforge::eval
