// Depthwise convolution on the CPU: the direct path of 1-D and 2-D grouped convolutions with
// one input channel per group (groups = ci > 1: MobileNet's depthwise layers, with any channel
// multiplier co / groups), for every op whose geometry is such a convolution
// (NNP_OP_CONV2D_*, NNP_OP_CONV_* and NNP_OP_CONV_TRANSPOSE_* with k <= 2: conv.cpp asks here
// after Winograd). Sizes come from the one N-D geometry (nnplug/kit/conv_nd.hpp; the last two
// spatial axes are the plane, the first is 1).
//
// With one input channel per group, im2col + SGEMM multiplies [co/g, R*S] by [R*S, plane] per
// image and group: a depth of R*S (9 for 3x3) and, for depthwise layers, one row, where SGEMM's
// packing costs more than the product. Here every output channel oc of group grp reads input
// channel grp alone:
//   forward          y[n, oc, p, q] = b[oc] + sum_{r,s} w[oc, 0, r, s] x[n, grp, ih, iw]
//   backward-data    dx[n, grp, ih, iw] = b[grp] + sum_{oc of grp, p, q, r, s} w . dy
//   backward-filter  dw[oc, 0, r, s] = sum_{n, p, q} dy[n, oc, p, q] x[n, grp, ih, iw]
// with ih = p * stride_h + r * dilation_h - pad_top, iw = q * stride_w + s * dilation_w -
// pad_left; taps that fall in the padding read zeros (0 * w: nothing for a finite weight, NaN
// for an infinite or NaN one, docs/ops.md "Non-finite values"). Each (r, s) tap is one
// unit-stride multiply-add over the output row's valid range (stride 1; strided reads
// otherwise), which the compiler vectorises (an AVX2 clone where the CPU has it); these loops
// skip the padding taps, so the forward adds a non-finite weight's NaN there itself, and
// backward-filter a non-finite dy's (0 * dy over the outputs whose tap reads the padding).
// With AVX2 + FMA two kinds of kernels below run the forward instead: in 2-D with one output
// channel per group (depthwise layers proper), register-blocked rows over a zero-padded copy of
// each plane; with at least 8 output channels per group (the cnn's conv1: one input channel, 32
// outputs), channel-blocked kernels, which also run the 3x3 backward-filter, for any number of
// groups. Without AVX2 a single group with one input channel stays with im2col + SGEMM, where
// the SGEMM's [co, R*S] filter block is reused across the plane (3-4x faster than these loops).
// Measured on MobileNetV2 at batch 32, 224x224 (2-core AMD EPYC, AVX2): its 17 depthwise
// convolutions took 227 ms with im2col + SGEMM per group and 179 ms with these loops; the
// register-blocked rows (see there) then took them from 205 to 71 ms (the whole model 500 ->
// 409 ms; two alternated runs each of NNPLUG_PROFILE=... python -m nnplug.onnx bench
// mobilenet_v2.onnx --backend cpu --batch 32 --min-time 3).
// TBB runs planes in parallel: forward over (image, output channel), backward-data over
// (image, input channel) (each input plane gathers its group's output channels: no two tasks
// write one element), backward-filter over output channels (each sums over the batch).
#include "conv.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace nnp::cpu {
namespace {

// Work per parallel task, in multiply-adds.
constexpr int64_t kDepthwiseGrainWork = 1 << 15;

bool applies(const conv_nd_geometry& g) {
  return g.spatial <= 2 && g.groups > 1 && g.cig() == 1 && g.in[0] == 1 && g.kernel[0] == 1 &&
         g.out[0] == 1;
}

// The outputs q in [lo, hi) of a row whose tap s reads inside the input row: 0 <= iw < W for
// iw = q * stride + off (off = s * dilation - pad_left).
struct tap_range {
  int64_t lo, hi, off;
};
tap_range row_range(const conv_nd_geometry& g, int64_t s) {
  const int64_t stride = g.stride[2], off = s * g.dilation[2] - g.pad[2];
  const int64_t lo = off < 0 ? (-off + stride - 1) / stride : 0;
  const int64_t last = g.in[2] - 1 - off;  // the largest q * stride allowed
  const int64_t hi = last < 0 ? 0 : std::min(g.out[2], last / stride + 1);
  return {lo, std::max(lo, hi), off};
}

// The ranges of every tap s of a row, once per call (each needs a division).
std::vector<tap_range> taps_of(const conv_nd_geometry& g) {
  std::vector<tap_range> taps(static_cast<size_t>(g.kernel[2]));
  for (int64_t s = 0; s < g.kernel[2]; ++s) taps[static_cast<size_t>(s)] = row_range(g, s);
  return taps;
}

// The input row of output row p and tap r, or -1 in the padding.
int64_t input_row(const conv_nd_geometry& g, int64_t p, int64_t r) {
  const int64_t ih = p * g.stride[1] + r * g.dilation[1] - g.pad[1];
  return ih >= 0 && ih < g.in[1] ? ih : -1;
}

// sum_q a[q] * b[q] for q in [lo, hi), with 8 independent float accumulators (vectorises
// without -ffast-math).
float dot(const float* a, const float* b, int64_t lo, int64_t hi) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t q = lo;
  for (; q + 8 <= hi; q += 8)
    for (int k = 0; k < 8; ++k) acc[k] += a[q + k] * b[q + k];
  float total = 0.0f;
  for (int k = 0; k < 8; ++k) total += acc[k];
  for (; q < hi; ++q) total += a[q] * b[q];
  return total;
}

