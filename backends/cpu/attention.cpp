// Scaled dot-product attention on the CPU (NNP_OP_ATTENTION_FORWARD / _BACKWARD; formulas of
// nnp_attention_params in nnplug_ops.h).
//
// Speed: one TBB task per (batch, head) tile — per kv head in the backward, whose dK and dV sum
// over the query heads of a group. Two ways to run a tile:
//  - short sequences (Tk <= 32, D and Dv <= 64) where the CPU has AVX2 and FMA: one fused pass
//    per step of query rows (4 rows while 4 x NV score accumulators fit the registers, Tk <= 24,
//    else 2) with everything in registers and L1 (the vit's heads are 17 x 17 x 16, where each
//    OpenBLAS call costs more than its arithmetic). K (and V for the backward) is transposed once
//    per tile into [D][Tk rounded up to 8] so that a row's scores are NV = Tk/8 vector
//    accumulators over D broadcasts of q; the softmax runs on those NV vectors (softmax_lanes:
//    vmath.hpp's exp8, the log-sum-exp only when it is an output); the output row is Dv/8
//    vector accumulators over Tk broadcasts of p. The backward recomputes each row's P from the
//    forward's log-sum-exp, then dP (over Dv broadcasts of dy against V^T), dS = s P (dP -
//    delta) with delta = dy . y in double, dQ = dS K as one row, and adds dS^T Q and P^T dY into
//    dK and dV tiles that stay in scratch until the group's last head. Rows of V, Q and dY whose
//    width is a multiple of 8 are read in place (padded copies otherwise). Lanes past Tk (K^T's
//    zero padding) are computed along and never read. Measured at the vit's heads, batch 128, 2
//    threads, forward with log-sum-exp / backward: 375 / 680 us with two rows a step and the
//    softmax as the SGEMM path's softmax_row (an AVX2 clone, no FMA), 300 / 565 us so
//    (alternated runs; in `train --model vit` the backward went from 1139 to 866 us).
//  - otherwise single-threaded OpenBLAS SGEMMs straight on the strided rows of Q, K, V (both
//    ONNX layouts are rows with a leading dimension, so nothing is copied or transposed):
//    S = s Q K^T, then one pass per row for the mask, the causal bound and the softmax (one exp
//    per score), then Y = P V. The backward recomputes P from the forward's log-sum-exp and does
//    dP = dY V^T, dS = P (dP - delta), dQ = s dS K, dK += s dS^T Q, dV += P^T dY as four SGEMMs.
//    The score tile (Tq x Tk floats) lives in the task's scratch buffer.
// NNPLUG_CPU_ATTENTION=sgemm (read once) makes every tile take the SGEMM path, to measure the
// two side by side and to test that path on machines with AVX2.
#include "cpu_backend.hpp"
#include "vmath.hpp"

#include <nnplug/kit/attention.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

