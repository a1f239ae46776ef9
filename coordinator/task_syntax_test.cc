#include "coordinator/task_syntax.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kforge {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(PythonSyntaxCheckerTest, AcceptsPythonThatCompilesWithoutRunningIt) {
  PythonSyntaxChecker checker("python3");
  EXPECT_TRUE(checker.SelfTest().ok()) << checker.SelfTest();
  // Compiled, never run: the import and the exit do not happen.
  EXPECT_TRUE(checker.Check("import no_such_module\nraise SystemExit(3)\n").ok());
}

TEST(PythonSyntaxCheckerTest, NamesTheLineThatDoesNotParse) {
  absl::Status s = PythonSyntaxChecker("python3")
                       .Check("import torch\nclass Model:\n    def forward(self x):\n"
                              "        return x\n");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), StartsWith("task source does not parse as Python: line 3: "));
}

TEST(PythonSyntaxCheckerTest, AMissingInterpreterIsBadConfiguration) {
  absl::Status s = PythonSyntaxChecker("/nonexistent/python3").SelfTest();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("--task_python=/nonexistent/python3 does not work"));
}

}  // namespace
}  // namespace kforge
