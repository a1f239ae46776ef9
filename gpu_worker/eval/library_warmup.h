#pragma once
// The math libraries' first-use set-up, made in the GPU turn by both processes at once
// (docs/evaluation.md, "Library warm-up"): a process's first convolution and matrix product
// load and initialise cuDNN's and cuBLAS's engines, 0.1-0.4 s on an H100 (session 32's
// first_call_probe.py), which the correctness trials' first calls paid one process after the
// other. Made after the call clock's calibration (so nothing of it is timed) and, in the
// candidate process, before any candidate code has run (so it is trusted code there).
#include <string>

namespace kforge::eval {

// One tiny fp32 convolution, transposed 3-D convolution, matrix product and linear layer on
// the current CUDA device, synchronised; no random numbers are drawn. Returns the seconds
// taken, or -1 when it was skipped (KFORGE_NO_LIBRARY_WARMUP set, a measurement switch).
// An error is reported in *error and not thrown: the warm-up is an optimisation, and the
// evaluation goes on without it.
double WarmUpLibraries(int device, std::string* error);

}  // namespace kforge::eval
