#include "coordinator/task_syntax.h"

#include <sys/resource.h>

#include "absl/strings/str_cat.h"
#include "common/base/subprocess.h"

namespace kforge {
namespace {

// Compiles stdin; exit 0 when it compiles, 1 with the reason on stdout when it does not.
constexpr char kScript[] = R"py(import sys
try:
    compile(sys.stdin.buffer.read(), "task.py", "exec", dont_inherit=True)
except SyntaxError as e:
    sys.stdout.write("line %s: %s" % (e.lineno, e.msg))
    sys.exit(1)
except (ValueError, MemoryError, RecursionError, OverflowError) as e:
    sys.stdout.write("%s: %s" % (type(e).__name__, e))
    sys.exit(1)
)py";

constexpr rlim_t kMemoryLimitBytes = rlim_t{2} << 30;

}  // namespace

absl::Status PythonSyntaxChecker::Check(const std::string& source) const {
  SpawnOptions o;
  o.argv = {python_, "-I", "-S", "-c", kScript};
  o.inherit_env = false;
  o.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C.UTF-8"};
  o.stdin_data = source;
  o.wall_limit_s = limit_s_;
  o.max_output_bytes = 4096;
  o.child_setup = [] {
    rlimit mem{kMemoryLimitBytes, kMemoryLimitBytes};
    return setrlimit(RLIMIT_AS, &mem) == 0;
  };
  SubprocessResult r = RunSubprocess(std::move(o));
  if (r.Succeeded()) return absl::OkStatus();
  if (r.started && !r.timed_out && r.term_signal == 0 && r.exit_code == 1 &&
      !r.stdout_data.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task source does not parse as Python: ", r.stdout_data));
  }
  if (r.timed_out) {
    return absl::InvalidArgumentError(
        absl::StrCat("task source did not compile within ", limit_s_, " s"));
  }
  return absl::UnavailableError(
      absl::StrCat("cannot check the task's syntax with ", python_, ": ",
                   r.started ? r.Describe() : r.error));
}

absl::Status PythonSyntaxChecker::SelfTest() const {
  absl::Status ok = Check("x = 1\n");
  absl::Status bad = Check("def (:\n");
  if (ok.ok() && absl::IsInvalidArgument(bad)) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the task syntax check with --task_python=", python_, " does not work: ",
      ok.ok() ? bad.ToString() : ok.ToString()));
}

}  // namespace kforge
