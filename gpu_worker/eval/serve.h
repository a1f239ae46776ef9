// kforge-eval --serve: the fork server. One long-lived process per GPU slot imports Python and
// torch once (it never initialises CUDA), then evaluates a stream of requests, forking a fresh
// supervised evaluation process for each, so a request pays for a fork and a CUDA context
// instead of a process start and `import torch` (~3-4 s on the H200 machine).
//
// Protocol (both directions): frames of a 4-byte little-endian length and that many bytes of
// a serialized protobuf. Requests are EvalRequest, answers EvalResult (or, with json_results,
// the CLI's JSON text, for clients without protobuf), one answer per request, in order. End of
// input at a frame boundary ends the server with status 0. The channel is stdin/stdout, or a pair
// of FIFOs the server creates in `fifo_dir` ("requests", "results"), for callers (the worker's
// sandbox) that cannot stream a child's stdio (a client that has not connected within 120 s ends
// the server with status 1). The server's own fd 1 is pointed at stderr, so nothing printed by
// torch or an evaluation can corrupt frames.
//
// Per request, every guarantee of the one-shot path holds: the evaluation runs in its own
// process group under the supervisor (stage limits, crash/hang/flood -> verdict), with its own
// secret seed, stdin at /dev/null, the protocol descriptors closed, and a private scratch
// directory (its cwd, HOME and TMPDIR, removed afterwards without following links). The server
// makes one such directory, $TMPDIR/kforge-req-XXXXXX, at its start, imports torch.compile's
// modules with it as TMPDIR, HOME and cwd (the warm imports: python_runtime.h), and makes it
// empty and private again for each request, so that the paths those modules keep from import
// are each request's own. The CUDA context lives and dies with the evaluation process, so a
// broken context cannot reach the next request. Candidate code never runs in the server itself.
//
// Template: nothing of one request reaches another's evaluation through memory (a fork copies
// the heap, freed requests and answers included: red team, session 29). Once its warm imports
// and comparison kernels are made, and before it reads any request, the server forks a template
// process (without its channel or GPU lock descriptors), and every evaluation process is a fork
// of the template's (through a short-lived middle process, so that it is the server's child),
// never of the server's. The template never reads a request: the server hands it a memfd
// holding the request and the supervisor's pipes (SCM_RIGHTS), which only the new evaluation
// process reads. The server stops (status 1) once its template is gone.
//
// Thread-safety: Serve runs on the main thread of a single-threaded process (it forks).
#ifndef KFORGE_GPU_WORKER_EVAL_SERVE_H_
#define KFORGE_GPU_WORKER_EVAL_SERVE_H_

#include <string>

#include "gpu_worker/eval/engine.h"
#include "gpu_worker/eval/supervisor.h"
#include "kforge/v1/eval.pb.h"

namespace kforge::eval {

// One evaluation under the supervisor, as both the one-shot CLI and the server run it.
// `context.process_start` is when the request arrived (the process start for the CLI). The
// evaluation process gets a private scratch directory $TMPDIR/kforge-req-XXXXXX as its TMPDIR
// (set before `hooks.child` runs; removed afterwards without following links): with the cache
// lock (candidate_files.h) it is where the evaluation may write besides its cache namespace.
// `turns`: GPU turns (supervisor.h), none by default.
v1::EvalResult EvaluateSupervised(const v1::EvalRequest& request, EngineContext context,
                                  const ForkHooks& hooks = {}, const GpuTurns& turns = {});

struct ServeOptions {
  std::string cache_dir;  // as --cache-dir
  std::string fifo_dir;   // empty: stdin/stdout
  bool json_results = false;  // answer frames hold the CLI's JSON instead of an EvalResult
  // GPU turns (supervisor.h): `lock_fd` an inherited descriptor of the GPU's lock file, open
  // for this server alone (its own open file description), or -1. Each evaluation takes the
  // turn once its CUDA contexts are made; the server refuses to start when the descriptor is
  // not an open regular file.
  GpuTurns turns;
  // --clear-dev-shm: after each evaluation, remove what is in /dev/shm and owned by this
  // server's user (links as links, never followed), so that no file there carries anything from
  // one evaluation to the next. Only for a /dev/shm of this server's own (the worker's sandbox
  // mounts a private one): the server checks at its start that it is empty, and clears nothing
  // (saying so) otherwise. What cannot be removed stops the server after its answer (status 4),
  // as a request directory that stays does.
  bool clear_dev_shm = false;
};

// Serves until end of input; returns the process exit status (0 at a clean end, 1 when the
// interpreter or the template cannot start, the template is gone or the channel breaks
// mid-frame).
int Serve(const ServeOptions& options);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_SERVE_H_
