// UTF-8 validity of text that arrives as bytes (sources sent as protobuf `bytes`, files):
// well-formed sequences only, no overlong forms, no surrogates, nothing past U+10FFFF.
//
// Pure functions; thread-safe.
#ifndef KFORGE_COMMON_BASE_UTF8_H_
#define KFORGE_COMMON_BASE_UTF8_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kforge {

// The offset of the first byte that does not start a valid sequence; nullopt when all is
// valid.
std::optional<size_t> FirstInvalidUtf8(std::string_view text);

// `text` fit for a protobuf string field and a log: every byte that does not start a valid
// sequence, and every control character but newline, tab and carriage return, becomes '?'.
std::string PrintableUtf8(std::string_view text);

}  // namespace kforge

#endif  // KFORGE_COMMON_BASE_UTF8_H_