namespace nnp::cpu {
namespace {

using nnp::kit::attention_geometry;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct attention_args {
  attention_geometry g;
  const float *q, *k, *v, *mask;
  attention_args(const op_call& c)
      : g(c.params_as<nnp_attention_params>(), *c.in(0), *c.in(1), *c.in(2), c.in(3)),
        q(f32(c.in(0))),
        k(f32(c.in(1))),
        v(f32(c.in(2))),
        mask(f32(c.in(3))) {}

  // s = scale * Q_h K_kvh^T (+ mask, -inf past the causal bound): the tile of (b, h), Tq x Tk.
  void scores(int64_t b, int64_t h, float* s) const {
    const int64_t kvh = h / g.group();
    sgemm_rm(false, true, g.tq, g.tk, g.d, static_cast<float>(g.scale), q + g.q.offset(b, h, 0),
             g.q.row_stride, k + g.k.offset(b, kvh, 0), g.k.row_stride, 0.0f, s, g.tk);
    for (int64_t i = 0; i < g.tq; ++i) {
      float* si = s + i * g.tk;
      if (mask != nullptr) {
        const float* mi = mask + g.mask_offset(b, h, i, 0);
        const int64_t ms = g.mask_strides[3];
        for (int64_t j = 0; j < g.tk; ++j) si[j] += mi[j * ms];
      }
      for (int64_t j = g.visible(i); j < g.tk; ++j) si[j] = kNegInf;
    }
  }

  // Tiles per task: about 256k multiply-adds each, so small tiles share a task.
  int64_t grain() const {
    const int64_t work = std::max<int64_t>(1, g.tq * g.tk * (g.d + g.dv));
    return std::max<int64_t>(1, (int64_t{1} << 18) / work);
  }
};

// Softmax of one score row in place: e = exp(x - max) once per element, then e / sum(e);
// returns the row's log-sum-exp, max + log(sum). A row that is all -inf becomes 0 with
// lse = -inf. An AVX2 clone (eight exponentials at a time) where the CPU has it.
NNP_CPU_AVX2_CLONES float softmax_row(float* s, int64_t n) {
  float mx = kNegInf;
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, s[j]);
  if (mx == kNegInf) {
    std::fill(s, s + n, 0.0f);
    return kNegInf;
  }
  for (int64_t j = 0; j < n; ++j) s[j] = fast_exp(s[j] - mx);
  float sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) sum += s[j];
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < n; ++j) s[j] *= inv;
  return mx + std::log(sum);
}

// P's row from the forward's log-sum-exp in place: p = exp(s - lse); a fully masked row
// (lse = -inf) is 0.
inline void probabilities_row(float* s, int64_t n, float lse) {
  if (lse == kNegInf) {
    std::fill(s, s + n, 0.0f);
    return;
  }
  for (int64_t j = 0; j < n; ++j) s[j] = fast_exp(s[j] - lse);
}

#ifdef NNP_CPU_X86_KERNELS
bool sgemm_forced() {
  static const bool forced = [] {
    const char* e = std::getenv("NNPLUG_CPU_ATTENTION");
    return e != nullptr && std::strcmp(e, "sgemm") == 0;
  }();
  return forced;
}

constexpr int64_t kFusedMaxKeys = 32, kFusedMaxDim = 64;

bool fused_applies(const attention_geometry& g) {
  return cpu_avx2_fma() && !sgemm_forced() && g.tk >= 1 && g.tk <= kFusedMaxKeys && g.d >= 1 &&
         g.d <= kFusedMaxDim && g.dv >= 1 && g.dv <= kFusedMaxDim;
}

int64_t round8(int64_t x) { return (x + 7) / 8 * 8; }

// Query rows per step of a fused tile: 4 while 4 x NV score accumulators and NV key vectors
// fit the 16 vector registers (Tk <= 24), else 2; the last rows in steps of 2 and 1.
constexpr int kMaxRows = 4;
template <int NV>
constexpr int rows_per_step() {
  return NV <= 3 ? 4 : 2;
}

// Calls step(std::integral_constant<int, R>, i) for row blocks [i, i + R) covering [0, tq).
template <int NV, typename Step>
NNP_CPU_AVX2_FMA inline void for_row_steps(int64_t tq, const Step& step) {
  constexpr int R = rows_per_step<NV>();
  int64_t i = 0;
  for (; i + R <= tq; i += R) step(std::integral_constant<int, R>{}, i);
  if (R > 2 && i + 2 <= tq) {
    step(std::integral_constant<int, 2>{}, i);
    i += 2;
  }
  if (i < tq) step(std::integral_constant<int, 1>{}, i);
}

// sum over e < n of double(x[e]) * double(y[e]), 8 elements a step.
NNP_CPU_AVX2_FMA inline double dot_double(const float* x, const float* y, int64_t n) {
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
  int64_t e = 0;
  for (; e + 8 <= n; e += 8) {
    const __m256 xv = _mm256_loadu_ps(x + e), yv = _mm256_loadu_ps(y + e);
    a0 = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(xv)),
                         _mm256_cvtps_pd(_mm256_castps256_ps128(yv)), a0);
    a1 = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(xv, 1)),
                         _mm256_cvtps_pd(_mm256_extractf128_ps(yv, 1)), a1);
  }
  double sum = hsum4(_mm256_add_pd(a0, a1));
  for (; e < n; ++e) sum += double(x[e]) * double(y[e]);
  return sum;
}

