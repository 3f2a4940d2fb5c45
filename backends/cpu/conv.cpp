// 2-D convolution on the CPU (NNP_OP_CONV2D_*): forward, backward-data, backward-filter,
// backward-bias; stride, per-side padding, dilation, groups (depthwise included).
//
// Speed: im2col + OpenBLAS SGEMM. Per image and group, im2col unfolds the input into a column
// matrix [C/g*R*S, P*Q] (plain row copies when stride_w = 1) in a per-thread scratch buffer
// reused across calls, and one single-threaded SGEMM does the multiply-adds:
//   forward          y_g  [K/g, PQ]      = w_g [K/g, CRS] . col [CRS, PQ]
//   backward-data    col  [CRS, PQ]      = w_g^T . dy_g [K/g, PQ], then col2im (scatter-add)
//   backward-filter  dw_g [K/g, CRS]    += dy_g . col^T   (per-chunk partial sums, then summed)
// A 1x1, stride-1, unpadded convolution skips im2col (the input already is the column matrix).
// 3x3 stride-1 convolutions with >= 16 channels in and out (the cnn's conv2) use Winograd
// F(2x2, 3x3) instead, 2.25x fewer multiplies in the SGEMMs (measured 4-22% faster per op with
// the transforms; docs/cpu-backend.md): forward as 16 SGEMMs [K, C] . [C, tiles] per image,
// backward-data as a forward convolution of dy with the flipped filter, backward-filter as
// 16 SGEMMs [K, tiles] . [tiles, C] per image into dU, then dW = G^T dU G. Winograd runs only
// when its operands are all finite (all_finite: one vectorised pass over each): its transforms
// would turn an infinity into NaN where the direct formula gives ±inf.
// TBB runs images (and groups) in parallel; backward-filter splits the batch into four chunks per
// thread, each accumulating into its own partial dw (call-level scratch), summed at the end.
#include "cpu_backend.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace nnp::cpu {
namespace {

struct conv_geom {
  int64_t n, c, h, w, k, r, s, p, q, groups, cg, kg;
  int64_t sh, sw, pt, pl, dh, dw;
  int64_t crs() const { return cg * r * s; }
  int64_t pq() const { return p * q; }
  bool direct() const {  // 1x1, stride 1, no padding: col == input
    return r == 1 && s == 1 && sh == 1 && sw == 1 && pt == 0 && pl == 0 && p == h && q == w;
  }
  // Offsets of group grp of image n in x (and dx) [n, c, h, w] and y (and dy) [n, k, p, q],
  // and of group grp's filters in w (and dw) [k, cg, r, s].
  int64_t x_group(int64_t img, int64_t grp) const { return (img * c + grp * cg) * h * w; }
  int64_t y_group(int64_t img, int64_t grp) const { return (img * k + grp * kg) * pq(); }
  int64_t w_group(int64_t grp) const { return grp * kg * crs(); }
};

conv_geom make_geom(const nnp_conv2d_params& prm, const DLTensor& x, const DLTensor& w,
                    const DLTensor& y) {
  conv_geom g{};
  g.n = x.shape[0];
  g.c = x.shape[1];
  g.h = x.shape[2];
  g.w = x.shape[3];
  g.k = w.shape[0];
  g.r = w.shape[2];
  g.s = w.shape[3];
  g.p = y.shape[2];
  g.q = y.shape[3];
  g.groups = prm.groups;
  g.cg = g.c / g.groups;
  g.kg = g.k / g.groups;
  g.sh = prm.stride_h;
  g.sw = prm.stride_w;
  g.pt = prm.pad_top;
  g.pl = prm.pad_left;
  g.dh = prm.dilation_h;
  g.dw = prm.dilation_w;
  return g;
}

// Unfolds x_g [cg, h, w] into col [cg*r*s, p*q].
void im2col(const conv_geom& g, const float* x, float* col) {
  for (int64_t c = 0; c < g.cg; ++c) {
    const float* xc = x + c * g.h * g.w;
    for (int64_t r = 0; r < g.r; ++r) {
      for (int64_t s = 0; s < g.s; ++s) {
        float* row = col + ((c * g.r + r) * g.s + s) * g.pq();
        const int64_t col_off = s * g.dw - g.pl;
        // Output columns q whose input column iw = q*sw + col_off lies in [0, w).
        int64_t q0 = 0, q1 = g.q;
        if (col_off < 0) q0 = std::min<int64_t>(g.q, (-col_off + g.sw - 1) / g.sw);
        const int64_t lim = g.w - col_off;  // need q*sw < lim
        q1 = lim <= 0 ? 0 : std::min<int64_t>(g.q, (lim + g.sw - 1) / g.sw);
        if (q1 < q0) q1 = q0;
        for (int64_t p = 0; p < g.p; ++p) {
          float* out = row + p * g.q;
          const int64_t ih = p * g.sh - g.pt + r * g.dh;
          if (ih < 0 || ih >= g.h) {
            std::memset(out, 0, sizeof(float) * static_cast<size_t>(g.q));
            continue;
          }
          const float* xr = xc + ih * g.w + col_off;
          for (int64_t qq = 0; qq < q0; ++qq) out[qq] = 0.0f;
          if (g.sw == 1) {
            // a plain loop, not memcpy: rows are short (tens of floats) and a libc call per
            // row costs more than the copy
            for (int64_t qq = q0; qq < q1; ++qq) out[qq] = xr[qq];
          } else {
            for (int64_t qq = q0; qq < q1; ++qq) out[qq] = xr[qq * g.sw];
          }
          for (int64_t qq = q1; qq < g.q; ++qq) out[qq] = 0.0f;
        }
      }
    }
  }
}

// Folds col [cg*r*s, p*q] back, adding into dx_g [cg, h, w] (which the caller zeroed).
void col2im(const conv_geom& g, const float* col, float* dx) {
  for (int64_t c = 0; c < g.cg; ++c) {
    float* xc = dx + c * g.h * g.w;
    for (int64_t r = 0; r < g.r; ++r) {
      for (int64_t s = 0; s < g.s; ++s) {
        const float* row = col + ((c * g.r + r) * g.s + s) * g.pq();
        const int64_t col_off = s * g.dw - g.pl;
        int64_t q0 = 0, q1 = g.q;
        if (col_off < 0) q0 = std::min<int64_t>(g.q, (-col_off + g.sw - 1) / g.sw);
        const int64_t lim = g.w - col_off;
        q1 = lim <= 0 ? 0 : std::min<int64_t>(g.q, (lim + g.sw - 1) / g.sw);
        for (int64_t p = 0; p < g.p; ++p) {
          const int64_t ih = p * g.sh - g.pt + r * g.dh;
          if (ih < 0 || ih >= g.h) continue;
          const float* in = row + p * g.q;
          float* xr = xc + ih * g.w + col_off;
          if (g.sw == 1) {
            for (int64_t qq = q0; qq < q1; ++qq) xr[qq] += in[qq];
          } else {
            for (int64_t qq = q0; qq < q1; ++qq) xr[qq * g.sw] += in[qq];
          }
        }
      }
    }
  }
}

// Sum of a row with 8 independent float accumulators (vectorises without -ffast-math; each
// image's plane is short, the total is accumulated in double by the caller).
inline double sum_row(const float* row, int64_t len) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= len; j += 8)
    for (int t = 0; t < 8; ++t) acc[t] += row[j + t];
  double total = 0.0;
  for (int t = 0; t < 8; ++t) total += acc[t];
  for (; j < len; ++j) total += row[j];
  return total;
}

