// The per-element arithmetic of the output comparison (compare.h), written once for two
// compilers: the host compiler builds it into the engine for outputs checked on the CPU, and
// NVRTC compiles the same text, kCompareElementSource, into the kernel that checks large
// outputs on the GPU in one pass. Both paths therefore decide alike.
//
// Everything is float64. The text may use no preprocessor directives and no library
// functions (NaN and Inf tests are written out), because NVRTC compiles it without headers;
// KFORGE_COMPARE_HD is empty here and `__device__` in the kernel source.
//
// Thread-safety: pure functions.
#ifndef KFORGE_GPU_WORKER_EVAL_COMPARE_ELEMENT_H_
#define KFORGE_GPU_WORKER_EVAL_COMPARE_ELEMENT_H_

#define KFORGE_COMPARE_HD

// Emits the code, and the code as a string for NVRTC.
#define KFORGE_COMPARE_SHARED(...) \
  __VA_ARGS__                      \
  inline constexpr char kCompareElementSource[] = #__VA_ARGS__;

namespace kforge::eval {

KFORGE_COMPARE_SHARED(
    // Statistics of a run of elements. The counts are doubles, exact up to 2^53 elements, so
    // the struct is seven doubles on both sides.
    struct CompareAcc {
      double nonfinite;  // candidate NaN/Inf where the reference is finite
      double mismatch;   // reference NaN/Inf that the candidate does not repeat exactly
      double max_abs;    // max |c - r| over positions where the reference is finite
      double max_rel;    // max |c - r| / max(|r|, 1e-12)
      double diff_sq;    // sum (c - r)^2
      double ref_sq;     // sum r^2
      double over;       // elements with |c - r| > atol + rtol * |r|
    };

    KFORGE_COMPARE_HD inline void CompareAccInit(CompareAcc* a) {
      a->nonfinite = 0.0;
      a->mismatch = 0.0;
      a->max_abs = 0.0;
      a->max_rel = 0.0;
      a->diff_sq = 0.0;
      a->ref_sq = 0.0;
      a->over = 0.0;
    }

    KFORGE_COMPARE_HD inline bool CompareIsNan(double x) { return !(x == x); }
    // x - x is 0 for every finite x, and NaN for NaN and +/-Inf.
    KFORGE_COMPARE_HD inline bool CompareIsFinite(double x) {
      return x - x == 0.0;
    } KFORGE_COMPARE_HD inline double CompareAbs(double x) {
      return x < 0.0 ? -x : x;
    } KFORGE_COMPARE_HD inline double CompareMax(double a, double b) { return b > a ? b : a; }

    // Adds the pair (reference r, candidate c) to `a`. Where the reference is NaN or Inf, the
    // candidate must hold the same NaN or Inf, and the pair counts as equal in the statistics.
    KFORGE_COMPARE_HD inline void CompareElement(double r, double c, double atol, double rtol,
                                                 CompareAcc* a) {
      bool r_finite = CompareIsFinite(r);
      if (r_finite && !CompareIsFinite(c)) a->nonfinite += 1.0;
      bool r_nan = CompareIsNan(r);
      if ((r_nan && !CompareIsNan(c)) || (!r_finite && !r_nan && r != c)) a->mismatch += 1.0;
      if (!r_finite) {
        r = 0.0;
        c = 0.0;
      }
      double diff = CompareAbs(c - r);
      double ref_abs = CompareAbs(r);
      a->max_abs = CompareMax(a->max_abs, diff);
      a->max_rel = CompareMax(a->max_rel, diff / CompareMax(ref_abs, 1e-12));
      a->diff_sq += diff * diff;
      a->ref_sq += r * r;
      if (diff > ref_abs * rtol + atol) a->over += 1.0;
    }

    KFORGE_COMPARE_HD inline void CompareMerge(CompareAcc* into, const CompareAcc* from) {
      into->nonfinite += from->nonfinite;
      into->mismatch += from->mismatch;
      into->max_abs = CompareMax(into->max_abs, from->max_abs);
      into->max_rel = CompareMax(into->max_rel, from->max_rel);
      into->diff_sq += from->diff_sq;
      into->ref_sq += from->ref_sq;
      into->over += from->over;
    })

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_COMPARE_ELEMENT_H_
