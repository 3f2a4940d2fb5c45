// N-D convolution (NNP_OP_CONV_*, ONNX Conv) and transposed convolution
// (NNP_OP_CONV_TRANSPOSE_*, ONNX ConvTranspose) on the CPU, 1 to 3 spatial dimensions, float32.
//
// Both families run on one geometry (nnplug/kit/conv_nd.hpp): a convolution input
// [n, ci, in..] -> output [n, co, out..] with filter [co, ci/groups, kernel..]. Conv maps x, y
// to the input, output; ConvTranspose maps its y to the input and its x to the output, so that
//   conv-transpose forward = backward-data (+ bias), its backward-data = forward,
//   its backward-filter = backward-filter with dy as the input and x as the output gradient,
// and both bias gradients are conv2d_backward_bias (conv.cpp; it sums over any rank).
//
// Speed: 1-D and 2-D convolutions with padding in [0, INT32_MAX] run on the 2-D machinery of
// conv.cpp (im2col + OpenBLAS SGEMM, Winograd F(2x2, 3x3) where it applies, TBB over images and
// groups), a 1-D one as a 2-D one of height 1. 3-D convolutions (and the negative begin padding
// that ConvTranspose's output_shape can ask for) unfold with vol2col into a per-thread column
// buffer [ci/groups * kernel volume, slab] (a slab: as many output depth planes as keep the
// buffer near 1 MiB, in cache) and run one SGEMM per image, group and slab (V = slab here):
//   forward          out_g [co/g, V]  = w_g [co/g, CK] . col [CK, V]
//   backward-data    col   [CK, V]    = w_g^T . dout_g, then col2vol (scatter-add)
//   backward-filter  dw_g  [co/g, CK] += dout_g . col^T  (per-chunk partial sums, then summed)
// A 1x1x1, stride-1, unpadded convolution skips vol2col (the input is the column matrix).
#include "cpu_backend.hpp"

#include <nnplug/kit/conv_nd.hpp>

#include <algorithm>
#include <cstring>
#include <limits>

