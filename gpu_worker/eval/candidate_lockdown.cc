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

// Appends: if nr == `nr`, deny unless the low 32 bits of args[`which_arg`] are `which` (when
// `which_arg` >= 0) and those of args[`pid_arg`] are 0 or `self`: the scheduling, priority,
// resource-limit and memory-placement calls that may name another process of the same uid.
void SelfOrZero(std::vector<sock_filter>* f, uint32_t nr, uint32_t pid_arg, int which_arg,
                uint32_t which, uint32_t self) {
  // The low 32 bits of args[i] (little-endian: the only arch AppendNativeArchCheck lets by).
  auto arg = [](uint32_t i) {
    return static_cast<uint32_t>(offsetof(seccomp_data, args) + sizeof(uint64_t) * i);
  };
  const uint8_t past = which_arg >= 0 ? 7 : 5;  // the block's statements after the first jump
  f->push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
  f->push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, past));  // else past the block
  if (which_arg >= 0) {
    f->push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, arg(static_cast<uint32_t>(which_arg))));
    f->push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, which, 0, 4));  // else deny
  }
  f->push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, arg(pid_arg)));
  f->push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0));     // 0: this process
  f->push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, 0, 1));  // else deny
  f->push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  f->push_back(BPF_STMT(BPF_RET | BPF_K, kDeny));
}

std::vector<sock_filter> Filter(uint32_t self) {
  std::vector<sock_filter> f;
  AppendNativeArchCheck(&f, SECCOMP_RET_KILL_PROCESS);
  const std::vector<uint32_t> denied = {
      SYS_tkill, SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo, SYS_pidfd_open, SYS_pidfd_getfd,
      SYS_pidfd_send_signal, SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev, SYS_setsid,
      SYS_kcmp,
      // System V IPC and POSIX message queues: what they make outlives the evaluation and is
      // found by key or name from later ones (tests/engine/exploits/sysv_ipc_channel.py).
      SYS_shmget, SYS_shmat, SYS_shmctl, SYS_msgget, SYS_msgsnd, SYS_msgrcv, SYS_msgctl, SYS_semget,
      SYS_semop, SYS_semtimedop, SYS_semctl, SYS_mq_open, SYS_mq_unlink, SYS_mq_timedsend,
      SYS_mq_timedreceive, SYS_mq_notify, SYS_mq_getsetattr};
  for (size_t i = 0; i < denied.size(); ++i) {
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, denied[i], 0, 1));
    f.push_back(BPF_STMT(BPF_RET | BPF_K, kDeny));
  }
  OnlySelf(&f, SYS_kill, self);
  OnlySelf(&f, SYS_tgkill, self);
  // Nothing of the candidate's may change how the judge is scheduled, or its limits or memory:
  // the same uid may, and a judge pinned to one CPU or niced times the reference slower, alone
  // too (docs/evaluation.md, "The reference alone"; tests/engine/slows_the_judge.py). So these
  // calls name pid 0 or this process only: the candidate's other threads cannot be named
  // either (a thread id is not told apart from the judge's here), which honest code rarely
  // needs (kforge-eval keeps OpenMP's pinning off).
  for (uint32_t nr : {SYS_sched_setaffinity, SYS_sched_setscheduler, SYS_sched_setparam,
                      SYS_sched_setattr, SYS_prlimit64, SYS_migrate_pages, SYS_move_pages}) {
    SelfOrZero(&f, nr, 0, -1, 0, self);
  }
  SelfOrZero(&f, SYS_setpriority, 1, 0, 0 /* PRIO_PROCESS */, self);
  SelfOrZero(&f, SYS_ioprio_set, 1, 0, 1 /* IOPRIO_WHO_PROCESS */, self);
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
