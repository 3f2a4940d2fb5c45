// Winograd convolution on the CPU, F(2x2, 3x3) and F(4x4, 3x3): the fast path of 2-D
// convolutions with 3x3 filters at stride 1 and dilation 1, one group and at least 16 channels in
// and out (the cnn's conv2), for every op whose geometry is such a convolution (NNP_OP_CONV2D_*,
// NNP_OP_CONV_* and NNP_OP_CONV_TRANSPOSE_* with k = 2: conv.cpp asks here first). Sizes come
// from the one N-D geometry (nnplug/kit/conv_nd.hpp; the last two spatial axes are the plane).
//
// Speed: F(m x m, 3x3) computes each m x m output tile from an (m + 2)^2 input tile with
// (m + 2)^2 multiplies per (k, c) instead of 9 m^2: 2.25x fewer than im2col for m = 2, 4x fewer
// for m = 4. Forward as (m + 2)^2 GEMMs [K, C] . [C, tiles] per block of images, backward-data
// as a forward convolution of dy with the flipped filter, backward-filter as (m + 2)^2 SGEMMs
// [K, tiles] . [tiles, C] per block into dU, then dW = G^T dU G. A block is one image, or
// several side by side in the GEMMs' tile dimension when an image has fewer than
// kWinoMinColumns tiles (winograd_block). The transforms work a plane at a time, in unit-stride
// loops over whole padded rows or all tiles of a plane with AVX2 clones (target_clones; the
// plugin is built for plain x86-64), or, where the CPU has AVX2 and FMA, on groups of 8 tiles
// in registers; the forward-style GEMMs, whose depth is the input channels, run in a
// kernel of their own there (gemm_small_depth) up to kSmallDepthMax channels, through OpenBLAS
// above. Transform buffers keep each channel's alpha^2
// matrices rows together (wino_layout), their strides an odd number of cache lines so that the
// streams a transform or GEMM reads at once do not share L1 sets (wino_plane_stride). Figures in
// docs/cpu-backend.md.
//
// Accuracy, and which tile size runs (winograd_scheme_for): F(2x2) uses only 0, +-1 and +-1/2;
// F(4x4) (points 0, +-1, +-2, Lavin & Gray's) multiplies by up to 8 in its output transform, so
// its rounding error is larger: on the cnn's conv2 forward (N = 16, ReLU'd input, He-initialised
// filters) the relative RMS error against a double-precision sum is 1.0e-6 with F(4x4), 1.7e-7
// with F(2x2) and 2.1e-7 with im2col + SGEMM (NMSE 1.1e-12, 3.1e-14, 4.6e-14; the conformance
// bound for float32 is 1e-9). The backward directions take the tile size that covers the plane
// with fewer multiplies (F(4x4) for the cnn's 24 x 24 and 26 x 26 planes, F(2x2) for 6 x 6 and
// less). The forward keeps F(2x2): its outputs feed ReLU and max pooling, whose decisions flip
// where a value sits within the error of zero or of its neighbour, and with F(4x4) forwards
// the cnn's training loss left the reference's by 2e-4 within 3 Adam steps and 1e-3 within 10
// (compare_losses.py, the reference-vs-cpu parity test, allows 1e-4), against <= 1.1e-7 over 10
// steps with F(2x2) forwards and F(4x4) backwards. NNPLUG_CPU_WINOGRAD=4 runs F(4x4) forwards too.
// Winograd's transforms would turn an infinity into NaN where the direct formula gives ±inf, so
// its results stand only for finite operands: the forward scans its operands first (all_finite:
// one vectorised pass over each), the backward directions their result after (the smaller
// tensor), and otherwise conv.cpp runs im2col.
// TBB runs blocks of images in parallel; backward-filter splits the batch into four chunks per
// thread, each accumulating into its own dU (call-level scratch), summed at the end.
#include "conv.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace nnp::cpu {
namespace {

// Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks" (CVPR 2016): for 3x3 filters
// at stride 1 (dilation 1, one group) Y = A^T [ (G g G^T) .* (B^T d B) ] A per tile, the
// elementwise products summed over c as (m + 2)^2 SGEMMs. The matrices of each tile size are
// the paper's (section 4.1 for F(2x2, 3x3), 4.2 for F(4x4, 3x3)); the transforms below write
// them out as adds, subtracts and small multiples, with shared subexpressions.

constexpr int64_t kWinoMinChannels = 16;  // below this the SGEMMs' depth is too small to pay

// The transforms below get an AVX2 clone where the CPU has it (NNP_CPU_AVX2_CLONES): their
// loops are adds and subtracts over rows of tiles.
#define NNP_WINO_CLONES NNP_CPU_AVX2_CLONES

// What the output transforms add and clamp per output channel: y = clamp(A^T m A + bias) (the
// clamp: conv_forward's fused clamp, out_clamp{} for none).
struct wino_out {
  float bias;
  out_clamp clamp;
  float apply(float v) const { return clamp.apply(v + bias); }
};

// ---- F(2x2, 3x3): G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
// ----------------------------------

// u[xi * stride] = (G g G^T)[xi] for one 3x3 filter g (row-major), xi = 4 i + j.
void weights2(const float (&g)[3][3], float* u, int64_t stride) {
  float gg[4][3];  // G g
  for (int s = 0; s < 3; ++s) {
    gg[0][s] = g[0][s];
    gg[1][s] = 0.5f * (g[0][s] + g[1][s] + g[2][s]);
    gg[2][s] = 0.5f * (g[0][s] - g[1][s] + g[2][s]);
    gg[3][s] = g[2][s];
  }
  for (int i = 0; i < 4; ++i) {  // (G g) G^T
    const float t[4] = {gg[i][0], 0.5f * (gg[i][0] + gg[i][1] + gg[i][2]),
                        0.5f * (gg[i][0] - gg[i][1] + gg[i][2]), gg[i][2]};
    for (int j = 0; j < 4; ++j) u[(i * 4 + j) * stride] = t[j];
  }
}

// dw = G^T dU G for one (k, c): dU[xi] = du[xi * stride].
void filter2(const float* du, int64_t stride, float* dw) {
  float m[4][4];
  for (int i = 0; i < 16; ++i) m[i / 4][i % 4] = du[i * stride];
  float t[3][4];  // G^T m
  for (int j = 0; j < 4; ++j) {
    t[0][j] = m[0][j] + 0.5f * (m[1][j] + m[2][j]);
    t[1][j] = 0.5f * (m[1][j] - m[2][j]);
    t[2][j] = 0.5f * (m[1][j] + m[2][j]) + m[3][j];
  }
  for (int i = 0; i < 3; ++i) {  // (G^T m) G
    dw[i * 3 + 0] = t[i][0] + 0.5f * (t[i][1] + t[i][2]);
    dw[i * 3 + 1] = 0.5f * (t[i][1] - t[i][2]);
    dw[i * 3 + 2] = 0.5f * (t[i][1] + t[i][2]) + t[i][3];
  }
}

// Input transform of one plane for tp x tq tiles: v[xi * xs + ti * tq + tj] = (B^T d B)[xi] for
// the 4x4 tile d at rows 2 ti.., columns 2 tj.. of `plane` (rows `ld` floats apart, at least
// 2 tp + 2 rows of 2 tq + 2 columns, the padding already in place). Per row of tiles: B^T along
// the four plane rows first (unit stride over the whole padded row), then B along each of the
// four results (stride-2 reads), both loops vectorised. tmp holds 4 (2 tq + 2) floats.
NNP_WINO_CLONES
void input_plane2(const float* __restrict plane, int64_t ld, int64_t tp, int64_t tq,
                  float* __restrict v, int64_t xs, float* __restrict tmp) {
  const int64_t wp = 2 * tq + 2;
  float* __restrict b0 = tmp;
  float* __restrict b1 = tmp + wp;
  float* __restrict b2 = tmp + 2 * wp;
  float* __restrict b3 = tmp + 3 * wp;
  for (int64_t ti = 0; ti < tp; ++ti) {
    const float* r0 = plane + 2 * ti * ld;
    const float* r1 = r0 + ld;
    const float* r2 = r1 + ld;
    const float* r3 = r2 + ld;
    for (int64_t j = 0; j < wp; ++j) {  // B^T d: rows d0 - d2, d1 + d2, d2 - d1, d1 - d3
      b0[j] = r0[j] - r2[j];
      b1[j] = r1[j] + r2[j];
      b2[j] = r2[j] - r1[j];
      b3[j] = r1[j] - r3[j];
    }
    for (int i = 0; i < 4; ++i) {  // (B^T d) B along each row
      const float* __restrict d = tmp + i * wp;
      float* __restrict v0 = v + (4 * i + 0) * xs + ti * tq;
      float* __restrict v1 = v + (4 * i + 1) * xs + ti * tq;
      float* __restrict v2 = v + (4 * i + 2) * xs + ti * tq;
      float* __restrict v3 = v + (4 * i + 3) * xs + ti * tq;
      for (int64_t t = 0; t < tq; ++t) {
        v0[t] = d[2 * t] - d[2 * t + 2];
        v1[t] = d[2 * t + 1] + d[2 * t + 2];
        v2[t] = d[2 * t + 2] - d[2 * t + 1];
        v3[t] = d[2 * t + 1] - d[2 * t + 3];
      }
    }
  }
}

// Output transform, first half (A^T along the xi rows), over all tiles of a plane at once
// (unit stride, long loops): s0[j][t] = m0 + m1 + m2 and s1[j][t] = m1 - m2 - m3 for
// mi = m[(4 i + j) * ms + t]; s = s0 [4][tiles] then s1 [4][tiles].
inline void output_cols2(const float* __restrict m0, const float* __restrict m1,
                         const float* __restrict m2, const float* __restrict m3, int64_t tiles,
                         float* __restrict s0, float* __restrict s1) {
  for (int64_t t = 0; t < tiles; ++t) {
    s0[t] = m0[t] + m1[t] + m2[t];
    s1[t] = m1[t] - m2[t] - m3[t];
  }
}

// The first half for every tile of a plane: output_cols2 for the four columns j, into
// s [2 rows][4 columns][tiles] (8 tiles floats).
inline void output_cols2_all(const float* m, int64_t ms, int64_t tiles, float* s) {
  for (int j = 0; j < 4; ++j)
    output_cols2(m + j * ms, m + (4 + j) * ms, m + (8 + j) * ms, m + (12 + j) * ms, tiles,
                 s + j * tiles, s + (4 + j) * tiles);
}

// Output transform, second half (A along each row) for one row of tiles: out[2 t], out[2 t + 1]
// = e(a0 + a1 + a2), e(a1 - a2 - a3) for aj = a[j * tiles + t].
inline void output_row2(const float* __restrict a, int64_t tiles, int64_t tq, const wino_out& e,
                        float* __restrict out) {
  for (int64_t t = 0; t < tq; ++t) {
    const float a0 = a[t], a1 = a[tiles + t], a2 = a[2 * tiles + t], a3 = a[3 * tiles + t];
    out[2 * t] = e.apply(a0 + a1 + a2);
    out[2 * t + 1] = e.apply(a1 - a2 - a3);
  }
}

// Output transform of one plane: y [p, q] = e(A^T m A) per tile, m[xi] = m[xi * ms + t]
// for tile t = ti * tq + tj, clipped at odd edges. work: 8 tiles + 4 tq floats.
NNP_WINO_CLONES
void output_plane2(const float* m, int64_t ms, int64_t tp, int64_t tq, int64_t p, int64_t q,
                   const wino_out& e, float* y, float* work) {
  const int64_t tiles = tp * tq;
  float* s = work;                     // [2][4][tiles]
  float* rows_out = work + 8 * tiles;  // two output rows of 2 tq floats
  output_cols2_all(m, ms, tiles, s);
  for (int64_t ti = 0; ti < tp; ++ti) {
    const int64_t r0 = 2 * ti;
    const bool fits = r0 + 1 < p && q % 2 == 0;  // direct when it fits
    float* out0 = fits ? y + r0 * q : rows_out;
    float* out1 = fits ? y + (r0 + 1) * q : rows_out + 2 * tq;
    output_row2(s + ti * tq, tiles, tq, e, out0);
    output_row2(s + 4 * tiles + ti * tq, tiles, tq, e, out1);
    if (!fits) {
      std::memcpy(y + r0 * q, out0, sizeof(float) * static_cast<size_t>(q));
      if (r0 + 1 < p) std::memcpy(y + (r0 + 1) * q, out1, sizeof(float) * static_cast<size_t>(q));
    }
  }
}

// Row i of (A d) A^T for a row of 2x2 dy tiles: with (a0, a1) = c0 * (e0, o0) + c1 * (e1, o1)
// (even and odd columns of the two dy rows, read at stride 2), q0..q3 = a0, a0 + a1, a0 - a1,
// -a1. c0, c1 are 0 or +-1, so the products are exact.
inline void dy_row2(const float* __restrict d0, const float* __restrict d1, float c0, float c1,
                    int64_t tq, float* __restrict q0, float* __restrict q1, float* __restrict q2,
                    float* __restrict q3) {
  for (int64_t t = 0; t < tq; ++t) {
    const float a0 = c0 * d0[2 * t] + c1 * d1[2 * t];
    const float a1 = c0 * d0[2 * t + 1] + c1 * d1[2 * t + 1];
    q0[t] = a0;
    q1[t] = a0 + a1;
    q2[t] = a0 - a1;
    q3[t] = -a1;
  }
}

// dy transform of one plane dy [p, q] for backward-filter: out[xi * ks + ti * tq + tj] =
// (A d A^T)[xi] for the 2x2 dy tile d at rows 2 ti.., columns 2 tj.. (0 outside P x Q). Row i of
// A d is (c0 * row0 + c1 * row1) with (c0, c1) = (1, 0), (1, 1), (1, -1), (0, -1); then (A d) A^T
// maps a row (a0, a1) to [a0, a0 + a1, a0 - a1, -a1]. At odd edges the rows are read from
// zero-padded copies in work (4 tq floats).
NNP_WINO_CLONES
void dy_plane2(const float* dy, int64_t p, int64_t q, int64_t tp, int64_t tq, float* out,
               int64_t ks, float* work) {
  static constexpr float kC0[4] = {1.0f, 1.0f, 1.0f, 0.0f};
  static constexpr float kC1[4] = {0.0f, 1.0f, -1.0f, -1.0f};
  for (int64_t ti = 0; ti < tp; ++ti) {
    const float* d0 = dy + 2 * ti * q;
    const float* d1 = d0 + q;
    if (2 * ti + 1 >= p || q % 2 != 0) {  // a partial tile row or column
      std::fill(work, work + 4 * tq, 0.0f);
      for (int64_t j = 0; j < q; ++j) work[j] = d0[j];
      if (2 * ti + 1 < p)
        for (int64_t j = 0; j < q; ++j) work[2 * tq + j] = d1[j];
      d0 = work;
      d1 = work + 2 * tq;
    }
    for (int i = 0; i < 4; ++i) {
      float* o = out + 4 * i * ks + ti * tq;
      dy_row2(d0, d1, kC0[i], kC1[i], tq, o, o + ks, o + 2 * ks, o + 3 * ks);
    }
  }
}

// ---- F(4x4, 3x3)
// ---------------------------------------------------------------------------------
//   B^T = [4  0 -5  0 1 0;  0 -4 -4  1 1 0;  0  4 -4 -1 1 0;  0 -2 -1  2 1 0;  0  2 -1 -2 1 0;
//          0  4  0 -5 0 1]
//   G   = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
//   A^T = [1 1 1 1 1 0;  0 1 -1 2 -2 0;  0 1 1 4 4 0;  0 1 -1 8 -8 1]

constexpr double kG4[6][3] = {{1.0 / 4, 0, 0},
                              {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                              {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                              {1.0 / 24, 1.0 / 12, 1.0 / 6},
                              {1.0 / 24, -1.0 / 12, 1.0 / 6},
                              {0, 0, 1}};

// u[xi * stride] = (G g G^T)[xi], xi = 6 i + j, in double (G's sixths and 24ths are inexact in
// float; this runs once per (k, c) and call).
void weights4(const float (&g)[3][3], float* u, int64_t stride) {
  double gg[6][3];  // G g
  for (int i = 0; i < 6; ++i)
    for (int s = 0; s < 3; ++s)
      gg[i][s] = kG4[i][0] * g[0][s] + kG4[i][1] * g[1][s] + kG4[i][2] * g[2][s];
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j)
      u[(i * 6 + j) * stride] =
          static_cast<float>(gg[i][0] * kG4[j][0] + gg[i][1] * kG4[j][1] + gg[i][2] * kG4[j][2]);
}

// dw = G^T dU G for one (k, c), dU[xi] = du[xi * stride], in double.
void filter4(const float* du, int64_t stride, float* dw) {
  double t[3][6];  // G^T dU
  for (int r = 0; r < 3; ++r)
    for (int j = 0; j < 6; ++j) {
      double acc = 0;
      for (int i = 0; i < 6; ++i) acc += kG4[i][r] * du[(i * 6 + j) * stride];
      t[r][j] = acc;
    }
  for (int r = 0; r < 3; ++r)
    for (int s = 0; s < 3; ++s) {
      double acc = 0;
      for (int j = 0; j < 6; ++j) acc += t[r][j] * kG4[j][s];
      dw[r * 3 + s] = static_cast<float>(acc);
    }
}

// B^T applied to six streams d0..d5 (rows of a plane, or columns of a row read at stride 4),
// element by element: the six rows of B^T d.
#define NNP_WINO4_BT(d0, d1, d2, d3, d4, d5, o0, o1, o2, o3, o4, o5) \
  do {                                                               \
    const float s13_ = (d3) - (d1), s24_ = (d4) - (d2);              \
    o0 = 4.0f * (d0)-5.0f * (d2) + (d4);                             \
    o1 = ((d3) + (d4)) - 4.0f * ((d1) + (d2));                       \
    o2 = ((d4) - (d3)) + 4.0f * ((d1) - (d2));                       \
    o3 = s24_ + 2.0f * s13_;                                         \
    o4 = s24_ - 2.0f * s13_;                                         \
    o5 = 4.0f * (d1)-5.0f * (d3) + (d5);                             \
  } while (0)

// B^T along six plane rows r0..r5: the six rows of B^T d, into b0..b5 (separate restrict
// pointers: GCC does not vectorise stores at unknown offsets from one pointer).
inline void input_rows4(const float* __restrict r0, const float* __restrict r1,
                        const float* __restrict r2, const float* __restrict r3,
                        const float* __restrict r4, const float* __restrict r5, int64_t wp,
                        float* __restrict b0, float* __restrict b1, float* __restrict b2,
                        float* __restrict b3, float* __restrict b4, float* __restrict b5) {
  for (int64_t j = 0; j < wp; ++j)
    NNP_WINO4_BT(r0[j], r1[j], r2[j], r3[j], r4[j], r5[j], b0[j], b1[j], b2[j], b3[j], b4[j],
                 b5[j]);
}

// B along one row d of B^T d (wp = 4 tq + 2 floats) for a row of tq tiles: v_j[t] = row j of
// B^T [d[4 t] .. d[4 t + 5]]. The stride-4 reads are split first into four unit-stride phases
// c_l[t] = d[4 t + l] (a de-interleave that vectorises as one), so that the transform loop has
// unit stride: d[4 t + 4] and d[4 t + 5] are c_0[t + 1] and c_1[t + 1]. c: 4 (tq + 1) floats.
inline void input_cols4(const float* __restrict d, int64_t tq, float* __restrict c,
                        float* __restrict v0, float* __restrict v1, float* __restrict v2,
                        float* __restrict v3, float* __restrict v4, float* __restrict v5) {
  const int64_t n = tq + 1;
  float* __restrict c0 = c;
  float* __restrict c1 = c + n;
  float* __restrict c2 = c + 2 * n;
  float* __restrict c3 = c + 3 * n;
  for (int64_t t = 0; t < tq; ++t) {
    c0[t] = d[4 * t];
    c1[t] = d[4 * t + 1];
    c2[t] = d[4 * t + 2];
    c3[t] = d[4 * t + 3];
  }
  c0[tq] = d[4 * tq];
  c1[tq] = d[4 * tq + 1];
  for (int64_t t = 0; t < tq; ++t)
    NNP_WINO4_BT(c0[t], c1[t], c2[t], c3[t], c0[t + 1], c1[t + 1], v0[t], v1[t], v2[t], v3[t],
                 v4[t], v5[t]);
}

// Input transform of one plane for tp x tq 6x6 tiles at rows 4 ti.., columns 4 tj..: as
// input_plane2 (B^T along six whole padded rows of 4 tq + 2 columns, then B along each of the
// six results at stride 4). tmp holds 6 (4 tq + 2) + 4 (tq + 1) floats.
NNP_WINO_CLONES
void input_plane4(const float* __restrict plane, int64_t ld, int64_t tp, int64_t tq,
                  float* __restrict v, int64_t xs, float* __restrict tmp) {
  const int64_t wp = 4 * tq + 2;
  float* phases = tmp + 6 * wp;
  for (int64_t ti = 0; ti < tp; ++ti) {
    const float* r = plane + 4 * ti * ld;
    input_rows4(r, r + ld, r + 2 * ld, r + 3 * ld, r + 4 * ld, r + 5 * ld, wp, tmp, tmp + wp,
                tmp + 2 * wp, tmp + 3 * wp, tmp + 4 * wp, tmp + 5 * wp);
    for (int i = 0; i < 6; ++i) {
      float* o = v + 6 * i * xs + ti * tq;
      input_cols4(tmp + i * wp, tq, phases, o, o + xs, o + 2 * xs, o + 3 * xs, o + 4 * xs,
                  o + 5 * xs);
    }
  }
}

// A^T applied to six streams: the four rows of A^T m.
#define NNP_WINO4_AT(m0, m1, m2, m3, m4, m5, o0, o1, o2, o3) \
  do {                                                       \
    const float p_ = (m1) + (m2), q_ = (m1) - (m2);          \
    const float u_ = (m3) + (m4), w_ = (m3) - (m4);          \
    o0 = (m0) + p_ + u_;                                     \
    o1 = q_ + 2.0f * w_;                                     \
    o2 = p_ + 4.0f * u_;                                     \
    o3 = q_ + 8.0f * w_ + (m5);                              \
  } while (0)

// Output transform, first half (A^T along the xi rows, column j of the tile) over all tiles:
// sr[t] = row r of A^T [m(0, j) .. m(5, j)], m(i, j) = m[(6 i + j) * ms + t].
inline void output_cols4(const float* __restrict m, int64_t ms, int64_t tiles, float* __restrict s0,
                         float* __restrict s1, float* __restrict s2, float* __restrict s3) {
  const float* __restrict m0 = m;
  const float* __restrict m1 = m + 6 * ms;
  const float* __restrict m2 = m + 12 * ms;
  const float* __restrict m3 = m + 18 * ms;
  const float* __restrict m4 = m + 24 * ms;
  const float* __restrict m5 = m + 30 * ms;
  for (int64_t t = 0; t < tiles; ++t)
    NNP_WINO4_AT(m0[t], m1[t], m2[t], m3[t], m4[t], m5[t], s0[t], s1[t], s2[t], s3[t]);
}

// Output transform, second half (A along one row of tiles): out[4 t + r] = e(row r of
// A^T [a0 .. a5]), aj = a[j * tiles + t].
inline void output_row4(const float* __restrict a, int64_t tiles, int64_t tq, const wino_out& e,
                        float* __restrict out) {
  for (int64_t t = 0; t < tq; ++t) {
    float o0, o1, o2, o3;
    NNP_WINO4_AT(a[t], a[tiles + t], a[2 * tiles + t], a[3 * tiles + t], a[4 * tiles + t],
                 a[5 * tiles + t], o0, o1, o2, o3);
    out[4 * t] = e.apply(o0);
    out[4 * t + 1] = e.apply(o1);
    out[4 * t + 2] = e.apply(o2);
    out[4 * t + 3] = e.apply(o3);
  }
}

// Output transform of one plane (4x4 tiles), as output_plane2. work: 24 tiles + 16 tq floats.
NNP_WINO_CLONES
void output_plane4(const float* m, int64_t ms, int64_t tp, int64_t tq, int64_t p, int64_t q,
                   const wino_out& e, float* y, float* work) {
  const int64_t tiles = tp * tq;
  float* s = work;                     // [4 rows r][6 columns j][tiles]
  float* row_out = work + 24 * tiles;  // one output row of 4 tq floats
  for (int j = 0; j < 6; ++j)
    output_cols4(m + j * ms, ms, tiles, s + j * tiles, s + (6 + j) * tiles, s + (12 + j) * tiles,
                 s + (18 + j) * tiles);
  const bool whole_rows = q % 4 == 0;
  for (int64_t ti = 0; ti < tp; ++ti)
    for (int r = 0; r < 4 && 4 * ti + r < p; ++r) {
      float* out = whole_rows ? y + (4 * ti + r) * q : row_out;
      output_row4(s + 6 * r * tiles + ti * tq, tiles, tq, e, out);
      if (!whole_rows)
        std::memcpy(y + (4 * ti + r) * q, out, sizeof(float) * static_cast<size_t>(q));
    }
}

// A applied to four streams (A = (A^T)^T, 6 x 4): the six rows of A d.
#define NNP_WINO4_A(d0, d1, d2, d3, o0, o1, o2, o3, o4, o5)       \
  do {                                                            \
    const float e_ = (d0) + (d2), f_ = (d1) + (d3);               \
    const float g_ = (d0) + 4.0f * (d2), h_ = (d1) + 4.0f * (d3); \
    o0 = (d0);                                                    \
    o1 = e_ + f_;                                                 \
    o2 = e_ - f_;                                                 \
    o3 = g_ + 2.0f * h_;                                          \
    o4 = g_ - 2.0f * h_;                                          \
    o5 = (d3);                                                    \
  } while (0)

inline void dy_rows4(const float* __restrict d0, const float* __restrict d1,
                     const float* __restrict d2, const float* __restrict d3, int64_t wq,
                     float* __restrict e0, float* __restrict e1, float* __restrict e2,
                     float* __restrict e3, float* __restrict e4, float* __restrict e5) {
  for (int64_t x = 0; x < wq; ++x)
    NNP_WINO4_A(d0[x], d1[x], d2[x], d3[x], e0[x], e1[x], e2[x], e3[x], e4[x], e5[x]);
}

// A along one row f of A d (4 tq floats) for tq tiles (f[4 t + l] read as a de-interleave, as
// in input_cols4): o_j[t] = row j of A [f[4 t] .. f[4 t + 3]].
inline void dy_cols4(const float* __restrict f, int64_t tq, float* __restrict o0,
                     float* __restrict o1, float* __restrict o2, float* __restrict o3,
                     float* __restrict o4, float* __restrict o5) {
  for (int64_t t = 0; t < tq; ++t)
    NNP_WINO4_A(f[4 * t], f[4 * t + 1], f[4 * t + 2], f[4 * t + 3], o0[t], o1[t], o2[t], o3[t],
                o4[t], o5[t]);
}

// A along the four dy rows of tile row ti (4 tq columns, 0 outside P x Q): the six rows of A d
// into e, ld floats apart (ld >= 4 tq). At odd edges the rows are read from zero-padded copies
// in rows (4 ld floats).
inline void dy_tile_rows4(const float* dy, int64_t p, int64_t q, int64_t ti, int64_t tq,
                          float* rows, float* e, int64_t ld) {
  const float* d[4];
  if (4 * ti + 3 >= p || q % 4 != 0) {  // a partial tile row or column
    std::fill(rows, rows + 4 * ld, 0.0f);
    for (int l = 0; l < 4 && 4 * ti + l < p; ++l)
      std::memcpy(rows + l * ld, dy + (4 * ti + l) * q, sizeof(float) * static_cast<size_t>(q));
    for (int l = 0; l < 4; ++l) d[l] = rows + l * ld;
  } else {
    for (int l = 0; l < 4; ++l) d[l] = dy + (4 * ti + l) * q;
  }
  dy_rows4(d[0], d[1], d[2], d[3], 4 * tq, e, e + ld, e + 2 * ld, e + 3 * ld, e + 4 * ld,
           e + 5 * ld);
}

// dy transform of one plane for backward-filter, 4x4 dy tiles (0 outside P x Q): out[xi * ks +
// ti * tq + tj] = (A d A^T)[xi]. A along the four dy rows of a tile row first (whole rows of
// 4 tq columns into e), then A along each of e's six rows at stride 4. At odd edges the rows are
// read from zero-padded copies. work: 10 x 4 tq floats (4 padded rows, then e).
NNP_WINO_CLONES
void dy_plane4(const float* dy, int64_t p, int64_t q, int64_t tp, int64_t tq, float* out,
               int64_t ks, float* work) {
  const int64_t wq = 4 * tq;
  float* rows = work;
  float* e = work + 4 * wq;
  for (int64_t ti = 0; ti < tp; ++ti) {
    dy_tile_rows4(dy, p, q, ti, tq, rows, e, wq);
    for (int i = 0; i < 6; ++i) {
      float* o = out + 6 * i * ks + ti * tq;
      dy_cols4(e + i * wq, tq, o, o + ks, o + 2 * ks, o + 3 * ks, o + 4 * ks, o + 5 * ks);
    }
  }
}

#undef NNP_WINO4_BT
#undef NNP_WINO4_AT
#undef NNP_WINO4_A

// ---- F(4x4, 3x3) with AVX2 + FMA intrinsics --------------------------------------------------
// The portable transforms above vectorise along a row of tiles, and at the cnn's 24 x 24 output
// a row has 6 tiles: shorter than one AVX2 vector, so GCC's loops run their scalar remainders.
// These work on groups of 8 tiles of one tile row, one tile per lane, with partial stores at the
// end of a row: the stride-4 columns of 8 tiles are de-interleaved in registers (4 x 4
// transposes in each 128-bit half), and the output transform interleaves its four columns back
// the same way. Chosen at load time where the CPU has AVX2 and FMA (winograd_f4); the portable
// versions stay for other CPUs and for NNPLUG_CPU_WINOGRAD=4-portable.
#ifdef NNP_CPU_X86_KERNELS

// Two 4-float groups into one vector: lo in the low half, hi in the high half.
NNP_CPU_AVX2_FMA inline __m256 load_halves(const float* lo, const float* hi) {
  return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(lo)), _mm_loadu_ps(hi), 1);
}