namespace nnp::cpu {
namespace {

using nnp::conv_nd_geometry;

// ---- 1-D and 2-D: the conv2d kernels of conv.cpp on 4-D views --------------------------------
bool fits_conv2d(const conv_nd_geometry& g) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  return g.spatial <= 2 && g.pad[1] >= 0 && g.pad[2] >= 0 && g.pad[1] <= kMax && g.pad[2] <= kMax;
}

// A 4-D view [d0, d1, d2, d3] of a compact tensor, or a 1-D one [d0] (rank 1).
struct view4 {
  DLTensor t;
  int64_t shape[4];
  view4(const float* data, const DLTensor& like, const int64_t* dims, int rank)
      : t(like), shape{dims[0], dims[1], dims[2], dims[3]} {
    t.data = const_cast<float*>(data);
    t.byte_offset = 0;
    t.ndim = rank;
    t.shape = shape;
    t.strides = nullptr;
  }
  view4(const view4&) = delete;
  view4& operator=(const view4&) = delete;
};

// The conv2d params of the geometry's last two axes; the end padding is what the sizes imply
// (clamped at 0: conv.cpp reads its sizes from the tensors and its end padding only to pick an
// algorithm).
nnp_conv2d_params conv2d_params_of(const conv_nd_geometry& g) {
  nnp_conv2d_params p{};
  p.struct_size = sizeof p;
  p.stride_h = static_cast<int32_t>(g.stride[1]);
  p.stride_w = static_cast<int32_t>(g.stride[2]);
  p.pad_top = static_cast<int32_t>(g.pad[1]);
  p.pad_left = static_cast<int32_t>(g.pad[2]);
  const auto end_pad = [&](int a) {
    const int64_t e =
        (g.out[a] - 1) * g.stride[a] + g.dilation[a] * (g.kernel[a] - 1) + 1 - g.in[a] - g.pad[a];
    return static_cast<int32_t>(std::clamp<int64_t>(e, 0, std::numeric_limits<int32_t>::max()));
  };
  p.pad_bottom = end_pad(1);
  p.pad_right = end_pad(2);
  p.dilation_h = static_cast<int32_t>(g.dilation[1]);
  p.dilation_w = static_cast<int32_t>(g.dilation[2]);
  p.groups = static_cast<int32_t>(g.groups);
  return p;
}

// Runs a conv2d kernel of conv.cpp on 4-D views of its operands: a and b (inputs), bias
// (optional input 2) and out, each a role of the geometry: 'i' its input, 'o' its output,
// 'w' the filter.
template <typename F>
void run_conv2d(const F& kernel, int32_t kind, const conv_nd_geometry& g, void* stream,
                const float* a, char a_role, const float* b, char b_role, const float* bias,
                float* out, char out_role, const DLTensor& like) {
  const int64_t dims_i[4] = {g.n, g.ci, g.in[1], g.in[2]};
  const int64_t dims_o[4] = {g.n, g.co, g.out[1], g.out[2]};
  const int64_t dims_w[4] = {g.co, g.cig(), g.kernel[1], g.kernel[2]};
  const int64_t dims_b[4] = {g.co, 1, 1, 1};
  const auto dims = [&](char role) { return role == 'i' ? dims_i : role == 'o' ? dims_o : dims_w; };
  const view4 va(a, like, dims(a_role), 4), vb(b, like, dims(b_role), 4);
  const view4 vo(out, like, dims(out_role), 4), vbias(bias, like, dims_b, 1);
  const DLTensor* ins[3] = {&va.t, &vb.t, bias != nullptr ? &vbias.t : nullptr};
  const DLTensor* outs[1] = {&vo.t};
  const nnp_conv2d_params p = conv2d_params_of(g);
  op_call c{};
  c.kind = kind;
  c.params = &p;
  c.n_inputs = 3;
  c.inputs = ins;
  c.n_outputs = 1;
  c.outputs = outs;
  c.stream = stream;
  c.device = -1;
  kernel(c);
}

// ---- 3-D: vol2col + SGEMM
// ------------------------------------------------------------------------ Sizes of one (image,
// group) of the geometry.
int64_t col_rows(const conv_nd_geometry& g) { return g.cig() * g.kernel_size(); }
bool direct(const conv_nd_geometry& g) {  // 1x1x1, stride 1, no padding: col == input
  for (int a = 0; a < kConvMaxSpatial; ++a)
    if (g.kernel[a] != 1 || g.stride[a] != 1 || g.pad[a] != 0 || g.in[a] != g.out[a]) return false;
  return true;
}
int64_t in_group(const conv_nd_geometry& g, int64_t n, int64_t grp) {
  return (n * g.ci + grp * g.cig()) * g.in_size();
}
int64_t out_group(const conv_nd_geometry& g, int64_t n, int64_t grp) {
  return (n * g.co + grp * g.cog()) * g.out_size();
}
int64_t w_group(const conv_nd_geometry& g, int64_t grp) { return grp * g.cog() * col_rows(g); }

// The output columns [q0, q1) of one row whose input column q*stride + off lies in [0, in).
void column_range(int64_t off, int64_t stride, int64_t in, int64_t out, int64_t* q0, int64_t* q1) {
  *q0 = off < 0 ? std::min<int64_t>(out, (-off + stride - 1) / stride) : 0;
  const int64_t lim = in - off;  // need q*stride < lim
  *q1 = lim <= 0 ? 0 : std::min<int64_t>(out, (lim + stride - 1) / stride);
  if (*q1 < *q0) *q1 = *q0;
}

// Output depth slabs: vol2col unfolds [od0, od1) output planes at a time, so that the column
// buffer stays near kColBudget floats (in cache between vol2col and the SGEMM) instead of
// growing with the volume.
constexpr int64_t kColBudget = int64_t{1} << 18;  // floats: 1 MiB
int64_t slab_depth(const conv_nd_geometry& g) {
  const int64_t plane = std::max<int64_t>(1, col_rows(g) * g.out[1] * g.out[2]);
  return std::max<int64_t>(1, std::min<int64_t>(g.out[0], kColBudget / plane));
}

// Calls row(col_at, src, q0, q1, off) for every input channel c of the group, tap (kd, kh, kw)
// and output row (od in [od0, od1), oh): col_at is the row's offset in the slab's column
// buffer [cig * kernel volume, (od1 - od0) * OH * OW], src the offset in in_g of the input row
// it reads (-1 in the padding), [q0, q1) the output columns inside the input and off the
// input column of output column 0.
template <typename F>
void for_each_col_row(const conv_nd_geometry& g, int64_t od0, int64_t od1, const F& row) {
  const int64_t OH = g.out[1], OW = g.out[2];
  const int64_t ID = g.in[0], IH = g.in[1], IW = g.in[2];
  int64_t tap = 0;
  for (int64_t c = 0; c < g.cig(); ++c)
    for (int64_t kd = 0; kd < g.kernel[0]; ++kd)
      for (int64_t kh = 0; kh < g.kernel[1]; ++kh)
        for (int64_t kw = 0; kw < g.kernel[2]; ++kw, ++tap) {
          const int64_t off = kw * g.dilation[2] - g.pad[2];
          int64_t q0, q1;
          column_range(off, g.stride[2], IW, OW, &q0, &q1);
          for (int64_t od = od0; od < od1; ++od) {
            const int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dilation[0];
            for (int64_t oh = 0; oh < OH; ++oh) {
              const int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dilation[1];
              const int64_t col_at = ((tap * (od1 - od0) + (od - od0)) * OH + oh) * OW;
              if (id < 0 || id >= ID || ih < 0 || ih >= IH) {
                row(col_at, int64_t{-1}, q0, q1, off);
              } else {
                row(col_at, ((c * ID + id) * IH + ih) * IW, q0, q1, off);
              }
            }
          }
        }
}

// Unfolds output planes [od0, od1) of in_g [cig, in..] into col [cig * kernel volume, slab].
void vol2col(const conv_nd_geometry& g, const float* in, int64_t od0, int64_t od1, float* col) {
  const int64_t OW = g.out[2], sw = g.stride[2];
  for_each_col_row(g, od0, od1,
                   [&](int64_t col_at, int64_t src, int64_t q0, int64_t q1, int64_t off) {
                     float* out = col + col_at;
                     if (src < 0) {
                       std::memset(out, 0, sizeof(float) * static_cast<size_t>(OW));
                       return;
                     }
                     const float* xr = in + src + off;
                     for (int64_t q = 0; q < q0; ++q) out[q] = 0.0f;
                     if (sw == 1) {
                       for (int64_t q = q0; q < q1; ++q) out[q] = xr[q];
                     } else {
                       for (int64_t q = q0; q < q1; ++q) out[q] = xr[q * sw];
                     }
                     for (int64_t q = q1; q < OW; ++q) out[q] = 0.0f;
                   });
}

// Folds a slab's col back, adding into in_g (which the caller zeroed).
void col2vol(const conv_nd_geometry& g, const float* col, int64_t od0, int64_t od1, float* in) {
  const int64_t sw = g.stride[2];
  for_each_col_row(g, od0, od1,
                   [&](int64_t col_at, int64_t src, int64_t q0, int64_t q1, int64_t off) {
                     if (src < 0) return;
                     const float* c = col + col_at;
                     float* xr = in + src + off;
                     if (sw == 1) {
                       for (int64_t q = q0; q < q1; ++q) xr[q] += c[q];
                     } else {
                       for (int64_t q = q0; q < q1; ++q) xr[q * sw] += c[q];
                     }
                   });
}

float* col_scratch(const conv_nd_geometry& g) {
  return direct(g)
             ? nullptr
             : scratch(kTaskSlot0,
                       static_cast<size_t>(col_rows(g) * slab_depth(g) * g.out[1] * g.out[2]));
}

// Runs f(n, grp, col) for every image and group, the pairs in parallel.
template <typename F>
void for_each_image_group(const conv_nd_geometry& g, const F& f) {
  parallel_for(g.n * g.groups, 1, [&](int64_t tb, int64_t te) {
    float* col = col_scratch(g);
    for (int64_t t = tb; t < te; ++t) f(t / g.groups, t % g.groups, col);
  });
}

// out[n, c, :] += b[c] over a [n, channels, size] tensor.
void add_bias(float* out, const float* b, int64_t n, int64_t channels, int64_t size) {
  parallel_for(n * channels, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, size)),
               [&](int64_t tb, int64_t te) {
                 for (int64_t t = tb; t < te; ++t) {
                   float* row = out + t * size;
                   const float bc = b[t % channels];
                   for (int64_t i = 0; i < size; ++i) row[i] += bc;
                 }
               });
}