// ---- Winograd F(2x2, 3x3) -----------------------------------------------------------------------
// Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks" (CVPR 2016). For 3x3 filters
// at stride 1 (dilation 1, one group) each 2x2 output tile costs 16 multiplies per (k, c)
// instead of 36: Y = A^T [ (G g G^T) .* (B^T d B) ] A, the 16 elementwise products summed over
// c as 16 SGEMMs [K, C] . [C, tiles]. Transforms use only 0, +-1 and +-1/2.

constexpr int64_t kWinoMinChannels = 16;  // below this the SGEMMs' depth is too small to pay

// u[xi][k][c] = (G g G^T)[xi] for g = w[k][c] (flip = 0) or, for backward-data as a forward
// convolution, g[r][s] = w[c][k][2-r][2-s] with w of shape [C_out_of_this, K_of_this, 3, 3].
void winograd_weights(const float* w, int64_t k_out, int64_t c_in, bool flip, float* u) {
  const int64_t kc = k_out * c_in;
  for (int64_t k = 0; k < k_out; ++k) {
    for (int64_t c = 0; c < c_in; ++c) {
      float g[3][3];
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s)
          g[r][s] = flip ? w[((c * k_out + k) * 3 + (2 - r)) * 3 + (2 - s)]
                         : w[((k * c_in + c) * 3 + r) * 3 + s];
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
        for (int j = 0; j < 4; ++j) u[(i * 4 + j) * kc + k * c_in + c] = t[j];
      }
    }
  }
}