int64_t grain_of(const conv_nd_geometry& g) {
  const int64_t work = g.out[1] * g.out[2] * g.kernel[1] * g.kernel[2];
  return std::max<int64_t>(1, kDepthwiseGrainWork / std::max<int64_t>(1, work));
}

// One output plane y [P, Q] of input plane x [H, W] and filter wk [R, S] (y starts at `bias`),
// clamped row by row (while the row is in L1).
NNP_CPU_AVX2_CLONES
void forward_plane(const conv_nd_geometry& g, const tap_range* taps, const float* x,
                   const float* wk, float bias, const out_clamp& clamp, float* y) {
  const int64_t W = g.in[2], P = g.out[1], Q = g.out[2], R = g.kernel[1], S = g.kernel[2];
  const int64_t stride = g.stride[2];
  std::fill(y, y + P * Q, bias);
  for (int64_t p = 0; p < P; ++p) {
    float* yr = y + p * Q;
    for (int64_t r = 0; r < R; ++r) {
      const int64_t ih = input_row(g, p, r);
      for (int64_t s = 0; s < S; ++s) {
        const float wv = wk[r * S + s];
        const tap_range& t = taps[s];
        if (!std::isfinite(wv)) {
          // the padding's products 0 * wv are NaN (docs/ops.md, "Non-finite values"); a
          // finite weight's are zeros, skipped
          const float nan = wv * 0.0f;
          const int64_t lo = ih < 0 ? Q : t.lo, hi = ih < 0 ? Q : t.hi;
          for (int64_t q = 0; q < lo; ++q) yr[q] += nan;
          for (int64_t q = hi; q < Q; ++q) yr[q] += nan;
        }
        if (ih < 0) continue;
        const float* xr = x + ih * W;
        if (stride == 1) {
          const float* xs = xr + t.off;
          for (int64_t q = t.lo; q < t.hi; ++q) yr[q] += wv * xs[q];
        } else {
          for (int64_t q = t.lo; q < t.hi; ++q) yr[q] += wv * xr[q * stride + t.off];
        }
      }
    }
    if (clamp.active)
      for (int64_t q = 0; q < Q; ++q) yr[q] = clamp.apply(yr[q]);
  }
}

// Adds to input-gradient plane dx [H, W] what output-gradient plane dy [P, Q] gives through
// filter wk [R, S].
NNP_CPU_AVX2_CLONES
void backward_data_plane(const conv_nd_geometry& g, const tap_range* taps, const float* dy,
                         const float* wk, float* dx) {
  const int64_t W = g.in[2], P = g.out[1], Q = g.out[2], R = g.kernel[1], S = g.kernel[2];
  const int64_t stride = g.stride[2];
  for (int64_t p = 0; p < P; ++p) {
    const float* dyr = dy + p * Q;
    for (int64_t r = 0; r < R; ++r) {
      const int64_t ih = input_row(g, p, r);
      if (ih < 0) continue;
      float* dxr = dx + ih * W;
      for (int64_t s = 0; s < S; ++s) {
        const float wv = wk[r * S + s];
        const tap_range& t = taps[s];
        if (stride == 1) {
          float* dxs = dxr + t.off;
          for (int64_t q = t.lo; q < t.hi; ++q) dxs[q] += wv * dyr[q];
        } else {
          for (int64_t q = t.lo; q < t.hi; ++q) dxr[q * stride + t.off] += wv * dyr[q];
        }
      }
    }
  }
}

// sum over q in [lo, hi) of 0 * dy[q]: 0, or NaN where a dy is not finite (the padding's zeros
// take part in the products, docs/ops.md "Non-finite values", as in the reference).
inline float padding_products(const float* dy, int64_t lo, int64_t hi) {
  float z = 0.0f;
  for (int64_t q = lo; q < hi; ++q) z += 0.0f * dy[q];
  return z;
}

// sum over p, q of dy [P, Q] times input plane x [H, W] at tap (r, s): one image's part of
// dw[oc, 0, r, s], each row's dot in float, their total in double. Outputs whose tap reads the
// padding add 0 * dy.
NNP_CPU_AVX2_CLONES
double filter_tap(const conv_nd_geometry& g, const tap_range& t, const float* x, const float* dy,
                  int64_t r) {
  const int64_t W = g.in[2], P = g.out[1], Q = g.out[2], stride = g.stride[2];
  double total = 0.0;
  for (int64_t p = 0; p < P; ++p) {
    const int64_t ih = input_row(g, p, r);
    const float* dyr = dy + p * Q;
    if (ih < 0) {
      total += padding_products(dyr, 0, Q);
      continue;
    }
    total += padding_products(dyr, 0, t.lo) + padding_products(dyr, t.hi, Q);
    const float* xr = x + ih * W;
    if (stride == 1) {
      total += dot(dyr, xr + t.off, t.lo, t.hi);
    } else {
      float acc = 0.0f;
      for (int64_t q = t.lo; q < t.hi; ++q) acc += dyr[q] * xr[q * stride + t.off];
      total += acc;
    }
  }
  return total;
}

