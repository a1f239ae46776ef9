// The children of this process, and ending them: the supervisor's strays (a child subreaper:
// orphans of the evaluation come to it) and the judge's candidate processes before it times
// the reference alone (engine.cc, "The reference alone").
#ifndef KFORGE_GPU_WORKER_EVAL_PROCESS_TREE_H_
#define KFORGE_GPU_WORKER_EVAL_PROCESS_TREE_H_

#include <sys/types.h>

#include <vector>

namespace kforge::eval {

// The direct children of this process, from /proc (zombies included).
std::vector<pid_t> ChildrenOfSelf();

// SIGKILLs every child of this process and reaps it, again and again (a child's own children
// come here as it dies where this process is a child subreaper), until it has none: true; or
// false once `wait_s` has passed without this process seeing none left (a process stuck in the
// driver, a chain of forks). `spare`: a child left alone and not counted (-1: none).
bool KillChildren(double wait_s, pid_t spare = -1);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_PROCESS_TREE_H_
