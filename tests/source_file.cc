#include "tests/source_file.h"

#include <cstdlib>

#include "common/base/files.h"

namespace kforge {

std::string SourcePath(const std::string& relative) {
  const char* root = std::getenv("KFORGE_SOURCE_DIR");
  return std::string(root ? root : ".") + "/" + relative;
}

std::string ReadSourceFile(const std::string& relative) {
  return ReadFileOrEmpty(SourcePath(relative));
}

}  // namespace kforge