// c_l = r[4 t + l] for tiles t = 0..7 (lane t), l = 0..3: reads r[0 .. 31].
NNP_CPU_AVX2_FMA inline void deinterleave4(const float* r, __m256& c0, __m256& c1, __m256& c2,
                                           __m256& c3) {
  const __m256 a0 = load_halves(r, r + 16), a1 = load_halves(r + 4, r + 20);
  const __m256 a2 = load_halves(r + 8, r + 24), a3 = load_halves(r + 12, r + 28);
  const __m256 u0 = _mm256_unpacklo_ps(a0, a1), u1 = _mm256_unpackhi_ps(a0, a1);
  const __m256 u2 = _mm256_unpacklo_ps(a2, a3), u3 = _mm256_unpackhi_ps(a2, a3);
  c0 = _mm256_shuffle_ps(u0, u2, _MM_SHUFFLE(1, 0, 1, 0));
  c1 = _mm256_shuffle_ps(u0, u2, _MM_SHUFFLE(3, 2, 3, 2));
  c2 = _mm256_shuffle_ps(u1, u3, _MM_SHUFFLE(1, 0, 1, 0));
  c3 = _mm256_shuffle_ps(u1, u3, _MM_SHUFFLE(3, 2, 3, 2));
}

// Lanes 1..7 of c, then `next` in lane 7: column l of the next tile.
NNP_CPU_AVX2_FMA inline __m256 next_tile(__m256 c, float next) {
  const __m256 shifted = _mm256_permutevar8x32_ps(c, _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 7));
  return _mm256_blend_ps(shifted, _mm256_set1_ps(next), 0x80);
}

