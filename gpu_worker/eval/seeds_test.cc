// The evaluation's seeds: derived by a keyed function that a candidate cannot run backwards
// from the init seed it is given, as it could the SplitMix64 step used until session 29.
#include "gpu_worker/eval/seeds.h"

#include <cstdint>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace kforge::eval {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL, kMul1 = 0xbf58476d1ce4e5b9ULL,
                   kMul2 = 0x94d049bb133111ebULL;

// The derivation before session 29.
uint64_t SplitMixSeed(uint64_t seed, uint64_t t) {
  uint64_t z = seed + kGolden * (t + 1);
  z = (z ^ (z >> 30)) * kMul1;
  z = (z ^ (z >> 27)) * kMul2;
  return (z ^ (z >> 31)) & 0x7fffffffffffffffULL;
}

uint64_t UnXorShift(uint64_t y, int k) {
  uint64_t x = y;
  for (int i = 0; i < 64 / k + 1; ++i) x = y ^ (x >> k);
  return x;
}

uint64_t Inverse(uint64_t a) {  // of an odd number modulo 2^64, by Newton's iteration
  uint64_t x = a;
  for (int i = 0; i < 6; ++i) x *= 2 - a * x;
  return x;
}

// The red team's candidate (tests/engine/exploits/predicts_inputs.py): every secret seed
// whose SplitMix64 step for use `t` gives `derived` (two: the top bit is masked off).
std::vector<uint64_t> SplitMixPreimages(uint64_t derived, uint64_t t) {
  std::vector<uint64_t> out;
  for (uint64_t top : {uint64_t{0}, uint64_t{1} << 63}) {
    uint64_t z = UnXorShift(derived | top, 31) * Inverse(kMul2);
    z = UnXorShift(z, 27) * Inverse(kMul1);
    out.push_back(UnXorShift(z, 30) - kGolden * (t + 1));
  }
  return out;
}

TEST(SeedsTest, TheInitSeedNoLongerGivesTheSecretAway) {
  const uint64_t secret = 0x1234567890abcdefULL;
  std::vector<uint64_t> old = SplitMixPreimages(SplitMixSeed(secret, 1000), 1000);
  EXPECT_TRUE(old[0] == secret || old[1] == secret) << "the attack works on the old derivation";
  for (uint64_t guess : SplitMixPreimages(DeriveSeed(secret, 1000), 1000)) {
    EXPECT_NE(guess, secret);
    EXPECT_NE(DeriveSeed(guess, 0), DeriveSeed(secret, 0)) << "nor the first trial's seed";
  }
}

TEST(SeedsTest, DerivedSeedsAreFixedDistinctAndFitTorch) {
  // SHA-256("kforge seed" || secret || t), little-endian, its first 63 bits (Python's hashlib).
  EXPECT_EQ(DeriveSeed(123456789, 1000), 1842304949280674546ULL);
  EXPECT_EQ(DeriveSeed(0, 0), 1035077094641766961ULL);
  EXPECT_EQ(DeriveSeed(~uint64_t{0}, 7), 357515787421445349ULL);
  std::set<uint64_t> seen;
  for (uint64_t t = 0; t < 1000; ++t) {
    const uint64_t v = DeriveSeed(42, t);
    EXPECT_LT(v, uint64_t{1} << 63);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_NE(DeriveSeed(42, 5), DeriveSeed(43, 5));
}

TEST(SeedsTest, ASecretSeedIsTheRequestedOneOrRandom) {
  EXPECT_EQ(SecretSeed(77), 77u);
  EXPECT_NE(SecretSeed(0), SecretSeed(0));  // 2^-64 to fail by chance
}

}  // namespace
}  // namespace kforge::eval
