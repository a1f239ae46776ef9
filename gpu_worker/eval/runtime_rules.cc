#include "gpu_worker/eval/runtime_rules.h"

#include "gpu_worker/eval/compare.h"

namespace kforge::eval {

bool HoldsPoison(const at::Tensor& t) {
  if (!t.is_floating_point() || t.numel() == 0 || !t.is_contiguous()) return false;
  at::ScalarType as_int;
  switch (t.element_size()) {
    case 2:
      as_int = at::kShort;
      break;
    case 4:
      as_int = at::kInt;
      break;
    case 8:
      as_int = at::kLong;
      break;
    default:
      return false;
  }
  return t.view(as_int).eq(-1).any().item<bool>();
}

std::optional<Verdict> StaleMemory(const at::Tensor& out, size_t o, const std::string& where) {
  if (!HoldsPoison(out)) return std::nullopt;
  return Verdict{v1::VERDICT_REJECTED,
                 "stale_memory: " + where + "output " + std::to_string(o) +
                     " still holds the engine's poison bytes where the candidate never wrote",
                 "stale_memory"};
}

std::vector<uint64_t> AliasBits(const std::vector<at::Tensor>& ref_out,
                                const std::vector<at::Tensor>& ref_in) {
  std::vector<uint64_t> bits(ref_out.size(), 0);
  for (size_t o = 0; o < ref_out.size(); ++o) {
    for (size_t i = 0; i < ref_in.size() && i < 64; ++i) {
      if (SharesMemory(ref_out[o], ref_in[i])) bits[o] |= 1ULL << i;
    }
  }
  return bits;
}

std::optional<Verdict> ReturnsInput(const std::vector<bool>& ref_aliases, size_t num_inputs,
                                    const std::vector<at::Tensor>& cand_out,
                                    const std::vector<at::Tensor>& cand_in,
                                    const std::string& where) {
  for (size_t o = 0; o < cand_out.size(); ++o) {
    for (size_t i = 0; i < cand_in.size() && i < num_inputs; ++i) {
      const size_t k = o * num_inputs + i;
      const bool ref_aliases_it = k < ref_aliases.size() && ref_aliases[k];
      if (!ref_aliases_it && SharesMemory(cand_out[o], cand_in[i])) {
        return Verdict{v1::VERDICT_REJECTED,
                       "returns_input: " + where + "output " + std::to_string(o) +
                           " shares memory with input " + std::to_string(i),
                       "returns_input"};
      }
    }
  }
  return std::nullopt;
}

std::optional<Verdict> NoWork(uint32_t idle_calls, uint32_t busy_calls, uint32_t reference_calls,
                              const std::string& where) {
  if (busy_calls > 0 || idle_calls < kNoWorkCalls || reference_calls < kNoWorkCalls) {
    return std::nullopt;
  }
  return Verdict{v1::VERDICT_REJECTED,
                 "no_work: " + where +
                     "the candidate's process recorded no GPU work (no kernel, "
                     "copy or memset) in any of its " +
                     std::to_string(idle_calls) +
                     " calls while the reference's did: its outputs were not computed from the "
                     "call's inputs (kept from an earlier call, or made once)",
                 "no_work"};
}

std::optional<Verdict> HostMemory(const at::Tensor& out, size_t o, const std::string& where) {
  if (InDeviceMemory(out)) return std::nullopt;
  return Verdict{v1::VERDICT_REJECTED,
                 "host_memory: " + where + "output " + std::to_string(o) +
                     " is a CUDA tensor whose memory is not device memory (pinned host or "
                     "managed memory); outputs must live in device memory",
                 "host_memory"};
}

std::optional<Verdict> ReusedOutput(const at::Tensor& out, size_t o,
                                    const std::vector<at::Tensor>& earlier,
                                    const std::string& where) {
  for (const at::Tensor& e : earlier) {
    if (SharesMemory(out, e)) {
      return Verdict{v1::VERDICT_REJECTED,
                     "output_cache: " + where + "output " + std::to_string(o) +
                         " is the same memory the candidate returned for earlier inputs",
                     "output_cache"};
    }
  }
  return std::nullopt;
}

std::optional<Verdict> ChangedInput(const std::vector<at::Tensor>& ref_in,
                                    const std::vector<at::Tensor>& cand_in,
                                    const std::string& where) {
  for (size_t i = 0; i < cand_in.size() && i < ref_in.size(); ++i) {
    if (!at::equal(cand_in[i], ref_in[i])) {
      return Verdict{v1::VERDICT_REJECTED,
                     "input_mutation: " + where + "input " + std::to_string(i) +
                         " was modified by the candidate",
                     "input_mutation"};
    }
  }
  return std::nullopt;
}

std::optional<Verdict> FailedBuild(uint32_t failed, uint32_t built,
                                   const std::string& first_failure, const std::string& where) {
  if (failed == 0 || built > 0) return std::nullopt;
  return Verdict{v1::VERDICT_REJECTED,
                 "fallback: " + where + std::to_string(failed) + " kernel build" +
                     (failed == 1 ? "" : "s") + " of the candidate failed and it went on without " +
                     (failed == 1 ? "it" : "them") + " (" + first_failure +
                     "): what ran is not a kernel of its own",
                 "fallback"};
}

std::optional<Verdict> UnlaunchedKernels(const std::vector<std::string>& defined,
                                         const std::vector<std::string>& launched,
                                         const std::string& where) {
  if (defined.empty()) return std::nullopt;
  constexpr size_t kNames = 4;
  std::string own, ran;
  for (size_t i = 0; i < defined.size() && i < kNames; ++i) own += (i ? ", " : "") + defined[i];
  if (defined.size() > kNames) own += ", ...";
  for (size_t i = 0; i < launched.size() && i < kNames; ++i) ran += (i ? ", " : "") + launched[i];
  if (launched.size() > kNames) ran += ", ...";
  return Verdict{v1::VERDICT_REJECTED,
                 "fallback: " + where + "the candidate's forward launched none of the kernels " +
                     "its source defines (" + own + "), only " +
                     (ran.empty() ? std::string("kernels of others") : ran) +
                     ": what ran is not a kernel of its own",
                 "fallback"};
}

}  // namespace kforge::eval
