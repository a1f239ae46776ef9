#include "common/base/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace kforge {
namespace {

TEST(Utf8Test, AcceptsWellFormedText) {
  EXPECT_EQ(FirstInvalidUtf8(""), std::nullopt);
  EXPECT_EQ(FirstInvalidUtf8("x = 1  # caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), std::nullopt);
}

TEST(Utf8Test, NamesTheFirstBadByte) {
  EXPECT_EQ(FirstInvalidUtf8("abc\xff"), 3u);
  EXPECT_EQ(FirstInvalidUtf8("ab\xc3"), 2u);               // truncated
  EXPECT_EQ(FirstInvalidUtf8("\xc0\xaf"), 0u);             // overlong '/'
  EXPECT_EQ(FirstInvalidUtf8("a\xed\xa0\x80"), 1u);        // a surrogate
  EXPECT_EQ(FirstInvalidUtf8("\xf4\x90\x80\x80"), 0u);     // past U+10FFFF
  EXPECT_EQ(FirstInvalidUtf8("\xe2\x82x"), 0u);            // bad continuation
}

}  // namespace
}  // namespace kforge

namespace kforge {
namespace {

TEST(Utf8Test, PrintableKeepsTextAndReplacesTheRest) {
  EXPECT_EQ(PrintableUtf8("ok\n\tline\r"), "ok\n\tline\r");
  EXPECT_EQ(PrintableUtf8("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(PrintableUtf8("a\xff" "b"), "a?b");
  EXPECT_EQ(PrintableUtf8("\xc0\xaf"), "??");  // overlong '/'
  EXPECT_EQ(PrintableUtf8(std::string_view("x\0y\x1b", 4)), "x?y?");
  EXPECT_EQ(PrintableUtf8("\xe2\x82"), "??");  // cut short
  EXPECT_EQ(PrintableUtf8(""), "");
}

}  // namespace
}  // namespace kforge
