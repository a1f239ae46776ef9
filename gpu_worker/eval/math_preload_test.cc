#include "gpu_worker/eval/math_preload.h"

#include <dlfcn.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kforge::eval {
namespace {

// This binary links torch, whose libcudnn is loaded: its four sub-libraries are found beside
// it and are loaded afterwards (RTLD_NOLOAD finds them), with no GPU needed.
TEST(MathPreloadTest, LoadsCudnnsPartsFromBesideTheLoadedLibcudnn) {
  std::vector<std::string> notes;
  const std::vector<std::string> loaded = PreloadMathLibraries(&notes);
  EXPECT_TRUE(notes.empty()) << notes.front();
  ASSERT_EQ(loaded.size(), 4u);
  for (const std::string& path : loaded) {
    EXPECT_NE(path.find("/libcudnn_"), std::string::npos) << path;
    EXPECT_NE(dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD), nullptr) << path;
  }
  // Again: the same four, already loaded.
  EXPECT_EQ(PreloadMathLibraries(&notes), loaded);
}

}  // namespace
}  // namespace kforge::eval