// The six rows of B^T d for vectors d0..d5 (as NNP_WINO4_BT, with FMAs).
NNP_CPU_AVX2_FMA inline void bt6(__m256 d0, __m256 d1, __m256 d2, __m256 d3, __m256 d4, __m256 d5,
                                 __m256* o) {
  const __m256 four = _mm256_set1_ps(4.0f), five = _mm256_set1_ps(5.0f);
  const __m256 two = _mm256_set1_ps(2.0f);
  const __m256 s13 = _mm256_sub_ps(d3, d1), s24 = _mm256_sub_ps(d4, d2);
  o[0] = _mm256_fnmadd_ps(five, d2, _mm256_fmadd_ps(four, d0, d4));
  o[1] = _mm256_fnmadd_ps(four, _mm256_add_ps(d1, d2), _mm256_add_ps(d3, d4));
  o[2] = _mm256_fmadd_ps(four, _mm256_sub_ps(d1, d2), _mm256_sub_ps(d4, d3));
  o[3] = _mm256_fmadd_ps(two, s13, s24);
  o[4] = _mm256_fnmadd_ps(two, s13, s24);
  o[5] = _mm256_fnmadd_ps(five, d3, _mm256_fmadd_ps(four, d1, d5));
}

// input_plane4 for groups of 8 tiles. plane: rows ld floats apart, each readable up to column
// 4 (8 ceil(tq / 8)) (kF4's padded width). tmp: 36 x 8 floats.
NNP_CPU_AVX2_FMA void input_plane4_avx2(const float* plane, int64_t ld, int64_t tp, int64_t tq,
                                        float* v, int64_t xs, float* tmp) {
  for (int64_t ti = 0; ti < tp; ++ti) {
    for (int64_t t0 = 0; t0 < tq; t0 += 8) {
      for (int l = 0; l < 6; ++l) {  // B along each of the tile group's six rows
        const float* r = plane + (4 * ti + l) * ld + 4 * t0;
        __m256 c0, c1, c2, c3, o[6];
        deinterleave4(r, c0, c1, c2, c3);
        bt6(c0, c1, c2, c3, next_tile(c0, r[32]), next_tile(c1, r[33]), o);
        for (int j = 0; j < 6; ++j) _mm256_storeu_ps(tmp + (6 * l + j) * 8, o[j]);
      }
      for (int j = 0; j < 6; ++j) {  // B^T along the rows, per column j
        __m256 o[6];
        bt6(_mm256_loadu_ps(tmp + j * 8), _mm256_loadu_ps(tmp + (6 + j) * 8),
            _mm256_loadu_ps(tmp + (12 + j) * 8), _mm256_loadu_ps(tmp + (18 + j) * 8),
            _mm256_loadu_ps(tmp + (24 + j) * 8), _mm256_loadu_ps(tmp + (30 + j) * 8), o);
        float* out = v + j * xs + ti * tq + t0;
        for (int i = 0; i < 6; ++i) store_first(out + 6 * i * xs, o[i], tq - t0);
      }
    }
  }
}