// All-ones in the lanes of the 8-lane block v (lanes 8v .. 8v + 7) that are below tk.
NNP_CPU_AVX2_FMA inline __m256 keys_below(int64_t tk, int v) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_castsi256_ps(
      _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(tk - 8 * v)), lane));
}

NNP_CPU_AVX2_FMA inline float hmax8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

NNP_CPU_AVX2_FMA inline float hsum8(__m256 v) {
  __m128 m = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_add_ps(m, _mm_movehl_ps(m, m));
  m = _mm_add_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// softmax_row on a fused tile's score row s[NV * 8] (its first tk lanes), in registers with
// vmath.hpp's exp8; lanes past tk become 0. Stores the row's log-sum-exp at *lse unless it is
// null (inference asks for none: the logarithm is skipped). The maximum skips
// NaN scores as softmax_row's std::max does (a NaN still makes the whole row NaN through exp
// and the sum), and a row that is all -inf becomes 0 with lse = -inf.
template <int NV>
NNP_CPU_AVX2_FMA inline void softmax_lanes(float* s, int64_t tk, float* lse) {
  const __m256 ninf = _mm256_set1_ps(kNegInf);
  __m256 x[NV];
  __m256 mx = ninf;
  for (int v = 0; v < NV; ++v) {
    x[v] = _mm256_blendv_ps(ninf, _mm256_loadu_ps(s + 8 * v), keys_below(tk, v));
    mx = _mm256_max_ps(x[v], mx);  // a NaN x[v] lane keeps mx's (the second operand)
  }
  const float m = hmax8(mx);
  if (m == kNegInf) {
    for (int v = 0; v < NV; ++v) _mm256_storeu_ps(s + 8 * v, _mm256_setzero_ps());
    if (lse != nullptr) *lse = kNegInf;
    return;
  }
  const __m256 mv = _mm256_set1_ps(m);
  __m256 sum = _mm256_setzero_ps();
  for (int v = 0; v < NV; ++v) {
    x[v] = exp8(_mm256_sub_ps(x[v], mv));  // exp8(-inf) = 0 past tk
    sum = _mm256_add_ps(sum, x[v]);
  }
  const float total = hsum8(sum);
  const __m256 inv = _mm256_set1_ps(1.0f / total);
  for (int v = 0; v < NV; ++v) _mm256_storeu_ps(s + 8 * v, _mm256_mul_ps(x[v], inv));
  if (lse != nullptr) *lse = m + std::log(total);
}

// probabilities_row on a fused tile's score row s[NV * 8] with exp8; lanes past tk become 0.
template <int NV>
NNP_CPU_AVX2_FMA inline void probabilities_lanes(float* s, int64_t tk, float lse) {
  if (lse == kNegInf) {
    for (int v = 0; v < NV; ++v) _mm256_storeu_ps(s + 8 * v, _mm256_setzero_ps());
    return;
  }
  const __m256 l = _mm256_set1_ps(lse);
  for (int v = 0; v < NV; ++v) {
    const __m256 p = exp8(_mm256_sub_ps(_mm256_loadu_ps(s + 8 * v), l));
    _mm256_storeu_ps(s + 8 * v, _mm256_and_ps(p, keys_below(tk, v)));
  }
}

// What a fused tile reads in place of K (and V): rows transposed into [width][w] with w = Tk
// rounded up to 8 and zeros past Tk.
NNP_CPU_AVX2_FMA inline void transpose_rows(const float* src, int64_t rows, int64_t stride,
                                            int64_t width, int64_t w, float* dst) {
  for (int64_t e = 0; e < width; ++e) {
    float* de = dst + e * w;
    for (int64_t j = 0; j < rows; ++j) de[j] = src[j * stride + e];
    for (int64_t j = rows; j < w; ++j) de[j] = 0.0f;
  }
}

// Rows [rows][width] copied to [rows][wp] with zeros past width.
inline void pad_rows(const float* src, int64_t rows, int64_t stride, int64_t width, int64_t wp,
                     float* dst) {
  for (int64_t j = 0; j < rows; ++j) {
    std::memcpy(dst + j * wp, src + j * stride, sizeof(float) * static_cast<size_t>(width));
    std::fill(dst + j * wp + width, dst + (j + 1) * wp, 0.0f);
  }
}

// Query rows i .. i + R - 1 of head h's scores into s[R][NV * 8]: scale * q_i . k_j, + mask,
// -inf past the causal bound (lanes past Tk: 0, unused). qi: row i of Q (the next rows qs apart);
// kt: K^T as transpose_rows makes it. R rows at once keep R x NV independent accumulator chains.
template <int NV, int R>
NNP_CPU_AVX2_FMA inline void score_rows(const attention_args& a, int64_t b, int64_t h, int64_t i,
                                        const float* qi, int64_t qs, const float* kt, float* s) {
  const attention_geometry& g = a.g;
  constexpr int64_t w = NV * 8;
  __m256 acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_ps();
  for (int64_t d = 0; d < g.d; ++d) {
    __m256 k[NV];
    for (int v = 0; v < NV; ++v) k[v] = _mm256_loadu_ps(kt + d * w + 8 * v);
    for (int r = 0; r < R; ++r) {
      const __m256 qd = _mm256_broadcast_ss(qi + r * qs + d);
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_fmadd_ps(qd, k[v], acc[r][v]);
    }
  }
  const __m256 sc = _mm256_set1_ps(static_cast<float>(g.scale));
  for (int r = 0; r < R; ++r) {
    float* sr = s + r * w;
    for (int v = 0; v < NV; ++v) _mm256_storeu_ps(sr + 8 * v, _mm256_mul_ps(acc[r][v], sc));
    if (a.mask != nullptr) {
      const float* mi = a.mask + g.mask_offset(b, h, i + r, 0);
      const int64_t ms = g.mask_strides[3];
      for (int64_t j = 0; j < g.tk; ++j) sr[j] += mi[j * ms];
    }
    for (int64_t j = g.visible(i + r); j < g.tk; ++j) sr[j] = kNegInf;
  }
}

// out_r[0, width) = sum over j < tk of p_r[j] * rows[j][.] for r < R (p_r = p + r * ps, out_r =
// out + r * os; row j at rows + j * rs, readable up to width rounded up to 8: padded rows, or
// rows in place when width is a multiple of 8); tail lanes go through a buffer.
template <int R>
NNP_CPU_AVX2_FMA inline void combine_rows(const float* p, int64_t ps, int64_t tk, const float* rows,
                                          int64_t rs, int64_t width, float* out, int64_t os) {
  const int64_t wp = round8(width);
  for (int64_t u = 0; u < wp; u += 8) {
    __m256 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    for (int64_t j = 0; j < tk; ++j) {
      const __m256 vj = _mm256_loadu_ps(rows + j * rs + u);
      for (int r = 0; r < R; ++r)
        acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(p + r * ps + j), vj, acc[r]);
    }
    for (int r = 0; r < R; ++r) {
      float* o = out + r * os;
      if (u + 8 <= width) {
        _mm256_storeu_ps(o + u, acc[r]);
      } else {
        alignas(32) float t[8];
        _mm256_store_ps(t, acc[r]);
        for (int64_t e = u; e < width; ++e) o[e] = t[e - u];
      }
    }
  }
}