void nd_forward(const conv_nd_geometry& g, const float* in, const float* w, const float* b,
                float* out) {
  const int64_t V = g.out_size(), CK = col_rows(g), plane = g.out[1] * g.out[2];
  const int64_t slab = slab_depth(g);
  for_each_image_group(g, [&](int64_t n, int64_t grp, float* col) {
    const float* src = in + in_group(g, n, grp);
    const float* wg = w + w_group(g, grp);
    float* dst = out + out_group(g, n, grp);
    if (direct(g)) {
      sgemm_rm(false, false, g.cog(), V, CK, 1.0f, wg, CK, src, V, 0.0f, dst, V);
      return;
    }
    for (int64_t od0 = 0; od0 < g.out[0]; od0 += slab) {
      const int64_t od1 = std::min(g.out[0], od0 + slab), vs = (od1 - od0) * plane;
      vol2col(g, src, od0, od1, col);
      sgemm_rm(false, false, g.cog(), vs, CK, 1.0f, wg, CK, col, vs, 0.0f, dst + od0 * plane, V);
    }
  });
  if (b != nullptr) add_bias(out, b, g.n, g.co, V);
}

void nd_backward_data(const conv_nd_geometry& g, const float* dout, const float* w, float* din) {
  const int64_t V = g.out_size(), CK = col_rows(g), plane = g.out[1] * g.out[2];
  const int64_t slab = slab_depth(g);
  for_each_image_group(g, [&](int64_t n, int64_t grp, float* col) {
    float* dst = din + in_group(g, n, grp);
    const float* dy = dout + out_group(g, n, grp);
    const float* wg = w + w_group(g, grp);
    if (direct(g)) {
      sgemm_rm(true, false, CK, V, g.cog(), 1.0f, wg, CK, dy, V, 0.0f, dst, V);
      return;
    }
    std::memset(dst, 0, sizeof(float) * static_cast<size_t>(g.cig() * g.in_size()));
    for (int64_t od0 = 0; od0 < g.out[0]; od0 += slab) {
      const int64_t od1 = std::min(g.out[0], od0 + slab), vs = (od1 - od0) * plane;
      sgemm_rm(true, false, CK, vs, g.cog(), 1.0f, wg, CK, dy + od0 * plane, V, 0.0f, col, vs);
      col2vol(g, col, od0, od1, dst);
    }
  });
}

