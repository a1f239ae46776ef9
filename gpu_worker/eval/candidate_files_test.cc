#include "gpu_worker/eval/candidate_files.h"

#include <ftw.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "common/base/files.h"

namespace kforge::eval {
namespace {

// A file and its missing parent directories.
void Write(const std::string& path, const std::string& data) {
  ASSERT_EQ(MakeDirs(path.substr(0, path.rfind('/'))), "");
  ASSERT_TRUE(WriteFileAtomically(path, data));
}

// An ELF header: little-endian, e_machine `machine`.
void WriteElf(const std::string& path, uint16_t machine) {
  std::string h(64, '\0');
  h.replace(0, 7,
            "\x7f"
            "ELF\x02\x01\x01");
  h[18] = static_cast<char>(machine & 0xff);
  h[19] = static_cast<char>(machine >> 8);
  Write(path, h);
}

class HostCodeInTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kforge-hostcode-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    nftw(
        dir_.c_str(),
        [](const char* path, const struct stat*, int, struct FTW*) { return std::remove(path); },
        16, FTW_DEPTH | FTW_PHYS);
  }
  std::string dir_;
};

TEST_F(HostCodeInTest, CubinsMarkersAndSourcesAreNotHostCode) {
  WriteElf(dir_ + "/nvrtc/abc.cubin", 190);  // EM_CUDA
  Write(dir_ + "/torch_extensions/.kforge_failed_builds/k", "Error building extension");
  Write(dir_ + "/torch_compile/inductor/x.py", "print(1)\n");
  Write(dir_ + "/short",
        "\x7f"
        "EL");
  EXPECT_EQ(HostCodeIn(dir_), "");
  EXPECT_EQ(HostCodeIn(dir_ + "/missing"), "");
}

TEST_F(HostCodeInTest, AHostLibraryAnywhereBeneathIsFound) {
  WriteElf(dir_ + "/nvrtc/abc.cubin", 190);
  WriteElf(dir_ + "/torch_compile/inductor/ab/lib.so", 62);  // EM_X86_64
  EXPECT_EQ(HostCodeIn(dir_), "torch_compile/inductor/ab/lib.so");
}

TEST_F(HostCodeInTest, ASymlinkToAHostLibraryIsNotFollowed) {
  ASSERT_EQ(symlink("/bin/true", (dir_ + "/link").c_str()), 0);
  EXPECT_EQ(HostCodeIn(dir_), "");
  Write(dir_ + "/copy", ReadFileOrEmpty("/bin/true"));
  EXPECT_EQ(HostCodeIn(dir_), "copy");
}

}  // namespace
}  // namespace kforge::eval
