// conv.hpp — the convolution algorithms of the CPU backend that conv.cpp (im2col / vol2col +
// SGEMM, every op of the family) hands a call to when they apply: Winograd F(2x2, 3x3) and F(4x4,
// 3x3) (conv_winograd.cpp), then the direct depthwise kernels (conv_depthwise.cpp). Every algorithm
// takes its sizes from the one N-D geometry of nnplug/kit/conv_nd.hpp (conv_nd_geometry, in
// "forward" terms: input [n, ci, in..] -> output [n, co, out..], filter [co, ci/groups, kernel..];
// compact float32 tensors).
#pragma once

#include "cpu_backend.hpp"

#include <nnplug/kit/conv_nd.hpp>

namespace nnp::cpu {

using nnp::conv_nd_geometry;

// Each returns false when Winograd does not apply to g (2-D, 3x3, stride 1, dilation 1, one
// group, >= 16 channels in and out; backward-data also every padding <= 2), touching nothing,
// or when an operand is not all finite (its transforms would turn an infinity into NaN where the
// direct formula gives +-inf): the forward checks its operands first and touches nothing; the
// backward directions check their result, and return false having written it (the caller then
// overwrites it whole). Else each writes the result and returns true.
//   forward          out = conv(in, w) + b (b optional)
//   backward_data    din = dL/din of the forward for dL/dout = dout, + b (b optional, per input
//                    channel: ConvTranspose's bias)
//   backward_filter  dw = dL/dw of the forward for input in and dL/dout = dout
bool winograd_forward(const conv_nd_geometry& g, const float* in, const float* w, const float* b,
                      float* out);
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
                       float* out);
bool depthwise_backward_data(const conv_nd_geometry& g, const float* dout, const float* w,
                             const float* b, float* din);
bool depthwise_backward_filter(const conv_nd_geometry& g, const float* in, const float* dout,
                               float* dw);

}  // namespace nnp::cpu