// output_plane4 with the second half on groups of 8 tiles; s (the first half, from
// output_cols4) readable 8 floats past its end. work: 24 tiles + 8 floats.
NNP_CPU_AVX2_FMA void output_plane4_avx2(const float* m, int64_t ms, int64_t tp, int64_t tq,
                                         int64_t p, int64_t q, const wino_out& e, float* y,
                                         float* work) {
  const int64_t tiles = tp * tq;
  float* s = work;  // [4 rows r][6 columns j][tiles]
  for (int j = 0; j < 6; ++j)
    output_cols4(m + j * ms, ms, tiles, s + j * tiles, s + (6 + j) * tiles, s + (12 + j) * tiles,
                 s + (18 + j) * tiles);
  const __m256 b = _mm256_set1_ps(e.bias), two = _mm256_set1_ps(2.0f);
  const __m256 four = _mm256_set1_ps(4.0f), eight = _mm256_set1_ps(8.0f);
  const __m256 lo = _mm256_set1_ps(e.clamp.lo), hi = _mm256_set1_ps(e.clamp.hi);
  for (int64_t ti = 0; ti < tp; ++ti)
    for (int r = 0; r < 4 && 4 * ti + r < p; ++r) {
      const float* a = s + 6 * r * tiles + ti * tq;
      float* out = y + (4 * ti + r) * q;
      for (int64_t t0 = 0; t0 < tq; t0 += 8) {
        const __m256 a0 = _mm256_loadu_ps(a + t0), a1 = _mm256_loadu_ps(a + tiles + t0);
        const __m256 a2 = _mm256_loadu_ps(a + 2 * tiles + t0);
        const __m256 a3 = _mm256_loadu_ps(a + 3 * tiles + t0);
        const __m256 a4 = _mm256_loadu_ps(a + 4 * tiles + t0);
        const __m256 a5 = _mm256_loadu_ps(a + 5 * tiles + t0);
        const __m256 pp = _mm256_add_ps(a1, a2), qq = _mm256_sub_ps(a1, a2);
        const __m256 uu = _mm256_add_ps(a3, a4), ww = _mm256_sub_ps(a3, a4);
        const __m256 o0 =
            clamp8(_mm256_add_ps(_mm256_add_ps(a0, b), _mm256_add_ps(pp, uu)), lo, hi);
        const __m256 o1 = clamp8(_mm256_fmadd_ps(two, ww, _mm256_add_ps(qq, b)), lo, hi);
        const __m256 o2 = clamp8(_mm256_fmadd_ps(four, uu, _mm256_add_ps(pp, b)), lo, hi);
        const __m256 o3 =
            clamp8(_mm256_fmadd_ps(eight, ww, _mm256_add_ps(_mm256_add_ps(qq, a5), b)), lo, hi);
        // interleave: out[4 t + c] = o_c[t]
        const __m256 w0 = _mm256_unpacklo_ps(o0, o1), w1 = _mm256_unpackhi_ps(o0, o1);
        const __m256 w2 = _mm256_unpacklo_ps(o2, o3), w3 = _mm256_unpackhi_ps(o2, o3);
        const __m256 x0 = _mm256_shuffle_ps(w0, w2, _MM_SHUFFLE(1, 0, 1, 0));  // tiles 0 | 4
        const __m256 x1 = _mm256_shuffle_ps(w0, w2, _MM_SHUFFLE(3, 2, 3, 2));  // tiles 1 | 5
        const __m256 x2 = _mm256_shuffle_ps(w1, w3, _MM_SHUFFLE(1, 0, 1, 0));  // tiles 2 | 6
        const __m256 x3 = _mm256_shuffle_ps(w1, w3, _MM_SHUFFLE(3, 2, 3, 2));  // tiles 3 | 7
        const __m256 yv[4] = {
            _mm256_permute2f128_ps(x0, x1, 0x20), _mm256_permute2f128_ps(x2, x3, 0x20),
            _mm256_permute2f128_ps(x0, x1, 0x31), _mm256_permute2f128_ps(x2, x3, 0x31)};
        for (int k = 0; k < 4; ++k) {
          const int64_t col = 4 * t0 + 8 * k;
          if (col >= q) break;
          store_first(out + col, yv[k], q - col);
        }
      }
    }
}

