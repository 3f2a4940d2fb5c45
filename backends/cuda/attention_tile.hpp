// attention_tile.hpp — what the attention kernels read of a call (attn_dims) and the pieces of a
// tile that the tiled and tensor-core kernels share, as code for the host and the device: nvcc
// compiles it into the kernels, the host compiler into tests/test_attention_mma.cpp, which runs
// the tensor-core kernels' tiles (attention_mma_tiles.hpp) on an emulated GPU.
#pragma once

#include "host_device.hpp"

#include <math.h>

#include <cstdint>

namespace nnp::cuda {

// The geometry as plain values for the kernels (kit::attention_geometry, element strides).
struct attn_dims {
  int64_t batch, hq, hkv, tq, tk, d, dv;
  float scale;
  int causal;
  int64_t qb, qh, qr, kb, kh, kr, vb, vh, vr, yb, yh, yr;  // batch, head, row strides
  int64_t m0, m1, m2, m3;                                  // mask strides over [B, Hq, Tq, Tk]
  NNP_CUDA_HOST_DEVICE int64_t group() const { return hq / hkv; }
  NNP_CUDA_HOST_DEVICE int64_t visible(int64_t i) const {
    return causal ? (i + 1 < tk ? i + 1 : tk) : tk;
  }
};

// The head dimensions the tiled and tensor-core kernels take: D and Dv up to this bound.
constexpr int64_t kTiledMaxHeadDim = 128;
// Query rows and keys per tile of the tiled and tensor-core kernels.
constexpr int kAttnTile = 64;

// The larger of a and b, NaN if either is (common.cuh's max_op, for host and device).
NNP_CUDA_HOST_DEVICE float nan_max(float a, float b) {
  return (a != a || b != b) ? a + b : (a > b ? a : b);
}

// The tile's rows [r0, r0 + kAttnTile) of a [T, width] operand (row i at src + i * rs), rows < n,
// row-major into dst[r * ld + e] for e < HD (ld >= HD); zeros outside the operand. Thread tid of
// the block's nthreads takes every nthreads-th element.
template <int HD>
NNP_CUDA_HOST_DEVICE void load_tile_rows(int tid, int nthreads, float* dst, int ld,
                                         const float* src, int64_t rs, int64_t r0, int64_t n,
                                         int64_t width) {
  for (int idx = tid; idx < HD * kAttnTile; idx += nthreads) {
    const int r = idx / HD, e = idx % HD;
    const int64_t row = r0 + r;
    dst[r * ld + e] = (row < n && e < width) ? src[row * rs + e] : 0.0f;
  }
}

// The mask rows of query head h of batch b (indexed r * m2 + c * m3), or NULL without a mask.
NNP_CUDA_HOST_DEVICE const float* head_mask(const attn_dims& a, const float* mask, int64_t b,
                                            int64_t h) {
  return mask != nullptr ? mask + b * a.m0 + h * a.m1 : nullptr;
}

// A block's query tile: rows i0 .. i0 + kAttnTile - 1 of query head h (tile `tile`, batch b),
// and that head's keys and values (of its kv head) and mask rows (or NULL).
struct query_tile {
  int64_t i0, h, b;
  const float *kg, *vg, *mg;
  NNP_CUDA_HOST_DEVICE query_tile(const attn_dims& a, int64_t tile, int64_t head, int64_t batch,
                                  const float* k, const float* v, const float* mask)
      : i0(tile * kAttnTile),
        h(head),
        b(batch),
        kg(k + batch * a.kb + head / a.group() * a.kh),
        vg(v + batch * a.vb + head / a.group() * a.vh),
        mg(head_mask(a, mask, batch, head)) {}
};

// What a dK/dV pass reads of query head h of batch b: its Q and dY rows, its mask rows (or
// NULL), and its rows of the forward's lse and of delta ([B, Hq, Tq]).
struct head_rows {
  const float *q, *dy, *mask, *lse, *delta;
};
NNP_CUDA_HOST_DEVICE head_rows head_rows_of(const attn_dims& a, int64_t b, int64_t h,
                                            const float* q, const float* dy, const float* mask,
                                            const float* lse, const float* delta) {
  const int64_t row0 = (b * a.hq + h) * a.tq;
  return {q + b * a.qb + h * a.qh, dy + b * a.yb + h * a.yh, head_mask(a, mask, b, h), lse + row0,
          delta + row0};
}

// Score (row r, key c) before the softmax: scale * dot + mask, -inf where the causal mask hides
// the key. r < tq and c < tk; mg is the mask of the row's (batch, head), or NULL.
NNP_CUDA_HOST_DEVICE float score(const attn_dims& a, const float* mg, int64_t r, int64_t c,
                                 float dot) {
  if (a.causal && c > r) return -INFINITY;
  float x = a.scale * dot;
  if (mg != nullptr) x += mg[r * a.m2 + c * a.m3];
  return x;
}

// p and dS of score (r, c) in the backward, from the forward's lse, delta and dp = dY_r . V_c:
// zero for padding (c >= tk, or a row whose lse is -inf: fully masked, or padding).
NNP_CUDA_HOST_DEVICE void grad_entry(const attn_dims& a, const float* mg, int64_t r, int64_t c,
                                     float dot, float row_lse, float delta, float dp, float& p,
                                     float& ds) {
  p = 0.0f;
  ds = 0.0f;
  if (c >= a.tk || row_lse == -INFINITY) return;
  p = expf(score(a, mg, r, c, dot) - row_lse);
  ds = a.scale * p * (dp - delta);
}

}  // namespace nnp::cuda
