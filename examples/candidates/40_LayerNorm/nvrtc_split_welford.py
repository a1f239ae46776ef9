# kforge: dialect=nvrtc
"""LayerNorm over the trailing normalized_shape. The task normalises 16 slices of 4M elements
each; one block per slice would leave most of an H100/H200 idle (eager PyTorch's kernel has
that problem), so each slice is split into CHUNK-sized pieces, one block per piece:

  ln_stats: each block reduces its piece to (sum, sum of squares) of x - K, where K = the
            slice's first element (a shift that keeps the fp32 sums well conditioned), with
            float4 loads and warp-shuffle reductions, and writes them as doubles;
  ln_apply: each block merges its slice's partials in double (Chan-style combination of
            shifted sums), gets mean and 1/sqrt(var + eps), then writes
            (x - mean) * rstd * weight + bias for its piece with float4 loads and stores.

x is read twice and y written once; weight and bias (one slice each) stay in L2.
The parameters are self.ln.weight / self.ln.bias, as in the task's Model, so the engine
copies the reference's weights in."""
import torch
import torch.nn as nn
from kforge import cuda

SRC = r'''
template <typename T>
__device__ __forceinline__ void block_sum2(T& a, T& b, T* sh_a, T* sh_b) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        a += __shfl_xor_sync(0xffffffffu, a, off);
        b += __shfl_xor_sync(0xffffffffu, b, off);
    }
    if (lane == 0) { sh_a[warp] = a; sh_b[warp] = b; }
    __syncthreads();
    if (warp == 0) {
        a = lane < nwarps ? sh_a[lane] : T(0);
        b = lane < nwarps ? sh_b[lane] : T(0);
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            a += __shfl_xor_sync(0xffffffffu, a, off);
            b += __shfl_xor_sync(0xffffffffu, b, off);
        }
        if (lane == 0) { sh_a[0] = a; sh_b[0] = b; }
    }
    __syncthreads();
    a = sh_a[0];
    b = sh_b[0];
    __syncthreads();   // the shared arrays may be reused right after
}

// grid = (nchunks, min(rows, 65535)); part[(row * nchunks + chunk) * 2 + {0, 1}]
extern "C" __global__ void __launch_bounds__(1024) ln_stats(const float* __restrict__ x, double* __restrict__ part,
                                    int rows, long long N, int chunk, int nchunks, int vec4) {
    __shared__ float sh_a[32], sh_b[32];
    for (int row = blockIdx.y; row < rows; row += gridDim.y) {
        const float* xr = x + (long long)row * N;
        const float K = xr[0];
        const long long start = (long long)blockIdx.x * chunk;
        const long long end = min(start + (long long)chunk, N);
        float s1 = 0.f, s2 = 0.f;
        if (vec4) {
            const float4* p = reinterpret_cast<const float4*>(xr + start);
            const int nv = (int)((end - start) >> 2);
            for (int i = threadIdx.x; i < nv; i += blockDim.x) {
                float4 v = p[i];
                float d0 = v.x - K, d1 = v.y - K, d2 = v.z - K, d3 = v.w - K;
                s1 += (d0 + d1) + (d2 + d3);
                s2 += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);
            }
        } else {
            for (long long i = start + threadIdx.x; i < end; i += blockDim.x) {
                float d = xr[i] - K;
                s1 += d;
                s2 += d * d;
            }
        }
        block_sum2<float>(s1, s2, sh_a, sh_b);
        if (threadIdx.x == 0) {
            double* o = part + ((long long)row * nchunks + blockIdx.x) * 2;
            o[0] = (double)s1;
            o[1] = (double)s2;
        }
    }
}

extern "C" __global__ void __launch_bounds__(1024) ln_apply(const float* __restrict__ x, const double* __restrict__ part,
                                    const float* __restrict__ w, const float* __restrict__ b,
                                    float* __restrict__ y, int rows, long long N, int chunk,
                                    int nchunks, float eps, int vec4, int affine) {
    __shared__ double sh_a[32], sh_b[32];
    for (int row = blockIdx.y; row < rows; row += gridDim.y) {
        const float* xr = x + (long long)row * N;
        float* yr = y + (long long)row * N;
        double s1 = 0.0, s2 = 0.0;
        const double* pr = part + (long long)row * nchunks * 2;
        for (int c = threadIdx.x; c < nchunks; c += blockDim.x) { s1 += pr[2 * c]; s2 += pr[2 * c + 1]; }
        block_sum2<double>(s1, s2, sh_a, sh_b);
        const double md = s1 / (double)N;                    // mean of x - K
        double var = s2 / (double)N - md * md;
        if (var < 0.0) var = 0.0;
        const float mean = (float)((double)xr[0] + md);
        const float rstd = (float)(1.0 / sqrt(var + (double)eps));
        const long long start = (long long)blockIdx.x * chunk;
        const long long end = min(start + (long long)chunk, N);
        if (vec4) {
            const float4* xv = reinterpret_cast<const float4*>(xr + start);
            const float4* wv = reinterpret_cast<const float4*>(w + start);
            const float4* bv = reinterpret_cast<const float4*>(b + start);
            float4* yv = reinterpret_cast<float4*>(yr + start);
            const int nv = (int)((end - start) >> 2);
            for (int i = threadIdx.x; i < nv; i += blockDim.x) {
                float4 v = xv[i], r;
                r.x = (v.x - mean) * rstd; r.y = (v.y - mean) * rstd;
                r.z = (v.z - mean) * rstd; r.w = (v.w - mean) * rstd;
                if (affine) {
                    float4 ww = wv[i], bb = bv[i];
                    r.x = fmaf(r.x, ww.x, bb.x); r.y = fmaf(r.y, ww.y, bb.y);
                    r.z = fmaf(r.z, ww.z, bb.z); r.w = fmaf(r.w, ww.w, bb.w);
                }
                yv[i] = r;
            }
        } else {
            for (long long i = start + threadIdx.x; i < end; i += blockDim.x) {
                float r = (xr[i] - mean) * rstd;
                yr[i] = affine ? fmaf(r, w[i], b[i]) : r;
            }
        }
    }
}
'''
# kforge: tunable BLOCK=256 choices=128,256,512,1024
BLOCK = 256
# kforge: tunable CHUNK=65536 choices=4096,8192,16384,32768,65536
CHUNK = 65536