template <int NV>
NNP_CPU_AVX2_FMA void fused_forward(const attention_args& a, float* y, float* lse, int64_t lo,
                                    int64_t hi) {
  const attention_geometry& g = a.g;
  constexpr int64_t w = NV * 8;
  const int64_t dvp = round8(g.dv);
  float* kt = scratch(kTaskSlot0, static_cast<size_t>(g.d * w + g.tk * dvp + kMaxRows * w));
  float* vp = kt + g.d * w;
  float* s = vp + g.tk * dvp;
  // V rows whose width is a multiple of 8 are read in place, others through padded copies.
  const bool v_in_place = g.dv % 8 == 0;
  const int64_t vs = v_in_place ? g.v.row_stride : dvp;
  for (int64_t tile = lo; tile < hi; ++tile) {
    const int64_t b = tile / g.hq, h = tile % g.hq, kvh = h / g.group();
    const float* v_rows = v_in_place ? a.v + g.v.offset(b, kvh, 0) : vp;
    // K and V of a kv head serve its group's query heads: a tile whose head shares the previous
    // tile's kv head keeps them.
    if (tile == lo || h % g.group() == 0) {
      transpose_rows(a.k + g.k.offset(b, kvh, 0), g.tk, g.k.row_stride, g.d, w, kt);
      if (!v_in_place) pad_rows(a.v + g.v.offset(b, kvh, 0), g.tk, g.v.row_stride, g.dv, dvp, vp);
    }
    const float* q_tile = a.q + g.q.offset(b, h, 0);
    float* y_tile = y + g.y.offset(b, h, 0);
    const int64_t qs = g.q.row_stride, ys = g.y.row_stride;
    const auto rows = [&](auto rc, int64_t i) __attribute__((always_inline)) {
      constexpr int R = decltype(rc)::value;
      score_rows<NV, R>(a, b, h, i, q_tile + i * qs, qs, kt, s);
      for (int r = 0; r < R; ++r)
        softmax_lanes<NV>(s + r * w, g.tk, lse != nullptr ? lse + tile * g.tq + i + r : nullptr);
      combine_rows<R>(s, w, g.tk, v_rows, vs, g.dv, y_tile + i * ys, ys);
    };
    for_row_steps<NV>(g.tq, rows);
  }
}

