#include "common/base/files.h"

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

}  // namespace
}  // namespace kforge