// Input transform, first half (d B, along a plane row): with the padded row split into even
// columns e[t] = row[2t] and odd o[t] = row[2t+1] (t in [0, tq]), every tile's four row values
// are unit-stride reads, so the loop vectorises: w[jj * tq + tj] for tile column tj.
void winograd_row_transform(const float* __restrict e, const float* __restrict o, int64_t tq,
                            float* __restrict w) {
  for (int64_t t = 0; t < tq; ++t) {
    w[t] = e[t] - e[t + 1];
    w[tq + t] = o[t] + e[t + 1];
    w[2 * tq + t] = e[t + 1] - o[t];
    w[3 * tq + t] = o[t] - o[t + 1];
  }
}

// Input transform, second half (B^T along the four plane rows of tile row ti): rows w0..w3 are
// row transforms (4*tq floats each); v[xi * xs + tj] = (B^T d B)[xi].
void winograd_col_transform(const float* __restrict w0, const float* __restrict w1,
                            const float* __restrict w2, const float* __restrict w3, int64_t tq,
                            float* __restrict v, int64_t xs) {
  for (int jj = 0; jj < 4; ++jj) {
    const float* a0 = w0 + jj * tq;
    const float* a1 = w1 + jj * tq;
    const float* a2 = w2 + jj * tq;
    const float* a3 = w3 + jj * tq;
    float* v0 = v + (0 * 4 + jj) * xs;
    float* v1 = v + (1 * 4 + jj) * xs;
    float* v2 = v + (2 * 4 + jj) * xs;
    float* v3 = v + (3 * 4 + jj) * xs;
    for (int64_t t = 0; t < tq; ++t) {
      v0[t] = a0[t] - a2[t];
      v1[t] = a1[t] + a2[t];
      v2[t] = a2[t] - a1[t];
      v3[t] = a1[t] - a3[t];
    }
  }
}

// Output transform of one row of tiles: out0/out1 (2*tq floats each) = the two output rows,
// A^T m A + bias, for m[xi] = m[xi * ms + tj].
void winograd_output_row(const float* __restrict m, int64_t ms, int64_t tq, float bias,
                         float* __restrict out0, float* __restrict out1) {
  for (int64_t tj = 0; tj < tq; ++tj) {
    float am[2][4];  // A^T m
    for (int j = 0; j < 4; ++j) {
      const float m0 = m[(0 + j) * ms + tj], m1 = m[(4 + j) * ms + tj];
      const float m2 = m[(8 + j) * ms + tj], m3 = m[(12 + j) * ms + tj];
      am[0][j] = m0 + m1 + m2;
      am[1][j] = m1 - m2 - m3;
    }
    out0[2 * tj] = am[0][0] + am[0][1] + am[0][2] + bias;
    out0[2 * tj + 1] = am[0][1] - am[0][2] - am[0][3] + bias;
    out1[2 * tj] = am[1][0] + am[1][1] + am[1][2] + bias;
    out1[2 * tj + 1] = am[1][1] - am[1][2] - am[1][3] + bias;
  }
}

