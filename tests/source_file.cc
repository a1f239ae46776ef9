#include "tests/source_file.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace kforge {

std::string ReadSourceFile(const std::string& relative) {
  const char* root = std::getenv("KFORGE_SOURCE_DIR");
  std::ifstream in(std::string(root ? root : ".") + "/" + relative);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace kforge
