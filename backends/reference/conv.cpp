// conv.cpp — reference convolutions, float32 and float64, plain gather loops with double
// accumulation: N-D convolution (ONNX Conv, NNP_OP_CONV_*), transposed convolution (ONNX
// ConvTranspose, NNP_OP_CONV_TRANSPOSE_*), both with 1 to 3 spatial dimensions, and the 2-D
// convolution of ABI 1.0 (NNP_OP_CONV2D_*), which is Conv with k = 2 (its params are read as
// nnp_conv_params: pads [top, left, bottom, right], no auto_pad).
//
// Every op runs on one geometry (nnplug/kit/conv_nd.hpp, conv_nd_geometry): a convolution
// input [n, ci, in..] -> output [n, co, out..], filter [co, ci/groups, kernel..], output
// position o reading input position i = o*stride - pad + r*dilation through tap r (3 spatial
// axes, leading ones of extent 1). With it,
//   conv                     forward(x, w, b) -> y
//   conv backward-data       backward_data(dy, w) -> dx
//   conv backward-filter     backward_filter(x, dy) -> dw
//   conv-transpose forward   backward_data(x, w) + b -> y     (its y is the geometry's input)
//   conv-transpose bwd-data  forward(dy, w) -> dx
//   conv-transpose bwd-filt  backward_filter(dy, x) -> dw
//   bias gradient            db[m] = sum over n and positions of dy[n, m, ...] (every family)
// where
//   forward:         out[n,m,o] = b[m] + sum_{c,r} in[n, g*Cig + c, o*s - p + r*d] * w[m,c,r]
//   backward_data:   in[n,ic,i] = b[ic] + sum_{m in group, r; i = o*s - p + r*d} out[n,m,o] *
//                                 w[m,c,r]
//   backward_filter: w[m,c,r]   = sum_{n,o} in[n, g*Cig + c, o*s - p + r*d] * out[n,m,o]
// with g = m / Cog (m's group), Cig = ci/groups, Cog = co/groups; reads outside the input are 0,
// zeros that take part in the products (0 * inf = NaN; docs/ops.md, "Non-finite values").
#include "reference.hpp"

#include <nnplug/kit/conv_nd.hpp>

#include <cmath>
#include <vector>