// A kv tile's buffers in the backward (scratch): kt [D][w], vt [Dv][w], kp [Tk][dp], dk_acc
// [Tk][dp], dv_acc [Tk][dvp], then per row of a step of up to kMaxRows rows p [w], ds [w],
// q_row [dp], dy_row [dvp] (w = Tk rounded up to 8, dp and dvp D and Dv rounded up to 8).
struct backward_tile {
  int64_t w, dp, dvp;
  float *kt, *vt, *kp, *dk_acc, *dv_acc, *p, *ds, *q_row, *dy_row;
  backward_tile(const attention_geometry& g, int64_t w_)
      : w(w_), dp(round8(g.d)), dvp(round8(g.dv)) {
    const size_t need = static_cast<size_t>(g.d * w + g.dv * w + 2 * g.tk * dp + g.tk * dvp +
                                            kMaxRows * (2 * w + dp + dvp));
    kt = scratch(kTaskSlot0, need);
    vt = kt + g.d * w;
    kp = vt + g.dv * w;
    dk_acc = kp + g.tk * dp;
    dv_acc = dk_acc + g.tk * dp;
    p = dv_acc + g.tk * dvp;
    ds = p + kMaxRows * w;
    q_row = ds + kMaxRows * w;
    dy_row = q_row + kMaxRows * dp;
  }
};

// dst[j][u] += sum over r < R of c[r * w + j] * x[r * xs + u], for j < tk and u < wp (a
// multiple of 8): R rank-1 updates of a [tk][wp] tile.
template <int R>
NNP_CPU_AVX2_FMA inline void add_outer(float* dst, int64_t wp, int64_t tk, const float* c,
                                       int64_t w, const float* x, int64_t xs) {
  for (int64_t j = 0; j < tk; ++j) {
    float* dj = dst + j * wp;
    for (int64_t u = 0; u < wp; u += 8) {
      __m256 acc = _mm256_loadu_ps(dj + u);
      for (int r = 0; r < R; ++r)
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(c + r * w + j), _mm256_loadu_ps(x + r * xs + u),
                              acc);
      _mm256_storeu_ps(dj + u, acc);
    }
  }
}

