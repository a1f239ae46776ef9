#include "coordinator/task_validation.h"

#include <cmath>

#include "absl/strings/str_cat.h"
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

TEST(TaskValidationTest, RejectsInvalidUtf8WithTheOffset) {
  EXPECT_EQ(ValidateTaskSource(std::string(kTask) + "# \xff\n"),
            absl::InvalidArgumentError(absl::StrCat("task source is not valid UTF-8 (byte ",
                                                    sizeof(kTask) + 1, ")")));
}

TEST(TaskValidationTest, RejectsAbsurdOptions) {
  EXPECT_TRUE(ValidateTaskOptions("fp16", 0, 1e-3, 10).ok());
  EXPECT_EQ(ValidateTaskOptions("", -1, 0, 0).message(),
            "options.atol is -1; it must be 0 (the default) or within (0, 1]");
  EXPECT_EQ(ValidateTaskOptions("", 0, std::nan(""), 0).message(),
            "options.rtol is nan; it must be 0 (the default) or within (0, 1]");
  EXPECT_EQ(ValidateTaskOptions("", 0, 0, 4000000000u).message(),
            "options.correctness_trials is 4000000000; at most 100");
  EXPECT_TRUE(ValidateTaskOptions("", 0, 0, 0, "runtime").ok());
  EXPECT_EQ(ValidateTaskOptions("", 0, 0, 0, "lenient").message(),
            "options.policy must be strict or runtime, not 'lenient'");
  for (const char* numerics : {"", "fp32", "torch"}) {
    EXPECT_TRUE(ValidateTaskOptions("", 0, 0, 0, "", "", numerics).ok()) << numerics;
  }
  EXPECT_EQ(ValidateTaskOptions("", 0, 0, 0, "", "", "tf32").message(),
            "options.numerics must be fp32 or torch, not 'tf32'");
  for (const char* clock : {"", "device", "call"}) {
    EXPECT_TRUE(ValidateTaskOptions("", 0, 0, 0, "", clock).ok()) << clock;
  }
  EXPECT_EQ(ValidateTaskOptions("", 0, 0, 0, "strict", "wall"),
            absl::InvalidArgumentError("options.speedup_clock must be device or call, not 'wall'"));
  EXPECT_EQ(ValidateTaskOptions("", 0, 0, 0, "", "Device").message(),
            "options.speedup_clock must be device or call, not 'Device'");
  EXPECT_EQ(ValidateTaskOptions("", 0, 0, 0, "", "\xff").message(),
            "options.speedup_clock must be device or call, not '(not UTF-8)'");
  EXPECT_EQ(ValidateTaskOptions("fp64", 0, 0, 0).message(),
            "options.precision must be fp32, fp16 or bf16, not 'fp64'");
}

TEST(TaskValidationTest, RecognisesUuids) {
  EXPECT_TRUE(ValidateUuid("0b5c1b9e-3f1a-4c2e-9d7a-1e2f3a4b5c6d", "job_id").ok());
  EXPECT_EQ(ValidateUuid("abc", "job_id").message(), "job_id 'abc' is not a UUID");
  EXPECT_EQ(ValidateUuid("0b5c1b9e-3f1a-4c2e-9d7a-1e2f3a4b5c6dX", "batch_id").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TaskValidationTest, RejectsOversizedSource) {
  std::string big(kMaxTaskSourceBytes + 1, '#');
  EXPECT_EQ(ValidateTaskSource(big).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kforge
