#include "gpu_worker/eval/compare.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace kforge::eval {
namespace {

std::string Shape(const at::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

// Every statistic the comparison needs, in float64, computed over slices of at most
// kChunkElements so that a multi-gigabyte output needs a few hundred MB of temporaries rather
// than a dozen float64 copies of itself; the partial results stay on the device until one
// transfer at the end.
constexpr int64_t kChunkElements = 1 << 26;

struct ChunkStats {
  int64_t nonfinite = 0;          // candidate NaN/Inf where the reference is finite
  bool nan_inf_mismatch = false;  // reference NaN/Inf not matched exactly
  double max_abs = 0, max_rel = 0, diff_norm = 0, ref_norm = 0;
  int64_t over = 0;               // elements outside atol + rtol * |ref|
};

ChunkStats CompareInChunks(const at::Tensor& ref, const at::Tensor& cand, const Tolerance& tol) {
  at::Tensor r_all = ref.detach().reshape({-1});
  at::Tensor k_all = cand.detach().to(ref.device()).reshape({-1});
  bool floating = ref.is_floating_point() || ref.is_complex();
  std::vector<at::Tensor> parts;  // 7 float64 scalars per chunk
  for (int64_t pos = 0; pos < r_all.numel(); pos += kChunkElements) {
    int64_t n = std::min(kChunkElements, r_all.numel() - pos);
    at::Tensor rd = r_all.narrow(0, pos, n).to(at::kDouble, false, /*copy=*/true);
    at::Tensor kd = k_all.narrow(0, pos, n).to(at::kDouble, false, /*copy=*/true);
    at::Tensor zero = at::zeros({}, rd.options());
    at::Tensor nonfinite = zero, mismatch = zero;
    if (floating) {
      at::Tensor ref_finite = at::isfinite(rd);
      nonfinite = at::logical_and(ref_finite, at::logical_not(at::isfinite(kd))).sum();
      // Where the reference is NaN the candidate must be NaN; where it is +/-Inf, the same Inf.
      mismatch = at::logical_or(at::logical_and(at::isnan(rd), at::logical_not(at::isnan(kd))),
                                at::logical_and(at::isinf(rd), at::ne(rd, kd)))
                     .sum();
      rd.masked_fill_(at::logical_not(ref_finite), 0);
      kd.masked_fill_(at::logical_not(ref_finite), 0);
    }
    at::Tensor diff = kd.sub_(rd).abs_();  // kd is not needed any more
    at::Tensor ref_abs = rd.abs();
    parts.push_back(nonfinite.to(at::kDouble));
    parts.push_back(mismatch.to(at::kDouble));
    parts.push_back(diff.max());
    parts.push_back((diff / ref_abs.clamp_min(1e-12)).max());
    parts.push_back(diff.square().sum());
    parts.push_back(rd.square().sum());
    parts.push_back((diff > ref_abs.mul_(tol.rtol).add_(tol.atol)).sum().to(at::kDouble));
  }
  at::Tensor all = at::stack(parts).view({-1, 7}).cpu();
  auto col = [&](int j) { return all.select(1, j); };
  ChunkStats st;
  st.nonfinite = static_cast<int64_t>(col(0).sum().item<double>());
  st.nan_inf_mismatch = col(1).sum().item<double>() > 0;
  st.max_abs = col(2).max().item<double>();
  st.max_rel = col(3).max().item<double>();
  st.diff_norm = std::sqrt(col(4).sum().item<double>());
  st.ref_norm = std::sqrt(col(5).sum().item<double>());
  st.over = static_cast<int64_t>(col(6).sum().item<double>());
  return st;
}

}  // namespace

Tolerance DefaultTolerance(at::ScalarType dtype, double atol_override, double rtol_override) {
  Tolerance t;
  bool low = dtype == at::kHalf || dtype == at::kBFloat16;
  t.atol = atol_override > 0 ? atol_override : (low ? 1e-2 : 1e-4);
  t.rtol = rtol_override > 0 ? rtol_override : (low ? 1e-2 : 1e-4);
  t.whole_rel = std::min(0.05, 100 * t.rtol);
  return t;
}

Comparison CompareOutputs(const std::vector<at::Tensor>& ref, const std::vector<at::Tensor>& cand,
                          const Tolerance& tol) {
  Comparison c;
  auto fail = [&](size_t i, const std::string& why) {
    c.ok = false;
    c.reason = "output " + std::to_string(i) + ": " + why;
    return c;
  };
  if (ref.size() != cand.size()) {
    c.ok = false;
    c.reason = "returned " + std::to_string(cand.size()) + " outputs, the reference " +
               std::to_string(ref.size());
    return c;
  }
  for (size_t i = 0; i < ref.size(); ++i) {
    const at::Tensor& r = ref[i];
    const at::Tensor& k = cand[i];
    if (!k.defined()) return fail(i, "is undefined");
    if (r.sizes() != k.sizes()) return fail(i, "shape " + Shape(k) + ", expected " + Shape(r));
    if (r.scalar_type() != k.scalar_type()) {
      return fail(i, std::string("dtype ") + c10::toString(k.scalar_type()) + ", expected " +
                         c10::toString(r.scalar_type()));
    }
    if (r.numel() == 0) continue;
    ChunkStats st = CompareInChunks(r, k, tol);
    if (st.nonfinite > 0) {
      return fail(i, std::to_string(st.nonfinite) + " of " + std::to_string(r.numel()) +
                         " elements are NaN or Inf where the reference is finite "
                         "(unwritten or invalid results)");
    }
    if (st.nan_inf_mismatch) return fail(i, "NaN/Inf positions differ from the reference");
    double max_abs = st.max_abs, whole = st.ref_norm > 0 ? st.diff_norm / st.ref_norm : max_abs;
    c.max_abs_error = std::max(c.max_abs_error, max_abs);
    c.max_rel_error = std::max(c.max_rel_error, st.max_rel);
    c.whole_rel_error = std::max(c.whole_rel_error, whole);
    if (st.over > 0) {
      std::ostringstream s;
      s << st.over << " of " << r.numel() << " elements outside atol=" << tol.atol
        << " rtol=" << tol.rtol << " (max abs error " << max_abs << ")";
      return fail(i, s.str());
    }
    if (whole > tol.whole_rel) {
      std::ostringstream s;
      s << "relative error of the whole output " << whole << " exceeds " << tol.whole_rel
        << " (elementwise within tolerance only because values are tiny)";
      return fail(i, s.str());
    }
  }
  return c;
}

bool SharesMemory(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined() || !b.defined() || a.device() != b.device()) return false;
  if (!a.has_storage() || !b.has_storage()) return false;
  const char* a0 = static_cast<const char*>(a.storage().data());
  const char* b0 = static_cast<const char*>(b.storage().data());
  if (a0 == nullptr || b0 == nullptr) return false;
  const char* a1 = a0 + a.storage().nbytes();
  const char* b1 = b0 + b.storage().nbytes();
  return a0 < b1 && b0 < a1;
}

}  // namespace kforge::eval