// ---- one input channel, at least 8 output channels per group: channel-blocked kernels --------
// The cnn's conv1 (one input channel, 32 output channels, 3x3) ran through im2col + SGEMM at
// 12 GFLOP/s on one thread: a [32, 9] . [9, 676] product per image, too shallow for SGEMM. These
// kernels keep 8 output channels of a group in registers: forward, for 8 consecutive outputs
// of a row, loads the input vector of each tap once and multiply-adds it into 8 accumulators
// (a broadcast weight each); backward-filter, for each output channel, multiplies a vector of dy
// by the 9 shifted input vectors of a 3x3 filter into 9 accumulators. Rows are covered by
// vectors at q = 0, 8, .. and a last one at Q - 8 (overlapping: the forward stores the same
// values twice, backward-filter masks the lanes already counted). The input plane is read in
// place when the convolution has no padding, else from a zero-padded copy. Where the CPU has AVX2
// and FMA; elsewhere the paths below (SGEMM for one group, the loops above for depthwise).
#ifdef NNP_CPU_X86_KERNELS

// The rows and columns of input a whole output plane reads (stride 1 along the row).
struct padded_plane {
  int64_t rows, cols;  // Hb, Wb
  bool in_place;       // no padding and the input is exactly that plane
};
padded_plane padded_of(const conv_nd_geometry& g) {
  const int64_t rows = (g.out[1] - 1) * g.stride[1] + (g.kernel[1] - 1) * g.dilation[1] + 1;
  const int64_t cols = g.out[2] + (g.kernel[2] - 1) * g.dilation[2];
  return {rows, cols, g.pad[1] == 0 && g.pad[2] == 0 && rows == g.in[1] && cols == g.in[2]};
}

// A task's buffer for place_plane, zeroed (nullptr when planes are read in place). Every plane
// is copied into the same region of it, so the padding around that region stays zero.
float* padded_buffer(const padded_plane& pp) {
  if (pp.in_place) return nullptr;
  float* buf = scratch(kTaskSlot0, static_cast<size_t>(pp.rows * pp.cols));
  std::fill(buf, buf + pp.rows * pp.cols, 0.0f);
  return buf;
}

// x [H, W] with the call's padding into buf [Hb, Wb] from padded_buffer (zeros outside x), or x
// itself in place.
const float* place_plane(const conv_nd_geometry& g, const padded_plane& pp, const float* x,
                         float* buf) {
  if (pp.in_place) return x;
  for (int64_t i = 0; i < pp.rows; ++i) {
    const int64_t ih = i - g.pad[1];
    if (ih < 0 || ih >= g.in[1]) continue;
    const int64_t j0 = std::max<int64_t>(0, g.pad[2]), j1 = std::min(pp.cols, g.in[2] + g.pad[2]);
    if (j1 > j0)
      std::memcpy(buf + i * pp.cols + j0, x + ih * g.in[2] + (j0 - g.pad[2]),
                  sizeof(float) * static_cast<size_t>(j1 - j0));
  }
  return buf;
}

bool blocked_applies(const conv_nd_geometry& g) {
  return cpu_avx2_fma() && g.spatial <= 2 && g.cig() == 1 && g.cog() >= 8 && g.in[0] == 1 &&
         g.kernel[0] == 1 && g.out[0] == 1 && g.stride[2] == 1 && g.out[2] >= 8;
}

// Output planes of the 8 channels k0.. (kb of them valid, weights wp packed [R S][8] with zero
// columns past kb) from input plane xb [Hb, Wb]: y + j PQ for channel k0 + j.
NNP_CPU_AVX2_FMA void forward_block8(const conv_nd_geometry& g, const padded_plane& pp,
                                     const float* xb, const float* wp, const float* bias, int kb,
                                     const out_clamp& clamp, float* y) {
  const int64_t P = g.out[1], Q = g.out[2], R = g.kernel[1], S = g.kernel[2], PQ = P * Q;
  const int64_t sh = g.stride[1], dh = g.dilation[1], dw = g.dilation[2];
  float b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int j = 0; j < kb; ++j) b[j] = bias != nullptr ? bias[j] : 0.0f;
  const __m256 lo = _mm256_set1_ps(clamp.lo), hi = _mm256_set1_ps(clamp.hi);
  for (int64_t p = 0; p < P; ++p) {
    for (int64_t q0 = 0; q0 < Q; q0 += 8) {
      const int64_t q = std::min(q0, Q - 8);
      __m256 a0 = _mm256_set1_ps(b[0]), a1 = _mm256_set1_ps(b[1]), a2 = _mm256_set1_ps(b[2]);
      __m256 a3 = _mm256_set1_ps(b[3]), a4 = _mm256_set1_ps(b[4]), a5 = _mm256_set1_ps(b[5]);
      __m256 a6 = _mm256_set1_ps(b[6]), a7 = _mm256_set1_ps(b[7]);
      for (int64_t r = 0; r < R; ++r) {
        const float* row = xb + (p * sh + r * dh) * pp.cols + q;
        const float* wr = wp + r * S * 8;
        for (int64_t t = 0; t < S; ++t) {
          const __m256 xv = _mm256_loadu_ps(row + t * dw);
          const float* w8 = wr + t * 8;
          a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(w8 + 0), xv, a0);
          a1 = _mm256_fmadd_ps(_mm256_broadcast_ss(w8 + 1), xv, a1);
          a2 = _mm256_fmadd_ps(_mm256_broadcast_ss(w8 + 2), xv, a2);
          a3 = _mm256_fmadd_ps(_mm256_broadcast_ss(w8 + 3), xv, a3);
          a4 = _mm256_fmadd_ps(_mm256_broadcast_ss(w8 + 4), xv, a4);
          a5 = _mm256_fmadd_ps(_mm256_broadcast_ss(w8 + 5), xv, a5);
          a6 = _mm256_fmadd_ps(_mm256_broadcast_ss(w8 + 6), xv, a6);
          a7 = _mm256_fmadd_ps(_mm256_broadcast_ss(w8 + 7), xv, a7);
        }
      }
      const __m256 acc[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
      float* out = y + p * Q + q;
      for (int j = 0; j < kb; ++j) _mm256_storeu_ps(out + j * PQ, clamp8(acc[j], lo, hi));
    }
  }
}