// dy_plane4 with the second half (A along each row of A d) on groups of 8 tiles. work:
// (4 + 6) x 4 (8 ceil(tq / 8)) floats.
NNP_CPU_AVX2_FMA void dy_plane4_avx2(const float* dy, int64_t p, int64_t q, int64_t tp, int64_t tq,
                                     float* out, int64_t ks, float* work) {
  const int64_t we = 4 * ((tq + 7) / 8 * 8);  // e's rows are we apart
  float* rows = work;
  float* e = work + 4 * we;
  const __m256 two = _mm256_set1_ps(2.0f), four = _mm256_set1_ps(4.0f);
  for (int64_t ti = 0; ti < tp; ++ti) {
    dy_tile_rows4(dy, p, q, ti, tq, rows, e, we);
    for (int i = 0; i < 6; ++i)
      for (int64_t t0 = 0; t0 < tq; t0 += 8) {
        __m256 f0, f1, f2, f3;
        deinterleave4(e + i * we + 4 * t0, f0, f1, f2, f3);
        const __m256 g0 = _mm256_add_ps(f0, f2), h0 = _mm256_add_ps(f1, f3);
        const __m256 g1 = _mm256_fmadd_ps(four, f2, f0), h1 = _mm256_fmadd_ps(four, f3, f1);
        const __m256 o[6] = {f0,
                             _mm256_add_ps(g0, h0),
                             _mm256_sub_ps(g0, h0),
                             _mm256_fmadd_ps(two, h1, g1),
                             _mm256_fnmadd_ps(two, h1, g1),
                             f3};
        float* dst = out + 6 * i * ks + ti * tq + t0;
        for (int j = 0; j < 6; ++j) store_first(dst + j * ks, o[j], tq - t0);
      }
  }
}

// ---- F(2x2, 3x3) with AVX2: groups of 8 tiles along a tile row, the last group ending at the
// row's last tile (overlapping the one before: those tiles are computed and stored twice, with
// the same values), so that no read passes the plane's 2 tq + 2 columns and unpadded planes are
// still read in place. Rows of fewer than 8 tiles take the portable loops.

// input_plane2 for tile rows of at least 8 tiles. tmp: 16 x 8 floats.
NNP_CPU_AVX2_FMA void input_plane2_avx2(const float* plane, int64_t ld, int64_t tp, int64_t tq,
                                        float* v, int64_t xs, float* tmp) {
  if (tq < 8) {
    input_plane2(plane, ld, tp, tq, v, xs, tmp);
    return;
  }
  for (int64_t ti = 0; ti < tp; ++ti) {
    for (int64_t g0 = 0; g0 < tq; g0 += 8) {
      const int64_t t0 = std::min(g0, tq - 8);
      for (int l = 0; l < 4; ++l) {  // B along each of the group's four rows
        const float* r = plane + (2 * ti + l) * ld + 2 * t0;
        const __m256 a = load_halves(r, r + 8), b = load_halves(r + 4, r + 12);
        const __m256 d0 = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));  // columns 2 t
        const __m256 d1 = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));  // 2 t + 1
        const __m256 d2 = next_tile(d0, r[16]), d3 = next_tile(d1, r[17]);
        _mm256_storeu_ps(tmp + (4 * l + 0) * 8, _mm256_sub_ps(d0, d2));
        _mm256_storeu_ps(tmp + (4 * l + 1) * 8, _mm256_add_ps(d1, d2));
        _mm256_storeu_ps(tmp + (4 * l + 2) * 8, _mm256_sub_ps(d2, d1));
        _mm256_storeu_ps(tmp + (4 * l + 3) * 8, _mm256_sub_ps(d1, d3));
      }
      for (int j = 0; j < 4; ++j) {  // B^T along the rows, per column j
        const __m256 e0 = _mm256_loadu_ps(tmp + j * 8), e1 = _mm256_loadu_ps(tmp + (4 + j) * 8);
        const __m256 e2 = _mm256_loadu_ps(tmp + (8 + j) * 8);
        const __m256 e3 = _mm256_loadu_ps(tmp + (12 + j) * 8);
        float* out = v + j * xs + ti * tq + t0;
        _mm256_storeu_ps(out, _mm256_sub_ps(e0, e2));
        _mm256_storeu_ps(out + 4 * xs, _mm256_add_ps(e1, e2));
        _mm256_storeu_ps(out + 8 * xs, _mm256_sub_ps(e2, e1));
        _mm256_storeu_ps(out + 12 * xs, _mm256_sub_ps(e1, e3));
      }
    }
  }
}

// The second half of F(2x2)'s output transform for 8 tiles t0.. of one output row: a = the row's
// first column sums (s + 4 r tiles + ti tq), the four columns `tiles` apart. o0 / o1: the even
// and odd outputs of each tile, bias added and clamped. Shared by the plain and the pooled
// transform, so the fused pooling sees exactly the values the plain one stores.
struct row_pair2 {
  __m256 even, odd;
};
NNP_CPU_AVX2_FMA inline row_pair2 output_pair2(const float* a, int64_t tiles, int64_t t0, __m256 b,
                                               __m256 lo, __m256 hi) {
  const __m256 a0 = _mm256_loadu_ps(a + t0), a1 = _mm256_loadu_ps(a + tiles + t0);
  const __m256 a2 = _mm256_loadu_ps(a + 2 * tiles + t0);
  const __m256 a3 = _mm256_loadu_ps(a + 3 * tiles + t0);
  return {clamp8(_mm256_add_ps(_mm256_add_ps(a0, b), _mm256_add_ps(a1, a2)), lo, hi),
          clamp8(_mm256_sub_ps(_mm256_add_ps(a1, b), _mm256_add_ps(a2, a3)), lo, hi)};
}

// output_plane2 for tile rows of at least 8 tiles: the first half (A^T along the xi rows, all
// tiles at once) as there, the second half and the interleave of the two output columns per
// group of 8 tiles. work: 8 tiles floats.
NNP_CPU_AVX2_FMA void output_plane2_avx2(const float* m, int64_t ms, int64_t tp, int64_t tq,
                                         int64_t p, int64_t q, const wino_out& e, float* y,
                                         float* work) {
  if (tq < 8) {
    output_plane2(m, ms, tp, tq, p, q, e, y, work);
    return;
  }
  const int64_t tiles = tp * tq;
  float* s = work;  // [2 rows][4 columns j][tiles]
  output_cols2_all(m, ms, tiles, s);
  const __m256 b = _mm256_set1_ps(e.bias);
  const __m256 lo = _mm256_set1_ps(e.clamp.lo), hi = _mm256_set1_ps(e.clamp.hi);
  for (int64_t ti = 0; ti < tp; ++ti)
    for (int r = 0; r < 2 && 2 * ti + r < p; ++r) {
      const float* a = s + 4 * r * tiles + ti * tq;
      float* out = y + (2 * ti + r) * q;
      for (int64_t g0 = 0; g0 < tq; g0 += 8) {
        const int64_t t0 = std::min(g0, tq - 8);
        const row_pair2 o = output_pair2(a, tiles, t0, b, lo, hi);
        // interleave: out[2 t] = o.even[t], out[2 t + 1] = o.odd[t]
        const __m256 il = _mm256_unpacklo_ps(o.even, o.odd), ih = _mm256_unpackhi_ps(o.even, o.odd);
        const int64_t col = 2 * t0;
        store_first(out + col, _mm256_permute2f128_ps(il, ih, 0x20), q - col);
        if (q - col > 8)
          store_first(out + col + 8, _mm256_permute2f128_ps(il, ih, 0x31), q - col - 8);
      }
    }
}

// max(x, y) per lane, NaN where either is NaN (max pooling's rule).
NNP_CPU_AVX2_FMA inline __m256 max_nan(__m256 x, __m256 y) {
  return _mm256_blendv_ps(_mm256_max_ps(x, y), _mm256_add_ps(x, y),
                          _mm256_cmp_ps(x, y, _CMP_UNORD_Q));
}

// output_plane2_avx2 with conv_forward's fused 2 x 2 max pooling (ABI 1.8): each 2 x 2 output
// tile is one pooling window, so the maximum of its four outputs (after bias and clamp; NaN if
// any is NaN) is the pooled value, stored at pooled [tp', q / 2] (row ti, column tj) for the
// tiles wholly inside the p x q output (ti < p / 2, tj < q / 2: floor, as ONNX MaxPool without
// ceil_mode). The full-size output is never stored. tq >= 8. work: 8 tiles floats.
NNP_CPU_AVX2_FMA void output_plane2_pool_avx2(const float* m, int64_t ms, int64_t tp, int64_t tq,
                                              int64_t p, int64_t q, const wino_out& e,
                                              float* pooled, float* work) {
  const int64_t tiles = tp * tq, pp = std::min(tp, p / 2), pq = q / 2;
  float* s = work;  // [2 rows][4 columns j][tiles]
  output_cols2_all(m, ms, tiles, s);
  const __m256 b = _mm256_set1_ps(e.bias);
  const __m256 lo = _mm256_set1_ps(e.clamp.lo), hi = _mm256_set1_ps(e.clamp.hi);
  for (int64_t ti = 0; ti < pp; ++ti) {
    float* out = pooled + ti * pq;
    for (int64_t g0 = 0; g0 < pq; g0 += 8) {
      const int64_t t0 = std::min(g0, tq - 8);
      __m256 best = _mm256_setzero_ps();
      for (int r = 0; r < 2; ++r) {
        const row_pair2 o = output_pair2(s + 4 * r * tiles + ti * tq, tiles, t0, b, lo, hi);
        const __m256 row = max_nan(o.even, o.odd);
        best = r == 0 ? row : max_nan(best, row);
      }
      store_first(out + t0, best, pq - t0);
    }
  }
}

