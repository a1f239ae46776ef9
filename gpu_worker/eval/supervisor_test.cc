// The supervisor's GPU turns against an evaluation process that does not play by them
// (supervisor.h): one that enters the wait again once its turn is given (the task's code runs in
// the judge, which holds the stage pipe), and one whose processes outlive their kill.
#include "gpu_worker/eval/supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "gtest/gtest.h"

namespace kforge::eval {
namespace {

// A lock file of its own for each test, and a second open file description of it to probe it.
class SupervisorTurnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/tmp/kforge-supervisor-lock-XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    path_ = path;
    // Above the standard descriptors, as the server requires of it.
    turns_.lock_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    turns_.wait_s = 30;
  }
  void TearDown() override {
    if (turns_.lock_fd >= 0) close(turns_.lock_fd);
    unlink(path_.c_str());
  }
  bool LockIsFree() const {
    const int fd = open(path_.c_str(), O_RDWR | O_CLOEXEC);
    const bool free = flock(fd, LOCK_EX | LOCK_NB) == 0;
    close(fd);
    return free;
  }

  std::string path_;
  GpuTurns turns_;
};

TEST_F(SupervisorTurnsTest, AnEvaluationThatEntersTheWaitAgainAfterItsTurnIsTimedOut) {
  SupervisorLimits limits;
  limits.load_s = 1;  // the limit the wait has once the turn is given
  const auto t0 = std::chrono::steady_clock::now();
  v1::EvalResult r = RunSupervised(
      limits,
      [](StageReporter& reporter) {
        std::string error;
        if (!reporter.AwaitGpuTurn(&error)) _exit(5);
        reporter.Enter(Stage::kGpuWait);  // as code of the task's could write the stage byte
        sleep(20);
        v1::EvalResult ok;
        ok.set_verdict(v1::VERDICT_OK);
        return ok;
      },
      {}, turns_);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.verdict(), v1::VERDICT_TIMEOUT) << r.reason();
  EXPECT_EQ(r.stage(), "gpu_wait");
  EXPECT_NE(r.reason().find("its 1 s limit"), std::string::npos) << r.reason();
  EXPECT_LT(took, 10) << "the wait had no limit once the turn was given";
  EXPECT_GT(r.stages().gpu_turn_s(), 0);
  EXPECT_TRUE(LockIsFree());
}

TEST_F(SupervisorTurnsTest, TheReleaseIsWhatTheTurnHeldAfterTheAnswer) {
  v1::EvalResult r = RunSupervised(
      SupervisorLimits{},
      [](StageReporter& reporter) {
        std::string error;
        if (!reporter.AwaitGpuTurn(&error)) _exit(5);
        usleep(400 * 1000);  // the evaluation's work in its turn
        v1::EvalResult ok;
        ok.set_verdict(v1::VERDICT_OK);
        return ok;
      },
      {}, turns_);
  EXPECT_EQ(r.verdict(), v1::VERDICT_OK) << r.reason();
  EXPECT_GE(r.stages().gpu_turn_s(), 0.4);
  EXPECT_GT(r.stages().gpu_release_s(), 0);
  EXPECT_LT(r.stages().gpu_release_s(), r.stages().gpu_turn_s() - 0.35);
  EXPECT_TRUE(LockIsFree());
}

TEST_F(SupervisorTurnsTest, ATurnIsNotGivenBackWhileProcessesOutliveTheirKill) {
  setenv("KFORGE_STRAYS_WAIT_S", "0.001", 1);  // too short to see even a killed one gone
  v1::EvalResult r = RunSupervised(
      SupervisorLimits(),
      [](StageReporter& reporter) {
        std::string error;
        if (!reporter.AwaitGpuTurn(&error)) _exit(5);
        if (fork() == 0) {  // a stray in a group of its own, out of the group kill's reach
          setpgid(0, 0);
          sleep(30);
          _exit(0);
        }
        v1::EvalResult ok;
        ok.set_verdict(v1::VERDICT_OK);
        return ok;
      },
      {}, turns_);
  unsetenv("KFORGE_STRAYS_WAIT_S");
  EXPECT_EQ(r.verdict(), v1::VERDICT_RUNTIME_ERROR) << r.reason();
  EXPECT_EQ(r.rule(), "outlived_kill") << r.reason();
  EXPECT_TRUE(ProcessesOutlivedTheirKill());
  EXPECT_FALSE(LockIsFree()) << "the turn was given back with processes of it still alive";
  close(turns_.lock_fd);  // as the server's exit would
  turns_.lock_fd = -1;
  EXPECT_TRUE(LockIsFree());
}

}  // namespace
}  // namespace kforge::eval
