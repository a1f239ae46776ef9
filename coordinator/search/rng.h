// A small deterministic random generator (SplitMix64). The standard distributions are not
// specified bit-for-bit across standard libraries, so the search draws only through this
// class: the same job seed gives the same search everywhere.
//
// Not thread-safe; each round derives its own streams.
#ifndef KFORGE_COORDINATOR_SEARCH_RNG_H_
#define KFORGE_COORDINATOR_SEARCH_RNG_H_

#include <cstddef>
#include <cstdint>

namespace kforge::search {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1), 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * (1.0 / 9007199254740992.0); }
  // Uniform in [0, n); n must be > 0.
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }

  // A seed for an independent stream, derived from a parent seed and a label.
  static uint64_t Derive(uint64_t seed, uint64_t label) {
    Rng r(seed ^ (label * 0xd1342543de82ef95ULL));
    r.Next();
    return r.Next();
  }

 private:
  uint64_t state_;
};

}  // namespace kforge::search

#endif  // KFORGE_COORDINATOR_SEARCH_RNG_H_