// Sum of the 8 lanes of v, in double.
NNP_CPU_AVX2_FMA inline double lane_sum(__m256 v) {
  alignas(32) float f[8];
  _mm256_store_ps(f, v);
  double t = 0.0;
  for (float x : f) t += x;
  return t;
}

// One image's part of dw[k, 0, r, s] for a 3x3 filter: sum over p, q of dy [P, Q] times the
// input plane xb [Hb, Wb] at tap (r, s), added into tot[3 r + s].
NNP_CPU_AVX2_FMA void filter_taps3x3(const conv_nd_geometry& g, const padded_plane& pp,
                                     const float* xb, const float* dy, double* tot) {
  const int64_t P = g.out[1], Q = g.out[2];
  const int64_t sh = g.stride[1], dh = g.dilation[1], dw = g.dilation[2];
  // lanes of the last vector of a row that earlier vectors already covered
  const int64_t last = (Q - 1) / 8 * 8, overlap = last - (Q - 8);
  const __m256i keep_last = _mm256_cmpgt_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                               _mm256_set1_epi32(static_cast<int>(overlap) - 1));
  __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0,
         c8 = c0;
  for (int64_t p = 0; p < P; ++p) {
    const float* r0 = xb + p * sh * pp.cols;
    const float* r1 = r0 + dh * pp.cols;
    const float* r2 = r1 + dh * pp.cols;
    for (int64_t q0 = 0; q0 < Q; q0 += 8) {
      const int64_t q = std::min(q0, Q - 8);
      __m256 d = _mm256_loadu_ps(dy + p * Q + q);
      if (q != q0) d = _mm256_and_ps(d, _mm256_castsi256_ps(keep_last));
      c0 = _mm256_fmadd_ps(d, _mm256_loadu_ps(r0 + q), c0);
      c1 = _mm256_fmadd_ps(d, _mm256_loadu_ps(r0 + q + dw), c1);
      c2 = _mm256_fmadd_ps(d, _mm256_loadu_ps(r0 + q + 2 * dw), c2);
      c3 = _mm256_fmadd_ps(d, _mm256_loadu_ps(r1 + q), c3);
      c4 = _mm256_fmadd_ps(d, _mm256_loadu_ps(r1 + q + dw), c4);
      c5 = _mm256_fmadd_ps(d, _mm256_loadu_ps(r1 + q + 2 * dw), c5);
      c6 = _mm256_fmadd_ps(d, _mm256_loadu_ps(r2 + q), c6);
      c7 = _mm256_fmadd_ps(d, _mm256_loadu_ps(r2 + q + dw), c7);
      c8 = _mm256_fmadd_ps(d, _mm256_loadu_ps(r2 + q + 2 * dw), c8);
    }
  }
  const __m256 sums[9] = {c0, c1, c2, c3, c4, c5, c6, c7, c8};
  for (int t = 0; t < 9; ++t) tot[t] += lane_sum(sums[t]);
}

bool blocked_forward(const conv_nd_geometry& g, const float* in, const float* w, const float* b,
                     const out_clamp& clamp, float* out) {
  if (!blocked_applies(g)) return false;
  const int64_t HW = g.in[1] * g.in[2], PQ = g.out[1] * g.out[2], RS = g.kernel[1] * g.kernel[2];
  const int64_t cog = g.cog(), kblocks = (cog + 7) / 8;
  const padded_plane pp = padded_of(g);
  // weights packed per block of 8 channels of a group: [groups][kblocks][R S][8], zeros past cog
  const int64_t wsize = g.groups * kblocks * RS * 8;
  float* wp = scratch(kCallSlot0, static_cast<size_t>(wsize));
  std::fill(wp, wp + wsize, 0.0f);
  for (int64_t oc = 0; oc < g.co; ++oc) {
    const int64_t grp = oc / cog, j = oc % cog;
    for (int64_t t = 0; t < RS; ++t)
      wp[((grp * kblocks + j / 8) * RS + t) * 8 + j % 8] = w[oc * RS + t];
  }
  parallel_for(g.n * g.groups, 1, [&](int64_t tb, int64_t te) {
    float* buf = padded_buffer(pp);
    for (int64_t t = tb; t < te; ++t) {
      const int64_t n = t / g.groups, grp = t % g.groups;
      const float* xb = place_plane(g, pp, in + (n * g.ci + grp) * HW, buf);
      for (int64_t kb = 0; kb < kblocks; ++kb) {
        const int64_t k0 = grp * cog + kb * 8;
        forward_block8(g, pp, xb, wp + (grp * kblocks + kb) * RS * 8,
                       b != nullptr ? b + k0 : nullptr,
                       static_cast<int>(std::min<int64_t>(8, cog - kb * 8)), clamp,
                       out + (n * g.co + k0) * PQ);
      }
    }
  });
  return true;
}