namespace ref {
namespace {

using nnp::conv_nd_geometry;
using nnp::kConvMaxSpatial;

// Element offsets in the geometry's input (channel-major then spatial), output and filter.
int64_t in_at(const conv_nd_geometry& g, int64_t n, int64_t c, const int64_t* i) {
  return (((n * g.ci + c) * g.in[0] + i[0]) * g.in[1] + i[1]) * g.in[2] + i[2];
}
int64_t out_at(const conv_nd_geometry& g, int64_t n, int64_t m, const int64_t* o) {
  return (((n * g.co + m) * g.out[0] + o[0]) * g.out[1] + o[1]) * g.out[2] + o[2];
}
int64_t w_at(const conv_nd_geometry& g, int64_t m, int64_t c, const int64_t* r) {
  return (((m * g.cig() + c) * g.kernel[0] + r[0]) * g.kernel[1] + r[1]) * g.kernel[2] + r[2];
}

// Calls f(idx) for every multi-index idx of the box [0, ext[0]) x [0, ext[1]) x [0, ext[2]).
template <typename F>
void for_box(const int64_t* ext, const F& f) {
  int64_t idx[kConvMaxSpatial];
  for (idx[0] = 0; idx[0] < ext[0]; ++idx[0])
    for (idx[1] = 0; idx[1] < ext[1]; ++idx[1])
      for (idx[2] = 0; idx[2] < ext[2]; ++idx[2]) f(static_cast<const int64_t*>(idx));
}

// The input position that output o reads through tap r; false in the padding.
bool input_of(const conv_nd_geometry& g, const int64_t* o, const int64_t* r, int64_t* i) {
  for (int a = 0; a < kConvMaxSpatial; ++a) {
    i[a] = o[a] * g.stride[a] - g.pad[a] + r[a] * g.dilation[a];
    if (i[a] < 0 || i[a] >= g.in[a]) return false;
  }
  return true;
}

// The output position that reads input i through tap r; false when there is none.
bool output_of(const conv_nd_geometry& g, const int64_t* i, const int64_t* r, int64_t* o) {
  for (int a = 0; a < kConvMaxSpatial; ++a) {
    const int64_t t = i[a] + g.pad[a] - r[a] * g.dilation[a];  // = o * stride
    if (t < 0 || t % g.stride[a] != 0) return false;
    o[a] = t / g.stride[a];
    if (o[a] >= g.out[a]) return false;
  }
  return true;
}

// clamp: the fused clamp of conv_forward, applied to the output as NNP_OP_CLIP would apply it
// to the stored value (after rounding to T).
template <typename T>
void forward(const conv_nd_geometry& g, const T* in, const T* w, const T* b, T* out,
             const nnp::conv_clamp& clamp = {}) {
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t m = 0; m < g.co; ++m) {
      const int64_t grp = m / g.cog();
      for_box(g.out, [&](const int64_t* o) {
        double acc = b != nullptr ? double(b[m]) : 0.0;
        for (int64_t c = 0; c < g.cig(); ++c)
          for_box(g.kernel, [&](const int64_t* r) {
            int64_t i[kConvMaxSpatial];
            const double wv = double(w[w_at(g, m, c, r)]);
            if (!input_of(g, o, r, i)) {
              acc += 0.0 * wv;  // padding: a zero that takes part (0 * inf = NaN)
              return;
            }
            acc += double(in[in_at(g, n, grp * g.cig() + c, i)]) * wv;
          });
        const T y = static_cast<T>(acc);
        out[out_at(g, n, m, o)] = clamp.active ? static_cast<T>(clamp.apply(double(y))) : y;
      });
    }
}

template <typename T>
void backward_data(const conv_nd_geometry& g, const T* out, const T* w, const T* b, T* in) {
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t ic = 0; ic < g.ci; ++ic) {
      const int64_t grp = ic / g.cig(), c = ic % g.cig();
      for_box(g.in, [&](const int64_t* i) {
        double acc = b != nullptr ? double(b[ic]) : 0.0;
        for (int64_t m = grp * g.cog(); m < (grp + 1) * g.cog(); ++m)
          for_box(g.kernel, [&](const int64_t* r) {
            int64_t o[kConvMaxSpatial];
            if (!output_of(g, i, r, o)) return;
            acc += double(out[out_at(g, n, m, o)]) * double(w[w_at(g, m, c, r)]);
          });
        in[in_at(g, n, ic, i)] = static_cast<T>(acc);
      });
    }
}

template <typename T>
void backward_filter(const conv_nd_geometry& g, const T* in, const T* out, T* w) {
  for (int64_t m = 0; m < g.co; ++m) {
    const int64_t grp = m / g.cog();
    for (int64_t c = 0; c < g.cig(); ++c)
      for_box(g.kernel, [&](const int64_t* r) {
        double acc = 0.0;
        for (int64_t n = 0; n < g.n; ++n)
          for_box(g.out, [&](const int64_t* o) {
            int64_t i[kConvMaxSpatial];
            const double d = double(out[out_at(g, n, m, o)]);
            if (!input_of(g, o, r, i)) {
              acc += 0.0 * d;  // padding: a zero that takes part (0 * inf = NaN)
              return;
            }
            acc += double(in[in_at(g, n, grp * g.cig() + c, i)]) * d;
          });
        w[w_at(g, m, c, r)] = static_cast<T>(acc);
      });
  }
}

// The fused max pooling of conv_forward (ABI 1.8): pooled[n, m, q] = the max of full[n, m, q*p + s]
// over the window s (p along each of the k spatial axes, 1 along the leading unused ones), the
// first NaN winning outright (as the reference's max pooling: NaN if any element is NaN).
template <typename T>
void max_pool_windows(const conv_nd_geometry& g, int64_t p, const T* full, T* pooled) {
  int64_t win[kConvMaxSpatial], ext[kConvMaxSpatial];
  for (int a = 0; a < kConvMaxSpatial; ++a) {
    win[a] = a >= kConvMaxSpatial - g.spatial ? p : 1;
    ext[a] = g.out[a] / win[a];
  }
  const int64_t pooled_size = ext[0] * ext[1] * ext[2];
  for (int64_t nm = 0; nm < g.n * g.co; ++nm) {
    const T* plane = full + nm * g.out_size();
    for_box(ext, [&](const int64_t* q) {
      T best = T(0);
      bool first = true;
      for_box(win, [&](const int64_t* s) {
        const int64_t o0 = q[0] * win[0] + s[0], o1 = q[1] * win[1] + s[1],
                      o2 = q[2] * win[2] + s[2];
        const T v = plane[(o0 * g.out[1] + o1) * g.out[2] + o2];
        if (first || v > best || (std::isnan(double(v)) && !std::isnan(double(best)))) best = v;
        first = false;
      });
      pooled[nm * pooled_size + (q[0] * ext[1] + q[1]) * ext[2] + q[2]] = best;
    });
  }
}

