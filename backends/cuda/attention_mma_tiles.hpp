// attention_mma_tiles.hpp — scaled dot-product attention on tensor cores, forward and backward,
// as the work of one block (attention_mma.cu launches it): the tiles and the work split of
// attention_tiled.cu (FlashAttention-2, T. Dao, 2023, arXiv:2307.08691, Algorithms 1 and 2; the
// semantics of nnp_attention_params in nnplug_ops.h), with every product of the matrix products
// (S = Q K^T, O = P V; dP = dY V^T, dV = P^T dY, dK = dS^T Q, dQ = dS K) on the tensor cores:
// in 3xTF32 for float32 calls (tf32x3_math), in float16 or bfloat16 for 16-bit calls
// (half_math: mma.sync.m16n8k16, P and dS rounded to the type). The tiles hold float32 values;
// the softmax, its statistics and every sum are float32.
//
// 3xTF32 (tf32x3.hpp; NVIDIA CUTLASS's OpMultiplyAddFastF32, the float32 arithmetic of
// PyTorch's memory-efficient attention on compute capability 8.0 and later): each float32
// operand is split into a TF32 big and small part, and a b is computed as a_small b_big +
// a_big b_small + a_big b_big by three mma.sync.m16n8k8 TF32 instructions accumulating in
// float32: within about 3 * 2^-22 |a b| of the exact product (an exact float32 FMA rounds to
// 2^-24), then the tensor cores' float32 sums. Non-finite operands: tf32x3.hpp.
//
// Blocks of 4 warps (128 threads), tiles of 64 query rows by 64 keys as in attention_tiled.cu,
// each warp owning 16 rows of the block's tile (the m of m16n8k8 / m16n8k16); head dimensions
// padded to HD = 32, 64 or 128 (zero-filled in shared memory). Fragment layouts are those of
// the PTX ISA ("Matrix fragments for mma.m16n8k8" and "... mma.m16n8k16", listed with the
// policies below); with g = lane / 4 and t = lane % 4, C holds (g, 2t), (g, 2t + 1), (g + 8, 2t),
// (g + 8, 2t + 1) in both.
//  - forward, one block per (query tile, query head, batch): Q, K and V tiles row-major in
//    shared memory; per key tile each warp computes its 16 x 64 scores in C fragments, keeps the
//    online softmax's running max and sum per row (reduced over the 4 lanes of a row by
//    shuffles), writes P to its own 16 rows of a shared tile and accumulates O += P V in C
//    fragments. Key tiles that the causal mask hides from the whole query tile are skipped.
//  - backward, with recomputation and no atomics (deterministic), as attention_tiled.cu:
//    delta_i = dY_i . Y_i (attention_delta); one block per (key tile, kv head, batch) walks the
//    group's query heads and their query tiles and accumulates dV += P^T dY and dK += dS^T Q for
//    its 64 keys (16 per warp); one block per (query tile, query head, batch) walks the key
//    tiles and accumulates dQ += dS K. P^T and dS^T (and dS) go through each warp's rows of a
//    shared tile, from C fragments to A fragments.
// Shared memory per block (floats; rows of HD + 4 put the A and "B from rows" fragment loads on
// 32 distinct banks, V's rows of HD + 8 the forward's "B from columns" loads; the backward's
// "B from columns" loads of dY, Q and K meet 2-way bank conflicts; P tiles have rows of 68):
// forward 64 (2 (HD + 4) + HD + 8 + 68) (HD = 64: 70 656 bytes), each backward kernel 64 (4 (HD +
// 4) + 68) + 128 (HD = 64: 87 552 bytes). Fully masked rows give Y = 0, lse = -inf and no gradient;
// a NaN score makes the row's Y and lse NaN, as in the other kernels.
//
// The tiles are templates over the block's execution context Ctx, which provides the thread's
// index in the block (tid), the block's index in the grid (block(0..2)), the block and warp
// barriers (sync_block, sync_warp), shfl_xor, mma (one mma.sync.m16n8k8 TF32 instruction of
// the warp), pack16 and mma16 (m16n8k16, float16 or bfloat16): attention_mma.cu's on the
// device, tests/test_attention_mma.cpp's emulation on the host, which checks the tiles against
// attention's definition without a GPU.
#pragma once