bool blocked_backward_filter(const conv_nd_geometry& g, const float* in, const float* dout,
                             float* dw) {
  if (!blocked_applies(g) || g.kernel[1] != 3 || g.kernel[2] != 3) return false;
  const int64_t HW = g.in[1] * g.in[2], PQ = g.out[1] * g.out[2], cog = g.cog();
  const padded_plane pp = padded_of(g);
  // tasks: blocks of output channels of one group; per image the input plane once, then each
  // channel of the block (the plane stays in L1)
  constexpr int64_t kBlock = 8;
  const int64_t kblocks = (cog + kBlock - 1) / kBlock;
  parallel_for(g.groups * kblocks, 1, [&](int64_t tb, int64_t te) {
    float* buf = padded_buffer(pp);
    for (int64_t t = tb; t < te; ++t) {
      const int64_t grp = t / kblocks, k0 = grp * cog + (t % kblocks) * kBlock;
      const int64_t k1 = std::min(k0 + kBlock, (grp + 1) * cog);
      double tot[kBlock][9] = {};
      for (int64_t n = 0; n < g.n; ++n) {
        const float* xb = place_plane(g, pp, in + (n * g.ci + grp) * HW, buf);
        for (int64_t k = k0; k < k1; ++k)
          filter_taps3x3(g, pp, xb, dout + (n * g.co + k) * PQ, tot[k - k0]);
      }
      for (int64_t k = k0; k < k1; ++k)
        for (int i = 0; i < 9; ++i) dw[k * 9 + i] = static_cast<float>(tot[k - k0][i]);
    }
  });
  return true;
}

// ---- one input and one output channel per group (depthwise layers): register-blocked rows ----
// MobileNetV2's 17 depthwise layers (3x3, padding 1, stride 1 or 2, planes of 112x112 down to
// 7x7) ran the loops above at 2-5x the time of reading x and writing y once: a read-modify-write
// of the output row per tap and, at stride 2, strided reads that do not vectorise. Here each
// task zeroes a buffer once and copies every plane into it with its padding, each padded row
// split into stride_w column phases (phase k, column j: padded column j * stride_w + k; stride
// 1 a plain copy, stride 2 the even and odd columns, de-interleaved with AVX2 shuffles), so that
// tap (r, s) of output (p, q) reads phase (s * dil_w) % stride_w, column q + (s * dil_w) /
// stride_w of padded row p * stride_h + r * dil_h: for consecutive q a contiguous run, in bounds
// without a test. Then every 8 outputs of a row are one vector: the bias, every tap's broadcast
// weight FMA'd in (r, s) order, the clamp, one store. 4 vectors at a time (4 independent FMA
// chains; the 9 weights of a 3x3 filter stay in registers), a row's last vector overlapping the
// one before; rows shorter than 8 (7x7 planes) one vector each, 4 rows at a time, storing 8
// lanes (the ones past Q land in the next row, stored after). Padding taps multiply the buffer's
// zeros, as the formula says (0 * inf = NaN). Measured at batch 32, 3x3, padding 1, clamp
// [0, 6] (2-core AMD EPYC, 2 threads; nnplug.ops.conv_forward from Python, median of 7 calls,
// median of 5 runs alternated with the loops above; ms, the loops -> these rows):
//   x [32, 96, 112, 112] stride 2  28.5 -> 16.1    x [32, 192, 28, 28] stride 2   5.7 -> 2.6
//   x [32, 32, 112, 112] stride 1  15.6 ->  9.6    x [32, 384, 14, 14] stride 1   8.2 -> 2.0
//   x [32, 144, 56, 56] stride 1   19.8 ->  9.8    x [32, 576, 14, 14] stride 1  13.1 -> 3.3
//   x [32, 144, 56, 56] stride 2   11.1 ->  6.3    x [32, 576, 14, 14] stride 2   8.5 -> 2.1
//   x [32, 192, 28, 28] stride 1   10.8 ->  4.1    x [32, 960, 7, 7] stride 1    10.6 -> 2.0
// The large planes are then at the machine's memory bandwidth (x read and y written once:
// 193 MB in 16 ms for the first row); streaming stores for y (no read for ownership) gained
// nothing measurable there.

// A plane's buffer: rows [Hb] of stride_w phases [Wp] each (Wp = Q + (S - 1) * dil_w / stride_w
// columns: every column a tap of an output q < Q reads), and 8 floats of slack at the end for
// the lanes past Q of the vectors of rows shorter than 8.
struct phase_plane {
  int64_t rows, width, pitch, size;  // Hb, Wp, floats per row (stride_w * Wp), floats in all
};
phase_plane phase_plane_of(const conv_nd_geometry& g) {
  const int64_t rows = (g.out[1] - 1) * g.stride[1] + (g.kernel[1] - 1) * g.dilation[1] + 1;
  const int64_t width = g.out[2] + (g.kernel[2] - 1) * g.dilation[2] / g.stride[2];
  const int64_t pitch = g.stride[2] * width;
  return {rows, width, pitch, rows * pitch + 8};
}

