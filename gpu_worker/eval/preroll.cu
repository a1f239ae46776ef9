// The timing stage's pre-roll (timing.h): launched after the device has drained and before the
// start event, with every thread slot of every SM taken (blocks of 512 threads, as many per SM
// as the SM holds; the host checks the occupancy), so that no kernel from any other stream can
// run until it ends. The program is launched meanwhile and queues behind it.
//
// Each block's thread 0 counts the block in. The last block to arrive publishes one deadline
// for the whole grid (its arrival + duration), tells the host through `host_flag` (mapped host
// memory) that the grid is resident, with the high bit set when the blocks were not all
// resident within half the duration of each other (the grid ran in waves: the host refuses the
// sample), and resets the state for the next launch. Every thread then spins on the global
// timer until that deadline, and finally writes its share of the L2 flush buffer, so the
// program starts with a cold L2 whatever ran beside the pre-roll. Every wait is also bounded
// in SM cycles (`max_cycles`), in case the global timer stalls.
//
// Compiled by nvcc at build time into a fatbin (SASS for sm_80/90/100/120, PTX for the rest)
// embedded in kforge-eval; never through the cubin cache candidates can write to.
struct PrerollState {                // device memory; first_start starts at ~0, the rest at 0
  unsigned long long first_start;    // earliest block arrival (global timer, ns)
  unsigned long long deadline;       // the grid's common end, published by the last block
  unsigned int arrived;              // blocks counted in so far
  unsigned int generation;           // the launch whose deadline is published
};

__device__ __forceinline__ unsigned long long GlobalTimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

extern "C" __global__ void __launch_bounds__(512, 2)
kforge_preroll(unsigned long long duration_ns, long long max_cycles, unsigned int generation,
               PrerollState* state, volatile unsigned int* host_flag, uint4* flush,
               unsigned long long flush_words, unsigned int flush_value) {
  __shared__ unsigned long long deadline;
  const long long c0 = clock64();
  if (threadIdx.x == 0) {
    atomicMin(&state->first_start, GlobalTimer());
    __threadfence();
    if (atomicAdd(&state->arrived, 1u) + 1 == gridDim.x) {
      __threadfence();  // every other block's atomicMin came before its atomicAdd
      const unsigned long long now = GlobalTimer();
      const unsigned long long first = atomicAdd(&state->first_start, 0ull);
      const bool together = now - first < duration_ns / 2;
      state->arrived = 0;
      state->first_start = ~0ull;
      *reinterpret_cast<volatile unsigned long long*>(&state->deadline) = now + duration_ns;
      __threadfence();
      *reinterpret_cast<volatile unsigned int*>(&state->generation) = generation;
      *host_flag = together ? generation : (generation | 0x80000000u);
      __threadfence_system();
    }
    while (*reinterpret_cast<volatile unsigned int*>(&state->generation) != generation &&
           clock64() - c0 < max_cycles) {
    }
    __threadfence();
    deadline = *reinterpret_cast<volatile unsigned long long*>(&state->deadline);
  }
  __syncthreads();
  while (GlobalTimer() < deadline && clock64() - c0 < max_cycles) {
  }
  const uint4 v = make_uint4(flush_value, flush_value, flush_value, flush_value);
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
       i < flush_words; i += stride) {
    flush[i] = v;
  }
}
