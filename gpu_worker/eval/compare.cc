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
    at::Tensor rd = r.detach().to(at::kDouble);
    at::Tensor kd = k.detach().to(k.device(), at::kDouble);
    if (rd.device() != kd.device()) kd = kd.to(rd.device());
    if (r.is_floating_point() || r.is_complex()) {
      at::Tensor ref_finite = at::isfinite(rd);
      at::Tensor bad = at::logical_and(ref_finite, at::logical_not(at::isfinite(kd)));
      int64_t nbad = bad.sum().item<int64_t>();
      if (nbad > 0) {
        return fail(i, std::to_string(nbad) + " of " + std::to_string(r.numel()) +
                           " elements are NaN or Inf where the reference is finite "
                           "(unwritten or invalid results)");
      }
      // Where the reference is NaN the candidate must be NaN; where it is +/-Inf, the same Inf.
      at::Tensor ref_nan = at::isnan(rd);
      at::Tensor ref_inf = at::isinf(rd);
      at::Tensor wrong_nan = at::logical_and(ref_nan, at::logical_not(at::isnan(kd)));
      at::Tensor wrong_inf = at::logical_and(ref_inf, at::ne(rd, kd));
      if (at::logical_or(wrong_nan, wrong_inf).any().item<bool>()) {
        return fail(i, "NaN/Inf positions differ from the reference");
      }
      rd = at::where(ref_finite, rd, at::zeros_like(rd));
      kd = at::where(ref_finite, kd, at::zeros_like(kd));
    }
    at::Tensor diff = (kd - rd).abs();
    double max_abs = diff.max().item<double>();
    at::Tensor rel = diff / rd.abs().clamp_min(1e-12);
    double max_rel = rel.max().item<double>();
    double ref_norm = rd.norm().item<double>();
    double whole = ref_norm > 0 ? (kd - rd).norm().item<double>() / ref_norm : diff.max().item<double>();
    c.max_abs_error = std::max(c.max_abs_error, max_abs);
    c.max_rel_error = std::max(c.max_rel_error, max_rel);
    c.whole_rel_error = std::max(c.whole_rel_error, whole);
    at::Tensor over = diff > (tol.atol + tol.rtol * rd.abs());
    int64_t nover = over.sum().item<int64_t>();
    if (nover > 0) {
      std::ostringstream s;
      s << nover << " of " << r.numel() << " elements outside atol=" << tol.atol
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
