// conv.hpp — the convolution algorithms of the CPU backend that conv.cpp (im2col / vol2col +
// SGEMM, every op of the family) hands a call to when they apply: Winograd F(2x2, 3x3) and F(4x4,
// 3x3) (conv_winograd.cpp), then the direct depthwise kernels (conv_depthwise.cpp). Every algorithm
// takes its sizes from the one N-D geometry of nnplug/kit/conv_nd.hpp (conv_nd_geometry, in
// "forward" terms: input [n, ci, in..] -> output [n, co, out..], filter [co, ci/groups, kernel..];
// compact float32 tensors).
#pragma once

#include "cpu_backend.hpp"

#include <nnplug/kit/conv_nd.hpp>

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

#ifdef NNP_CPU_X86_KERNELS
// out_clamp::apply on 8 lanes (max and min return their second operand when one is NaN, so v
// goes second: NaN stays NaN).
NNP_CPU_AVX2_FMA inline __m256 clamp8(__m256 v, __m256 lo, __m256 hi) {
  return _mm256_min_ps(hi, _mm256_max_ps(lo, v));
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
// The forward of a 1x1, stride-1, unpadded, ungrouped convolution with at most 32 input channels,
// where the CPU has AVX2 and FMA (conv_pointwise.cpp): y written once, bias and clamp applied in
// registers; false, touching nothing, otherwise.
bool pointwise_forward(const conv_nd_geometry& g, const float* in, const float* w, const float* b,
                       const out_clamp& clamp, float* out);

bool depthwise_backward_data(const conv_nd_geometry& g, const float* dout, const float* w,
                             const float* b, float* din);
bool depthwise_backward_filter(const conv_nd_geometry& g, const float* in, const float* dout,
                               float* dw);

}  // namespace nnp::cpu