// ---- the ops ------------------------------------------------------------------------------------
template <typename T>
void conv_forward_t(const op_args& a) {
  const auto p = read_params<nnp_conv_params>(a.params);
  const conv_nd_geometry g = nnp::conv_nd_of_conv_forward(p, *a.in(0), *a.in(1), *a.out(0));
  const int64_t pool = nnp::conv_max_pool_of(p);
  if (pool == 1) {
    forward<T>(g, nnp::data_ptr<const T>(*a.in(0)), nnp::data_ptr<const T>(*a.in(1)),
               opt_in<T>(a, 2), nnp::data_ptr<T>(*a.out(0)), nnp::conv_clamp_of(p));
    return;
  }
  // The whole convolution's output first, then its windows' maxima into y.
  std::vector<T> full(static_cast<size_t>(g.n * g.co * g.out_size()));
  forward<T>(g, nnp::data_ptr<const T>(*a.in(0)), nnp::data_ptr<const T>(*a.in(1)), opt_in<T>(a, 2),
             full.data(), nnp::conv_clamp_of(p));
  max_pool_windows<T>(g, pool, full.data(), nnp::data_ptr<T>(*a.out(0)));
}

template <typename T>
void conv_backward_data_t(const op_args& a) {
  const auto p = read_params<nnp_conv_params>(a.params);
  const conv_nd_geometry g = nnp::conv_nd_of_conv(p, *a.out(0), *a.in(1), *a.in(0));
  backward_data<T>(g, nnp::data_ptr<const T>(*a.in(0)), nnp::data_ptr<const T>(*a.in(1)),
                   static_cast<const T*>(nullptr), nnp::data_ptr<T>(*a.out(0)));
}

template <typename T>
void conv_backward_filter_t(const op_args& a) {
  const auto p = read_params<nnp_conv_params>(a.params);
  const conv_nd_geometry g = nnp::conv_nd_of_conv(p, *a.in(0), *a.out(0), *a.in(1));
  backward_filter<T>(g, nnp::data_ptr<const T>(*a.in(0)), nnp::data_ptr<const T>(*a.in(1)),
                     nnp::data_ptr<T>(*a.out(0)));
}

// db[k] = sum over n and every spatial position of dy [N, K, ...] (any rank; params unused).
template <typename T>
void conv_backward_bias_t(const op_args& a) {
  const DLTensor& DY = *a.in(0);
  const int64_t N = DY.shape[0], K = DY.shape[1], S = dims_product(DY, 2, DY.ndim);
  const T* dy = nnp::data_ptr<const T>(DY);
  T* db = nnp::data_ptr<T>(*a.out(0));
  const int64_t images = N * S == 0 ? 0 : N;  // no element: no loop over N (it may be huge)
  for (int64_t k = 0; k < K; ++k) {
    double acc = 0.0;
    for (int64_t n = 0; n < images; ++n)
      for (int64_t i = 0; i < S; ++i) acc += double(dy[(n * K + k) * S + i]);
    db[k] = static_cast<T>(acc);
  }
}

// ConvTranspose: x [N, C, D..] is the geometry's output, y [N, K, O..] its input.
template <typename T>
void conv_transpose_forward_t(const op_args& a) {
  const auto p = read_params<nnp_conv_transpose_params>(a.params);
  const conv_nd_geometry g = nnp::conv_nd_of_transpose(p, *a.in(0), *a.in(1), *a.out(0));
  backward_data<T>(g, nnp::data_ptr<const T>(*a.in(0)), nnp::data_ptr<const T>(*a.in(1)),
                   opt_in<T>(a, 2), nnp::data_ptr<T>(*a.out(0)));
}

