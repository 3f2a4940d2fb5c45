// attention.cuh — what the attention kernels of attention.cu (one block per query row),
// attention_tiled.cu (FlashAttention-2-style tiles on the CUDA cores), attention_mma.cu (the
// same tiles on tensor cores, 3xTF32) and attention_small.cu (a head per block) share: the
// geometry as plain values, the tiles' device helpers, and the paths' launchers.
#pragma once

#include "common.cuh"

#include <atomic>

#include <nnplug/kit/attention.hpp>

namespace nnp::cuda {

// The geometry as plain values for the kernels (kit::attention_geometry, element strides).
struct attn_dims {
  int64_t batch, hq, hkv, tq, tk, d, dv;
  float scale;
  int causal;
  int64_t qb, qh, qr, kb, kh, kr, vb, vh, vr, yb, yh, yr;  // batch, head, row strides
  int64_t m0, m1, m2, m3;                                  // mask strides over [B, Hq, Tq, Tk]
  __host__ __device__ int64_t group() const { return hq / hkv; }
  __host__ __device__ int64_t visible(int64_t i) const {
    return causal ? (i + 1 < tk ? i + 1 : tk) : tk;
  }
};

// The head dimensions the tiled and tensor-core kernels take: D and Dv up to this bound.
constexpr int64_t kTiledMaxHeadDim = 128;
// Query rows and keys per tile of the tiled and tensor-core kernels.
constexpr int kAttnTile = 64;

// The tile's rows [r0, r0 + kAttnTile) of a [T, width] operand (row i at src + i * rs), rows < n,
// row-major into dst[r * ld + e] for e < HD (ld >= HD); zeros outside the operand.
template <int HD>
__device__ void load_rows(float* dst, int ld, const float* __restrict src, int64_t rs, int64_t r0,
                          int64_t n, int64_t width) {
  for (int idx = threadIdx.x; idx < HD * kAttnTile; idx += blockDim.x) {
    const int r = idx / HD, e = idx % HD;
    const int64_t row = r0 + r;
    dst[r * ld + e] = (row < n && e < width) ? src[row * rs + e] : 0.0f;
  }
}

// Score (row r, key c) before the softmax: scale * dot + mask, -inf where the causal mask hides
// the key. r < tq and c < tk; mg is the mask of the row's (batch, head), or NULL.
__device__ __forceinline__ float score(const attn_dims& a, const float* __restrict mg, int64_t r,
                                       int64_t c, float dot) {
  if (a.causal && c > r) return -INFINITY;
  float x = a.scale * dot;
  if (mg != nullptr) x += mg[r * a.m2 + c * a.m3];
  return x;
}

// p and dS of score (r, c) in the backward, from the forward's lse, delta and dp = dY_r . V_c:
// zero for padding (c >= tk, or a row whose lse is -inf: fully masked, or padding).
__device__ __forceinline__ void grad_entry(const attn_dims& a, const float* __restrict mg,
                                           int64_t r, int64_t c, float dot, float row_lse,
                                           float delta, float dp, float& p, float& ds) {
  p = 0.0f;
  ds = 0.0f;
  if (c >= a.tk || row_lse == -INFINITY) return;
  p = expf(score(a, mg, r, c, dot) - row_lse);
  ds = a.scale * p * (dp - delta);
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

// The same on tensor cores (attention_mma.cu: 3xTF32 products, float32 softmax and sums), for
// devices of compute capability 8.0 or later (tensor_core_attention says whether s's is).
bool tensor_core_attention(const stream& s);
void attention_forward_mma(stream& s, const attn_dims& a, const float* q, const float* k,
                           const float* v, const float* mask, float* y, float* lse);
void attention_backward_mma(stream& s, const attn_dims& a, const float* q, const float* k,
                            const float* v, const float* mask, const float* y, const float* dy,
                            const float* lse, float* dq, float* dk, float* dv);

// Short-sequence forward and backward (attention_small.cu): one block per (query head, batch),
// resp. (kv head, batch), for the calls within kSmallMaxTokens and kSmallMaxHeadDim; the
// backward needs the forward's lse.
void attention_forward_small(stream& s, const attn_dims& a, const float* q, const float* k,
                             const float* v, const float* mask, float* y, float* lse);
void attention_backward_small(stream& s, const attn_dims& a, const float* q, const float* k,
                              const float* v, const float* mask, const float* y, const float* dy,
                              const float* lse, float* dq, float* dk, float* dv);

}  // namespace nnp::cuda