void nd_backward_filter(const conv_nd_geometry& g, const float* in, const float* dout, float* dw) {
  const int64_t V = g.out_size(), CK = col_rows(g), wsize = g.co * CK;
  const int64_t plane = g.out[1] * g.out[2], slab = slab_depth(g);
  if (g.n == 0 || V == 0) {
    std::fill(dw, dw + wsize, 0.0f);
    return;
  }
  sum_over_image_chunks(g.n, wsize, dw, [&](float* acc, int64_t n0, int64_t n1) {
    float* col = col_scratch(g);
    for (int64_t n = n0; n < n1; ++n) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        const float* src = in + in_group(g, n, grp);
        const float* dy = dout + out_group(g, n, grp);
        float* dwg = acc + w_group(g, grp);
        if (direct(g)) {
          sgemm_rm(false, true, g.cog(), CK, V, 1.0f, dy, V, src, V, n == n0 ? 0.0f : 1.0f, dwg,
                   CK);
          continue;
        }
        for (int64_t od0 = 0; od0 < g.out[0]; od0 += slab) {
          const int64_t od1 = std::min(g.out[0], od0 + slab), vs = (od1 - od0) * plane;
          vol2col(g, src, od0, od1, col);
          const float beta = n == n0 && od0 == 0 ? 0.0f : 1.0f;
          sgemm_rm(false, true, g.cog(), CK, vs, 1.0f, dy + od0 * plane, V, col, vs, beta, dwg, CK);
        }
      }
    }
  });
}

