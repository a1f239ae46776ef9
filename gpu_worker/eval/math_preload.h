#ifndef KFORGE_GPU_WORKER_EVAL_MATH_PRELOAD_H_
#define KFORGE_GPU_WORKER_EVAL_MATH_PRELOAD_H_

// cuDNN's libraries that a process's first convolution loads (session 32: a first call's
// extra 0.1-0.44 s is the math libraries' set-up, first_call_probe.py), loaded by the fork
// server's template before any CUDA so that every evaluation it forks, the judge and the
// candidate process, finds them mapped and relocated. Host work only: nothing touches the GPU.
// Opt-in (KFORGE_PRELOAD_MATH_LIBS=1 in the server's environment) until a GPU measures it
// (docs/evaluation.md, "Fork server").
#include <string>
#include <vector>

namespace kforge::eval {

// The files to load: for a loaded `libcudnn.so.N` in `dir`, each part's own soname file
// `dir/libcudnn_<part>.so.N` that exists, exactly that name (never another file that only
// starts like it: a planted `libcudnn_graph.so.9.x` is not code this loads). What is missing
// is said in *notes.
std::vector<std::string> CudnnPartPaths(const std::string& dir, const std::string& libcudnn,
                                        std::vector<std::string>* notes);

// cuDNN's parts (graph, engines, heuristic) beside the libcudnn already loaded (torch's),
// dlopen'd now. Returns the paths loaded; what could not be is in *notes.
std::vector<std::string> PreloadMathLibraries(std::vector<std::string>* notes);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_MATH_PRELOAD_H_
