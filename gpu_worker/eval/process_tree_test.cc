// Ending the children of a process (process_tree.h), as the judge ends the candidate's before
// it times the reference alone: each scenario runs in a helper process of its own, a child
// subreaper as the judge is, which reports through its exit status.
#include "gpu_worker/eval/process_tree.h"

#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

#include "gtest/gtest.h"

namespace kforge::eval {
namespace {

// Runs `scenario` in a forked helper (a child subreaper) and returns its exit status, or -1.
int InHelper(const std::function<int()>& scenario) {
  const pid_t helper = fork();
  if (helper == 0) {
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    _exit(scenario());
  }
  int status = 0;
  if (helper < 0 || waitpid(helper, &status, 0) != helper || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// A child that sleeps, in a process group of its own (as ninja starts compilers).
pid_t Sleeper() {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    sleep(60);
    _exit(0);
  }
  return pid;
}

bool Alive(pid_t pid) { return kill(pid, 0) == 0; }

TEST(ProcessTreeTest, KillChildrenEndsChildrenAndTheOrphansOfTheirChildren) {
  EXPECT_EQ(InHelper([] {
              int fds[2];
              if (pipe(fds) != 0) return 10;
              const pid_t child = fork();
              if (child == 0) {  // leaves a grandchild behind, then sleeps
                const pid_t grandchild = Sleeper();
                (void)!write(fds[1], &grandchild, sizeof grandchild);
                sleep(60);
                _exit(0);
              }
              pid_t grandchild = 0;
              if (read(fds[0], &grandchild, sizeof grandchild) != sizeof grandchild) return 11;
              if (ChildrenOfSelf().size() != 1) return 12;  // the grandchild is not ours yet
              if (!KillChildren(10)) return 13;
              if (!ChildrenOfSelf().empty()) return 14;
              if (Alive(child) || Alive(grandchild)) return 15;  // both reaped here
              return 0;
            }),
            0);
}

TEST(ProcessTreeTest, KillChildrenGivesUpOnceItsWaitHasPassed) {
  EXPECT_EQ(InHelper([] {
              const pid_t child = Sleeper();
              if (KillChildren(0)) return 20;  // no time to see it gone
              if (!Alive(child)) return 21;
              if (!KillChildren(10) || Alive(child)) return 22;
              return 0;
            }),
            0);
}

}  // namespace
}  // namespace kforge::eval
