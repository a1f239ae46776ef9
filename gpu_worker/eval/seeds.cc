#include "gpu_worker/eval/seeds.h"

#include <array>
#include <random>
#include <string>

#include "common/base/sha256.h"

namespace kforge::eval {
namespace {

void AppendLittleEndian(uint64_t v, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

uint64_t SecretSeed(uint64_t requested) {
  if (requested != 0) return requested;
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

uint64_t DeriveSeed(uint64_t secret, uint64_t t) {
  std::string message = "kforge seed";
  AppendLittleEndian(secret, &message);
  AppendLittleEndian(t, &message);
  Sha256 hash;
  hash.Update(message);
  const std::array<uint8_t, 32> digest = hash.Digest();
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | digest[i];
  return v & 0x7fffffffffffffffULL;
}

}  // namespace kforge::eval