// 2-D, one input and one output channel per group; any filter, stride, dilation and padding.
bool rows_apply(const conv_nd_geometry& g) {
  return cpu_avx2_fma() && applies(g) && g.spatial == 2 && g.cog() == 1;
}

// n floats from src to dst, in vectors (the last one overlapping the one before; calls to
// memcpy cost more than the copy for rows of 7 or 14).
NNP_CPU_AVX2_FMA inline void copy_row(float* dst, const float* src, int64_t n) {
  if (n >= 8) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) _mm256_storeu_ps(dst + j, _mm256_loadu_ps(src + j));
    if (j < n) _mm256_storeu_ps(dst + n - 8, _mm256_loadu_ps(src + n - 8));
  } else if (n >= 4) {
    _mm_storeu_ps(dst, _mm_loadu_ps(src));
    _mm_storeu_ps(dst + n - 4, _mm_loadu_ps(src + n - 4));
  } else {
    for (int64_t j = 0; j < n; ++j) dst[j] = src[j];
  }
}

// Columns 2m, 2m + 2, .. 2m + 14 of row x to de + m, columns 2m + 1, .. 2m + 15 to dd + m.
NNP_CPU_AVX2_FMA inline void deinterleave8(const float* x, int64_t m, float* de, float* dd) {
  const __m256 a = _mm256_loadu_ps(x + 2 * m), b = _mm256_loadu_ps(x + 2 * m + 8);
  // in-lane shuffles give [a0 a2 b0 b2 a4 a6 b4 b6]; the 64-bit permute orders them
  const __m256 even = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
  const __m256 odd = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
  _mm256_storeu_ps(de + m, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even),
                                                                  _MM_SHUFFLE(3, 1, 2, 0))));
  _mm256_storeu_ps(dd + m, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(odd),
                                                                  _MM_SHUFFLE(3, 1, 2, 0))));
}

// deinterleave8 for 4 pairs.
NNP_CPU_AVX2_FMA inline void deinterleave4(const float* x, int64_t m, float* de, float* dd) {
  const __m128 a = _mm_loadu_ps(x + 2 * m), b = _mm_loadu_ps(x + 2 * m + 4);
  _mm_storeu_ps(de + m, _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)));
  _mm_storeu_ps(dd + m, _mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
}

// Input plane x [H, W] into buf (phase_plane pp, zeroed by the task: only the positions that
// hold x are written, the same for every plane, so the padding stays zero).
NNP_CPU_AVX2_FMA void place_phases(const conv_nd_geometry& g, const phase_plane& pp, const float* x,
                                   float* buf) {
  const int64_t H = g.in[1], W = g.in[2], pt = g.pad[1], pl = g.pad[2], sw = g.stride[2];
  const int64_t Wp = pp.width;
  const int64_t i0 = std::min(pp.rows, pt), i1 = std::min(pp.rows, H + pt);
  for (int64_t i = i0; i < i1; ++i) {
    const float* xr = x + (i - pt) * W;
    float* dr = buf + i * pp.pitch;
    if (sw == 1) {
      const int64_t j0 = std::min(Wp, pl), j1 = std::min(Wp, W + pl);
      copy_row(dr + j0, xr + (j0 - pl), j1 - j0);
    } else if (sw == 2) {
      // x[2m + e] is padded column 2m + e + pl: phase (e + pl) & 1, column m + (e + pl) / 2
      float* de = dr + (pl & 1) * Wp + pl / 2;
      float* dd = dr + ((pl + 1) & 1) * Wp + (pl + 1) / 2;
      const int64_t me = std::max<int64_t>(0, std::min((W + 1) / 2, Wp - pl / 2));
      const int64_t md = std::max<int64_t>(0, std::min(W / 2, Wp - (pl + 1) / 2));
      const int64_t mv = std::min(me, md);  // pairs both phases take
      // vectors of 8 pairs, the last one overlapping the one before (rows of 14 or 28: 7 or 14
      // pairs), else of 4, then the odd column of a row of odd length
      if (mv >= 8) {
        for (int64_t m = 0; m < mv; m += 8) deinterleave8(xr, std::min(m, mv - 8), de, dd);
      } else if (mv >= 4) {
        deinterleave4(xr, 0, de, dd);
        deinterleave4(xr, mv - 4, de, dd);
      } else {
        for (int64_t m = 0; m < mv; ++m) {
          de[m] = xr[2 * m];
          dd[m] = xr[2 * m + 1];
        }
      }
      if (me > mv) de[mv] = xr[2 * mv];  // me, md <= mv + 1
      if (md > mv) dd[mv] = xr[2 * mv + 1];
    } else {
      // phase k, column j: x[j * sw + k - pl] for 0 <= j * sw + k - pl < W
      for (int64_t k = 0; k < sw; ++k) {
        const int64_t j0 = k >= pl ? 0 : (pl - k + sw - 1) / sw;
        const int64_t j1 = std::min(Wp, W + pl - k <= 0 ? 0 : (W + pl - k + sw - 1) / sw);
        for (int64_t j = j0; j < j1; ++j) dr[k * Wp + j] = xr[j * sw + k - pl];
      }
    }
  }
}