// The SGEMMs of winograd_batch, m[xi] [K, N] = u[xi] [K, C] . v[xi] [C, N], have a short depth
// (C = the input channels, 32 in the cnn's conv2) and, per call, OpenBLAS scales C by beta = 0
// in a separate pass and packs both operands: at C = 32 that overhead measured a third of the
// kernel's own time. This kernel reads v in place (rows ldb apart), u from panels of 4 rows
// packed once per call (pack index: (k / 4) C 4 + c 4 + k % 4, rows past K zero), keeps a
// 4 x 8 NV block of m in registers over the whole depth (NV = 3 vectors, fewer at the end of a
// row) and stores it once. The last vector of a row may read up to 7 floats past column N: the
// transform buffers' planes are whole 16-float lines, so they are there (their values land in
// lanes that are not stored).
template <int NV>
NNP_CPU_AVX2_FMA inline void gemm_block4(const float* a, const float* b, int64_t ldb, int64_t depth,
                                         float* c, int64_t ldc, int64_t rows, int64_t cols) {
  static const float zeros[4] = {0, 0, 0, 0};
  __m256 acc[4][3];
  block4x8<NV>(a, b, ldb, depth, zeros, acc);
  for (int64_t i = 0; i < 4 && i < rows; ++i)
    for (int v = 0; v < NV && 8 * v < cols; ++v)
      store_first(c + i * ldc + 8 * v, acc[i][v], cols - 8 * v);
}

NNP_CPU_AVX2_FMA void gemm_small_depth(int64_t k_rows, int64_t n, int64_t depth, const float* ap,
                                       const float* b, int64_t ldb, float* c, int64_t ldc) {
  for (int64_t n0 = 0; n0 < n; n0 += 24) {
    const int64_t nn = std::min<int64_t>(24, n - n0);
    for (int64_t k0 = 0; k0 < k_rows; k0 += 4) {
      const float* a = ap + k0 * depth;
      float* ck = c + k0 * ldc + n0;
      if (nn > 16)
        gemm_block4<3>(a, b + n0, ldb, depth, ck, ldc, k_rows - k0, nn);
      else if (nn > 8)
        gemm_block4<2>(a, b + n0, ldb, depth, ck, ldc, k_rows - k0, nn);
      else
        gemm_block4<1>(a, b + n0, ldb, depth, ck, ldc, k_rows - k0, nn);
    }
  }
}
#endif

// ---- the two schemes
// -----------------------------------------------------------------------------

// One tile size's transforms. m: output tile side; alpha = m + 2: input tile side, and
// xi = alpha i + j runs over alpha^2 products. The work sizes cover every implementation of
// the transforms (portable and AVX2).
struct wino_scheme {
  int m, alpha;
  void (*weights)(const float (&g)[3][3], float* u, int64_t stride);
  void (*filter)(const float* du, int64_t stride, float* dw);
  void (*input_plane)(const float* plane, int64_t ld, int64_t tp, int64_t tq, float* v, int64_t xs,
                      float* tmp);
  void (*output_plane)(const float* m, int64_t ms, int64_t tp, int64_t tq, int64_t p, int64_t q,
                       const wino_out& e, float* y, float* work);
  void (*dy_plane)(const float* dy, int64_t p, int64_t q, int64_t tp, int64_t tq, float* out,
                   int64_t ks, float* work);
  int64_t products() const { return int64_t{alpha} * alpha; }
  int64_t tiles_along(int64_t n) const { return (n + m - 1) / m; }
  // Row length of the padded input plane for tq tiles across: m tq + 2, and for F(4x4) room
  // for the AVX2 transform's groups of 8 tiles.
  int64_t width(int64_t tq) const { return m == 2 ? 2 * tq + 2 : 4 * round8(tq) + 4; }
  // Floats of work input_plane, output_plane and dy_plane need for tp x tq tiles.
  int64_t input_work(int64_t tq) const {
    return m == 2 ? 4 * (2 * tq + 2) + 16 * 8 : 6 * (4 * tq + 2) + 4 * (tq + 1) + 36 * 8;
  }
  int64_t output_work(int64_t tiles, int64_t tq) const {
    return m * alpha * tiles + m * m * tq + 8;
  }
  int64_t dy_work(int64_t tq) const { return (m + alpha) * m * round8(tq); }
  static int64_t round8(int64_t n) { return (n + 7) / 8 * 8; }
};

constexpr wino_scheme kF2_portable{2, 4, weights2, filter2, input_plane2, output_plane2, dy_plane2};
constexpr wino_scheme kF4_portable{4, 6, weights4, filter4, input_plane4, output_plane4, dy_plane4};
#ifdef NNP_CPU_X86_KERNELS
constexpr wino_scheme kF2_avx2{
    2, 4, weights2, filter2, input_plane2_avx2, output_plane2_avx2, dy_plane2};
constexpr wino_scheme kF4_avx2{
    4, 6, weights4, filter4, input_plane4_avx2, output_plane4_avx2, dy_plane4_avx2};
#endif

// NNPLUG_CPU_WINOGRAD (read once): "0" turns the Winograd paths off (im2col everywhere), "2" or
// "4" forces that tile size (in every direction), anything else (or unset) chooses per call.
// A "-portable" suffix ("2-portable", "4-portable", or "portable" alone) keeps to the portable
// transforms and OpenBLAS where the AVX2 code would run. For measurements and for the
// conformance runs that cover each path.
enum class wino_tiles { off, automatic, f2, f4 };
struct wino_mode {
  wino_tiles tiles;
  bool portable;
};
wino_mode winograd_mode() {
  static const wino_mode mode = [] {
    const char* env = std::getenv("NNPLUG_CPU_WINOGRAD");
    std::string v = env != nullptr ? env : "";
    const std::string suffix = "-portable";
    bool portable = v == "portable";
    if (v.size() > suffix.size() &&
        v.compare(v.size() - suffix.size(), suffix.size(), suffix) == 0) {
      portable = true;
      v.resize(v.size() - suffix.size());
    }
    wino_tiles tiles = wino_tiles::automatic;
    if (v == "0") tiles = wino_tiles::off;
    if (v == "2") tiles = wino_tiles::f2;
    if (v == "4") tiles = wino_tiles::f4;
    return wino_mode{tiles, portable};
  }();
  return mode;
}

// Whether the AVX2 + FMA code runs: the CPU has both and NNPLUG_CPU_WINOGRAD does not ask for
// the portable code.
bool winograd_avx2() {
#ifdef NNP_CPU_X86_KERNELS
  return cpu_avx2_fma() && !winograd_mode().portable;
#else
  return false;
#endif
}

// F(2x2, 3x3) and F(4x4, 3x3) with the AVX2 transforms where they run.
const wino_scheme& winograd_f2() {
#ifdef NNP_CPU_X86_KERNELS
  if (winograd_avx2()) return kF2_avx2;
#endif
  return kF2_portable;
}
const wino_scheme& winograd_f4() {
#ifdef NNP_CPU_X86_KERNELS
  if (winograd_avx2()) return kF4_avx2;
#endif
  return kF4_portable;
}

// The tile size for an output plane of p x q: the one whose tiles cover it with fewer
// multiplies (tiles x alpha^2, the GEMMs' work), F(2x2) on a tie, as its transforms are cheaper;
// for the forward (forward = true) F(2x2) unless NNPLUG_CPU_WINOGRAD=4 (see "Accuracy" at the
// top).
const wino_scheme& winograd_scheme_for(int64_t p, int64_t q, bool forward) {
  switch (winograd_mode().tiles) {
    case wino_tiles::f2:
      return winograd_f2();
    case wino_tiles::f4:
      return winograd_f4();
    default:
      break;
  }
  const wino_scheme &f2 = winograd_f2(), &f4 = winograd_f4();
  if (forward) return f2;
  const int64_t cost2 = f2.tiles_along(p) * f2.tiles_along(q) * f2.products();
  const int64_t cost4 = f4.tiles_along(p) * f4.tiles_along(q) * f4.products();
  return cost4 < cost2 ? f4 : f2;
}

// u[xi] = (G g G^T)[xi] for each (k, c), with g = w[k][c] (flip = 0) or, for backward-data as
// a forward convolution, g[r][s] = w[c][k][2-r][2-s] with w of shape [C_out_of_this,
// K_of_this, 3, 3]. Unpacked: u[xi][k][c]; packed (for gemm_small_depth): per xi the panels of
// 4 rows, k_out rounded up to 4 with zero rows. Returns the floats between xi matrices.
int64_t winograd_weights(const wino_scheme& s, const float* w, int64_t k_out, int64_t c_in,
                         bool flip, bool packed, float* u) {
  const int64_t k_pad = packed ? (k_out + 3) / 4 * 4 : k_out, xs = k_pad * c_in;
  if (k_pad != k_out) std::fill(u, u + s.products() * xs, 0.0f);
  for (int64_t k = 0; k < k_out; ++k) {
    for (int64_t c = 0; c < c_in; ++c) {
      float g[3][3];
      for (int r = 0; r < 3; ++r)
        for (int t = 0; t < 3; ++t)
          g[r][t] = flip ? w[((c * k_out + k) * 3 + (2 - r)) * 3 + (2 - t)]
                         : w[((k * c_in + c) * 3 + r) * 3 + t];
      s.weights(g, u + (packed ? (k / 4) * c_in * 4 + c * 4 + k % 4 : k * c_in + c), xs);
    }
  }
  return xs;
}

