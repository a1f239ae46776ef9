#include "gpu_worker/eval/fs_lock.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "gtest/gtest.h"

namespace kforge::eval {
namespace {

// Errno of creating (or, with O_TRUNC on an existing file, truncating) `path`; 0 on success.
int OpenForWriting(const std::string& path, int flags) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC | flags, 0600);
  if (fd < 0) return errno;
  close(fd);
  return 0;
}

// Runs `probe` in a forked child after locking writes to `allowed`, and returns its exit
// status: the probe's number of failed expectations, or 100 when the lock failed.
template <typename Probe>
int InLockedChild(const std::string& allowed, Probe probe) {
  pid_t pid = fork();
  if (pid == 0) {
    FsLockOutcome lock = LockWritesBeneath({allowed});
    if (!lock.applied || !lock.metadata_locked || lock.threads != 1) {
      std::fprintf(stderr, "lock not applied: %s (threads %d)\n", lock.error.c_str(),
                   lock.threads);
      _exit(100);
    }
    _exit(probe());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

class FsLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                       "/kforge-fs-lock-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    inside_ = root_ + "/inside";
    outside_ = root_ + "/outside";
    ASSERT_EQ(mkdir(inside_.c_str(), 0700), 0);
    ASSERT_EQ(mkdir(outside_.c_str(), 0700), 0);
    ASSERT_EQ(OpenForWriting(outside_ + "/existing", O_CREAT), 0);
  }
  void TearDown() override {
    nftw(
        root_.c_str(),
        [](const char* path, const struct stat*, int, struct FTW*) { return std::remove(path); },
        16, FTW_DEPTH | FTW_PHYS);
  }
  std::string root_, inside_, outside_;
};

TEST_F(FsLockTest, KernelOffersLandlock) { EXPECT_GE(LandlockAbi(), 1); }

TEST_F(FsLockTest, LockedChildWritesOnlyBeneathTheAllowedDirectory) {
  std::string inside = inside_, outside = outside_;
  int failures = InLockedChild(inside, [&] {
    int f = 0;
    f += OpenForWriting(inside + "/new", O_CREAT) != 0;
    f += mkdir((inside + "/sub").c_str(), 0700) != 0;
    f += OpenForWriting(inside + "/sub/deeper", O_CREAT) != 0;
    f += OpenForWriting(outside + "/planted", O_CREAT) != EACCES;
    f += OpenForWriting(outside + "/existing", 0) != EACCES;
    f += mkdir((outside + "/dir").c_str(), 0700) == 0;
    f += unlink((outside + "/existing").c_str()) == 0;
    f += rename((inside + "/new").c_str(), (outside + "/moved").c_str()) == 0;
    f += symlink("/etc/passwd", (outside + "/link").c_str()) == 0;
    f += open((outside + "/existing").c_str(), O_RDONLY | O_CLOEXEC) < 0;  // reads stay free
    if (LandlockAbi() >= 3) f += truncate((outside + "/existing").c_str(), 0) == 0;
    return f;
  });
  EXPECT_EQ(failures, 0);
  struct stat st;
  EXPECT_NE(stat((outside_ + "/planted").c_str(), &st), 0);
  EXPECT_EQ(stat((outside_ + "/existing").c_str(), &st), 0);
  EXPECT_EQ(stat((inside_ + "/sub/deeper").c_str(), &st), 0);
}

TEST_F(FsLockTest, LockedChildCannotChangeModesOwnersTimesOrAttributesAnywhere) {
  std::string inside = inside_, outside = outside_;
  ASSERT_EQ(OpenForWriting(inside_ + "/own", O_CREAT), 0);
  int failures = InLockedChild(inside, [&] {
    int f = 0;
    for (const std::string& path : {outside + "/existing", inside + "/own"}) {
      const char* p = path.c_str();
      f += !(chmod(p, 0) != 0 && errno == EPERM);
      f += !(fchmodat(AT_FDCWD, p, 0, 0) != 0 && errno == EPERM);
      f += !(chown(p, getuid(), getgid()) != 0 && errno == EPERM);
      f += !(utimensat(AT_FDCWD, p, nullptr, 0) != 0 && errno == EPERM);
      f += !(setxattr(p, "user.kforge", "x", 1, 0) != 0 && errno == EPERM);
      int fd = open(p, O_RDONLY | O_CLOEXEC);
      f += fd < 0;
      f += !(fchmod(fd, 0) != 0 && errno == EPERM);
      close(fd);
    }
    // fchmodat2 by number (Linux 6.6+; ENOSYS before, which also leaves the mode alone).
    f += syscall(452, AT_FDCWD, (outside + "/existing").c_str(), 0, 0) == 0;
    // io_uring could set xattrs without the xattr system calls.
    f += !(syscall(425, 8, nullptr) < 0 && errno == EPERM);
    return f;
  });
  EXPECT_EQ(failures, 0);
  struct stat st;
  ASSERT_EQ(stat((outside_ + "/existing").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((inside_ + "/own").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(chmod((outside_ + "/existing").c_str(), 0640), 0);  // the parent is not filtered
}

TEST_F(FsLockTest, ChildrenOfALockedProcessInheritTheLock) {
  std::string outside = outside_;
  int failures = InLockedChild(inside_, [&] {
    pid_t grandchild = fork();
    if (grandchild == 0) _exit(OpenForWriting(outside + "/planted", O_CREAT) == EACCES ? 0 : 1);
    int status = 0;
    waitpid(grandchild, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  });
  EXPECT_EQ(failures, 0);
}

TEST_F(FsLockTest, TheParentStaysUnrestricted) {
  ASSERT_EQ(InLockedChild(inside_, [] { return 0; }), 0);
  EXPECT_EQ(OpenForWriting(outside_ + "/after", O_CREAT), 0);
}

TEST(PathIsBeneathTest, ComparesWholeComponents) {
  EXPECT_TRUE(PathIsBeneath("/tmp/a", "/tmp"));
  EXPECT_TRUE(PathIsBeneath("/tmp", "/tmp"));
  EXPECT_TRUE(PathIsBeneath("/tmp/a", "/"));
  EXPECT_FALSE(PathIsBeneath("/tmpfoo", "/tmp"));
  EXPECT_FALSE(PathIsBeneath("/tmp", "/tmp/a"));
  EXPECT_FALSE(PathIsBeneath("/tmp", ""));
}

}  // namespace
}  // namespace kforge::eval
