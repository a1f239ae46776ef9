// What the candidate process gives up before any candidate code runs, so that nothing it does
// can reach the judge, the supervisor or any other process:
//   - every descriptor but stdin, stdout, stderr (the supervisor's capture pipe), its own
//     end of the channel (3) and the write end of the taint pipe (4, audit_hook.h) is closed:
//     the judge's result channel is not among them;
//   - no_new_privs, and every capability dropped (bounding, permitted, effective,
//     inheritable, ambient): even as root it cannot ptrace or read /proc/<judge>/mem of a
//     judge that is not dumpable;
//   - a seccomp filter (stacked on the worker sandbox's) that fails with EPERM: kill and tgkill
//     aimed at any process but itself, tkill, rt_sigqueueinfo and rt_tgsigqueueinfo,
//     pidfd_open, pidfd_getfd, pidfd_send_signal, ptrace, process_vm_readv/writev, setsid,
//     kcmp, and every System V IPC and POSIX message-queue call but shmdt (what they make
//     outlives the evaluation: a channel to later ones). setpgid is allowed (ninja puts every
//     compiler it starts in a process group of its own): what leaves the evaluation's process group
//     is reparented to the supervisor, a child subreaper, which kills it when the evaluation ends
//     (supervisor.h).
// The judge makes itself non-dumpable; together these keep the candidate off its memory, its
// descriptors and its signals.
//
// Thread-safety: call while the process is single-threaded (the filter is installed with
// TSYNC, but capabilities are per thread).
#ifndef KFORGE_GPU_WORKER_EVAL_CANDIDATE_LOCKDOWN_H_
#define KFORGE_GPU_WORKER_EVAL_CANDIDATE_LOCKDOWN_H_

#include <string>

namespace kforge::eval {

// Moves `channel_fd` to descriptor 3 and `taint_fd` to 4 and applies everything above. Returns
// false with `error` when a step failed (the candidate process must then not run candidate
// code).
bool LockDownCandidateProcess(int channel_fd, int taint_fd, std::string* error);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_CANDIDATE_LOCKDOWN_H_