template <typename T>
void conv_transpose_backward_data_t(const op_args& a) {
  const auto p = read_params<nnp_conv_transpose_params>(a.params);
  const conv_nd_geometry g = nnp::conv_nd_of_transpose(p, *a.out(0), *a.in(1), *a.in(0));
  forward<T>(g, nnp::data_ptr<const T>(*a.in(0)), nnp::data_ptr<const T>(*a.in(1)),
             static_cast<const T*>(nullptr), nnp::data_ptr<T>(*a.out(0)));
}

template <typename T>
void conv_transpose_backward_filter_t(const op_args& a) {
  const auto p = read_params<nnp_conv_transpose_params>(a.params);
  const conv_nd_geometry g = nnp::conv_nd_of_transpose(p, *a.in(0), *a.out(0), *a.in(1));
  backward_filter<T>(g, nnp::data_ptr<const T>(*a.in(1)), nnp::data_ptr<const T>(*a.in(0)),
                     nnp::data_ptr<T>(*a.out(0)));
}

// Runs NNP_OP_CONV2D_* call a as the NNP_OP_CONV_* op `nd` with k = 2: its params as
// nnp_conv_params (strides, pads [top, left, bottom, right], dilations and groups in their ONNX
// places, no auto_pad); tensors and formulas are the same.
void as_conv_nd(const op_args& a, void (*nd)(const op_args&)) {
  const nnp_conv_params q = nnp::conv_params_of_2d(read_params<nnp_conv2d_params>(a.params));
  nd(a.with_params(&q));
}

}  // namespace

REF_FLOAT_OP(conv_forward, conv_forward_t, in(0))
REF_FLOAT_OP(conv_backward_data, conv_backward_data_t, in(0))
REF_FLOAT_OP(conv_backward_filter, conv_backward_filter_t, in(0))
REF_FLOAT_OP(conv_backward_bias, conv_backward_bias_t, in(0))
REF_FLOAT_OP(conv_transpose_forward, conv_transpose_forward_t, in(0))
REF_FLOAT_OP(conv_transpose_backward_data, conv_transpose_backward_data_t, in(0))
REF_FLOAT_OP(conv_transpose_backward_filter, conv_transpose_backward_filter_t, in(0))

void conv2d_forward(const op_args& a) { as_conv_nd(a, conv_forward); }
void conv2d_backward_data(const op_args& a) { as_conv_nd(a, conv_backward_data); }
void conv2d_backward_filter(const op_args& a) { as_conv_nd(a, conv_backward_filter); }
void conv2d_backward_bias(const op_args& a) { conv_backward_bias(a); }

// The rows of this file's kernels (rows.hpp lists the files).
// clang-format off
const nnp::kit::op_row kConvOps[] = {
    {NNP_OP_CONV2D_FORWARD,                 kFloats,        conv2d_forward},
    {NNP_OP_CONV2D_BACKWARD_DATA,           kFloats,        conv2d_backward_data},
    {NNP_OP_CONV2D_BACKWARD_FILTER,         kFloats,        conv2d_backward_filter},
    {NNP_OP_CONV2D_BACKWARD_BIAS,           kFloats,        conv2d_backward_bias},
    {NNP_OP_CONV_FORWARD,                   kFloats,        conv_forward},
    {NNP_OP_CONV_BACKWARD_DATA,             kFloats,        conv_backward_data},
    {NNP_OP_CONV_BACKWARD_FILTER,           kFloats,        conv_backward_filter},
    {NNP_OP_CONV_BACKWARD_BIAS,             kFloats,        conv_backward_bias},
    {NNP_OP_CONV_TRANSPOSE_FORWARD,         kFloats,        conv_transpose_forward},
    {NNP_OP_CONV_TRANSPOSE_BACKWARD_DATA,   kFloats,        conv_transpose_backward_data},
    {NNP_OP_CONV_TRANSPOSE_BACKWARD_FILTER, kFloats,        conv_transpose_backward_filter},
};
// clang-format on
extern const nnp::kit::op_row_list kConvRows = nnp::kit::row_list(kConvOps);

}  // namespace ref