// Padded plane geometry of the input transform: x [h, w] with padding pad_top / pad_left, read
// as a plane of hp = m tp + 2 rows and wp = m tq + 2 columns (zero outside x). When x already is
// that plane (no padding, h = hp, w = wp) the transform reads x directly; otherwise each plane
// is copied into a task buffer whose padding was zeroed once (the copied region is the same for
// every plane, so the zeros stay).
struct wino_plane {
  const wino_scheme& s;
  int64_t h, w, tp, tq, pad_top, pad_left;
  int64_t hp() const { return s.m * tp + 2; }
  int64_t wp() const { return s.width(tq); }
  bool direct() const { return pad_top == 0 && pad_left == 0 && h == hp() && w == wp(); }
  // Floats of task scratch the input transform needs: the padded plane and tmp.
  int64_t work() const { return (direct() ? 0 : hp() * wp()) + s.input_work(tq); }
  // The plane the transform reads for x (rows `ld()` apart), from padded row m r0 on, for tile
  // rows [r0, r1); pad from prepare(). Only the rows of x those tiles read are copied.
  const float* place(const float* x, float* pad, int64_t r0, int64_t r1) const {
    if (direct()) return x + s.m * r0 * w;
    const int64_t i0 = std::max<int64_t>(0, s.m * r0 - pad_top);
    const int64_t i1 = std::min(h, s.m * r1 + 2 - pad_top);
    const int64_t j0 = std::max<int64_t>(0, -pad_left), j1 = std::min(w, wp() - pad_left);
    if (j1 > j0)
      for (int64_t i = i0; i < i1; ++i)
        std::memcpy(pad + (i + pad_top) * wp() + pad_left + j0, x + i * w + j0,
                    sizeof(float) * static_cast<size_t>(j1 - j0));
    return pad + s.m * r0 * wp();
  }
  int64_t ld() const { return direct() ? w : wp(); }
  // Zeroes the task's padded plane (once per task, before the first place()).
  void prepare(float* pad) const {
    if (!direct()) std::fill(pad, pad + hp() * wp(), 0.0f);
  }
};

// Floats between the xi planes of v, m or dyt holding `floats` each: a whole, odd number of
// 64-byte lines, so that the streams a transform reads or writes at once (one per plane) fall
// in different L1 sets. Unpadded, a plane of [64, 144] floats is 9 x 4 KiB and all 16 streams
// of F(2x2) land in one set of the 8-way L1 (padding the strides took the cnn conv2 forward from
// 23.0 to 21.3 ms on one thread, process CPU time of nnplug-bench).
int64_t wino_plane_stride(int64_t floats) {
  int64_t lines = (floats + 15) / 16;
  if (lines % 2 == 0) ++lines;
  return lines * 16;
}

// Where the transform buffers v, m and dyt keep element (xi, row, column) of their alpha^2
// matrices [rows, columns] (rows: channels; columns: the block's tiles): at xi * plane + row *
// row_stride + column. Rows interleaved by xi (row_stride = alpha^2 plane): the alpha^2
// values one transform writes for a channel, and the ones an output transform reads, lie in one
// region of alpha^2 plane floats, not alpha^2 regions a buffer apart; each SGEMM reads or
// writes its xi matrix with leading dimension row_stride.
struct wino_layout {
  int64_t plane, row_stride;
  int64_t size(int64_t rows) const { return rows * row_stride; }
};
wino_layout winograd_layout(const wino_scheme& s, int64_t columns) {
  const int64_t plane = wino_plane_stride(columns);
  return {plane, wino_plane_stride(s.products() * plane)};
}

// Input transform of tile rows [r0, r1) of images [c_in, h, w] (nb of them, img_stride floats
// apart) into v (layout vl, row c, column b * (r1 - r0) tq + t): the images' tiles side by side,
// so that one GEMM per xi covers the whole block. work: pl.work() floats, prepared.
void winograd_input_block(const float* x, int64_t nb, int64_t img_stride, int64_t c_in,
                          const wino_plane& pl, int64_t r0, int64_t r1, float* v,
                          const wino_layout& vl, float* work) {
  const int64_t tiles = (r1 - r0) * pl.tq;
  float* pad = work;
  float* tmp = work + (pl.direct() ? 0 : pl.hp() * pl.wp());
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t c = 0; c < c_in; ++c)
      pl.s.input_plane(pl.place(x + b * img_stride + c * pl.h * pl.w, pad, r0, r1), pl.ld(),
                       r1 - r0, pl.tq, v + c * vl.row_stride + b * tiles, vl.plane, tmp);
}

// Deeper than this the forward-style GEMMs go to OpenBLAS, which blocks the depth and packs
// both operands: on ResNet-18's 3x3 layers at batch 32 (2-core AMD EPYC, 2 threads, the two
// interleaved call by call in one process, medians of 13 calls), the forward took
//   C = K = 64, 56 x 56: 56.9 ms here, 63.1 ms through OpenBLAS
//   C = K = 128, 28 x 28: 39.2 / 39.0 ms
//   C = K = 256, 14 x 14: 58.7 / 50.7 ms
//   C = K = 512, 7 x 7: 86.7 / 69.9 ms
// (blocking the depth of this kernel by 64, 128 or 256 changed nothing measurable).
constexpr int64_t kSmallDepthMax = 128;

// Images per block of the batched transforms and SGEMMs: enough that a block has at least
// kWinoMinColumns tiles (the SGEMMs' N; small images would otherwise make SGEMMs too narrow to
// run at speed), but no more: v and m of one cnn conv2 image (144 tiles) already take 885 KB,
// most of a 1 MiB L2, and blocks of 2, 4 or 8 such images measured up to 10% slower. Fewer when
// that leaves fewer than two blocks per thread (so that 2 threads still split the batch).
constexpr int64_t kWinoMinColumns = 128;
// An image with more tiles than this runs as blocks of tile rows (winograd_batch): a block's v and
// m stay a few hundred KiB, and the GEMMs' rows short enough for gemm_small_depth's panels to stay
// in L1 (ResNet's 56 x 56 planes: 784 tiles, in 4 blocks of 7 tile rows; whole, the forward ran
// 20% slower than through OpenBLAS).
constexpr int64_t kWinoMaxColumns = 256;
int64_t winograd_block(int64_t n, int64_t tiles) {
  const int64_t want = (kWinoMinColumns + tiles - 1) / tiles;
  const int64_t per = (n + 2 * num_threads() - 1) / (2 * num_threads());
  return std::max<int64_t>(1, std::min(want, per));
}

// A batch of n images x [n, c_in, h, w] -> y [n, k_out, p, q] (+ bias, then clamp), padding pad_top
// / pad_left (the bottom and right padding follow from p and q), after one winograd_weights of wt
// (flip as there) into call scratch. Blocks of winograd_block(n, tiles) images, or of tile rows
// of one image for large planes, in parallel; per block the input transform of its tiles into
// v [c_in][alpha^2][block tiles], alpha^2 GEMMs m[xi] [K, block tiles] = u[xi] [K, C] .
// v[xi] [C, block tiles], and the output transform. pool2 (F(2x2) with the AVX2 transforms and
// at least 8 tiles across only): y is instead the 2 x 2 max-pooled output [n, k_out, p / 2,
// q / 2] (output_plane2_pool_avx2).
void winograd_batch(const wino_scheme& s, int64_t n, const float* x, int64_t c_in, int64_t h,
                    int64_t w, const float* wt, bool flip, int64_t k_out, int64_t p, int64_t q,
                    int64_t pad_top, int64_t pad_left, const float* bias, const out_clamp& clamp,
                    float* y, bool pool2 = false) {
  const int64_t products = s.products();
  const bool packed = winograd_avx2() && c_in <= kSmallDepthMax;  // gemm_small_depth's u
  float* u = scratch(kCallSlot1, static_cast<size_t>(products * (k_out + 3) * c_in));
  const int64_t us = winograd_weights(s, wt, k_out, c_in, flip, packed, u);
  const wino_plane pl{s, h, w, s.tiles_along(p), s.tiles_along(q), pad_top, pad_left};
  const int64_t tp = pl.tp, tq = pl.tq, tiles = tp * tq;
  // Work items: blocks of whole images, or, for images of more than kWinoMaxColumns tiles, one
  // image's tile rows [r0, r1) in chunks of about equal size.
  const int64_t chunks = (tiles + kWinoMaxColumns - 1) / kWinoMaxColumns;
  const int64_t rows = (tp + chunks - 1) / chunks, per_image = (tp + rows - 1) / rows;
  const int64_t block = per_image > 1 ? 1 : winograd_block(n, tiles);
  const int64_t items = per_image > 1 ? n * per_image : (n + block - 1) / block;
  parallel_for(items, 1, [&](int64_t ib, int64_t ie) {
    const wino_layout vl = winograd_layout(s, block * rows * tq);
    const wino_layout ml = winograd_layout(s, block * rows * tq);
    const int64_t vsize = vl.size(c_in);
    float* v =
        scratch(kTaskSlot0, static_cast<size_t>(vsize + pl.work() + s.output_work(tiles, tq)));
    float* work = v + vsize;
    float* out_work = work + pl.work();
    float* m = scratch(kTaskSlot1, static_cast<size_t>(ml.size(k_out)));
    pl.prepare(work);
    for (int64_t it = ib; it < ie; ++it) {
      const int64_t i0 = per_image > 1 ? it / per_image : it * block;
      const int64_t nb = std::min(block, n - i0);
      const int64_t r0 = per_image > 1 ? it % per_image * rows : 0;
      const int64_t r1 = std::min(tp, r0 + rows), bt = (r1 - r0) * tq, ld = nb * bt;
      winograd_input_block(x + i0 * c_in * h * w, nb, c_in * h * w, c_in, pl, r0, r1, v, vl, work);
      for (int64_t xi = 0; xi < products; ++xi) {
#ifdef NNP_CPU_X86_KERNELS
        if (packed) {
          gemm_small_depth(k_out, ld, c_in, u + xi * us, v + xi * vl.plane, vl.row_stride,
                           m + xi * ml.plane, ml.row_stride);
          continue;
        }
#endif
        sgemm_rm(false, false, k_out, ld, c_in, 1.0f, u + xi * us, c_in, v + xi * vl.plane,
                 vl.row_stride, 0.0f, m + xi * ml.plane, ml.row_stride);
      }
      const int64_t p0 = s.m * r0, pc = std::min(p - p0, s.m * (r1 - r0));
      for (int64_t b = 0; b < nb; ++b)
        for (int64_t k = 0; k < k_out; ++k) {
          const wino_out e{bias != nullptr ? bias[k] : 0.0f, clamp};
          const float* mk = m + k * ml.row_stride + b * bt;
#ifdef NNP_CPU_X86_KERNELS
          if (pool2) {  // pooled rows r0.. of the plane: tile row ti is pooled row ti
            output_plane2_pool_avx2(mk, ml.plane, r1 - r0, tq, pc, q, e,
                                    y + ((i0 + b) * k_out + k) * (p / 2) * (q / 2) + r0 * (q / 2),
                                    out_work);
            continue;
          }
#endif
          s.output_plane(mk, ml.plane, r1 - r0, tq, pc, q, e,
                         y + ((i0 + b) * k_out + k) * p * q + p0 * q, out_work);
        }
    }
  });
}

