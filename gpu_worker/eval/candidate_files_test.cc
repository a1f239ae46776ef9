#include "gpu_worker/eval/candidate_files.h"

#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace kforge::eval {
namespace {

// POSIX only: libtorch.so exports an incompatible std::filesystem that may be bound instead.
void MakeDirs(const std::string& dir) {
  for (size_t i = 1; (i = dir.find('/', i)) != std::string::npos; ++i) {
    mkdir(dir.substr(0, i).c_str(), 0700);
  }
  mkdir(dir.c_str(), 0700);
}

void Copy(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream(to, std::ios::binary) << in.rdbuf();
}

// An ELF header: little-endian, e_machine `machine`.
void WriteElf(const std::string& path, uint16_t machine) {
  MakeDirs(path.substr(0, path.rfind('/')));
  unsigned char h[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  h[18] = machine & 0xff;
  h[19] = machine >> 8;
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(h), sizeof h);
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
  MakeDirs(dir_ + "/torch_extensions/.kforge_failed_builds");
  std::ofstream(dir_ + "/torch_extensions/.kforge_failed_builds/k")
      << "Error building extension";
  MakeDirs(dir_ + "/torch_compile/inductor");
  std::ofstream(dir_ + "/torch_compile/inductor/x.py") << "print(1)\n";
  std::ofstream(dir_ + "/short") << "\x7f" "EL";
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
  Copy("/bin/true", dir_ + "/copy");
  EXPECT_EQ(HostCodeIn(dir_), "copy");
}

}  // namespace
}  // namespace kforge::eval