// Query rows i .. i + R - 1 of head h: P from the forward's log-sum-exp (a fully masked row,
// lse = -inf, is 0); dP = dy V^T; delta = dy . y (double); dS = s P (dP - delta); dQ = dS K;
// dK += dS^T q; dV += P^T dy.
template <int NV, int R>
NNP_CPU_AVX2_FMA inline void backward_rows(const attention_args& a, const backward_tile& t,
                                           int64_t b, int64_t h, int64_t i, const float* q_tile,
                                           const float* y_tile, const float* dy_tile,
                                           float* dq_tile, const float* lse_row) {
  const attention_geometry& g = a.g;
  constexpr int64_t w = NV * 8;
  const int64_t qs = g.q.row_stride, ys = g.y.row_stride;
  score_rows<NV, R>(a, b, h, i, q_tile + i * qs, qs, t.kt, t.p);
  for (int r = 0; r < R; ++r) probabilities_lanes<NV>(t.p + r * w, g.tk, lse_row[i + r]);
  __m256 acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_setzero_ps();
  const float* dyi = dy_tile + i * ys;
  for (int64_t e = 0; e < g.dv; ++e) {
    __m256 ve[NV];
    for (int v = 0; v < NV; ++v) ve[v] = _mm256_loadu_ps(t.vt + e * w + 8 * v);
    for (int r = 0; r < R; ++r) {
      const __m256 de = _mm256_broadcast_ss(dyi + r * ys + e);
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_fmadd_ps(de, ve[v], acc[r][v]);
    }
  }
  const __m256 sv = _mm256_set1_ps(static_cast<float>(g.scale));
  for (int r = 0; r < R; ++r) {
    const float* dyr = dyi + r * ys;
    const float* yr = y_tile + (i + r) * ys;
    const __m256 dl = _mm256_set1_ps(static_cast<float>(dot_double(dyr, yr, g.dv)));
    for (int v = 0; v < NV; ++v) {
      const __m256 pv = _mm256_loadu_ps(t.p + r * w + 8 * v);
      _mm256_storeu_ps(t.ds + r * w + 8 * v,
                       _mm256_mul_ps(_mm256_mul_ps(sv, pv), _mm256_sub_ps(acc[r][v], dl)));
    }
    // rows of Q and dY whose width is a multiple of 8 are read in place, others padded
    if (g.d % 8 != 0) pad_rows(q_tile + (i + r) * qs, 1, 0, g.d, t.dp, t.q_row + r * t.dp);
    if (g.dv % 8 != 0) pad_rows(dyr, 1, 0, g.dv, t.dvp, t.dy_row + r * t.dvp);
  }
  combine_rows<R>(t.ds, w, g.tk, t.kp, t.dp, g.d, dq_tile + i * qs, qs);
  if (g.d % 8 == 0)
    add_outer<R>(t.dk_acc, t.dp, g.tk, t.ds, w, q_tile + i * qs, qs);
  else
    add_outer<R>(t.dk_acc, t.dp, g.tk, t.ds, w, t.q_row, t.dp);
  if (g.dv % 8 == 0)
    add_outer<R>(t.dv_acc, t.dvp, g.tk, t.p, w, dyi, ys);
  else
    add_outer<R>(t.dv_acc, t.dvp, g.tk, t.p, w, t.dy_row, t.dvp);
}

