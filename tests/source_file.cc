#include "tests/source_file.h"

#include <cstdlib>

#include "common/base/files.h"

namespace kforge {

std::string ReadSourceFile(const std::string& relative) {
  const char* root = std::getenv("KFORGE_SOURCE_DIR");
  return ReadFileOrEmpty(std::string(root ? root : ".") + "/" + relative);
}

}  // namespace kforge
