// The output slots' layouts on CPU tensors: what the judge keeps of a trial's reference outputs
// (LayoutsOf) and when a later trial's outputs would be laid out alike (SameSlotLayouts).
#include "gpu_worker/eval/shared_slots.h"

#include <ATen/ATen.h>

#include <vector>

#include "gtest/gtest.h"

namespace kforge::eval {
namespace {

TEST(SharedSlotsTest, LayoutsKeepShapeStridesAndTypeWithoutMemory) {
  at::Tensor t = at::rand({4, 6}).t();  // transposed: dense, not contiguous
  std::vector<at::Tensor> layouts = LayoutsOf({t, at::zeros({3}, at::kInt)});
  ASSERT_EQ(layouts.size(), 2u);
  EXPECT_TRUE(layouts[0].is_meta());
  EXPECT_EQ(layouts[0].sizes(), t.sizes());
  EXPECT_EQ(layouts[0].strides(), t.strides());
  EXPECT_EQ(layouts[1].scalar_type(), at::kInt);
  EXPECT_EQ(LayoutBytes(layouts[0]), LayoutBytes(t));
  EXPECT_TRUE(SameSlotLayouts(layouts, {t, at::ones({3}, at::kInt)}));
}

TEST(SharedSlotsTest, LayoutsDifferInCountTypeShapeOrStrides) {
  at::Tensor x = at::rand({4, 6});
  const std::vector<at::Tensor> base = {x};
  EXPECT_FALSE(SameSlotLayouts(base, {}));
  EXPECT_FALSE(SameSlotLayouts(base, {x, x}));
  EXPECT_FALSE(SameSlotLayouts(base, {x.to(at::kDouble)}));
  EXPECT_FALSE(SameSlotLayouts(base, {x.view({6, 4})}));
  EXPECT_FALSE(SameSlotLayouts(base, {x.t().contiguous().t()}));  // same sizes, other strides
  // Views that are not dense are laid out contiguously in a slot: as a fresh tensor would be.
  at::Tensor wide = at::rand({4, 12});
  EXPECT_TRUE(SameSlotLayouts(base, {wide.slice(1, 0, 6)}));
}

}  // namespace
}  // namespace kforge::eval
