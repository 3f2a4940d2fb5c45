// attention.cuh — what the attention kernels of attention.cu (one block per query row),
// attention_tiled.cu (FlashAttention-2-style tiles on the CUDA cores), attention_mma.cu (the
// same tiles on tensor cores) and attention_small.cu (a head per block) share: the
// geometry as plain values and the tiles' helpers (attention_tile.hpp, host and device code),
// and the paths' launchers.
#pragma once

#include "attention_tile.hpp"
#include "common.cuh"

#include <atomic>

#include <nnplug/kit/attention.hpp>

namespace nnp::cuda {

// The tile's rows [r0, r0 + kAttnTile) of an operand into shared memory (load_tile_rows, by the
// block's threads).
template <int HD>
__device__ __forceinline__ void load_rows(float* dst, int ld, const float* __restrict src,
                                          int64_t rs, int64_t r0, int64_t n, int64_t width) {
  load_tile_rows<HD>(static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), dst, ld, src, rs,
                     r0, n, width);
}

// Lets `kernel` use `bytes` of dynamic shared memory on the current device (needed above
// 48 KiB), once per kernel and device (devices 0..63; setting it again is harmless).
template <typename Kernel>
void allow_shared(Kernel* kernel, size_t bytes, std::atomic<uint64_t>& done, int device) {
  if (bytes <= 48 * 1024) return;
  const uint64_t bit = device < 64 ? uint64_t{1} << device : 0;
  if (bit != 0 && (done.load(std::memory_order_acquire) & bit) != 0) return;
  NNP_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(bytes)));
  done.fetch_or(bit, std::memory_order_release);
}

// One block per tile of kAttnTile rows, per head and per batch.
inline dim3 attn_tiles(int64_t rows, int64_t heads, int64_t batch) {
  return dim3(static_cast<unsigned>((rows + kAttnTile - 1) / kAttnTile),
              static_cast<unsigned>(heads), static_cast<unsigned>(batch));
}

// The padded head dimension of the tiled and tensor-core kernels: the smallest of 32, 64 and 128
// that holds max(D, Dv).
inline int padded_head_dim(const attn_dims& a) {
  const int64_t w = a.d > a.dv ? a.d : a.dv;
  return w <= 32 ? 32 : w <= 64 ? 64 : 128;
}

// delta_i = dY_i . Y_i of every row (b, h, i) of the backward, into the stream's scratch
// kScratchTemp0 (B Hq Tq floats, index (b Hq + h) Tq + i), which it returns.
float* attention_delta(stream& s, const attn_dims& a, const float* y, const float* dy);
// The calls the short-sequence kernels (attention_small.cu) take: Tq and Tk up to
// kSmallMaxTokens, D and Dv up to kSmallMaxHeadDim.
constexpr int64_t kSmallMaxTokens = 32;
constexpr int64_t kSmallMaxHeadDim = 64;

// Tiled forward (attention_tiled.cu): Y [.., Tq, Dv] and the optional lse [B, Hq, Tq] of the
// call a describes, for Tq >= 1, Tk >= 1, D and Dv <= kTiledMaxHeadDim; `mask` may be null.
void attention_forward_tiled(stream& s, const attn_dims& a, const float* q, const float* k,
                             const float* v, const float* mask, float* y, float* lse);
// Tiled backward: dQ, dK, dV from Q, K, V, mask, Y, dY and the forward's lse (same limits;
// scratch kScratchTemp0 holds delta_i = dY_i . Y_i, B * Hq * Tq floats).
void attention_backward_tiled(stream& s, const attn_dims& a, const float* q, const float* k,
                              const float* v, const float* mask, const float* y, const float* dy,
                              const float* lse, float* dq, float* dk, float* dv);

// The tiled forward and backward on tensor cores (attention_mma.cu; the backward's scratch as
// the tiled one's), for devices of compute capability 8.0 or later (tensor_core_attention says
// whether s's is). The operands are float32; `math` is the call's
// dtype: float32 runs 3xTF32 products, float16 and bfloat16 (float32 copies of 16-bit tensors)
// 16-bit products with P and dS rounded to that type. Softmax and sums are float32.
bool tensor_core_attention(const stream& s);
void attention_forward_mma(stream& s, const attn_dims& a, const float* q, const float* k,
                           const float* v, const float* mask, float* y, float* lse, elem math);
void attention_backward_mma(stream& s, const attn_dims& a, const float* q, const float* k,
                            const float* v, const float* mask, const float* y, const float* dy,
                            const float* lse, float* dq, float* dk, float* dv, elem math);

// Short-sequence forward and backward (attention_small.cu): one block per (query head, batch),
// resp. (kv head, batch), for the calls within kSmallMaxTokens and kSmallMaxHeadDim; the
// backward needs the forward's lse.
void attention_forward_small(stream& s, const attn_dims& a, const float* q, const float* k,
                             const float* v, const float* mask, float* y, float* lse);
void attention_backward_small(stream& s, const attn_dims& a, const float* q, const float* k,
                              const float* v, const float* mask, const float* y, const float* dy,
                              const float* lse, float* dq, float* dk, float* dv);

}  // namespace nnp::cuda
