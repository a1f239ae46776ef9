#include "common/base/subprocess.h"

#include <signal.h>
#include <sys/resource.h>

#include "gtest/gtest.h"

namespace kforge {
namespace {

SpawnOptions Shell(const std::string& script) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", script};
  return o;
}

TEST(SubprocessTest, CapturesOutputAndExitCode) {
  SubprocessResult r = RunSubprocess(Shell("echo out; echo err >&2; exit 3"));
  ASSERT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.stdout_data, "out\n");
  EXPECT_EQ(r.stderr_data, "err\n");
  EXPECT_FALSE(r.Succeeded());
  EXPECT_EQ(r.Describe(), "exit code 3");
}

TEST(SubprocessTest, PassesStdinAndEnvironment) {
  SpawnOptions o = Shell("read line; echo \"$line-$KFORGE_TEST_VAR\"");
  o.stdin_data = "hello\n";
  o.env = {"KFORGE_TEST_VAR=world"};
  SubprocessResult r = RunSubprocess(o);
  EXPECT_TRUE(r.Succeeded());
  EXPECT_EQ(r.stdout_data, "hello-world\n");
}

TEST(SubprocessTest, WallLimitKillsTheWholeGroup) {
  // The grandchild would outlive a kill of the child alone and keep the pipe open.
  SpawnOptions o = Shell("sleep 30 & sleep 30; echo never");
  o.wall_limit_s = 0.3;
  SubprocessResult r = RunSubprocess(o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.term_signal, SIGKILL);
  EXPECT_LT(r.wall_s, 5.0);
  EXPECT_EQ(r.stdout_data, "");
  EXPECT_NE(r.Describe().find("timed out"), std::string::npos);
}

TEST(SubprocessTest, OutputIsBoundedButDrained) {
  SpawnOptions o = Shell("head -c 5000000 /dev/zero; echo done >&2");
  o.max_output_bytes = 1000;
  SubprocessResult r = RunSubprocess(o);
  EXPECT_TRUE(r.Succeeded());
  EXPECT_EQ(r.stdout_data.size(), 1000u);
  EXPECT_TRUE(r.stdout_truncated);
  EXPECT_EQ(r.stderr_data, "done\n");
}

TEST(SubprocessTest, ReportsSignalDeath) {
  SubprocessResult r = RunSubprocess(Shell("kill -SEGV $$"));
  EXPECT_EQ(r.term_signal, SIGSEGV);
  EXPECT_NE(r.Describe().find("signal 11"), std::string::npos);
}

TEST(SubprocessTest, MissingProgramIsAnErrorNotACrash) {
  SpawnOptions o;
  o.argv = {"/nonexistent/kforge-binary"};
  SubprocessResult r = RunSubprocess(o);
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.error.find("No such file"), std::string::npos);
}

TEST(SubprocessTest, ChildSetupAppliesLimits) {
  SpawnOptions o = Shell("ulimit -n");
  o.child_setup = [] {
    struct rlimit lim = {17, 17};
    return setrlimit(RLIMIT_NOFILE, &lim) == 0;
  };
  SubprocessResult r = RunSubprocess(o);
  EXPECT_TRUE(r.Succeeded());
  EXPECT_EQ(r.stdout_data, "17\n");
}

TEST(SubprocessTest, SignalGroupStopsARunningChild) {
  Subprocess p;
  ASSERT_TRUE(p.Start(Shell("sleep 30")));
  p.SignalGroup(SIGTERM);
  const SubprocessResult& r = p.Wait();
  EXPECT_EQ(r.term_signal, SIGTERM);
  EXPECT_FALSE(r.timed_out);
}

}  // namespace
}  // namespace kforge
