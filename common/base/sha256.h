// SHA-256 content hashing: the identity of tasks, candidates and build artifacts.
//
// Thread-safe (no shared state). No dependencies beyond the standard library so that the
// evaluation engine can use it on GPU machines.
#ifndef KFORGE_COMMON_BASE_SHA256_H_
#define KFORGE_COMMON_BASE_SHA256_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kforge {

// Incremental hasher. Update() any number of times, then Digest() once.
class Sha256 {
 public:
  Sha256();
  void Update(std::string_view data);
  // Finishes the hash; the object must not be updated afterwards.
  std::array<uint8_t, 32> Digest();

 private:
  void Block(const uint8_t* p);

  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_;
  size_t buf_len_ = 0;
  uint64_t total_bytes_ = 0;
};

// Lower-case hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

}  // namespace kforge

#endif  // KFORGE_COMMON_BASE_SHA256_H_
