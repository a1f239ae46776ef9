// The evaluation's seeds (docs/evaluation.md, "Correctness"): a secret seed the judge draws
// for itself, and the seeds of each use (a trial's inputs, a timing iteration's, the
// reference-sharing draws) derived from it by a keyed function, so that a candidate that
// sees some of them (the inputs of its trials, the init seed it builds ModelNew after) learns
// nothing of the others. Until session 29 the derivation was a SplitMix64 step, which a
// candidate inverted from its init seed to every input it would be given
// (tests/engine/exploits/predicts_inputs.py).
//
// Thread-safe (no shared state).
#ifndef KFORGE_GPU_WORKER_EVAL_SEEDS_H_
#define KFORGE_GPU_WORKER_EVAL_SEEDS_H_

#include <cstdint>

namespace kforge::eval {

// `requested` when not 0 (a reproducible evaluation: the request, and so the candidate
// process, holds it), else 64 bits from the system's random source.
uint64_t SecretSeed(uint64_t requested);

// The seed of use `t` under `secret`: the first 63 bits of SHA-256("kforge seed" || secret ||
// t), little-endian (63: torch.manual_seed takes a signed 64-bit integer).
uint64_t DeriveSeed(uint64_t secret, uint64_t t);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_SEEDS_H_