// The accumulators of kVecs output vectors, vector u from buf at x + xo[u] (the first padded
// row and column its outputs read), tap t at offset off[t] from there: bias, then tap by tap in
// (r, s) order (the weights in registers, wv, when kTaps > 0, else broadcast from wk). The
// vectors are independent chains of FMAs: 4 of them hide the FMA latency.
template <int kTaps, int kVecs>
NNP_CPU_AVX2_FMA inline void row_vectors(const float* x, const int64_t* xo, const int64_t* off,
                                         const __m256* wv, const float* wk, int taps, __m256 bias,
                                         __m256* acc) {
  for (int u = 0; u < kVecs; ++u) acc[u] = bias;
  const int n = kTaps > 0 ? kTaps : taps;
  for (int t = 0; t < n; ++t) {
    const __m256 w = kTaps > 0 ? wv[t] : _mm256_broadcast_ss(wk + t);
    const float* xt = x + off[t];
    for (int u = 0; u < kVecs; ++u)
      acc[u] = _mm256_fmadd_ps(w, _mm256_loadu_ps(xt + xo[u]), acc[u]);
  }
}

// row_vectors, clamped, stored at y + yo[u] in order of u.
template <int kTaps, int kVecs>
NNP_CPU_AVX2_FMA inline void store_vectors(const float* x, const int64_t* xo, const int64_t* off,
                                           const __m256* wv, const float* wk, int taps, __m256 bias,
                                           __m256 lo, __m256 hi, float* y, const int64_t* yo) {
  __m256 acc[kVecs];
  row_vectors<kTaps, kVecs>(x, xo, off, wv, wk, taps, bias, acc);
  for (int u = 0; u < kVecs; ++u) _mm256_storeu_ps(y + yo[u], clamp8(acc[u], lo, hi));
}

// Output plane y [P, Q] from buf (place_phases) with filter wk [R, S] (kTaps = R * S, or 0 for
// any), tap t at offset off[t] of an output row's first padded row. Rows of Q >= 8 in blocks of
// 4 vectors, then the last 1-4 (the last one at Q - 8); rows of Q < 8 (7x7 planes) one vector a
// row, 4 rows at a time, each store's lanes past Q landing in the next rows before their own
// stores (the last rows through a copy: they would land past the plane).
template <int kTaps>
NNP_CPU_AVX2_FMA void rows_plane(const conv_nd_geometry& g, const phase_plane& pp,
                                 const int64_t* off, const float* buf, const float* wk, float bias,
                                 const out_clamp& clamp, float* y) {
  const int64_t P = g.out[1], Q = g.out[2], step = g.stride[1] * pp.pitch;
  const int taps = static_cast<int>(g.kernel[1] * g.kernel[2]);
  __m256 wv[kTaps > 0 ? kTaps : 1] = {};
  for (int t = 0; t < kTaps; ++t) wv[t] = _mm256_set1_ps(wk[t]);
  const __m256 b = _mm256_set1_ps(bias);
  const __m256 lo = _mm256_set1_ps(clamp.lo), hi = _mm256_set1_ps(clamp.hi);
  if (Q < 8) {
    // the rows p < pf store 8 lanes within the plane: p Q + 8 <= P Q
    const int64_t pf = std::max<int64_t>(0, P - (8 + Q - 1) / Q + 1);
    const int64_t xo[4] = {0, step, 2 * step, 3 * step}, yo[4] = {0, Q, 2 * Q, 3 * Q};
    int64_t p = 0;
    for (; p + 4 <= pf; p += 4)
      store_vectors<kTaps, 4>(buf + p * step, xo, off, wv, wk, taps, b, lo, hi, y + p * Q, yo);
    for (; p < pf; ++p)
      store_vectors<kTaps, 1>(buf + p * step, xo, off, wv, wk, taps, b, lo, hi, y + p * Q, yo);
    for (; p < P; ++p) {
      __m256 acc;
      row_vectors<kTaps, 1>(buf + p * step, xo, off, wv, wk, taps, b, &acc);
      alignas(32) float last[8];
      _mm256_store_ps(last, clamp8(acc, lo, hi));
      for (int64_t q = 0; q < Q; ++q) y[p * Q + q] = last[q];
    }
    return;
  }
  for (int64_t p = 0; p < P; ++p) {
    const float* x = buf + p * step;
    float* yr = y + p * Q;
    int64_t q = 0;
    const int64_t o4[4] = {0, 8, 16, 24};
    for (; q + 32 <= Q; q += 32)
      store_vectors<kTaps, 4>(x + q, o4, off, wv, wk, taps, b, lo, hi, yr + q, o4);
    if (q == Q) continue;
    // the last 1-4 vectors: q, q + 8, .. and the last one at Q - 8
    const int64_t o[4] = {std::min(q, Q - 8), std::min(q + 8, Q - 8), std::min(q + 16, Q - 8),
                          Q - 8};
    switch ((Q - q + 7) / 8) {
      case 1:
        store_vectors<kTaps, 1>(x, o, off, wv, wk, taps, b, lo, hi, yr, o);
        break;
      case 2:
        store_vectors<kTaps, 2>(x, o, off, wv, wk, taps, b, lo, hi, yr, o);
        break;
      case 3:
        store_vectors<kTaps, 3>(x, o, off, wv, wk, taps, b, lo, hi, yr, o);
        break;
      default:
        store_vectors<kTaps, 4>(x, o, off, wv, wk, taps, b, lo, hi, yr, o);
    }
  }
}

