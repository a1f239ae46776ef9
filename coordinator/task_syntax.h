// Proves that a task's source is Python that compiles, before it is stored: every candidate of
// a task that does not parse would fail, and a pattern search over the text (task_validation.h)
// cannot tell. The proof is CPython's own compiler, run in a child process that only compiles
// (`compile(source, "task.py", "exec")`, nothing executes) with an empty environment, a time
// limit and a memory limit.
//
// Thread-safe: Check may be called from many threads; each call runs its own child.
#ifndef KFORGE_COORDINATOR_TASK_SYNTAX_H_
#define KFORGE_COORDINATOR_TASK_SYNTAX_H_

#include <string>

#include "absl/status/status.h"

namespace kforge {

class PythonSyntaxChecker {
 public:
  // `python`: the interpreter (a path, or a name looked up in PATH); only its standard
  // compile() is used.
  explicit PythonSyntaxChecker(std::string python, double limit_s = 10)
      : python_(std::move(python)), limit_s_(limit_s) {}

  // FAILED_PRECONDITION when the interpreter cannot be run (bad startup configuration).
  absl::Status SelfTest() const;
  // INVALID_ARGUMENT "task source does not parse as Python: line N: <message>"; UNAVAILABLE
  // when the check itself could not run.
  absl::Status Check(const std::string& source) const;

 private:
  const std::string python_;
  const double limit_s_;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_TASK_SYNTAX_H_