// Floats of task scratch (slot 0) winograd_input needs besides v.
int64_t winograd_work_size(int64_t tp, int64_t tq) {
  const int64_t hp = 2 * tp + 2, half = tq + 1;
  return 2 * hp * half + 4 * hp * tq + 4 * tq;
}

// Input transform of one image x [c_in, h, w] (padding pad_top / pad_left) for tp x tq tiles:
// v[xi][c][t] = (B^T d B)[xi]. `work` holds winograd_work_size floats.
void winograd_input(const float* x, int64_t c_in, int64_t h, int64_t w, int64_t tp, int64_t tq,
                    int64_t pad_top, int64_t pad_left, float* v, float* work) {
  const int64_t tiles = tp * tq;
  const int64_t hp = 2 * tp + 2, wp = 2 * tq + 2;  // zero-padded plane covering every tile
  const int64_t half = tq + 1;                     // even / odd columns of a padded row
  float* even = work;                              // [hp, half]
  float* odd = even + hp * half;                   // [hp, half]
  float* rowt = odd + hp * half;                   // [hp, 4, tq] row transforms
  const int64_t xs = c_in * tiles;                 // stride between the xi planes of v
  for (int64_t c = 0; c < c_in; ++c) {
    std::fill(even, even + 2 * hp * half, 0.0f);
    const float* xc = x + c * h * w;
    const int64_t j0 = std::max<int64_t>(0, -pad_left);
    const int64_t j1 = std::min<int64_t>(w, wp - pad_left);
    for (int64_t i = 0; i < h; ++i) {
      const int64_t pi = i + pad_top;
      if (pi < 0 || pi >= hp) continue;
      float* er = even + pi * half;
      float* orow = odd + pi * half;
      // padded column pj = j + pad_left goes to even[pj / 2] or odd[pj / 2]: two strided loops
      const float* xr = xc + i * w;
      const int64_t je = j0 + ((j0 + pad_left) & 1);  // first j with an even padded column
      for (int64_t j = je; j < j1; j += 2) er[(j + pad_left) >> 1] = xr[j];
      const int64_t jo = j0 + (((j0 + pad_left) & 1) ^ 1);  // first j with an odd one
      for (int64_t j = jo; j < j1; j += 2) orow[(j + pad_left) >> 1] = xr[j];
    }
    for (int64_t pi = 0; pi < hp; ++pi)
      winograd_row_transform(even + pi * half, odd + pi * half, tq, rowt + pi * 4 * tq);
    for (int64_t ti = 0; ti < tp; ++ti) {
      const float* w0 = rowt + 2 * ti * 4 * tq;
      winograd_col_transform(w0, w0 + 4 * tq, w0 + 8 * tq, w0 + 12 * tq, tq,
                             v + c * tiles + ti * tq, xs);
    }
  }
}

