// Reading files of the source tree in tests (example tasks and candidates).
//
// Thread-safe: a plain function.
#ifndef KFORGE_TESTS_SOURCE_FILE_H_
#define KFORGE_TESTS_SOURCE_FILE_H_

#include <string>

namespace kforge {

// $KFORGE_SOURCE_DIR/<relative> (set by kforge_cc_test; the current directory without it).
std::string SourcePath(const std::string& relative);

// The text of $KFORGE_SOURCE_DIR/<relative> (set by kforge_cc_test; the current directory
// without it); "" when the file cannot be read.
std::string ReadSourceFile(const std::string& relative);

}  // namespace kforge

#endif  // KFORGE_TESTS_SOURCE_FILE_H_