// Whether n floats are all finite (no ±inf, no NaN): an OR over the exponent test of each
// element's bits, which vectorises; chunks in parallel. Winograd's transforms add and subtract
// inputs, so one infinity there becomes inf - inf = NaN in outputs where the direct formula
// gives ±inf (docs/ops.md, "Non-finite values"): calls with a non-finite operand take the
// im2col path. The scan reads each operand once, against Winograd's several passes.
bool all_finite(const float* p, int64_t n) {
  constexpr int64_t kChunk = int64_t{1} << 16;
  std::atomic<bool> finite{true};
  parallel_for((n + kChunk - 1) / kChunk, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t ch = cb; ch < ce && finite.load(std::memory_order_relaxed); ++ch) {
      const float* q = p + ch * kChunk;
      const int64_t len = std::min(kChunk, n - ch * kChunk);
      uint32_t bad = 0;
      for (int64_t i = 0; i < len; ++i) {
        uint32_t u;
        std::memcpy(&u, q + i, sizeof u);
        bad |= static_cast<uint32_t>((u & 0x7f800000u) == 0x7f800000u);
      }
      if (bad != 0) finite.store(false, std::memory_order_relaxed);
    }
  });
  return finite.load();
}

// Backward-filter by Winograd: the forward is y = A^T [(G g G^T) .* V] A per tile, linear in g,
// so dg = G^T dU G with dU[xi] = sum over images and tiles of (A dy A^T)[xi] * V[xi]. The batch
// splits into chunks (one with one thread, else four per thread, as in sum_over_image_chunks),
// each accumulating its own dU; per block of winograd_block images the input transform into
// v [alpha^2][C][nb * tiles], the dy transform into dyt [alpha^2][K][nb * tiles], and alpha^2
// SGEMMs [K, nb * tiles] . [nb * tiles, C] into dU; then one dU -> 3x3 transform per (k, c).
void winograd_filter_gradient(const wino_scheme& s, const conv_nd_geometry& g, const float* x,
                              const float* dy, float* dw) {
  const int64_t h = g.in[1], w = g.in[2], p = g.out[1], q = g.out[2];
  const wino_plane pl{s, h, w, s.tiles_along(p), s.tiles_along(q), g.pad[1], g.pad[2]};
  const int64_t tp = pl.tp, tq = pl.tq, tiles = tp * tq;
  const int64_t products = s.products(), usize = products * g.co * g.ci;
  const int64_t chunks = std::min<int64_t>(num_threads() == 1 ? 1 : 4 * num_threads(), g.n);
  const int64_t block = std::min(winograd_block(g.n, tiles), (g.n + chunks - 1) / chunks);
  float* du_all = scratch(kCallSlot0, static_cast<size_t>(chunks * usize));
  parallel_for(chunks, 1, [&](int64_t cb, int64_t ce) {
    const wino_layout vl = winograd_layout(s, block * tiles);
    const wino_layout kl = winograd_layout(s, block * tiles);
    const int64_t vsize = vl.size(g.ci), dsize = kl.size(g.co);
    float* v = scratch(kTaskSlot0, static_cast<size_t>(vsize + pl.work()));
    float* work = v + vsize;
    float* dyt = scratch(kTaskSlot1, static_cast<size_t>(dsize + s.dy_work(tq)));
    float* dy_work = dyt + dsize;
    pl.prepare(work);
    for (int64_t ch = cb; ch < ce; ++ch) {
      float* du = du_all + ch * usize;
      const int64_t n0 = g.n * ch / chunks, n1 = g.n * (ch + 1) / chunks;
      for (int64_t i0 = n0; i0 < n1; i0 += block) {
        const int64_t nb = std::min(block, n1 - i0), ld = nb * tiles;
        winograd_input_block(x + i0 * g.ci * h * w, nb, g.ci * h * w, g.ci, pl, 0, tp, v, vl, work);
        for (int64_t b = 0; b < nb; ++b)
          for (int64_t k = 0; k < g.co; ++k)
            s.dy_plane(dy + ((i0 + b) * g.co + k) * p * q, p, q, tp, tq,
                       dyt + k * kl.row_stride + b * tiles, kl.plane, dy_work);
        const float beta = i0 == n0 ? 0.0f : 1.0f;
        for (int64_t xi = 0; xi < products; ++xi)
          sgemm_rm(false, true, g.co, g.ci, ld, 1.0f, dyt + xi * kl.plane, kl.row_stride,
                   v + xi * vl.plane, vl.row_stride, beta, du + xi * g.co * g.ci, g.ci);
      }
    }
  });
  // sum the chunks' dU, then dw[k][c] = G^T dU G
  for (int64_t ch = 1; ch < chunks; ++ch) {
    const float* part = du_all + ch * usize;
    for (int64_t i = 0; i < usize; ++i) du_all[i] += part[i];
  }
  const int64_t kc = g.co * g.ci;
  for (int64_t k = 0; k < g.co; ++k)
    for (int64_t c = 0; c < g.ci; ++c) s.filter(du_all + k * g.ci + c, kc, dw + (k * g.ci + c) * 9);
}

// Whether g is a convolution that Winograd runs: 2-D, 3x3 filters, stride 1, dilation 1, one
// group, at least kWinoMinChannels channels in and out, no negative begin padding
// (ConvTranspose's output_shape can ask for one); and the path is not turned off.
bool winograd_fits(const conv_nd_geometry& g) {
  return winograd_mode().tiles != wino_tiles::off && g.spatial == 2 && g.kernel[1] == 3 &&
         g.kernel[2] == 3 && g.stride[1] == 1 && g.stride[2] == 1 && g.dilation[1] == 1 &&
         g.dilation[2] == 1 && g.groups == 1 && g.ci >= kWinoMinChannels &&
         g.co >= kWinoMinChannels && g.pad[1] >= 0 && g.pad[2] >= 0;
}

// The end padding of spatial axis a that the sizes imply (negative when the last input rows are
// never read).
int64_t end_pad(const conv_nd_geometry& g, int a) {
  return (g.out[a] - 1) * g.stride[a] + g.dilation[a] * (g.kernel[a] - 1) + 1 - g.in[a] - g.pad[a];
}

}  // namespace

bool winograd_forward(const conv_nd_geometry& g, const float* in, const float* w, const float* b,
                      const out_clamp& clamp, float* out) {
  if (!winograd_fits(g) || !all_finite(w, g.co * g.ci * 9) ||
      !all_finite(in, g.n * g.ci * g.in_size()))
    return false;
  winograd_batch(winograd_scheme_for(g.out[1], g.out[2], true), g.n, in, g.ci, g.in[1], g.in[2], w,
                 false, g.co, g.out[1], g.out[2], g.pad[1], g.pad[2], b, clamp, out);
  return true;
}

bool winograd_forward_pool2(const conv_nd_geometry& g, const float* in, const float* w,
                            const float* b, const out_clamp& clamp, float* pooled) {
#ifdef NNP_CPU_X86_KERNELS
  if (!winograd_fits(g) || g.out[1] < 2 || g.out[2] < 2) return false;
  const wino_scheme& s = winograd_scheme_for(g.out[1], g.out[2], true);
  if (&s != &kF2_avx2 || s.tiles_along(g.out[2]) < 8 || !all_finite(w, g.co * g.ci * 9) ||
      !all_finite(in, g.n * g.ci * g.in_size()))
    return false;
  winograd_batch(s, g.n, in, g.ci, g.in[1], g.in[2], w, false, g.co, g.out[1], g.out[2], g.pad[1],
                 g.pad[2], b, clamp, pooled, true);
  return true;
#else
  (void)g, (void)in, (void)w, (void)b, (void)clamp, (void)pooled;
  return false;
#endif
}

// The backward directions check their result instead of their operands: the output of
// backward-data is the smaller tensor, that of backward-filter is tiny, and a non-finite operand
// that the direct formula reads makes some output non-finite in Winograd too (a transform
// spreads it: inf - inf = NaN, 0 * inf = NaN), where the direct formula gives ±inf or NaN. So
// when every output is finite the operands were, and the result stands; otherwise conv.cpp
// runs im2col, which overwrites the output whole.
bool winograd_backward_data(const conv_nd_geometry& g, const float* dout, const float* w,
                            const float* b, float* din) {
  // As a forward convolution of dout with the flipped, transposed filter (padding 2 - pad), so
  // every padding must be at most 2.
  if (!winograd_fits(g) || g.pad[1] > 2 || g.pad[2] > 2 || end_pad(g, 1) > 2 || end_pad(g, 2) > 2)
    return false;
  winograd_batch(winograd_scheme_for(g.in[1], g.in[2], false), g.n, dout, g.co, g.out[1], g.out[2],
                 w, true, g.ci, g.in[1], g.in[2], 2 - g.pad[1], 2 - g.pad[2], b, out_clamp{}, din);
  return all_finite(din, g.n * g.ci * g.in_size());
}

bool winograd_backward_filter(const conv_nd_geometry& g, const float* in, const float* dout,
                              float* dw) {
  if (g.n == 0 || !winograd_fits(g)) return false;
  winograd_filter_gradient(winograd_scheme_for(g.out[1], g.out[2], false), g, in, dout, dw);
  return all_finite(dw, g.co * g.ci * 9);
}

}  // namespace nnp::cpu
