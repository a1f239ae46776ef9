#include "coordinator/task_validation.h"

#include "gtest/gtest.h"

namespace kforge {
namespace {

constexpr char kTask[] = R"py(import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return x
def get_inputs():
    return [torch.rand(4)]
def get_init_inputs():
    return []
)py";

TEST(TaskValidationTest, AcceptsKernelBenchShape) { EXPECT_TRUE(ValidateTaskSource(kTask).ok()); }

TEST(TaskValidationTest, NamesEveryMissingPart) {
  absl::Status s = ValidateTaskSource("import torch\nclass Other:\n    pass\n");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "not a KernelBench task: missing top-level class Model, def get_inputs(), "
            "def get_init_inputs()");
}

TEST(TaskValidationTest, RejectsEmptyAndBinary) {
  EXPECT_EQ(ValidateTaskSource("").message(), "task source is empty");
  EXPECT_EQ(ValidateTaskSource(std::string("class Model:\0", 13)).message(),
            "task source contains a NUL byte");
}

TEST(TaskValidationTest, RejectsOversizedSource) {
  std::string big(kMaxTaskSourceBytes + 1, '#');
  EXPECT_EQ(ValidateTaskSource(big).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kforge