#include "attention_tile.hpp"
#include "tf32x3.hpp"

#include <cstdint>

// The tiles' functions: device code under nvcc, plain functions for the host compiler.
#if defined(__CUDACC__)
#define NNP_ATTN_TILE __device__ __forceinline__
#else
#define NNP_ATTN_TILE inline
#endif

namespace nnp::cuda::mma_tiles {

constexpr int kT = kAttnTile;     // query rows and keys per tile
constexpr int kMmaThreads = 128;  // 4 warps of 16 rows
constexpr int kLP = kT + 4;       // row length of the P / dS tiles

// ---- arithmetic: how a warp multiplies 16 x kK by kK x 8 -------------------------------------
// Each policy builds its A and B fragments from float32 elements that `at(row, col)` reads (a
// warp_abt / warp_ab view of the shared tiles) and multiplies them into a C fragment (16 x 8,
// float32). With g = lane / 4 and t = lane % 4:

// float32 in 3xTF32 (tf32x3.hpp): mma.sync.m16n8k8 TF32, three per product. A holds (g, t),
// (g + 8, t), (g, t + 4), (g + 8, t + 4); B holds (k = t, n = g), (k = t + 4, n = g).
struct tf32x3_math {
  static constexpr int kK = 8;
  struct frag_a {
    uint32_t big[4], small[4], cross[4];
  };
  struct frag_b {
    uint32_t big[2], small[2], cross[2];
  };
  template <class F>
  NNP_ATTN_TILE static void set(F& f, int i, float v) {
    const tf32_parts p = tf32_split(v);
    f.big[i] = p.big;
    f.small[i] = p.small;
    f.cross[i] = p.cross;
  }
  template <class Ctx, class At>
  NNP_ATTN_TILE static frag_a load_a(Ctx&, const At& at, int g, int t) {
    frag_a f;
    NNP_CUDA_UNROLL
    for (int i = 0; i < 4; ++i) set(f, i, at(g + 8 * (i & 1), t + 4 * (i >> 1)));
    return f;
  }
  template <class Ctx, class At>
  NNP_ATTN_TILE static frag_b load_b(Ctx&, const At& at, int g, int t) {
    frag_b f;
    NNP_CUDA_UNROLL
    for (int i = 0; i < 2; ++i) set(f, i, at(t + 4 * i, g));
    return f;
  }
  // c += a b: the small terms first, then big x big.
  template <class Ctx>
  NNP_ATTN_TILE static void mma(Ctx& x, float (&c)[4], const frag_a& a, const frag_b& b) {
    x.mma(c, a.small, b.cross);
    x.mma(c, a.cross, b.small);
    x.mma(c, a.big, b.big);
  }
};

// float16 (kBf16 false) or bfloat16 operands: mma.sync.m16n8k16, float32 accumulation. The tiles
// hold float32 values; an operand is rounded to the 16-bit type (to nearest even) as it is
// packed, exactly for values that came from 16-bit tensors, and P and dS are rounded there (as
// FlashAttention-2 and cuDNN's fused attention do). Ctx::pack16<kBf16>(lo, hi) makes a 32-bit
// register of two 16-bit values (lo in the low half). A holds the pairs (g, 2t ..), (g + 8, 2t ..),
// (g, 2t + 8 ..), (g + 8, 2t + 8 ..); B holds the pairs (k = 2t .., n = g), (k = 2t + 8 .., n = g).
template <bool kBf16>
struct half_math {
  static constexpr int kK = 16;
  struct frag_a {
    uint32_t r[4];
  };
  struct frag_b {
    uint32_t r[2];
  };
  template <class Ctx, class At>
  NNP_ATTN_TILE static frag_a load_a(Ctx& x, const At& at, int g, int t) {
    frag_a f;
    NNP_CUDA_UNROLL
    for (int i = 0; i < 4; ++i) {
      const int r = g + 8 * (i & 1), c = 2 * t + 8 * (i >> 1);
      f.r[i] = x.template pack16<kBf16>(at(r, c), at(r, c + 1));
    }
    return f;
  }
  template <class Ctx, class At>
  NNP_ATTN_TILE static frag_b load_b(Ctx& x, const At& at, int g, int t) {
    frag_b f;
    NNP_CUDA_UNROLL
    for (int i = 0; i < 2; ++i) {
      const int k = 2 * t + 8 * i;
      f.r[i] = x.template pack16<kBf16>(at(k, g), at(k + 1, g));
    }
    return f;
  }
  template <class Ctx>
  NNP_ATTN_TILE static void mma(Ctx& x, float (&c)[4], const frag_a& a, const frag_b& b) {
    x.template mma16<kBf16>(c, a.r, b.r);
  }
};

// acc[n] += A op(X) for n < NT, A the 16 x KD rows at a (rows of la floats). kXt: op(X) = X^T
// with X the 8 NT x KD rows at x (S = Q K^T, S^T = K Q^T, dP = dY V^T, dP^T = V dY^T); else
// op(X) = X, the KD x 8 NT rows at x (O = P V, dV = P^T dY, dK = dS^T Q, dQ = dS K); rows of lx
// floats.
template <class M, bool kXt, int NT, int KD, class Ctx>
NNP_ATTN_TILE void warp_gemm(Ctx& cx, float (&acc)[NT][4], const float* a, int la, const float* x,
                             int lx, int g, int t) {
  NNP_CUDA_UNROLL_N(1)
  for (int k0 = 0; k0 < KD; k0 += M::kK) {
    const typename M::frag_a fa = M::load_a(
        cx, [&](int r, int c) { return a[r * la + k0 + c]; }, g, t);
    NNP_CUDA_UNROLL
    for (int n = 0; n < NT; ++n) {
      auto at = [&](int k, int j) {
        return kXt ? x[(n * 8 + j) * lx + k0 + k] : x[(k0 + k) * lx + n * 8 + j];
      };
      M::mma(cx, acc[n], fa, M::load_b(cx, at, g, t));
    }
  }
}
template <class M, int NT, int KD, class Ctx>
NNP_ATTN_TILE void warp_abt(Ctx& cx, float (&acc)[NT][4], const float* a, int la, const float* x,
                            int lx, int g, int t) {
  warp_gemm<M, true, NT, KD>(cx, acc, a, la, x, lx, g, t);
}
template <class M, int NT, int KD, class Ctx>
NNP_ATTN_TILE void warp_ab(Ctx& cx, float (&acc)[NT][4], const float* a, int la, const float* x,
                           int lx, int g, int t) {
  warp_gemm<M, false, NT, KD>(cx, acc, a, la, x, lx, g, t);
}

// C fragments of a warp's 16 x 8 NT tile into its rows at x (rows of ld floats).
template <int NT>
NNP_ATTN_TILE void store_c(float* x, int ld, const float (&c)[NT][4], int g, int t) {
  NNP_CUDA_UNROLL
  for (int n = 0; n < NT; ++n) {
    float* r0 = x + g * ld + n * 8 + 2 * t;
    float* r8 = r0 + 8 * ld;
    r0[0] = c[n][0];
    r0[1] = c[n][1];
    r8[0] = c[n][2];
    r8[1] = c[n][3];
  }
}

// Reduces over the 4 lanes that hold one row of a C fragment (lanes differing in bits 0-1).
template <class Ctx>
NNP_ATTN_TILE float quad_max(Ctx& x, float v) {
  v = nan_max(v, x.shfl_xor(v, 1));
  return nan_max(v, x.shfl_xor(v, 2));
}
template <class Ctx>
NNP_ATTN_TILE float quad_sum(Ctx& x, float v) {
  v += x.shfl_xor(v, 1);
  return v + x.shfl_xor(v, 2);
}

// The row (0: g, 1: g + 8) and the column (within the 8 NT columns) of element e of C fragment n.
NNP_ATTN_TILE int c_row(int e, int g) { return g + 8 * (e >> 1); }
NNP_ATTN_TILE int c_col(int n, int e, int t) { return n * 8 + 2 * t + (e & 1); }

// ---- forward ----------------------------------------------------------------------------------

template <int HD>
constexpr int forward_floats() {
  return kT * (2 * (HD + 4) + (HD + 8) + kLP);
}

template <int HD, class M, class Ctx>
NNP_ATTN_TILE void forward_tile(Ctx& x, float* smem, const attn_dims& a, const float* q,
                                const float* k, const float* v, const float* mask, float* y,
                                float* lse) {
  constexpr int LQ = HD + 4, LV = HD + 8, OT = HD / 8, NT = kT / 8;
  float* qs = smem;          // [kT][LQ]: Q rows of the tile
  float* ks = qs + kT * LQ;  // [kT][LQ]: K rows of the key tile
  float* vs = ks + kT * LQ;  // [kT][LV]: V rows
  float* ps = vs + kT * LV;  // [kT][kLP]: P, 16 rows per warp
  const int lane = x.tid() & 31, g = lane >> 2, t = lane & 3;
  const int w0 = (x.tid() >> 5) * 16;  // the warp's first row in the tile
  const query_tile qt(a, x.block(0), x.block(1), x.block(2), k, v, mask);
  const int64_t i0 = qt.i0, h = qt.h, b = qt.b;
  const float *kg = qt.kg, *vg = qt.vg, *mg = qt.mg;
  load_tile_rows<HD>(x.tid(), kMmaThreads, qs, LQ, q + b * a.qb + h * a.qh, a.qr, i0, a.tq, a.d);
  const int64_t rows[2] = {i0 + w0 + g, i0 + w0 + g + 8};

  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, o[OT][4];
  NNP_CUDA_UNROLL
  for (int c = 0; c < OT; ++c) o[c][0] = o[c][1] = o[c][2] = o[c][3] = 0.0f;
  // Keys the tile's rows may see: causal row i sees keys j <= i.
  const int64_t rows_end = i0 + kT < a.tq ? i0 + kT : a.tq;
  const int64_t keys_end = a.causal && rows_end < a.tk ? rows_end : a.tk;
  float* pw = ps + w0 * kLP;
  for (int64_t j0 = 0; j0 < keys_end; j0 += kT) {
    x.sync_block();  // every warp is done with the previous K and V (and Q is published)
    load_tile_rows<HD>(x.tid(), kMmaThreads, ks, LQ, kg, a.kr, j0, a.tk, a.d);
    load_tile_rows<HD>(x.tid(), kMmaThreads, vs, LV, vg, a.vr, j0, a.tk, a.dv);
    x.sync_block();
    float s[NT][4];
    NNP_CUDA_UNROLL
    for (int n = 0; n < NT; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
    warp_abt<M, NT, HD>(x, s, qs + w0 * LQ, LQ, ks, LQ, g, t);
    float mt[2] = {-INFINITY, -INFINITY};
    NNP_CUDA_UNROLL
    for (int n = 0; n < NT; ++n) NNP_CUDA_UNROLL
    for (int e = 0; e < 4; ++e) {
      const int i = e >> 1;
      const int64_t r = rows[i], c = j0 + c_col(n, e, t);
      s[n][e] = (c < a.tk && r < a.tq) ? score(a, mg, r, c, s[n][e]) : -INFINITY;
      mt[i] = nan_max(mt[i], s[n][e]);
    }
    float sum[2] = {0.0f, 0.0f};
    NNP_CUDA_UNROLL
    for (int i = 0; i < 2; ++i) {
      const float mn = nan_max(m[i], quad_max(x, mt[i]));
      // Safe max: while every score so far is -inf, p stays 0 (not exp(-inf + inf) = NaN).
      const float alpha = mn == -INFINITY ? 1.0f : expf(m[i] - mn);
      m[i] = mn;
      l[i] *= alpha;
      NNP_CUDA_UNROLL
      for (int c = 0; c < OT; ++c) {
        o[c][2 * i] *= alpha;
        o[c][2 * i + 1] *= alpha;
      }
    }
    NNP_CUDA_UNROLL
    for (int n = 0; n < NT; ++n) NNP_CUDA_UNROLL
    for (int e = 0; e < 4; ++e) {
      const int i = e >> 1;
      s[n][e] = m[i] == -INFINITY ? 0.0f : expf(s[n][e] - m[i]);
      sum[i] += s[n][e];
    }
    l[0] += sum[0];
    l[1] += sum[1];
    x.sync_warp();  // the warp's reads of the previous P are done
    store_c<NT>(pw, kLP, s, g, t);
    x.sync_warp();
    warp_ab<M, OT, kT>(x, o, pw, kLP, vs, LV, g, t);
  }
  NNP_CUDA_UNROLL
  for (int i = 0; i < 2; ++i) {
    const float total = quad_sum(x, l[i]);
    const int64_t r = rows[i];
    if (r >= a.tq) continue;
    float* yr = y + b * a.yb + h * a.yh + r * a.yr;
    // Fully masked: Y = 0, lse = -inf; a NaN score: NaN (as the other kernels).
    const bool empty = m[i] == -INFINITY || (m[i] != m[i]);
    const float fill = (m[i] != m[i]) ? m[i] : 0.0f, inv = 1.0f / total;
    NNP_CUDA_UNROLL
    for (int c = 0; c < OT; ++c) NNP_CUDA_UNROLL
    for (int e = 0; e < 2; ++e) {
      const int64_t col = c * 8 + 2 * t + e;
      if (col < a.dv) yr[col] = empty ? fill : o[c][2 * i + e] * inv;
    }
    if (lse != nullptr && t == 0)
      lse[(b * a.hq + h) * a.tq + r] =
          empty ? ((m[i] != m[i]) ? m[i] : -INFINITY) : m[i] + logf(total);
  }
}

// ---- backward ---------------------------------------------------------------------------------

template <int HD>
constexpr int backward_floats() {
  return kT * (4 * (HD + 4) + kLP) + 2 * kT;
}

// dK and dV of one key tile of kv head gk, summed over the group's query heads; warp w owns the
// tile's keys 16 w .. 16 w + 15 (the rows of its A fragments: K, V, P^T, dS^T).
template <int HD, class M, class Ctx>
NNP_ATTN_TILE void dkdv_tile(Ctx& x, float* smem, const attn_dims& a, const float* q,
                             const float* k, const float* v, const float* mask, const float* dy,
                             const float* lse, const float* delta, float* dk, float* dv) {
  constexpr int LD = HD + 4, OT = HD / 8, NT = kT / 8;
  float* ks = smem;              // [kT][LD]: K rows of the key tile
  float* vs = ks + kT * LD;      // [kT][LD]: V rows
  float* qs = vs + kT * LD;      // [kT][LD]: Q rows of the query tile
  float* dys = qs + kT * LD;     // [kT][LD]: dY rows
  float* ps = dys + kT * LD;     // [kT][kLP]: P^T, then dS^T, 16 keys per warp
  float* lse_s = ps + kT * kLP;  // [kT]
  float* delta_s = lse_s + kT;   // [kT]
  const int lane = x.tid() & 31, g = lane >> 2, t = lane & 3;
  const int w0 = (x.tid() >> 5) * 16;
  const int64_t j0 = int64_t(x.block(0)) * kT, gk = x.block(1), b = x.block(2);
  load_tile_rows<HD>(x.tid(), kMmaThreads, ks, LD, k + b * a.kb + gk * a.kh, a.kr, j0, a.tk, a.d);
  load_tile_rows<HD>(x.tid(), kMmaThreads, vs, LD, v + b * a.vb + gk * a.vh, a.vr, j0, a.tk, a.dv);
  float dka[OT][4], dva[OT][4];
  NNP_CUDA_UNROLL
  for (int c = 0; c < OT; ++c) NNP_CUDA_UNROLL
  for (int e = 0; e < 4; ++e) dka[c][e] = dva[c][e] = 0.0f;
  const int64_t keys[2] = {j0 + w0 + g, j0 + w0 + g + 8};
  float* pw = ps + w0 * kLP;
  const int64_t group = a.group();
  // Causal: rows i < j0 see no key of the tile.
  const int64_t first_row = a.causal ? j0 : 0;
  for (int64_t hi = 0; hi < group; ++hi) {
    const int64_t h = gk * group + hi;
    const head_rows hr = head_rows_of(a, b, h, q, dy, mask, lse, delta);
    for (int64_t i0 = first_row; i0 < a.tq; i0 += kT) {
      x.sync_block();  // every warp is done with the previous Q and dY (and K, V are published)
      load_tile_rows<HD>(x.tid(), kMmaThreads, qs, LD, hr.q, a.qr, i0, a.tq, a.d);
      load_tile_rows<HD>(x.tid(), kMmaThreads, dys, LD, hr.dy, a.yr, i0, a.tq, a.dv);
      for (int r = x.tid(); r < kT; r += kMmaThreads) {
        const bool in = i0 + r < a.tq;
        lse_s[r] = in ? hr.lse[i0 + r] : -INFINITY;
        delta_s[r] = in ? hr.delta[i0 + r] : 0.0f;
      }
      x.sync_block();
      // S^T (keys x query rows), then P^T in place.
      float st[NT][4];
      NNP_CUDA_UNROLL
      for (int n = 0; n < NT; ++n) st[n][0] = st[n][1] = st[n][2] = st[n][3] = 0.0f;
      warp_abt<M, NT, HD>(x, st, ks + w0 * LD, LD, qs, LD, g, t);
      NNP_CUDA_UNROLL
      for (int n = 0; n < NT; ++n) NNP_CUDA_UNROLL
      for (int e = 0; e < 4; ++e) {
        const int rl = c_col(n, e, t);
        float p, ds;
        grad_entry(a, hr.mask, i0 + rl, keys[e >> 1], st[n][e], lse_s[rl], 0.0f, 0.0f, p, ds);
        st[n][e] = p;
      }
      x.sync_warp();  // the warp's reads of the previous dS^T are done
      store_c<NT>(pw, kLP, st, g, t);
      x.sync_warp();
      warp_ab<M, OT, kT>(x, dva, pw, kLP, dys, LD, g, t);  // dV += P^T dY
      // dP^T = V dY^T, then dS^T = scale P^T (dP^T - delta) over P^T (each lane its own entries).
      float dpt[NT][4];
      NNP_CUDA_UNROLL
      for (int n = 0; n < NT; ++n) dpt[n][0] = dpt[n][1] = dpt[n][2] = dpt[n][3] = 0.0f;
      warp_abt<M, NT, HD>(x, dpt, vs + w0 * LD, LD, dys, LD, g, t);
      x.sync_warp();  // the warp's reads of P^T (dV above) are done
      NNP_CUDA_UNROLL
      for (int n = 0; n < NT; ++n) NNP_CUDA_UNROLL
      for (int e = 0; e < 4; ++e) {
        const int rl = c_col(n, e, t);
        float* pe = pw + c_row(e, g) * kLP + rl;
        *pe = a.scale * *pe * (dpt[n][e] - delta_s[rl]);
      }
      x.sync_warp();
      warp_ab<M, OT, kT>(x, dka, pw, kLP, qs, LD, g, t);  // dK += dS^T Q
    }
  }
  NNP_CUDA_UNROLL
  for (int i = 0; i < 2; ++i) {
    const int64_t j = keys[i];
    if (j >= a.tk) continue;
    float* dkj = dk + b * a.kb + gk * a.kh + j * a.kr;
    float* dvj = dv + b * a.vb + gk * a.vh + j * a.vr;
    NNP_CUDA_UNROLL
    for (int c = 0; c < OT; ++c) NNP_CUDA_UNROLL
    for (int e = 0; e < 2; ++e) {
      const int64_t col = c * 8 + 2 * t + e;
      if (col < a.d) dkj[col] = dka[c][2 * i + e];
      if (col < a.dv) dvj[col] = dva[c][2 * i + e];
    }
  }
}

// dQ of one query tile of query head h; warp w owns the tile's rows 16 w .. 16 w + 15.
template <int HD, class M, class Ctx>
NNP_ATTN_TILE void dq_tile(Ctx& x, float* smem, const attn_dims& a, const float* q, const float* k,
                           const float* v, const float* mask, const float* dy, const float* lse,
                           const float* delta, float* dq) {
  constexpr int LD = HD + 4, OT = HD / 8, NT = kT / 8;
  float* qs = smem;           // [kT][LD]: Q rows of the query tile
  float* dys = qs + kT * LD;  // [kT][LD]: dY rows
  float* ks = dys + kT * LD;  // [kT][LD]: K rows of the key tile
  float* vs = ks + kT * LD;   // [kT][LD]: V rows
  float* ps = vs + kT * LD;   // [kT][kLP]: dS, 16 rows per warp
  const int lane = x.tid() & 31, g = lane >> 2, t = lane & 3;
  const int w0 = (x.tid() >> 5) * 16;
  const query_tile qt(a, x.block(0), x.block(1), x.block(2), k, v, mask);
  const int64_t i0 = qt.i0, h = qt.h, b = qt.b;
  const float *kg = qt.kg, *vg = qt.vg, *mg = qt.mg;
  load_tile_rows<HD>(x.tid(), kMmaThreads, qs, LD, q + b * a.qb + h * a.qh, a.qr, i0, a.tq, a.d);
  load_tile_rows<HD>(x.tid(), kMmaThreads, dys, LD, dy + b * a.yb + h * a.yh, a.yr, i0, a.tq, a.dv);
  const int64_t rows[2] = {i0 + w0 + g, i0 + w0 + g + 8};
  float row_lse[2], row_delta[2];
  NNP_CUDA_UNROLL
  for (int i = 0; i < 2; ++i) {
    const bool in = rows[i] < a.tq;
    row_lse[i] = in ? lse[(b * a.hq + h) * a.tq + rows[i]] : -INFINITY;
    row_delta[i] = in ? delta[(b * a.hq + h) * a.tq + rows[i]] : 0.0f;
  }
  float dqa[OT][4];
  NNP_CUDA_UNROLL
  for (int c = 0; c < OT; ++c) dqa[c][0] = dqa[c][1] = dqa[c][2] = dqa[c][3] = 0.0f;
  float* pw = ps + w0 * kLP;
  const int64_t rows_end = i0 + kT < a.tq ? i0 + kT : a.tq;
  const int64_t keys_end = a.causal && rows_end < a.tk ? rows_end : a.tk;
  for (int64_t j0 = 0; j0 < keys_end; j0 += kT) {
    x.sync_block();  // every warp is done with the previous K and V (and Q, dY are published)
    load_tile_rows<HD>(x.tid(), kMmaThreads, ks, LD, kg, a.kr, j0, a.tk, a.d);
    load_tile_rows<HD>(x.tid(), kMmaThreads, vs, LD, vg, a.vr, j0, a.tk, a.dv);
    x.sync_block();
    float s[NT][4], dp[NT][4];
    NNP_CUDA_UNROLL
    for (int n = 0; n < NT; ++n) NNP_CUDA_UNROLL
    for (int e = 0; e < 4; ++e) s[n][e] = dp[n][e] = 0.0f;
    warp_abt<M, NT, HD>(x, s, qs + w0 * LD, LD, ks, LD, g, t);
    warp_abt<M, NT, HD>(x, dp, dys + w0 * LD, LD, vs, LD, g, t);
    NNP_CUDA_UNROLL
    for (int n = 0; n < NT; ++n) NNP_CUDA_UNROLL
    for (int e = 0; e < 4; ++e) {
      const int i = e >> 1;
      float p;
      grad_entry(a, mg, rows[i], j0 + c_col(n, e, t), s[n][e], row_lse[i], row_delta[i], dp[n][e],
                 p, s[n][e]);
    }
    x.sync_warp();  // the warp's reads of the previous dS are done
    store_c<NT>(pw, kLP, s, g, t);
    x.sync_warp();
    warp_ab<M, OT, kT>(x, dqa, pw, kLP, ks, LD, g, t);  // dQ += dS K
  }
  NNP_CUDA_UNROLL
  for (int i = 0; i < 2; ++i) {
    if (rows[i] >= a.tq) continue;
    float* dqr = dq + b * a.qb + h * a.qh + rows[i] * a.qr;
    NNP_CUDA_UNROLL
    for (int c = 0; c < OT; ++c) NNP_CUDA_UNROLL
    for (int e = 0; e < 2; ++e) {
      const int64_t col = c * 8 + 2 * t + e;
      if (col < a.d) dqr[col] = dqa[c][2 * i + e];
    }
  }
}

}  // namespace nnp::cuda::mma_tiles