bool rows_forward(const conv_nd_geometry& g, const float* in, const float* w, const float* b,
                  const out_clamp& clamp, float* out) {
  if (!rows_apply(g)) return false;
  const int64_t HW = g.in[1] * g.in[2], PQ = g.out[1] * g.out[2], RS = g.kernel[1] * g.kernel[2];
  const int64_t sw = g.stride[2];
  const phase_plane pp = phase_plane_of(g);
  std::vector<int64_t> off(static_cast<size_t>(RS));
  for (int64_t r = 0; r < g.kernel[1]; ++r)
    for (int64_t s = 0; s < g.kernel[2]; ++s) {
      const int64_t c = s * g.dilation[2];
      off[static_cast<size_t>(r * g.kernel[2] + s)] =
          r * g.dilation[1] * pp.pitch + (c % sw) * pp.width + c / sw;
    }
  // the bounds when inactive: +-inf, whatever the caller left in lo and hi
  const out_clamp bounds = clamp.active ? clamp : out_clamp{};
  parallel_for(g.n * g.co, grain_of(g), [&](int64_t tb, int64_t te) {
    float* buf = scratch(kTaskSlot0, static_cast<size_t>(pp.size));
    std::fill(buf, buf + pp.size, 0.0f);
    for (int64_t t = tb; t < te; ++t) {
      // one input channel per output channel: plane t of the input is plane t of the output's
      const int64_t oc = t % g.co;
      const float* wk = w + oc * RS;
      const float bias = b != nullptr ? b[oc] : 0.0f;
      place_phases(g, pp, in + t * HW, buf);
      if (RS == 9)
        rows_plane<9>(g, pp, off.data(), buf, wk, bias, bounds, out + t * PQ);
      else
        rows_plane<0>(g, pp, off.data(), buf, wk, bias, bounds, out + t * PQ);
    }
  });
  return true;
}
#else
bool blocked_forward(const conv_nd_geometry&, const float*, const float*, const float*,
                     const out_clamp&, float*) {
  return false;
}
bool blocked_backward_filter(const conv_nd_geometry&, const float*, const float*, float*) {
  return false;
}
bool rows_forward(const conv_nd_geometry&, const float*, const float*, const float*,
                  const out_clamp&, float*) {
  return false;
}
#endif

}  // namespace

bool depthwise_forward(const conv_nd_geometry& g, const float* in, const float* w, const float* b,
                       const out_clamp& clamp, float* out) {
  if (blocked_forward(g, in, w, b, clamp, out) || rows_forward(g, in, w, b, clamp, out))
    return true;
  if (!applies(g)) return false;
  const int64_t HW = g.in[1] * g.in[2], PQ = g.out[1] * g.out[2], RS = g.kernel[1] * g.kernel[2];
  const int64_t cog = g.cog();
  const std::vector<tap_range> taps = taps_of(g);
  parallel_for(g.n * g.co, grain_of(g), [&](int64_t tb, int64_t te) {
    for (int64_t t = tb; t < te; ++t) {
      const int64_t n = t / g.co, oc = t % g.co;
      forward_plane(g, taps.data(), in + (n * g.ci + oc / cog) * HW, w + oc * RS,
                    b != nullptr ? b[oc] : 0.0f, clamp, out + t * PQ);
    }
  });
  return true;
}

bool depthwise_backward_data(const conv_nd_geometry& g, const float* dout, const float* w,
                             const float* b, float* din) {
  if (!applies(g)) return false;
  const int64_t HW = g.in[1] * g.in[2], PQ = g.out[1] * g.out[2], RS = g.kernel[1] * g.kernel[2];
  const int64_t cog = g.cog();
  const std::vector<tap_range> taps = taps_of(g);
  parallel_for(g.n * g.ci, std::max<int64_t>(1, grain_of(g) / cog), [&](int64_t tb, int64_t te) {
    for (int64_t t = tb; t < te; ++t) {
      const int64_t n = t / g.ci, grp = t % g.ci;
      float* dx = din + t * HW;
      std::fill(dx, dx + HW, b != nullptr ? b[grp] : 0.0f);
      for (int64_t oc = grp * cog; oc < (grp + 1) * cog; ++oc)
        backward_data_plane(g, taps.data(), dout + (n * g.co + oc) * PQ, w + oc * RS, dx);
    }
  });
  return true;
}

bool depthwise_backward_filter(const conv_nd_geometry& g, const float* in, const float* dout,
                               float* dw) {
  if (blocked_backward_filter(g, in, dout, dw)) return true;
  if (!applies(g)) return false;
  const int64_t HW = g.in[1] * g.in[2], PQ = g.out[1] * g.out[2];
  const int64_t R = g.kernel[1], S = g.kernel[2], cog = g.cog();
  const std::vector<tap_range> taps = taps_of(g);
  parallel_for(g.co, 1, [&](int64_t ob, int64_t oe) {
    for (int64_t oc = ob; oc < oe; ++oc)
      for (int64_t r = 0; r < R; ++r)
        for (int64_t s = 0; s < S; ++s) {
          double total = 0.0;  // over images
          for (int64_t n = 0; n < g.n; ++n)
            total += filter_tap(g, taps[static_cast<size_t>(s)], in + (n * g.ci + oc / cog) * HW,
                                dout + (n * g.co + oc) * PQ, r);
          dw[(oc * R + r) * S + s] = static_cast<float>(total);
        }
  });
  return true;
}

}  // namespace nnp::cpu