// One image: x [c_in, h, w] -> y [k_out, p, q] (+ bias), with padding pad_top / pad_left (the
// bottom and right padding follow from p and q), u from winograd_weights.
void winograd_image(const float* x, int64_t c_in, int64_t h, int64_t w, const float* u,
                    int64_t k_out, int64_t p, int64_t q, int64_t pad_top, int64_t pad_left,
                    const float* bias, float* y) {
  const int64_t tp = (p + 1) / 2, tq = (q + 1) / 2, tiles = tp * tq;
  const int64_t work = winograd_work_size(tp, tq);
  float* v = scratch(kTaskSlot0, static_cast<size_t>(16 * c_in * tiles + work + 4 * tq));
  float* rows_out = v + 16 * c_in * tiles + work;  // two output rows of 2*tq floats
  float* m = scratch(kTaskSlot1, static_cast<size_t>(16 * k_out * tiles));
  winograd_input(x, c_in, h, w, tp, tq, pad_top, pad_left, v, v + 16 * c_in * tiles);
  // 16 products summed over channels: m[xi] [K, T] = u[xi] [K, C] . v[xi] [C, T]
  for (int xi = 0; xi < 16; ++xi)
    sgemm_rm(false, false, k_out, tiles, c_in, 1.0f, u + xi * k_out * c_in, c_in,
             v + xi * c_in * tiles, tiles, 0.0f, m + xi * k_out * tiles, tiles);
  // output transform: y tile = A^T m A (+ bias), clipped at odd edges
  const int64_t ms = k_out * tiles;
  for (int64_t k = 0; k < k_out; ++k) {
    const float b = bias != nullptr ? bias[k] : 0.0f;
    float* yk = y + k * p * q;
    for (int64_t ti = 0; ti < tp; ++ti) {
      const int64_t r0 = 2 * ti;
      float* out0 = r0 + 1 < p && q % 2 == 0 ? yk + r0 * q : rows_out;  // direct when it fits
      float* out1 = out0 == rows_out ? rows_out + 2 * tq : yk + (r0 + 1) * q;
      winograd_output_row(m + k * tiles + ti * tq, ms, tq, b, out0, out1);
      if (out0 == rows_out) {
        std::memcpy(yk + r0 * q, out0, sizeof(float) * static_cast<size_t>(q));
        if (r0 + 1 < p)
          std::memcpy(yk + (r0 + 1) * q, out1, sizeof(float) * static_cast<size_t>(q));
      }
    }
  }
}

// NNPLUG_CPU_WINOGRAD=0 turns the Winograd paths off (im2col everywhere), to measure them.
bool winograd_enabled() {
  static const bool enabled = [] {
    const char* env = std::getenv("NNPLUG_CPU_WINOGRAD");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }();
  return enabled;
}

// A batch of n images x [n, c_in, h, w] -> y [n, k_out, p, q] by winograd_image, the images
// in parallel, after one winograd_weights of wt (flip as there) into call scratch.
void winograd_batch(int64_t n, const float* x, int64_t c_in, int64_t h, int64_t w, const float* wt,
                    bool flip, int64_t k_out, int64_t p, int64_t q, int64_t pad_top,
                    int64_t pad_left, const float* bias, float* y) {
  float* u = scratch(kCallSlot1, static_cast<size_t>(16 * k_out * c_in));
  winograd_weights(wt, k_out, c_in, flip, u);
  parallel_for(n, 1, [&](int64_t nb, int64_t ne) {
    for (int64_t i = nb; i < ne; ++i)
      winograd_image(x + i * c_in * h * w, c_in, h, w, u, k_out, p, q, pad_top, pad_left, bias,
                     y + i * k_out * p * q);
  });
}

