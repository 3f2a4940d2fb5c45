// nnplug/geometry/pool.hpp — the window geometry of N-D pooling (NNP_OP_POOL_FORWARD /
// NNP_OP_POOL_BACKWARD, nnp_pool_params), the one definition for libnnplug (the shape rule) and
// every plugin (the kit re-exports it as <nnplug/kit/pool_nd.hpp>): auto_pad, ceil_mode with
// ONNX's last-window rule, dilations and global pooling resolved to one record per spatial
// dimension. Formulas are those of nnplug_ops.h (ONNX MaxPool / AveragePool, opset 22); keep
// them in this one place. Header-only, no state.
#pragma once

#include <nnplug/geometry/conv.hpp>
#include <nnplug/geometry/tensor.hpp>
#include <nnplug/nnplug_ops.h>

#include <algorithm>
#include <cstdint>

namespace nnp {

// Spatial dimensions pooling supports: x is [N, C, D1..Dk] with 1 <= k <= kPoolMaxSpatial.
constexpr int kPoolMaxSpatial = 3;

// One spatial dimension of a pooling call, resolved: input and output sizes, kernel taps, stride,
// dilation and the padding actually used (explicit, or computed by auto_pad).
struct pool_dim {
  int64_t in, out, kernel, stride, dilation, pad_begin, pad_end;
  int64_t extent() const { return dilation * (kernel - 1) + 1; }  // effective kernel
  // First tap of output o (may be negative: in the begin padding).
  int64_t start(int64_t o) const { return o * stride - pad_begin; }
  // Taps of window o that lie inside the input: j in [j0, j1) (empty when j0 >= j1).
  void inside(int64_t o, int64_t* j0, int64_t* j1) const {
    const int64_t s = start(o);
    int64_t a = s < 0 ? (-s + dilation - 1) / dilation : 0;            // first j with s + j*d >= 0
    int64_t b = in - s <= 0 ? 0 : (in - s + dilation - 1) / dilation;  // first j with >= in
    *j0 = std::min(a, kernel);
    *j1 = std::min(b, kernel);
  }
  // Taps of window o inside the padded extent [-pad_begin, in + pad_end): count_include_pad's
  // divisor along this dimension (a ceil_mode window may run past the end padding).
  int64_t padded_taps(int64_t o) const {
    const int64_t s = start(o), end = in + pad_end;
    if (s >= end) return 0;
    return std::min(kernel, (end - s + dilation - 1) / dilation);
  }
};

// Output size along one dimension for explicit padding (auto_pad NOTSET):
// floor((in + b + e - ek) / s) + 1, or ceil with ceil_mode, dropping a last window that would
// start in the end padding (ONNX's rule: (out - 1) * s >= in + b). 0 or less: invalid;
// kSizeOverflow: does not fit int64.
inline int64_t pool_nd_out_explicit(int64_t in, int64_t extent, int64_t stride, int64_t pad_begin,
                                    int64_t pad_end, bool ceil_mode) {
  return pool_out_dim(in, extent, stride, pad_begin, pad_end, ceil_mode);
}

// Resolves spatial dimension i (0-based, of k) of x against params p. Values of the params are
// taken as they come (0 stride / dilation = 1); the shape rule checks ranges and out >= 1.
// Overflow-safe for any int64 `in`: out (and with SAME a pad) is kSizeOverflow when it does not
// fit int64.
inline pool_dim resolve_pool_dim(const nnp_pool_params& p, int k, int i, int64_t in) {
  pool_dim d{};
  d.in = in;
  if (p.global) {
    d.kernel = in;
    d.stride = 1;
    d.dilation = 1;
    d.out = 1;
    return d;
  }
  d.kernel = p.kernel_shape[i];
  d.stride = p.strides[i] > 0 ? p.strides[i] : 1;
  d.dilation = p.dilations[i] > 0 ? p.dilations[i] : 1;
  const int64_t ek = d.extent();  // < 2^62: int32 factors
  switch (p.auto_pad) {
    case NNP_AUTO_PAD_SAME_UPPER:
    case NNP_AUTO_PAD_SAME_LOWER: {
      const wide_int out = (wide_int{in} + d.stride - 1) / d.stride;
      const wide_int total = std::max<wide_int>(0, (out - 1) * d.stride + ek - in);
      const wide_int small = total / 2, big = total - small;
      d.out = narrow_size(out);
      d.pad_begin = narrow_size(p.auto_pad == NNP_AUTO_PAD_SAME_UPPER ? small : big);
      d.pad_end = narrow_size(total - d.pad_begin);
      if (d.pad_begin == kSizeOverflow || d.pad_end == kSizeOverflow) d.out = kSizeOverflow;
      break;
    }
    case NNP_AUTO_PAD_VALID:
      d.out = in >= ek ? (in - ek) / d.stride + 1 : 0;
      break;
    default:
      d.pad_begin = p.pads[i];
      d.pad_end = p.pads[k + i];
      d.out = pool_nd_out_explicit(in, ek, d.stride, d.pad_begin, d.pad_end, p.ceil_mode != 0);
      break;
  }
  return d;
}

// The geometry of one call, always as 3 spatial dimensions: a call with k < 3 gets leading unit
// dimensions (size 1, one tap), which change neither results nor flat indices (row-major or
// column-major). planes = N * C.
struct pool_nd_geometry {
  int k = 0;
  int64_t planes = 0;
  pool_dim d[kPoolMaxSpatial] = {};
  // No planes (N or C = 0): nothing is addressed, and the spatial extents' product may not fit
  // int64 (libnnplug accepts x = [0, C, 2^62, 4]: it has no elements).
  int64_t in_plane() const { return planes == 0 ? 0 : d[0].in * d[1].in * d[2].in; }
  int64_t out_plane() const { return planes == 0 ? 0 : d[0].out * d[1].out * d[2].out; }
};

// x is [N, C, D1..Dk] with 1 <= k <= 3 (validated by libnnplug).
inline pool_nd_geometry resolve_pool_nd(const nnp_pool_params& p, const DLTensor& x) {
  pool_nd_geometry g;
  g.k = x.ndim - 2;
  g.planes = x.shape[0] * x.shape[1];
  const int lead = kPoolMaxSpatial - g.k;
  for (int i = 0; i < lead; ++i) g.d[i] = pool_dim{1, 1, 1, 1, 1, 0, 0};
  for (int i = 0; i < g.k; ++i) g.d[lead + i] = resolve_pool_dim(p, g.k, i, x.shape[2 + i]);
  return g;
}

// ABI 1.0's 2-D pooling as the N-D op with k = 2: nnp_pool2d_params as nnp_pool_params (window,
// strides and pads [top, left, bottom, right] in their ONNX places, no auto_pad, dilation 1;
// ceil_mode, count_include_pad and global mean the same there).
inline nnp_pool_params pool_params_of_2d(const nnp_pool2d_params& p) {
  nnp_pool_params q{};
  q.struct_size = sizeof q;
  q.mode = p.mode;
  q.ceil_mode = p.ceil_mode;
  q.count_include_pad = p.count_include_pad;
  q.global = p.global;
  q.kernel_shape[0] = p.window_h;
  q.kernel_shape[1] = p.window_w;
  strides_pads_of_2d(p, &q);
  return q;
}

}  // namespace nnp