template <int NV>
NNP_CPU_AVX2_FMA void fused_backward(const attention_args& a, const float* y, const float* dy,
                                     const float* lse, float* dq, float* dk, float* dv, int64_t lo,
                                     int64_t hi) {
  const attention_geometry& g = a.g;
  const backward_tile t(g, NV * 8);
  for (int64_t kv_tile = lo; kv_tile < hi; ++kv_tile) {
    const int64_t b = kv_tile / g.hkv, kvh = kv_tile % g.hkv;
    const float* k_tile = a.k + g.k.offset(b, kvh, 0);
    transpose_rows(k_tile, g.tk, g.k.row_stride, g.d, t.w, t.kt);
    transpose_rows(a.v + g.v.offset(b, kvh, 0), g.tk, g.v.row_stride, g.dv, t.w, t.vt);
    pad_rows(k_tile, g.tk, g.k.row_stride, g.d, t.dp, t.kp);
    std::fill(t.dk_acc, t.dk_acc + g.tk * (t.dp + t.dvp), 0.0f);  // dk_acc and dv_acc
    for (int64_t h = kvh * g.group(); h < (kvh + 1) * g.group(); ++h) {
      const float* q_tile = a.q + g.q.offset(b, h, 0);
      const float* dy_tile = dy + g.y.offset(b, h, 0);
      const float* y_tile = y + g.y.offset(b, h, 0);
      float* dq_tile = dq + g.q.offset(b, h, 0);
      const float* lse_row = lse + (b * g.hq + h) * g.tq;
      for_row_steps<NV>(
          g.tq, [&](auto rc, int64_t i) __attribute__((always_inline)) {
            backward_rows<NV, decltype(rc)::value>(a, t, b, h, i, q_tile, y_tile, dy_tile, dq_tile,
                                                   lse_row);
          });
    }
    float* dk_tile = dk + g.k.offset(b, kvh, 0);
    float* dv_tile = dv + g.v.offset(b, kvh, 0);
    for (int64_t j = 0; j < g.tk; ++j) {
      std::memcpy(dk_tile + j * g.k.row_stride, t.dk_acc + j * t.dp,
                  sizeof(float) * static_cast<size_t>(g.d));
      std::memcpy(dv_tile + j * g.v.row_stride, t.dv_acc + j * t.dvp,
                  sizeof(float) * static_cast<size_t>(g.dv));
    }
  }
}

// Calls fn(std::integral_constant<int, NV>) for NV = Tk / 8 rounded up (1..4).
template <typename Fn>
void with_nv(int64_t tk, Fn&& fn) {
  switch ((tk + 7) / 8) {
    case 1:
      return fn(std::integral_constant<int, 1>{});
    case 2:
      return fn(std::integral_constant<int, 2>{});
    case 3:
      return fn(std::integral_constant<int, 3>{});
    default:
      return fn(std::integral_constant<int, 4>{});
  }
}
#endif

}  // namespace

void attention_forward(const op_call& c) {
  const attention_args a(c);
  const attention_geometry& g = a.g;
  float* y = f32(c.out(0));
  float* lse = f32(c.out(1));
#ifdef NNP_CPU_X86_KERNELS
  if (fused_applies(g)) {
    with_nv(g.tk, [&](auto nv) {
      parallel_for(g.batch * g.hq, a.grain(), [&](int64_t lo, int64_t hi) {
        fused_forward<decltype(nv)::value>(a, y, lse, lo, hi);
      });
    });
    return;
  }
#endif
  parallel_for(g.batch * g.hq, a.grain(), [&](int64_t lo, int64_t hi) {
    float* s = scratch(kTaskSlot0, static_cast<size_t>(g.tq * g.tk));
    for (int64_t tile = lo; tile < hi; ++tile) {
      const int64_t b = tile / g.hq, h = tile % g.hq;
      a.scores(b, h, s);
      for (int64_t i = 0; i < g.tq; ++i) {
        const float l = softmax_row(s + i * g.tk, g.tk);
        if (lse != nullptr) lse[tile * g.tq + i] = l;
      }
      sgemm_rm(false, false, g.tq, g.dv, g.tk, 1.0f, s, g.tk, a.v + g.v.offset(b, h / g.group(), 0),
               g.v.row_stride, 0.0f, y + g.y.offset(b, h, 0), g.y.row_stride);
    }
  });
}

