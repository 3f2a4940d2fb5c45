// attention.cuh — what the attention kernels of attention.cu (one block per query row),
// attention_tiled.cu (FlashAttention-2-style tiles) and attention_small.cu (a head per block)
// share: the geometry as plain values, and the tiled and short-sequence paths' launchers.
#pragma once

#include "common.cuh"

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

// The head dimensions the tiled kernels take: D and Dv up to this bound.
constexpr int64_t kTiledMaxHeadDim = 128;
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

// Short-sequence forward and backward (attention_small.cu): one block per (query head, batch),
// resp. (kv head, batch), for the calls within kSmallMaxTokens and kSmallMaxHeadDim; the
// backward needs the forward's lse.
void attention_forward_small(stream& s, const attn_dims& a, const float* q, const float* k,
                             const float* v, const float* mask, float* y, float* lse);
void attention_backward_small(stream& s, const attn_dims& a, const float* q, const float* k,
                              const float* v, const float* mask, const float* y, const float* dy,
                              const float* lse, float* dq, float* dk, float* dv);

}  // namespace nnp::cuda
