// conv.hpp — the convolution algorithms of the CPU backend that conv.cpp (im2col / vol2col +
// SGEMM, every op of the family) hands a call to when they apply: Winograd F(2x2, 3x3) and F(4x4,
// 3x3) (conv_winograd.cpp), then the direct depthwise kernels (conv_depthwise.cpp). Every algorithm
// takes its sizes from the one N-D geometry of nnplug/kit/conv_nd.hpp (conv_nd_geometry, in
// "forward" terms: input [n, ci, in..] -> output [n, co, out..], filter [co, ci/groups, kernel..];
// compact float32 tensors).
#pragma once

#include "cpu_backend.hpp"

#include <nnplug/kit/conv_nd.hpp>

#include <algorithm>
#include <limits>

namespace nnp::cpu {

using nnp::conv_clamp;
using nnp::conv_nd_geometry;

// conv_forward's fused clamp (ABI 1.7) in float: lo and hi are -inf and +inf where a bound is not
// given, so an always-applied clamp leaves every value, NaN and infinities included, as it was.
struct out_clamp {
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
  bool active = false;
  out_clamp() = default;
  explicit out_clamp(const conv_clamp& c)
      : lo(static_cast<float>(c.lo)), hi(static_cast<float>(c.hi)), active(c.active) {}
  float apply(float v) const {  // NaN stays NaN: both compares are false
    v = lo > v ? lo : v;
    return hi < v ? hi : v;
  }
};

// The output columns [q0, q1) of one row whose input column q*stride + off lies in [0, in)
// (im2col's and the shallow kernel's valid range of a tap).
inline void column_range(int64_t off, int64_t stride, int64_t in, int64_t out, int64_t* q0,
                         int64_t* q1) {
  *q0 = off < 0 ? std::min<int64_t>(out, (-off + stride - 1) / stride) : 0;
  const int64_t lim = in - off;  // need q*stride < lim
  *q1 = lim <= 0 ? 0 : std::min<int64_t>(out, (lim + stride - 1) / stride);
  if (*q1 < *q0) *q1 = *q0;
}

// im2col for output positions [j0, j1) (flat over the output volume) of one image and group:
// panel[r ldp + j - j0] = the input element that depth row r = (c, kd, kh, kw), in filter order,
// reads for output j, 0 where it reads padding; x is the group's input [ci / groups, in..]
// (conv.cpp: the forward's panels, the shallow kernel's).
void im2col_panel(const conv_nd_geometry& g, const float* x, int64_t j0, int64_t j1, float* panel,
                  int64_t ldp);

#ifdef NNP_CPU_X86_KERNELS
// out_clamp::apply on 8 lanes (max and min return their second operand when one is NaN, so v
// goes second: NaN stays NaN).
NNP_CPU_AVX2_FMA inline __m256 clamp8(__m256 v, __m256 lo, __m256 hi) {
  return _mm256_min_ps(hi, _mm256_max_ps(lo, v));
}

// x_v += a * b_v for the NV vectors of one row of a block4x8 block.
template <int NV>
NNP_CPU_AVX2_FMA inline void fma_row(__m256 a, __m256 b0, __m256 b1, __m256 b2, __m256& x0,
                                     __m256& x1, __m256& x2) {
  x0 = _mm256_fmadd_ps(a, b0, x0);
  if (NV > 1) x1 = _mm256_fmadd_ps(a, b1, x1);
  if (NV > 2) x2 = _mm256_fmadd_ps(a, b2, x2);
}

// The register block of the small-depth GEMMs (Winograd's gemm_small_depth, the shallow
// convolution's): acc[i][v] = init[i] + sum over r < depth of a[4 r + i] * b[r ldb + 8 v ..
// + 8] for rows i < 4 and NV <= 3 vectors of 8 columns (a: 4 rows packed per depth step; b's
// rows ldb apart, 8 NV floats read from each). The loop keeps named accumulators (as an array
// GCC kept them on the stack, at half the speed); acc is written once, after it.
template <int NV>
NNP_CPU_AVX2_FMA inline void block4x8(const float* a, const float* b, int64_t ldb, int64_t depth,
                                      const float* init, __m256 (&acc)[4][3]) {
  __m256 c00 = _mm256_broadcast_ss(init), c01 = c00, c02 = c00;
  __m256 c10 = _mm256_broadcast_ss(init + 1), c11 = c10, c12 = c10;
  __m256 c20 = _mm256_broadcast_ss(init + 2), c21 = c20, c22 = c20;
  __m256 c30 = _mm256_broadcast_ss(init + 3), c31 = c30, c32 = c30;
  for (int64_t r = 0; r < depth; ++r) {
    const float* br = b + r * ldb;
    const float* ar = a + 4 * r;
    const __m256 b0 = _mm256_loadu_ps(br);
    const __m256 b1 = NV > 1 ? _mm256_loadu_ps(br + 8) : b0;
    const __m256 b2 = NV > 2 ? _mm256_loadu_ps(br + 16) : b0;
    fma_row<NV>(_mm256_broadcast_ss(ar), b0, b1, b2, c00, c01, c02);
    fma_row<NV>(_mm256_broadcast_ss(ar + 1), b0, b1, b2, c10, c11, c12);
    fma_row<NV>(_mm256_broadcast_ss(ar + 2), b0, b1, b2, c20, c21, c22);
    fma_row<NV>(_mm256_broadcast_ss(ar + 3), b0, b1, b2, c30, c31, c32);
  }
  acc[0][0] = c00, acc[0][1] = c01, acc[0][2] = c02, acc[1][0] = c10, acc[1][1] = c11;
  acc[1][2] = c12, acc[2][0] = c20, acc[2][1] = c21, acc[2][2] = c22, acc[3][0] = c30;
  acc[3][1] = c31, acc[3][2] = c32;
}
#endif

// Each returns false when Winograd does not apply to g (2-D, 3x3, stride 1, dilation 1, one
// group, >= 16 channels in and out; backward-data also every padding <= 2), touching nothing,
// or when an operand is not all finite (its transforms would turn an infinity into NaN where the
// direct formula gives +-inf): the forward checks its operands first and touches nothing; the
// backward directions check their result, and return false having written it (the caller then
// overwrites it whole). Else each writes the result and returns true.
//   forward          out = clamp(conv(in, w) + b) (b optional; clamp: conv_forward's fused
//                    clamp, out_clamp{} for none)
//   backward_data    din = dL/din of the forward for dL/dout = dout, + b (b optional, per input
//                    channel: ConvTranspose's bias)
//   backward_filter  dw = dL/dw of the forward for input in and dL/dout = dout
bool winograd_forward(const conv_nd_geometry& g, const float* in, const float* w, const float* b,
                      const out_clamp& clamp, float* out);
// conv_forward's fused 2 x 2 max pooling (ABI 1.8) on the Winograd path: pooled = the 2 x 2
// max pooling of winograd_forward's out, [n, co, out[1] / 2, out[2] / 2], taken from each 2 x 2
// output tile in registers. Where F(2x2) runs with the AVX2 transforms and the plane is at least
// 8 tiles (15 outputs) across; false (nothing written) otherwise.
bool winograd_forward_pool2(const conv_nd_geometry& g, const float* in, const float* w,
                            const float* b, const out_clamp& clamp, float* pooled);
bool winograd_backward_data(const conv_nd_geometry& g, const float* dout, const float* w,
                            const float* b, float* din);
bool winograd_backward_filter(const conv_nd_geometry& g, const float* in, const float* dout,
                              float* dw);

// The same three, direct, when g has one input channel per group and at most 2 spatial axes
// (conv_depthwise.cpp), and either several groups (depthwise layers: groups = ci > 1) or, for
// the forward and the 3x3 backward-filter where the CPU has AVX2 and FMA, at least 8 output
// channels per group (the cnn's conv1); false, touching nothing, otherwise. Finite or not, they
// follow the direct formula.
bool depthwise_forward(const conv_nd_geometry& g, const float* in, const float* w, const float* b,
                       const out_clamp& clamp, float* out);
// The forward of an ungrouped convolution of depth (input channels x kernel volume) at most 32,
// where the CPU has AVX2 and FMA (conv_shallow.cpp): y written once, bias and clamp applied in
// registers; false, touching nothing, otherwise.
bool shallow_forward(const conv_nd_geometry& g, const float* in, const float* w, const float* b,
                     const out_clamp& clamp, float* out);

bool depthwise_backward_data(const conv_nd_geometry& g, const float* dout, const float* w,
                             const float* b, float* din);
bool depthwise_backward_filter(const conv_nd_geometry& g, const float* in, const float* dout,
                               float* dw);

}  // namespace nnp::cpu
