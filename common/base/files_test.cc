#include "common/base/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <string>

#include "gtest/gtest.h"

namespace kforge {
namespace {

TEST(FilesTest, TempNamesAreBesideThePathAndDistinctAcrossForkedChildren) {
  std::string a = TempNameFor("/cache/x.cubin"), b = TempNameFor("/cache/x.cubin");
  EXPECT_EQ(a.rfind("/cache/x.cubin.tmp.", 0), 0u);
  EXPECT_EQ(a.size(), std::string("/cache/x.cubin.tmp.").size() + 16);
  EXPECT_NE(a, b);
  // Children forked from one parent (as a fork server's evaluations are) must not agree.
  char dir[] = "/tmp/kforge-files-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  for (int i = 0; i < 4; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      bool ok = WriteFileAtomically(std::string(dir) + "/n" + std::to_string(i), TempNameFor("p"));
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::set<std::string> names;
  for (int i = 0; i < 4; ++i) {
    std::string path = std::string(dir) + "/n" + std::to_string(i);
    names.insert(ReadFileOrEmpty(path));
    std::remove(path.c_str());
  }
  rmdir(dir);
  EXPECT_EQ(names.size(), 4u);
}

TEST(FilesTest, RemoveStaleTemporariesTakesOnlyOldTempNamesAndFollowsNoLinks) {
  char root[] = "/tmp/kforge-sweep-test-XXXXXX";
  ASSERT_NE(mkdtemp(root), nullptr);
  std::string dir = root, outside = dir + "/outside", cache = dir + "/cache";
  ASSERT_EQ(MakeDirs(cache + "/c/ns/nvrtc"), "");
  ASSERT_EQ(MakeDirs(outside), "");
  auto make = [](const std::string& path, bool old) {
    ASSERT_TRUE(WriteFileAtomically(path, "x"));
    if (old) {
      struct timeval tv[2] = {{1000, 0}, {1000, 0}};  // 1970: stale
      ASSERT_EQ(utimes(path.c_str(), tv), 0);
    }
  };
  std::string stale = TempNameFor(cache + "/c/ns/nvrtc/k.cubin");
  std::string fresh = TempNameFor(cache + "/c/ns/nvrtc/k2.cubin");
  std::string entry = cache + "/c/ns/nvrtc/k.cubin";
  std::string not_hex = cache + "/c/ns/nvrtc/k.cubin.tmp.zzzzzzzzzzzzzzzz";
  std::string beyond_link = TempNameFor(outside + "/x.so");
  make(stale, true);
  make(fresh, false);
  make(entry, true);
  make(not_hex, true);
  make(beyond_link, true);
  ASSERT_EQ(symlink(outside.c_str(), (cache + "/c/ns/link").c_str()), 0);
  EXPECT_EQ(RemoveStaleTemporaries(cache, 3600), 1);
  struct stat st;
  EXPECT_NE(stat(stale.c_str(), &st), 0);
  for (const std::string& kept : {fresh, entry, not_hex, beyond_link}) {
    EXPECT_EQ(stat(kept.c_str(), &st), 0) << kept;
  }
  EXPECT_EQ(RemoveStaleTemporaries(dir + "/missing", 0), 0);
  std::string cmd = "rm -rf " + dir;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
}

// What a candidate can leave in its scratch (session 26's review of the warm imports): a tree
// deeper than PATH_MAX, made relative to a descriptor; directories created without read or
// write permission, with files inside; a link to a directory outside.
TEST(FilesTest, RemoveTreeTakesDeepAndUnreadableTreesAndFollowsNoLinks) {
  char root[] = "/tmp/kforge-remove-test-XXXXXX";
  ASSERT_NE(mkdtemp(root), nullptr);
  const std::string dir = root, scratch = dir + "/scratch", outside = dir + "/outside";
  ASSERT_EQ(MakeDirs(scratch), "");
  ASSERT_EQ(MakeDirs(outside), "");
  ASSERT_TRUE(WriteFileAtomically(outside + "/kept", "x"));
  int fd = open(scratch.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  for (int depth = 0; depth < 3000; ++depth) {  // 3000 x "dd/" is 9000 bytes, above PATH_MAX
    ASSERT_EQ(mkdirat(fd, "dd", 0700), 0) << depth;
    const int child = openat(fd, "dd", O_RDONLY | O_DIRECTORY);
    close(fd);
    ASSERT_GE(child, 0);
    fd = child;
  }
  const int file = openat(fd, "bottom", O_WRONLY | O_CREAT, 0600);
  ASSERT_GE(file, 0);
  close(file);
  close(fd);
  for (const char* locked : {"/unlistable", "/closed"}) {
    ASSERT_EQ(MakeDirs(scratch + locked + "/inner"), "");
    ASSERT_TRUE(WriteFileAtomically(scratch + locked + "/inner/f", "x"));
  }
  ASSERT_EQ(chmod((scratch + "/unlistable/inner").c_str(), 0300), 0);
  ASSERT_EQ(chmod((scratch + "/unlistable").c_str(), 0300), 0);
  ASSERT_EQ(chmod((scratch + "/closed").c_str(), 0), 0);
  ASSERT_EQ(symlink(outside.c_str(), (scratch + "/link").c_str()), 0);
  EXPECT_TRUE(RemoveTree(AT_FDCWD, scratch));
  struct stat st;
  EXPECT_NE(lstat(scratch.c_str(), &st), 0);
  EXPECT_EQ(stat((outside + "/kept").c_str(), &st), 0);
  EXPECT_TRUE(RemoveTree(AT_FDCWD, scratch));  // nothing there: nothing left
  // A file, and a link to a directory, are removed as themselves.
  ASSERT_TRUE(WriteFileAtomically(dir + "/file", "x"));
  ASSERT_EQ(symlink(outside.c_str(), (dir + "/dirlink").c_str()), 0);
  EXPECT_TRUE(RemoveTree(AT_FDCWD, dir + "/file"));
  EXPECT_TRUE(RemoveTree(AT_FDCWD, dir + "/dirlink"));
  EXPECT_EQ(stat((outside + "/kept").c_str(), &st), 0);
  EXPECT_TRUE(RemoveTree(AT_FDCWD, dir));
  EXPECT_NE(lstat(dir.c_str(), &st), 0);
}

// Session 26's second review: a walk that listed a directory again after each subdirectory
// took quadratic time on a wide tree a candidate can make in seconds (32,000 directories: 136 s).
TEST(FilesTest, RemoveTreeListsEachDirectoryOnce) {
  char root[] = "/tmp/kforge-remove-wide-XXXXXX";
  ASSERT_NE(mkdtemp(root), nullptr);
  const std::string dir = root;
  for (int i = 0; i < 2000; ++i) {
    const std::string d = dir + "/w/d" + std::to_string(i);
    ASSERT_EQ(MakeDirs(d), "");
    ASSERT_TRUE(WriteFileAtomically(d + "/f", "x"));
  }
  RemoveTreeWatch watch;
  EXPECT_TRUE(RemoveTree(AT_FDCWD, dir + "/w", &watch));
  EXPECT_EQ(watch.listed, 2001u);   // w and each d<i>
  EXPECT_EQ(watch.entries, 4000u);  // 2000 in w, one in each d<i>
  EXPECT_TRUE(RemoveTree(AT_FDCWD, dir));
}

// The same review: a directory moved out of the tree while the walk is inside it (a process
// that outlived its kill, say) led the walk up through ".." into the directory it was moved to,
// where it removed files. It stops there now, and nothing outside changes.
TEST(FilesTest, RemoveTreeDoesNotFollowADirectoryMovedOutOfTheTree) {
  char root[] = "/tmp/kforge-remove-moved-XXXXXX";
  ASSERT_NE(mkdtemp(root), nullptr);
  const std::string dir = root;
  ASSERT_EQ(MakeDirs(dir + "/tree/a/W/x"), "");
  ASSERT_TRUE(WriteFileAtomically(dir + "/tree/a/W/x/f", "x"));
  // Beside W, directories the walk has yet to empty; beneath victim/deep, ones of the same
  // names that a walk led out would empty in their place.
  for (int i = 0; i < 10; ++i) {
    const std::string v = "/V" + std::to_string(i);
    ASSERT_EQ(MakeDirs(dir + "/tree/a" + v), "");
    ASSERT_TRUE(WriteFileAtomically(dir + "/tree/a" + v + "/y", "x"));
    ASSERT_EQ(MakeDirs(dir + "/victim/deep" + v), "");
    ASSERT_TRUE(WriteFileAtomically(dir + "/victim/deep" + v + "/precious", "keep"));
  }
  ASSERT_TRUE(WriteFileAtomically(dir + "/victim/precious", "keep"));
  ASSERT_TRUE(WriteFileAtomically(dir + "/victim/deep/precious2", "keep"));
  RemoveTreeWatch watch;
  watch.entered = [&](const std::string& name) {
    if (name == "x") {  // inside tree/a/W/x: W moves away beneath victim/deep
      ASSERT_EQ(rename((dir + "/tree/a/W").c_str(), (dir + "/victim/deep/W").c_str()), 0);
    }
  };
  EXPECT_FALSE(RemoveTree(AT_FDCWD, dir + "/tree", &watch));
  struct stat st;
  EXPECT_EQ(stat((dir + "/victim/precious").c_str(), &st), 0);
  EXPECT_EQ(stat((dir + "/victim/deep/precious2").c_str(), &st), 0);
  for (int i = 0; i < 10; ++i) {
    const std::string kept = dir + "/victim/deep/V" + std::to_string(i) + "/precious";
    EXPECT_EQ(stat(kept.c_str(), &st), 0) << kept;
  }
  EXPECT_TRUE(RemoveTree(AT_FDCWD, dir));
}

TEST(FilesTest, RemoveTreeOnlyRemovesTheDirectoryItWasGiven) {
  // A sweep judged one directory (its lock, its age) and a process swapped another in under
  // its name before the removal: the other stays whole.
  char root[] = "/tmp/kforge-remove-only-XXXXXX";
  ASSERT_NE(mkdtemp(root), nullptr);
  const std::string dir = root;
  ASSERT_EQ(MakeDirs(dir + "/judged"), "");
  struct stat judged;
  ASSERT_EQ(stat((dir + "/judged").c_str(), &judged), 0);
  ASSERT_EQ(rename((dir + "/judged").c_str(), (dir + "/moved").c_str()), 0);
  ASSERT_EQ(MakeDirs(dir + "/judged/sub"), "");
  ASSERT_TRUE(WriteFileAtomically(dir + "/judged/sub/live", "keep"));
  EXPECT_FALSE(RemoveTree(AT_FDCWD, dir + "/judged", nullptr, &judged));
  struct stat st;
  EXPECT_EQ(stat((dir + "/judged/sub/live").c_str(), &st), 0);
  // A file in its place is not removed either, nor is a missing name taken for success.
  ASSERT_TRUE(WriteFileAtomically(dir + "/file", "keep"));
  EXPECT_FALSE(RemoveTree(AT_FDCWD, dir + "/file", nullptr, &judged));
  EXPECT_EQ(stat((dir + "/file").c_str(), &st), 0);
  EXPECT_FALSE(RemoveTree(AT_FDCWD, dir + "/gone", nullptr, &judged));
  // The directory it was given, under its name, is removed.
  ASSERT_EQ(rename((dir + "/judged").c_str(), (dir + "/other").c_str()), 0);
  ASSERT_EQ(rename((dir + "/moved").c_str(), (dir + "/judged").c_str()), 0);
  ASSERT_TRUE(WriteFileAtomically(dir + "/judged/f", "x"));
  EXPECT_TRUE(RemoveTree(AT_FDCWD, dir + "/judged", nullptr, &judged));
  EXPECT_NE(stat((dir + "/judged").c_str(), &st), 0);
  EXPECT_TRUE(RemoveTree(AT_FDCWD, dir));
}

// The same locked directories without root's privilege: as the tree's owner, the way the fork
// server removes what its evaluations (the same user) left. Run as root, a child does it as
// nobody.
TEST(FilesTest, RemoveTreeOpensLockedDirectoriesAsTheirOwnerWithoutRoot) {
  char root[] = "/tmp/kforge-remove-owner-XXXXXX";
  ASSERT_NE(mkdtemp(root), nullptr);
  const std::string dir = root;
  const bool as_root = geteuid() == 0;
  if (as_root) {
    ASSERT_EQ(chown(root, 65534, 65534), 0);
  }
  const pid_t pid = as_root ? fork() : 0;
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // In the child (or this process without root): exit status 0 when everything held.
    auto check = [&]() -> bool {
      if (as_root && (setgid(65534) != 0 || setuid(65534) != 0)) return false;
      const std::string scratch = dir + "/scratch";
      if (!MakeDirs(scratch + "/unlistable/inner").empty() ||
          !WriteFileAtomically(scratch + "/unlistable/inner/f", "x") ||
          !MakeDirs(scratch + "/closed/inner").empty() ||
          !WriteFileAtomically(scratch + "/closed/inner/f", "x") ||
          chmod((scratch + "/unlistable/inner").c_str(), 0300) != 0 ||
          chmod((scratch + "/unlistable").c_str(), 0300) != 0 ||
          chmod((scratch + "/closed").c_str(), 0) != 0) {
        return false;
      }
      struct stat st;
      return RemoveTree(AT_FDCWD, scratch) && lstat(scratch.c_str(), &st) != 0;
    };
    const bool ok = check();
    if (as_root) _exit(ok ? 0 : 1);
    EXPECT_TRUE(ok);
  } else {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  EXPECT_TRUE(RemoveTree(AT_FDCWD, dir));
}

}  // namespace
}  // namespace kforge