void attention_backward(const op_call& c) {
  const attention_args a(c);
  const attention_geometry& g = a.g;
  const float* y = f32(c.in(4));
  const float* dy = f32(c.in(5));
  const float* lse = f32(c.in(6));
  float *dq = f32(c.out(0)), *dk = f32(c.out(1)), *dv = f32(c.out(2));
  const float scale = static_cast<float>(g.scale);
#ifdef NNP_CPU_X86_KERNELS
  if (fused_applies(g)) {
    with_nv(g.tk, [&](auto nv) {
      parallel_for(g.batch * g.hkv, std::max<int64_t>(1, a.grain() / g.group()),
                   [&](int64_t lo, int64_t hi) {
                     fused_backward<decltype(nv)::value>(a, y, dy, lse, dq, dk, dv, lo, hi);
                   });
    });
    return;
  }
#endif
  parallel_for(
      g.batch * g.hkv, std::max<int64_t>(1, a.grain() / g.group()), [&](int64_t lo, int64_t hi) {
        const size_t tile_size = static_cast<size_t>(g.tq * g.tk);
        float* p = scratch(kTaskSlot0, tile_size);
        float* ds = scratch(kTaskSlot1, tile_size);
        for (int64_t kv_tile = lo; kv_tile < hi; ++kv_tile) {
          const int64_t b = kv_tile / g.hkv, kvh = kv_tile % g.hkv;
          float* dk_tile = dk + g.k.offset(b, kvh, 0);
          float* dv_tile = dv + g.v.offset(b, kvh, 0);
          const float* k_tile = a.k + g.k.offset(b, kvh, 0);
          const float* v_tile = a.v + g.v.offset(b, kvh, 0);
          for (int64_t h = kvh * g.group(); h < (kvh + 1) * g.group(); ++h) {
            const float* dy_tile = dy + g.y.offset(b, h, 0);
            const float* y_tile = y + g.y.offset(b, h, 0);
            const float* q_tile = a.q + g.q.offset(b, h, 0);
            // P = exp(S - lse), rows of a fully masked query (lse = -inf) are 0.
            a.scores(b, h, p);
            const float* lse_row = lse + (b * g.hq + h) * g.tq;
            for (int64_t i = 0; i < g.tq; ++i) probabilities_row(p + i * g.tk, g.tk, lse_row[i]);
            // dP = dY V^T, then dS = s * P * (dP - delta) in place.
            sgemm_rm(false, true, g.tq, g.tk, g.dv, 1.0f, dy_tile, g.y.row_stride, v_tile,
                     g.v.row_stride, 0.0f, ds, g.tk);
            for (int64_t i = 0; i < g.tq; ++i) {
              const float* dyi = dy_tile + i * g.y.row_stride;
              const float* yi = y_tile + i * g.y.row_stride;
              double delta = 0.0;
              for (int64_t e = 0; e < g.dv; ++e) delta += double(dyi[e]) * double(yi[e]);
              const float dl = static_cast<float>(delta);
              float* dsi = ds + i * g.tk;
              const float* pi = p + i * g.tk;
              for (int64_t j = 0; j < g.tk; ++j) dsi[j] = scale * pi[j] * (dsi[j] - dl);
            }
            const float beta = h == kvh * g.group() ? 0.0f : 1.0f;  // sum over the group's heads
            sgemm_rm(false, false, g.tq, g.d, g.tk, 1.0f, ds, g.tk, k_tile, g.k.row_stride, 0.0f,
                     dq + g.q.offset(b, h, 0), g.q.row_stride);
            sgemm_rm(true, false, g.tk, g.d, g.tq, 1.0f, ds, g.tk, q_tile, g.q.row_stride, beta,
                     dk_tile, g.k.row_stride);
            sgemm_rm(true, false, g.tk, g.dv, g.tq, 1.0f, p, g.tk, dy_tile, g.y.row_stride, beta,
                     dv_tile, g.v.row_stride);
          }
        }
      });
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kAttentionOps[] = {
    {NNP_OP_ATTENTION_FORWARD,  kit::f32,            attention_forward},
    {NNP_OP_ATTENTION_BACKWARD, kit::f32,            attention_backward},
};
// clang-format on
extern const kit::op_row_list kAttentionRows = kit::row_list(kAttentionOps);

}  // namespace nnp::cpu
