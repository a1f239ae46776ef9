// The offline proposer: new candidates without an LLM, by changing the tunable parameters that
// exemplars declare. A knob is a marker line
//     # kforge: tunable NAME=default choices=a,b,c        (// in C++ files)
// directly above a module-level (global) assignment `NAME = value` (`constexpr int64_t NAME =
// value;` in C++). A proposal copies one exemplar and sets one or two of its knobs to other
// listed choices.
//
// Deterministic: the same request (exemplars, seed, idea, count) gives the same proposals.
// Better exemplars (higher speedup) are chosen more often; single-knob changes more often than
// pairs. Proposals within one answer are distinct and never equal an exemplar's source.
//
// Pure functions; thread-safe.
#ifndef KFORGE_LLM_GATEWAY_OFFLINE_PROPOSER_H_
#define KFORGE_LLM_GATEWAY_OFFLINE_PROPOSER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kforge/v1/gateway.pb.h"

namespace kforge::gateway {

struct Tunable {
  std::string name;
  std::vector<std::string> choices;
  std::string current;  // the value the assignment holds now
  size_t line = 0;      // 0-based index of the assignment line
};

// The knobs of `source`, in file order. Markers not followed by an assignment of their name
// are ignored.
std::vector<Tunable> FindTunables(const std::string& source);

struct OfflineProposal {
  std::string source;
  std::string analysis;
};

struct OfflineResult {
  std::vector<OfflineProposal> proposals;  // up to `count`; fewer when the knobs run out
  std::string error;                       // set when there is no proposal at all
};

// Exemplars of another dialect than `dialect` are skipped (DIALECT_UNSPECIFIED takes all).
// A non-empty `idea` must name a knob as "tune NAME"; only proposals changing it are made.
OfflineResult ProposeOffline(const google::protobuf::RepeatedPtrField<v1::Exemplar>& exemplars,
                             v1::Dialect dialect, const std::string& idea, uint64_t seed,
                             size_t count);

// Ideas "tune NAME (choices: ...)", one per knob of the exemplars: knobs no earlier idea tuned
// first (in an order drawn from `seed`), then the tried ones by their best speedup. Empty when
// no exemplar has knobs.
std::vector<std::string> OfflineIdeas(const v1::ProposeIdeasRequest& request, size_t count);

}  // namespace kforge::gateway

#endif  // KFORGE_LLM_GATEWAY_OFFLINE_PROPOSER_H_