_mod = cuda.compile(SRC)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N = 1
        for d in self.ln.normalized_shape:
            N *= d
        rows = x.numel() // N if N > 0 else 0
        y = torch.empty_like(x)
        if rows == 0 or N == 0:
            return y
        affine = self.ln.weight is not None
        w = self.ln.weight.contiguous() if affine else x   # x: a dummy pointer, never read
        b = self.ln.bias.contiguous() if (affine and self.ln.bias is not None) else None
        if affine and b is None:
            b = torch.zeros_like(w)
        elif not affine:
            b = x
        chunk = CHUNK
        nchunks = (N + chunk - 1) // chunk
        aligned = all(t.data_ptr() % 16 == 0 for t in (x, y, w, b))
        vec4 = 1 if (N % 4 == 0 and chunk % 4 == 0 and aligned) else 0
        part = torch.empty((rows, nchunks, 2), dtype=torch.float64, device=x.device)
        grid = (nchunks, min(rows, 65535))
        _mod.ln_stats(grid=grid, block=(BLOCK,), shared_mem=0,
                      args=(x, part, rows, N, chunk, nchunks, vec4))
        _mod.ln_apply(grid=grid, block=(BLOCK,), shared_mem=0,
                      args=(x, part, w, b, y, rows, N, chunk, nchunks, float(self.ln.eps), vec4,
                            1 if affine else 0))
        return y