bool winograd_ok(const conv_geom& g) {
  return winograd_enabled() && g.r == 3 && g.s == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 &&
         g.dw == 1 && g.groups == 1 && g.c >= kWinoMinChannels && g.k >= kWinoMinChannels;
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

// dy transform of one row of tiles for backward-filter: from the even (e) and odd (o) columns
// of the tile row's two dy rows, out[xi * ks + tj] = (A d A^T)[xi].
void winograd_dy_row(const float* __restrict e0, const float* __restrict o0,
                     const float* __restrict e1, const float* __restrict o1, int64_t tq,
                     float* __restrict out, int64_t ks) {
  // row i of A d is (c0 * row0 + c1 * row1) with (c0, c1) = (1, 0), (1, 1), (1, -1), (0, -1);
  // then (A d) A^T maps a row (a0, a1) to [a0, a0 + a1, a0 - a1, -a1]. Four output streams
  // per loop, so it vectorises.
  static constexpr float kC0[4] = {1.0f, 1.0f, 1.0f, 0.0f};
  static constexpr float kC1[4] = {0.0f, 1.0f, -1.0f, -1.0f};
  for (int i = 0; i < 4; ++i) {
    const float c0 = kC0[i], c1 = kC1[i];
    float* __restrict q0 = out + (i * 4 + 0) * ks;
    float* __restrict q1 = out + (i * 4 + 1) * ks;
    float* __restrict q2 = out + (i * 4 + 2) * ks;
    float* __restrict q3 = out + (i * 4 + 3) * ks;
    for (int64_t t = 0; t < tq; ++t) {
      const float a0 = c0 * e0[t] + c1 * e1[t], a1 = c0 * o0[t] + c1 * o1[t];
      q0[t] = a0;
      q1[t] = a0 + a1;
      q2[t] = a0 - a1;
      q3[t] = -a1;
    }
  }
}

// Backward-filter by Winograd F(2x2, 3x3): the forward is y = A^T [(G g G^T) .* V] A per tile,
// linear in g, so dg = G^T dU G with dU[xi] = sum over images and tiles of (A dy A^T)[xi] *
// V[xi]: per image 16 SGEMMs [K, T] . [T, C] accumulating into dU (per chunk), then one
// 4x4 -> 3x3 transform per (k, c). dy entries of the partial tiles at odd edges are 0.
void winograd_backward_filter(const conv_geom& g, const float* x, const float* dy, float* dw) {
  const int64_t tp = (g.p + 1) / 2, tq = (g.q + 1) / 2, tiles = tp * tq;
  const int64_t usize = 16 * g.k * g.c;
  const int64_t chunks = std::min<int64_t>(num_threads() == 1 ? 1 : 4 * num_threads(), g.n);
  float* du_all = scratch(kCallSlot0, static_cast<size_t>(chunks * usize));
  parallel_for(chunks, 1, [&](int64_t cb, int64_t ce) {
    const int64_t work = winograd_work_size(tp, tq);
    float* v = scratch(kTaskSlot0, static_cast<size_t>(16 * g.c * tiles + work));
    float* dyt = scratch(kTaskSlot1, static_cast<size_t>(16 * g.k * tiles + 4 * tq));
    float* eo = dyt + 16 * g.k * tiles;  // even/odd columns of two dy rows
    for (int64_t ch = cb; ch < ce; ++ch) {
      float* du = du_all + ch * usize;
      const int64_t n0 = g.n * ch / chunks, n1 = g.n * (ch + 1) / chunks;
      for (int64_t n = n0; n < n1; ++n) {
        winograd_input(x + n * g.c * g.h * g.w, g.c, g.h, g.w, tp, tq, g.pt, g.pl, v,
                       v + 16 * g.c * tiles);
        // dyt[xi][k][t] = (A d A^T)[xi] for the 2x2 dy tile d (0 outside P x Q), a row of
        // tiles at a time from even / odd columns of the two dy rows (vectorised)
        const int64_t ks = g.k * tiles;
        for (int64_t k = 0; k < g.k; ++k) {
          const float* dyk = dy + (n * g.k + k) * g.pq();
          for (int64_t ti = 0; ti < tp; ++ti) {
            std::fill(eo, eo + 4 * tq, 0.0f);
            for (int r = 0; r < 2 && 2 * ti + r < g.p; ++r) {
              const float* row = dyk + (2 * ti + r) * g.q;
              float* e = eo + 2 * r * tq;
              float* o = e + tq;
              for (int64_t t = 0; 2 * t < g.q; ++t) e[t] = row[2 * t];
              for (int64_t t = 0; 2 * t + 1 < g.q; ++t) o[t] = row[2 * t + 1];
            }
            winograd_dy_row(eo, eo + tq, eo + 2 * tq, eo + 3 * tq, tq, dyt + k * tiles + ti * tq,
                            ks);
          }
        }
        const float beta = n == n0 ? 0.0f : 1.0f;
        for (int xi = 0; xi < 16; ++xi)
          sgemm_rm(false, true, g.k, g.c, tiles, 1.0f, dyt + xi * ks, tiles, v + xi * g.c * tiles,
                   tiles, beta, du + xi * g.k * g.c, g.c);
      }
    }
  });
  // sum the chunks' dU, then dw[k][c] = G^T dU G
  for (int64_t ch = 1; ch < chunks; ++ch) {
    const float* part = du_all + ch * usize;
    for (int64_t i = 0; i < usize; ++i) du_all[i] += part[i];
  }
  const int64_t kc = g.k * g.c;
  for (int64_t k = 0; k < g.k; ++k) {
    for (int64_t c = 0; c < g.c; ++c) {
      float m[4][4];
      for (int i = 0; i < 16; ++i) m[i / 4][i % 4] = du_all[i * kc + k * g.c + c];
      float t[3][4];  // G^T m
      for (int j = 0; j < 4; ++j) {
        t[0][j] = m[0][j] + 0.5f * (m[1][j] + m[2][j]);
        t[1][j] = 0.5f * (m[1][j] - m[2][j]);
        t[2][j] = 0.5f * (m[1][j] + m[2][j]) + m[3][j];
      }
      float* out = dw + (k * g.c + c) * 9;
      for (int i = 0; i < 3; ++i) {  // (G^T m) G
        out[i * 3 + 0] = t[i][0] + 0.5f * (t[i][1] + t[i][2]);
        out[i * 3 + 1] = 0.5f * (t[i][1] - t[i][2]);
        out[i * 3 + 2] = 0.5f * (t[i][1] + t[i][2]) + t[i][3];
      }
    }
  }
}

// The calling task's column buffer [crs, pq] (nullptr for a direct convolution: no im2col).
float* col_scratch(const conv_geom& g) {
  return g.direct() ? nullptr : scratch(kTaskSlot0, static_cast<size_t>(g.crs() * g.pq()));
}

// Runs f(n, grp, col) for every image n and group grp, the pairs in parallel, col the running
// task's column buffer (col_scratch).
template <typename F>
void for_each_image_group(const conv_geom& g, const F& f) {
  parallel_for(g.n * g.groups, 1, [&](int64_t tb, int64_t te) {
    float* col = col_scratch(g);
    for (int64_t t = tb; t < te; ++t) f(t / g.groups, t % g.groups, col);
  });
}

}  // namespace

