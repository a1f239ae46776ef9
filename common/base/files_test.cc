#include "common/base/files.h"

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

}  // namespace
}  // namespace kforge
