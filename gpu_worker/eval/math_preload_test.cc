#include "gpu_worker/eval/math_preload.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/base/files.h"
#include "gtest/gtest.h"

namespace kforge::eval {
namespace {

// This binary links torch, whose libcudnn is loaded: its four parts are found beside it and
// are loaded afterwards (RTLD_NOLOAD finds them), with no GPU needed.
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

// Someone who can write beside cuDNN plants files whose names start like a part's: only each
// part's own soname file of the loaded libcudnn's version is taken, and a part that is missing
// is said, not replaced by a look-alike.
TEST(MathPreloadTest, TakesOnlyEachPartsOwnSonameNotAPlantedLookAlike) {
  char tmpl[] = "/tmp/kforge-preload-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::filesystem::path dir = tmpl;
  for (const char* name :
       {"libcudnn_graph.so.9", "libcudnn_graph.so.9.evil", "libcudnn_graph.so.99",
        "libcudnn_engines_precompiled.so.9", "libcudnn_engines_runtime_compiled.so.9",
        "libcudnn_heuristic.so.9.1", "libcudnn_heuristic.so.8"}) {
    std::ofstream(dir / name) << "not a library";
  }
  std::vector<std::string> notes;
  const std::vector<std::string> paths = CudnnPartPaths(dir.string(), "libcudnn.so.9", &notes);
  EXPECT_EQ(paths,
            (std::vector<std::string>{(dir / "libcudnn_graph.so.9").string(),
                                      (dir / "libcudnn_engines_precompiled.so.9").string(),
                                      (dir / "libcudnn_engines_runtime_compiled.so.9").string()}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "not found: " + (dir / "libcudnn_heuristic.so.9").string());
  notes.clear();
  EXPECT_TRUE(CudnnPartPaths(dir.string(), "libcudnn_graph.so.9", &notes).empty());
  EXPECT_EQ(notes, std::vector<std::string>{"not a libcudnn soname: libcudnn_graph.so.9"});
  EXPECT_TRUE(RemoveTree(AT_FDCWD, dir.string()));  // not std::filesystem's: libtorch exports a
                                                    // broken one that this binary resolves to
}

}  // namespace
}  // namespace kforge::eval