void conv2d_forward(const op_call& c) {
  const auto& prm = c.params_as<nnp_conv2d_params>();
  const DLTensor *X = c.in(0), *W = c.in(1), *B = c.in(2), *Y = c.out(0);
  const conv_geom g = make_geom(prm, *X, *W, *Y);
  const float *x = f32(X), *w = f32(W), *b = f32(B);
  float* y = f32(Y);
  if (winograd_ok(g) && all_finite(w, numel(*W)) && all_finite(x, numel(*X))) {
    winograd_batch(g.n, x, g.c, g.h, g.w, w, false, g.k, g.p, g.q, g.pt, g.pl, b, y);
    return;
  }
  for_each_image_group(g, [&](int64_t n, int64_t grp, float* col) {
    const float* xg = x + g.x_group(n, grp);
    float* yg = y + g.y_group(n, grp);
    const float* src = xg;
    if (!g.direct()) {
      im2col(g, xg, col);
      src = col;
    }
    sgemm_rm(false, false, g.kg, g.pq(), g.crs(), 1.0f, w + g.w_group(grp), g.crs(), src, g.pq(),
             0.0f, yg, g.pq());
    if (b != nullptr) {
      for (int64_t k = 0; k < g.kg; ++k) {
        const float bk = b[grp * g.kg + k];
        float* yk = yg + k * g.pq();
        for (int64_t i = 0; i < g.pq(); ++i) yk[i] += bk;
      }
    }
  });
}