// ---- the three directions, on conv.cpp's kernels where they fit
// ----------------------------------
void geometry_forward(const conv_nd_geometry& g, const op_call& c, const float* in, const float* w,
                      const float* b, float* out) {
  if (fits_conv2d(g)) {
    run_conv2d(conv2d_forward, NNP_OP_CONV2D_FORWARD, g, c.stream, in, 'i', w, 'w', b, out, 'o',
               *c.in(0));
    return;
  }
  nd_forward(g, in, w, b, out);
}

void geometry_backward_data(const conv_nd_geometry& g, const op_call& c, const float* dout,
                            const float* w, const float* b, float* din) {
  if (fits_conv2d(g)) {
    run_conv2d(conv2d_backward_data, NNP_OP_CONV2D_BACKWARD_DATA, g, c.stream, dout, 'o', w, 'w',
               nullptr, din, 'i', *c.in(0));
  } else {
    nd_backward_data(g, dout, w, din);
  }
  if (b != nullptr) add_bias(din, b, g.n, g.ci, g.in_size());
}

void geometry_backward_filter(const conv_nd_geometry& g, const op_call& c, const float* in,
                              const float* dout, float* dw) {
  if (fits_conv2d(g)) {
    run_conv2d(conv2d_backward_filter, NNP_OP_CONV2D_BACKWARD_FILTER, g, c.stream, in, 'i', dout,
               'o', nullptr, dw, 'w', *c.in(0));
    return;
  }
  nd_backward_filter(g, in, dout, dw);
}

}  // namespace

void conv_forward(const op_call& c) {
  const auto p = c.params_as<nnp_conv_params>();
  const conv_nd_geometry g = conv_nd_of_conv(p, *c.in(0), *c.in(1), *c.out(0));
  geometry_forward(g, c, f32(c.in(0)), f32(c.in(1)), f32(c.in(2)), f32(c.out(0)));
}

void conv_backward_data(const op_call& c) {
  const auto p = c.params_as<nnp_conv_params>();
  const conv_nd_geometry g = conv_nd_of_conv(p, *c.out(0), *c.in(1), *c.in(0));
  geometry_backward_data(g, c, f32(c.in(0)), f32(c.in(1)), nullptr, f32(c.out(0)));
}

void conv_backward_filter(const op_call& c) {
  const auto p = c.params_as<nnp_conv_params>();
  const conv_nd_geometry g = conv_nd_of_conv(p, *c.in(0), *c.out(0), *c.in(1));
  geometry_backward_filter(g, c, f32(c.in(0)), f32(c.in(1)), f32(c.out(0)));
}

void conv_backward_bias(const op_call& c) { conv2d_backward_bias(c); }

void conv_transpose_forward(const op_call& c) {
  const auto p = c.params_as<nnp_conv_transpose_params>();
  const conv_nd_geometry g = conv_nd_of_transpose(p, *c.in(0), *c.in(1), *c.out(0));
  geometry_backward_data(g, c, f32(c.in(0)), f32(c.in(1)), f32(c.in(2)), f32(c.out(0)));
}

void conv_transpose_backward_data(const op_call& c) {
  const auto p = c.params_as<nnp_conv_transpose_params>();
  const conv_nd_geometry g = conv_nd_of_transpose(p, *c.out(0), *c.in(1), *c.in(0));
  geometry_forward(g, c, f32(c.in(0)), f32(c.in(1)), nullptr, f32(c.out(0)));
}

void conv_transpose_backward_filter(const op_call& c) {
  const auto p = c.params_as<nnp_conv_transpose_params>();
  const conv_nd_geometry g = conv_nd_of_transpose(p, *c.in(0), *c.out(0), *c.in(1));
  geometry_backward_filter(g, c, f32(c.in(1)), f32(c.in(0)), f32(c.out(0)));
}

}  // namespace nnp::cpu
