// nnplug/geometry/conv.hpp — the geometry of the N-D convolution ops (NNP_OP_CONV_* with
// nnp_conv_params, NNP_OP_CONV_TRANSPOSE_* with nnp_conv_transpose_params), the one definition
// for libnnplug (validation) and every plugin (the kit re-exports it as
// <nnplug/kit/conv_nd.hpp>): ONNX's meaning of zeroed attributes, the auto_pad and output_shape
// padding rules (ONNX Conv / ConvTranspose, opset 22) and the output sizes. The resolve
// functions assume params that libnnplug's shape rule accepted. Header-only.
#pragma once

#include <nnplug/geometry/tensor.hpp>

#include <cstdint>
#include <limits>

namespace nnp {

// Spatial dimensions of an N-D convolution: 1, 2 or 3.
constexpr int kConvMaxSpatial = 3;

// ONNX defaults of zeroed params: a stride, dilation or group of 0 means 1.
inline int64_t conv_one_if_zero(int32_t v) { return v == 0 ? 1 : v; }

// Floor division by 2 (total padding may be negative for ConvTranspose's output_shape).
inline wide_int conv_floor_half(wide_int v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

// One spatial axis of a convolution, in its own direction: `in` is the input extent (x for Conv
// and ConvTranspose), `out` the output extent, pads on the padded side (the input of Conv, the
// output of ConvTranspose).
struct conv_axis {
  int64_t in, kernel, out, stride, dilation, pad_begin, pad_end;
};

// Sets the pads from a total (wide: it may not fit int64) split as `begin`; false, with
// a.out = kSizeOverflow, when a pad does not fit int64.
inline bool conv_set_pads(conv_axis& a, wide_int total, wide_int begin) {
  a.pad_begin = narrow_size(begin);
  a.pad_end = narrow_size(total - begin);
  if (a.pad_begin != kSizeOverflow && a.pad_end != kSizeOverflow) return true;
  a.out = kSizeOverflow;
  return false;
}

// ONNX Conv along spatial axis i (of k): pads from auto_pad or params, then the output size
// (conv_out_dim; < 1 when the window does not fit, kSizeOverflow when a pad or the size does not
// fit int64). Overflow-safe for any int64 `in` and `kernel`.
inline conv_axis conv_resolve_axis(const nnp_conv_params& p, int k, int i, int64_t in,
                                   int64_t kernel) {
  conv_axis a{in, kernel, 0, conv_one_if_zero(p.strides[i]), conv_one_if_zero(p.dilations[i]),
              0,  0};
  if (p.auto_pad == NNP_AUTO_PAD_SAME_UPPER || p.auto_pad == NNP_AUTO_PAD_SAME_LOWER) {
    const wide_int out = (wide_int{in} + a.stride - 1) / a.stride;
    wide_int total = (out - 1) * a.stride + wide_int{a.dilation} * (kernel - wide_int{1}) + 1 - in;
    if (total < 0) total = 0;
    const wide_int half = total / 2;
    if (!conv_set_pads(a, total, p.auto_pad == NNP_AUTO_PAD_SAME_UPPER ? half : total - half))
      return a;
  } else if (p.auto_pad != NNP_AUTO_PAD_VALID) {
    a.pad_begin = p.pads[i];
    a.pad_end = p.pads[k + i];
  }
  a.out = conv_out_dim(in, kernel, a.stride, a.pad_begin, a.pad_end, a.dilation);
  return a;
}

// Whether ConvTranspose's output_shape is given: any of its first k entries nonzero.
inline bool conv_transpose_has_output_shape(const nnp_conv_transpose_params& p, int k) {
  for (int i = 0; i < k; ++i)
    if (p.output_shape[i] != 0) return true;
  return false;
}

// ONNX ConvTranspose along spatial axis i (of k): output size and pads (pads may be negative
// when output_shape asks for more than the unpadded size: extra output at the end). a.out is
// kSizeOverflow when it or a pad does not fit int64. Overflow-safe for any int64 `in` and
// `kernel`.
inline conv_axis conv_transpose_resolve_axis(const nnp_conv_transpose_params& p, int k, int i,
                                             int64_t in, int64_t kernel) {
  conv_axis a{in, kernel, 0, conv_one_if_zero(p.strides[i]), conv_one_if_zero(p.dilations[i]),
              0,  0};
  const wide_int full = wide_int{a.stride} * (in - wide_int{1}) + p.output_padding[i] +
                        wide_int{a.dilation} * (kernel - wide_int{1}) + 1;
  const bool same = p.auto_pad == NNP_AUTO_PAD_SAME_UPPER || p.auto_pad == NNP_AUTO_PAD_SAME_LOWER;
  wide_int out = 0;
  if (conv_transpose_has_output_shape(p, k) || same) {
    out = conv_transpose_has_output_shape(p, k) ? wide_int{p.output_shape[i]}
                                                : wide_int{in} * a.stride;
    const wide_int total = full - out;
    const wide_int half = conv_floor_half(total);
    // ONNX: SAME_UPPER puts the odd element at the end, anything else at the beginning.
    if (!conv_set_pads(a, total, p.auto_pad == NNP_AUTO_PAD_SAME_UPPER ? half : total - half))
      return a;
  } else if (p.auto_pad == NNP_AUTO_PAD_VALID) {
    out = full;
  } else {
    a.pad_begin = p.pads[i];
    a.pad_end = p.pads[k + i];
    out = full - a.pad_begin - a.pad_end;
  }
  a.out = narrow_size(out);
  return a;
}

// A convolution in "forward" terms, for kernels: input [n, ci, in...] -> output [n, co, out...]
// with filter [co, ci/groups, kernel...]; every output position o reads input position
// o*stride - pad + r*dilation through tap r. Always 3 spatial axes: a convolution with k < 3
// gets leading axes of extent 1 (stride 1, dilation 1, no padding). NNP_OP_CONV_* maps x to the
// input and y to the output; NNP_OP_CONV_TRANSPOSE_* maps its y to the input and its x to the
// output (its filter [C, K/group, R..] is then exactly [co, ci/groups, kernel..]).
struct conv_nd_geometry {
  int spatial;  // k = 1..3
  int64_t n, ci, co, groups;
  int64_t in[kConvMaxSpatial], kernel[kConvMaxSpatial], out[kConvMaxSpatial];
  int64_t stride[kConvMaxSpatial], dilation[kConvMaxSpatial], pad[kConvMaxSpatial];

  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
  int64_t cig() const { return ci / groups; }  // input channels per group
  int64_t cog() const { return co / groups; }  // output channels per group
};

namespace conv_detail {
// The geometry of an op with params p (nnp_conv_params or nnp_conv_transpose_params), its x
// [N, C, D..] and its filter w [.., .., R..]: k = x.ndim - 2 spatial axes (right-aligned in the
// kConvMaxSpatial axes; the leading ones get extent 1, stride 1, dilation 1, no padding), n from
// x, groups from p, ci and co as given. Spatial axis i takes its extents from `input` (in), w
// (kernel) and `output` (out), and its stride, dilation and begin pad from
// resolve(p, k, i, D_i, R_i).
template <typename P>
conv_nd_geometry geometry_of(const P& p, conv_axis (*resolve)(const P&, int, int, int64_t, int64_t),
                             const DLTensor& x, const DLTensor& w, int64_t ci, int64_t co,
                             const DLTensor& input, const DLTensor& output) {
  const int k = x.ndim - 2;
  conv_nd_geometry g{};
  g.spatial = k;
  g.groups = conv_one_if_zero(p.group);
  for (int i = 0; i < kConvMaxSpatial; ++i) {
    g.in[i] = g.kernel[i] = g.out[i] = g.stride[i] = g.dilation[i] = 1;
    g.pad[i] = 0;
  }
  g.n = x.shape[0];
  g.ci = ci;
  g.co = co;
  for (int i = 0; i < k; ++i) {
    const int j = kConvMaxSpatial - k + i;
    const conv_axis a = resolve(p, k, i, x.shape[2 + i], w.shape[2 + i]);
    g.in[j] = input.shape[2 + i];
    g.kernel[j] = w.shape[2 + i];
    g.out[j] = output.shape[2 + i];
    g.stride[j] = a.stride;
    g.dilation[j] = a.dilation;
    g.pad[j] = a.pad_begin;
  }
  return g;
}
}  // namespace conv_detail

// NNP_OP_CONV_*: x [N, C, D..], w [K, C/group, R..], y [N, K, O..] (shapes from the tensors).
inline conv_nd_geometry conv_nd_of_conv(const nnp_conv_params& p, const DLTensor& x,
                                        const DLTensor& w, const DLTensor& y) {
  return conv_detail::geometry_of(p, conv_resolve_axis, x, w, x.shape[1], w.shape[0], x, y);
}

// NNP_OP_CONV_FORWARD's convolution: as conv_nd_of_conv, except that with the fused max pooling
// (ABI 1.8: max_pool = p >= 2) y holds the pooled output [N, K, floor(O/p)..], so the
// convolution's output extents O come from the formula (conv_resolve_axis), not from y.
inline conv_nd_geometry conv_nd_of_conv_forward(const nnp_conv_params& p, const DLTensor& x,
                                                const DLTensor& w, const DLTensor& y) {
  conv_nd_geometry g = conv_nd_of_conv(p, x, w, y);
  if (p.max_pool > 1) {
    const int k = x.ndim - 2;
    for (int i = 0; i < k; ++i)
      g.out[kConvMaxSpatial - k + i] =
          conv_resolve_axis(p, k, i, x.shape[2 + i], w.shape[2 + i]).out;
  }
  return g;
}

// The window (and stride) of conv_forward's fused max pooling: max_pool, or 1 for none.
inline int64_t conv_max_pool_of(const nnp_conv_params& p) {
  return p.max_pool > 1 ? p.max_pool : 1;
}

// NNP_OP_CONV_TRANSPOSE_*: x [N, C, D..], w [C, K/group, R..], y [N, K, O..]; the geometry of
// the convolution whose input is y and whose output is x.
inline conv_nd_geometry conv_nd_of_transpose(const nnp_conv_transpose_params& p, const DLTensor& x,
                                             const DLTensor& w, const DLTensor& y) {
  return conv_detail::geometry_of(p, conv_transpose_resolve_axis, x, w, y.shape[1], x.shape[1], y,
                                  x);
}

// The fused clamp of NNP_OP_CONV_FORWARD (nnp_conv_params, ABI 1.7): y = min(max(y, lo), hi)
// after the bias, a bound that is not given being -inf / +inf, so that NaN stays NaN (both
// compares are false) and lo > hi gives hi everywhere (ONNX Clip, as NNP_OP_CLIP).
struct conv_clamp {
  bool active = false;  // a bound is given
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  template <typename T>
  T apply(T v) const {
    const T l = static_cast<T>(lo), h = static_cast<T>(hi);
    v = v < l ? l : v;
    return v > h ? h : v;
  }
};
inline conv_clamp conv_clamp_of(const nnp_conv_params& p) {
  conv_clamp c;
  c.active = p.has_clip_min != 0 || p.has_clip_max != 0;
  if (p.has_clip_min != 0) c.lo = p.clip_min;
  if (p.has_clip_max != 0) c.hi = p.clip_max;
  return c;
}

// The strides {h, w} and pads {top, left, bottom, right} (ONNX's order: begins, then ends) of a
// 2-D params struct p (nnp_conv2d_params, nnp_pool2d_params) in N-D params q.
template <typename P, typename Q>
void strides_pads_of_2d(const P& p, Q* q) {
  q->strides[0] = p.stride_h;
  q->strides[1] = p.stride_w;
  q->pads[0] = p.pad_top;
  q->pads[1] = p.pad_left;
  q->pads[2] = p.pad_bottom;
  q->pads[3] = p.pad_right;
}

// ABI 1.0's 2-D convolution as the N-D op with k = 2: nnp_conv2d_params as nnp_conv_params
// (strides, pads [top, left, bottom, right], dilations and groups in their ONNX places, no
// auto_pad; the kernel shape is w's). Tensors and formulas are the same.
inline nnp_conv_params conv_params_of_2d(const nnp_conv2d_params& p) {
  nnp_conv_params q{};
  q.struct_size = sizeof q;
  q.group = p.groups;
  strides_pads_of_2d(p, &q);
  q.dilations[0] = p.dilation_h;
  q.dilations[1] = p.dilation_w;
  return q;
}

}  // namespace nnp