void conv2d_backward_data(const op_call& c) {
  const auto& prm = c.params_as<nnp_conv2d_params>();
  const DLTensor *DY = c.in(0), *W = c.in(1), *DX = c.out(0);
  const conv_geom g = make_geom(prm, *DX, *W, *DY);
  const float *dy = f32(DY), *w = f32(W);
  float* dx = f32(DX);
  // As a forward convolution of dy with the flipped, transposed filter (padding 2 - pad), by
  // Winograd when it applies and every padding is at most 2.
  if (winograd_ok(g) && prm.pad_top <= 2 && prm.pad_left <= 2 && prm.pad_bottom <= 2 &&
      prm.pad_right <= 2 && all_finite(w, numel(*W)) && all_finite(dy, numel(*DY))) {
    winograd_batch(g.n, dy, g.k, g.p, g.q, w, true, g.c, g.h, g.w, 2 - g.pt, 2 - g.pl, nullptr, dx);
    return;
  }
  for_each_image_group(g, [&](int64_t n, int64_t grp, float* col) {
    float* dxg = dx + g.x_group(n, grp);
    const float* dyg = dy + g.y_group(n, grp);
    const float* wg = w + g.w_group(grp);
    if (g.direct()) {
      sgemm_rm(true, false, g.crs(), g.pq(), g.kg, 1.0f, wg, g.crs(), dyg, g.pq(), 0.0f, dxg,
               g.pq());
      return;
    }
    sgemm_rm(true, false, g.crs(), g.pq(), g.kg, 1.0f, wg, g.crs(), dyg, g.pq(), 0.0f, col, g.pq());
    std::memset(dxg, 0, sizeof(float) * static_cast<size_t>(g.cg * g.h * g.w));
    col2im(g, col, dxg);
  });
}

void conv2d_backward_filter(const op_call& c) {
  const auto& prm = c.params_as<nnp_conv2d_params>();
  const DLTensor *X = c.in(0), *DY = c.in(1), *DW = c.out(0);
  const conv_geom g = make_geom(prm, *X, *DW, *DY);
  const float *x = f32(X), *dy = f32(DY);
  float* dw = f32(DW);
  const int64_t wsize = g.k * g.crs();
  if (g.n == 0) {
    std::fill(dw, dw + wsize, 0.0f);
    return;
  }
  if (winograd_ok(g) && all_finite(dy, numel(*DY)) && all_finite(x, numel(*X))) {
    winograd_backward_filter(g, x, dy, dw);
    return;
  }
  sum_over_image_chunks(g.n, wsize, dw, [&](float* acc, int64_t n0, int64_t n1) {
    float* col = col_scratch(g);
    for (int64_t n = n0; n < n1; ++n) {
      const float beta = n == n0 ? 0.0f : 1.0f;
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        const float* xg = x + g.x_group(n, grp);
        const float* dyg = dy + g.y_group(n, grp);
        const float* src = xg;
        if (!g.direct()) {
          im2col(g, xg, col);
          src = col;
        }
        sgemm_rm(false, true, g.kg, g.crs(), g.pq(), 1.0f, dyg, g.pq(), src, g.pq(), beta,
                 acc + g.w_group(grp), g.crs());
      }
    }
  });
}

void conv2d_backward_bias(const op_call& c) {
  const DLTensor *DY = c.in(0), *DB = c.out(0);
  const int64_t n = DY->shape[0], k = DY->shape[1];
  int64_t pq = 1;
  for (int i = 2; i < DY->ndim; ++i) pq *= DY->shape[i];
  const float* dy = f32(DY);
  float* db = f32(DB);
  if (n * pq == 0) {  // dy has no element (N or P*Q may be huge beside the 0)
    std::fill(db, db + k, 0.0f);
    return;
  }
  parallel_for(k, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, n * pq)),
               [&](int64_t kb, int64_t ke) {
                 for (int64_t kk = kb; kk < ke; ++kk) {
                   double sum = 0.0;
                   for (int64_t i = 0; i < n; ++i) sum += sum_row(dy + (i * k + kk) * pq, pq);
                   db[kk] = static_cast<float>(sum);
                 }
               });
}

}  // namespace nnp::cpu
