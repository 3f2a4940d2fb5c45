// common.cuh — device helpers shared by the backend's own kernels: float <-> storage type
// conversions (float16/bfloat16 computed in float32), grid-stride launch sizes, warp and block
// reductions. Speed comes from grid-stride loops sized to the device and shuffle reductions.
#pragma once

#include "ops.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace nnp::cuda {

using half = __half;
using bf16 = __nv_bfloat16;

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(half x) { return __half2float(x); }
__device__ __forceinline__ float to_f(bf16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_f(float x);
template <>
__device__ __forceinline__ float from_f<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ half from_f<half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ bf16 from_f<bf16>(float x) {
  return __float2bfloat16_rn(x);
}

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n items (at least 1, at most 2^20 blocks).
inline unsigned grid_for(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > (int64_t{1} << 20)) b = int64_t{1} << 20;
  return static_cast<unsigned>(b);
}

struct sum_op {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
// max that propagates NaN
struct max_op {
  __device__ __forceinline__ float operator()(float a, float b) const {
    return (isnan(a) || isnan(b)) ? (a + b) : fmaxf(a, b);
  }
};

template <typename Op>
__device__ __forceinline__ float warp_reduce(float v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Combines p[0], p[stride], ..., p[(n - 1) * stride] with op in one warp: lane l takes elements
// l, l + 32, ... in that order, then warp_reduce's fixed butterfly. The same order on every run
// (no atomics), and the 32 lanes' loads are in flight together, so the parts pass of a split
// reduction waits about one load latency per 32 parts rather than a chain of n loads. Call it
// with all 32 lanes of the warp; every lane gets the result.
template <typename Op>
__device__ __forceinline__ float warp_combine_strided(const float* __restrict__ p, int64_t n,
                                                      int64_t stride, Op op, float identity) {
  float v = identity;
  for (int64_t i = threadIdx.x & 31; i < n; i += 32) v = op(v, p[i * stride]);
  return warp_reduce(v, op);
}

// Reduces v over the block (blockDim.x a multiple of 32, <= 1024); every thread gets the
// result. Safe to call several times in a row.
template <typename Op>
__device__ __forceinline__ float block_reduce(float v, Op op, float identity) {
  __shared__ float shm[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_reduce(v, op);
  __syncthreads();
  if (lane == 0) shm[warp] = v;
  __syncthreads();
  const int n_warps = (blockDim.x + 31) >> 5;
  if (warp == 0) {
    float w = lane < n_warps ? shm[lane] : identity;
    w = warp_reduce(w, op);
    if (lane == 0) shm[0] = w;
  }
  __syncthreads();
  return shm[0];
}

// Calls f(type_tag) with T = float, half or bf16 for t; other types are an internal error.
template <typename T>
struct tag {
  using type = T;
};
template <typename F>
void dispatch_float(elem t, F&& f) {
  switch (t) {
    case elem::f32:
      f(tag<float>{});
      return;
    case elem::f16:
      f(tag<half>{});
      return;
    case elem::bf16:
      f(tag<bf16>{});
      return;
    default:
      fail(NNP_STATUS_UNSUPPORTED, "dtype not implemented by this cuda kernel");
  }
}

}  // namespace nnp::cuda
