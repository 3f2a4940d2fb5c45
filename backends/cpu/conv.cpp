// Convolutions on the CPU, float32: N-D convolution (NNP_OP_CONV_*, ONNX Conv) and transposed
// convolution (NNP_OP_CONV_TRANSPOSE_*, ONNX ConvTranspose), 1 to 3 spatial dimensions, and the
// 2-D convolution of ABI 1.0 (NNP_OP_CONV2D_*), which is Conv with k = 2 (its params are read
// as nnp_conv_params: pads [top, left, bottom, right], no auto_pad).
//
// Every op runs on one geometry (nnplug/kit/conv_nd.hpp): a convolution input
// [n, ci, in..] -> output [n, co, out..] with filter [co, ci/groups, kernel..]. Conv maps x, y
// to the input, output; ConvTranspose maps its y to the input and its x to the output, so that
//   conv-transpose forward = backward-data (+ bias), its backward-data = forward,
//   its backward-filter = backward-filter with dy as the input and x as the output gradient,
// and every bias gradient is conv_backward_bias (it sums over any rank).
//
// Speed: each direction first offers the call to Winograd (conv_winograd.cpp: F(2x2, 3x3) or
// F(4x4, 3x3) for 2-D 3x3 stride-1 convolutions with >= 16 channels in and out, finite
// operands), then to the direct depthwise kernels (conv_depthwise.cpp: 1-D and 2-D, groups
// of one input channel), the forward to the shallow kernel (conv_shallow.cpp: ungrouped, input
// channels x kernel volume <= 32), else runs im2col + OpenBLAS SGEMM. The backward directions'
// vol2col unfolds the input into a per-thread column buffer [ci/groups * kernel volume, slab]
// reused across calls (a slab: as many output depth planes as keep the buffer near 1 MiB, in
// cache; a 1-D or 2-D convolution has one plane, so its slab is its whole output: classic
// im2col, plain row copies when the last stride is 1); the forward unfolds panels of output
// positions instead (im2col_panel: as many, flat over the output volume, as keep the panel near
// 256 KiB), each SGEMM'd and biased while in cache. One single-threaded SGEMM per image, group
// and slab or panel does the multiply-adds (V = its output positions):
//   forward          out_g [co/g, V]  = w_g [co/g, CK] . col [CK, V]
//   backward-data    col   [CK, V]    = w_g^T . dout_g, then col2vol (scatter-add)
//   backward-filter  dw_g  [co/g, CK] += dout_g . col^T  (per-chunk partial sums, then summed)
// A 1x1(x1), stride-1, unpadded convolution skips the unfolding (the input is the column matrix).
// TBB runs (image, group) pairs in parallel, the forward (image, group, panel) triples;
// backward-filter splits the batch into four chunks per thread, each accumulating into its own
// partial dw (call-level scratch), summed at the end.
#include "conv.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace nnp::cpu {
namespace {

// ---- im2col / vol2col + SGEMM -----------------------------------------------------------------
// Sizes of one (image, group) of the geometry.
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

// d[q - q0] = row[q stride + off] for q in [q0, q1), every such index inside row (strides 1 and 2
// as constants: vector loops).
void gather(const float* row, int64_t stride, int64_t off, int64_t q0, int64_t q1, float* d) {
  const int64_t n = q1 - q0, start = q0 * stride + off;
  if (stride == 1) {
    std::memcpy(d, row + start, static_cast<size_t>(n) * sizeof(float));
  } else if (stride == 2) {
    for (int64_t i = 0; i < n; ++i) d[i] = row[start + 2 * i];
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = row[start + i * stride];
  }
}

}  // namespace

void im2col_panel(const conv_nd_geometry& g, const float* x, int64_t j0, int64_t j1, float* panel,
                  int64_t ldp) {
  if (direct(g)) {
    const int64_t V = g.in_size();
    for (int64_t c = 0; c < g.cig(); ++c)
      std::memcpy(panel + c * ldp, x + c * V + j0, static_cast<size_t>(j1 - j0) * sizeof(float));
    return;
  }
  const int64_t OH = g.out[1], OW = g.out[2];
  const int64_t ID = g.in[0], IH = g.in[1], IW = g.in[2], sw = g.stride[2];
  for (int64_t j = j0; j < j1;) {  // one output row (od, oh), columns [qa, qb), at a time
    const int64_t row = j / OW, qa = j % OW, qb = std::min(OW, qa + (j1 - j));
    const int64_t od = row / OH, oh = row % OH;
    float* dst = panel + (j - j0);  // dst[r ldp + q - qa]: output column q of depth row r
    int64_t r = 0;
    for (int64_t c = 0; c < g.cig(); ++c)
      for (int64_t kd = 0; kd < g.kernel[0]; ++kd)
        for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
          const int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dilation[0];
          const int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dilation[1];
          const bool inside = id >= 0 && id < ID && ih >= 0 && ih < IH;
          const float* xr = x + ((c * ID + (inside ? id : 0)) * IH + (inside ? ih : 0)) * IW;
          for (int64_t kw = 0; kw < g.kernel[2]; ++kw, ++r) {
            float* d = dst + r * ldp;  // d[q - qa], q in [qa, qb)
            if (!inside) {
              std::fill(d, d + (qb - qa), 0.0f);
              continue;
            }
            const int64_t off = kw * g.dilation[2] - g.pad[2];  // input column of q: q sw + off
            int64_t v0, v1;
            column_range(off, sw, IW, OW, &v0, &v1);
            v0 = std::clamp(v0, qa, qb);
            v1 = std::clamp(v1, v0, qb);
            std::fill(d, d + (v0 - qa), 0.0f);
            gather(xr, sw, off, v0, v1, d + (v0 - qa));
            std::fill(d + (v1 - qa), d + (qb - qa), 0.0f);
          }
        }
    j += qb - qa;
  }
}

namespace {

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

// rows[c, :] = clamp(rows[c, :] + b[c]) for `channels` rows of `size` floats (b optional).
void add_bias(float* rows, int64_t ld, const float* b, const out_clamp& clamp, int64_t channels,
              int64_t size) {
  for (int64_t c = 0; c < channels; ++c) {
    float* row = rows + c * ld;
    const float bc = b != nullptr ? b[c] : 0.0f;
    if (clamp.active) {
      for (int64_t i = 0; i < size; ++i) row[i] = clamp.apply(row[i] + bc);
    } else if (b != nullptr) {
      for (int64_t i = 0; i < size; ++i) row[i] += bc;
    }
  }
}

// Output positions per im2col panel of the forward: all of an image's when its column matrix
// fits kPanelBudget, else as many as do (a multiple of 16, at least 64). ResNet-18's first layer
// (147 x 12544 columns per image, 7.4 MB) at batch 32, 2 threads, against whole-image columns,
// interleaved call by call: 97.6 against 125.8 ms (medians of 9); panels of 32 Ki to 512 Ki
// floats were within 4% of one another, 64 Ki the fastest for it and for ResNet-18's 3x3
// stride-2 layers.
constexpr int64_t kPanelBudget = int64_t{1} << 16;  // floats: 256 KiB
int64_t forward_chunk(const conv_nd_geometry& g) {
  const int64_t V = g.out_size(), CK = std::max<int64_t>(1, col_rows(g));
  if (CK * V <= kPanelBudget) return std::max<int64_t>(1, V);
  return std::max<int64_t>(64, kPanelBudget / CK / 16 * 16);
}

void gemm_forward(const conv_nd_geometry& g, const float* in, const float* w, const float* b,
                  const out_clamp& clamp, float* out) {
  const int64_t V = g.out_size(), CK = col_rows(g), cog = g.cog();
  const bool epilogue = b != nullptr || clamp.active, unfold = !direct(g);
  // (image, group, chunk of output positions) in parallel: each chunk's panel in cache between
  // im2col and its SGEMM, and its outputs between the SGEMM and the bias and clamp; a direct
  // convolution multiplies the input itself (its column matrix), a whole image at a time
  const int64_t chunk = unfold ? forward_chunk(g) : std::max<int64_t>(1, V);
  const int64_t chunks = (V + chunk - 1) / chunk;
  parallel_for(g.n * g.groups * chunks, 1, [&](int64_t tb, int64_t te) {
    float* col = unfold ? scratch(kTaskSlot0, static_cast<size_t>(CK * chunk)) : nullptr;
    for (int64_t t = tb; t < te; ++t) {
      const int64_t ch = t % chunks, ng = t / chunks, n = ng / g.groups, grp = ng % g.groups;
      const int64_t j0 = ch * chunk, j1 = std::min(V, j0 + chunk), nj = j1 - j0;
      const float* src = in + in_group(g, n, grp);
      float* dst = out + out_group(g, n, grp) + j0;
      if (unfold) im2col_panel(g, src, j0, j1, col, nj);
      sgemm_rm(false, false, cog, nj, CK, 1.0f, w + w_group(g, grp), CK, unfold ? col : src,
               unfold ? nj : V, 0.0f, dst, V);
      if (epilogue) add_bias(dst, V, b != nullptr ? b + grp * cog : nullptr, clamp, cog, nj);
    }
  });
}

void gemm_backward_data(const conv_nd_geometry& g, const float* dout, const float* w,
                        const float* b, float* din) {
  const int64_t V = g.out_size(), CK = col_rows(g), plane = g.out[1] * g.out[2];
  const int64_t slab = slab_depth(g);
  for_each_image_group(g, [&](int64_t n, int64_t grp, float* col) {
    float* dst = din + in_group(g, n, grp);
    const float* dy = dout + out_group(g, n, grp);
    const float* wg = w + w_group(g, grp);
    if (direct(g)) {
      sgemm_rm(true, false, CK, V, g.cog(), 1.0f, wg, CK, dy, V, 0.0f, dst, V);
    } else {
      std::memset(dst, 0, sizeof(float) * static_cast<size_t>(g.cig() * g.in_size()));
      for (int64_t od0 = 0; od0 < g.out[0]; od0 += slab) {
        const int64_t od1 = std::min(g.out[0], od0 + slab), vs = (od1 - od0) * plane;
        sgemm_rm(true, false, CK, vs, g.cog(), 1.0f, wg, CK, dy + od0 * plane, V, 0.0f, col, vs);
        col2vol(g, col, od0, od1, dst);
      }
    }
    if (b != nullptr)
      add_bias(dst, g.in_size(), b + grp * g.cig(), out_clamp{}, g.cig(), g.in_size());
  });
}

void gemm_backward_filter(const conv_nd_geometry& g, const float* in, const float* dout,
                          float* dw) {
  const int64_t V = g.out_size(), CK = col_rows(g), wsize = g.co * CK;
  const int64_t plane = g.out[1] * g.out[2], slab = slab_depth(g);
  if (g.n == 0 || V == 0) {  // no image (valid with any other size): dw = 0
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

// conv_forward's fused max pooling where no kernel takes it: pooled[n, m, q] = the max of
// full[n, m, q*p + s] over the p x .. x p window s (the k spatial axes; NaN if any element is
// NaN), planes in parallel.
void max_pool_windows(const conv_nd_geometry& g, int64_t p, const float* full, float* pooled) {
  int64_t win[nnp::kConvMaxSpatial], ext[nnp::kConvMaxSpatial];
  for (int a = 0; a < nnp::kConvMaxSpatial; ++a) {
    win[a] = a >= nnp::kConvMaxSpatial - g.spatial ? p : 1;
    ext[a] = g.out[a] / win[a];
  }
  const int64_t pooled_size = ext[0] * ext[1] * ext[2];
  parallel_for(
      g.n * g.co, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, g.out_size())),
      [&](int64_t pb, int64_t pe) {
        for (int64_t nm = pb; nm < pe; ++nm) {
          const float* plane = full + nm * g.out_size();
          float* dst = pooled + nm * pooled_size;
          for (int64_t q0 = 0; q0 < ext[0]; ++q0)
            for (int64_t q1 = 0; q1 < ext[1]; ++q1)
              for (int64_t q2 = 0; q2 < ext[2]; ++q2) {
                float best =
                    plane[((q0 * win[0]) * g.out[1] + q1 * win[1]) * g.out[2] + q2 * win[2]];
                for (int64_t s0 = 0; s0 < win[0]; ++s0)
                  for (int64_t s1 = 0; s1 < win[1]; ++s1)
                    for (int64_t s2 = 0; s2 < win[2]; ++s2) {
                      const float v =
                          plane[((q0 * win[0] + s0) * g.out[1] + q1 * win[1] + s1) * g.out[2] +
                                q2 * win[2] + s2];
                      if (v > best || (std::isnan(v) && !std::isnan(best))) best = v;
                    }
                dst[(q0 * ext[1] + q1) * ext[2] + q2] = best;
              }
        }
      });
}

// ---- the three directions: Winograd where it applies, else im2col / vol2col + SGEMM ----------
void run_forward(const conv_nd_geometry& g, const float* in, const float* w, const float* b,
                 const out_clamp& clamp, float* out) {
  if (!winograd_forward(g, in, w, b, clamp, out) && !depthwise_forward(g, in, w, b, clamp, out) &&
      !shallow_forward(g, in, w, b, clamp, out))
    gemm_forward(g, in, w, b, clamp, out);
}

void run_backward_data(const conv_nd_geometry& g, const float* dout, const float* w, const float* b,
                       float* din) {
  if (!winograd_backward_data(g, dout, w, b, din) && !depthwise_backward_data(g, dout, w, b, din))
    gemm_backward_data(g, dout, w, b, din);
}

void run_backward_filter(const conv_nd_geometry& g, const float* in, const float* dout, float* dw) {
  if (!winograd_backward_filter(g, in, dout, dw) && !depthwise_backward_filter(g, in, dout, dw))
    gemm_backward_filter(g, in, dout, dw);
}

// The NNP_OP_CONV_* call of NNP_OP_CONV2D_* call c: its params as nnp_conv_params (strides,
// pads [top, left, bottom, right], dilations and groups in their ONNX places, no auto_pad) in q,
// which the returned call points to; tensors and formulas are the same.
op_call as_conv_nd(const op_call& c, nnp_conv_params* q) {
  *q = nnp::conv_params_of_2d(c.params_as<nnp_conv2d_params>());
  return c.with_params(q);
}

}  // namespace

void conv_forward(const op_call& c) {
  const auto p = c.params_as<nnp_conv_params>();
  const conv_nd_geometry g = nnp::conv_nd_of_conv_forward(p, *c.in(0), *c.in(1), *c.out(0));
  const out_clamp clamp(nnp::conv_clamp_of(p));
  const int64_t pool = nnp::conv_max_pool_of(p);
  if (pool == 1) {
    run_forward(g, f32(c.in(0)), f32(c.in(1)), f32(c.in(2)), clamp, f32(c.out(0)));
    return;
  }
  // The fused max pooling (ABI 1.8): in the Winograd output transform where it runs (2 x 2 on
  // F(2x2)), else the whole output into call scratch, then its windows' maxima.
  if (pool == 2 &&
      winograd_forward_pool2(g, f32(c.in(0)), f32(c.in(1)), f32(c.in(2)), clamp, f32(c.out(0))))
    return;
  float* full = scratch(kCallSlot2, static_cast<size_t>(g.n * g.co * g.out_size()));
  run_forward(g, f32(c.in(0)), f32(c.in(1)), f32(c.in(2)), clamp, full);
  max_pool_windows(g, pool, full, f32(c.out(0)));
}

void conv_backward_data(const op_call& c) {
  const auto p = c.params_as<nnp_conv_params>();
  const conv_nd_geometry g = conv_nd_of_conv(p, *c.out(0), *c.in(1), *c.in(0));
  run_backward_data(g, f32(c.in(0)), f32(c.in(1)), nullptr, f32(c.out(0)));
}

void conv_backward_filter(const op_call& c) {
  const auto p = c.params_as<nnp_conv_params>();
  const conv_nd_geometry g = conv_nd_of_conv(p, *c.in(0), *c.out(0), *c.in(1));
  run_backward_filter(g, f32(c.in(0)), f32(c.in(1)), f32(c.out(0)));
}

// db[k] = sum over n and every spatial position of dy [N, K, ...] (any rank; params unused):
// channels in parallel, each image's plane summed in float (sum_floats), the total in double.
void conv_backward_bias(const op_call& c) {
  const DLTensor *DY = c.in(0), *DB = c.out(0);
  const int64_t n = DY->shape[0], k = DY->shape[1];
  int64_t pq = 1;
  for (int i = 2; i < DY->ndim; ++i) pq *= DY->shape[i];
  const float* dy = f32(DY);
  float* db = f32(DB);
  if (n * pq == 0) {  // dy has no element (N or the plane may be huge beside the 0)
    std::fill(db, db + k, 0.0f);
    return;
  }
  parallel_for(k, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, n * pq)),
               [&](int64_t kb, int64_t ke) {
                 for (int64_t kk = kb; kk < ke; ++kk) {
                   double sum = 0.0;
                   for (int64_t i = 0; i < n; ++i) sum += sum_floats(dy + (i * k + kk) * pq, pq);
                   db[kk] = static_cast<float>(sum);
                 }
               });
}

void conv_transpose_forward(const op_call& c) {
  const auto p = c.params_as<nnp_conv_transpose_params>();
  const conv_nd_geometry g = conv_nd_of_transpose(p, *c.in(0), *c.in(1), *c.out(0));
  run_backward_data(g, f32(c.in(0)), f32(c.in(1)), f32(c.in(2)), f32(c.out(0)));
}

void conv_transpose_backward_data(const op_call& c) {
  const auto p = c.params_as<nnp_conv_transpose_params>();
  const conv_nd_geometry g = conv_nd_of_transpose(p, *c.out(0), *c.in(1), *c.in(0));
  run_forward(g, f32(c.in(0)), f32(c.in(1)), nullptr, out_clamp{}, f32(c.out(0)));
}

void conv_transpose_backward_filter(const op_call& c) {
  const auto p = c.params_as<nnp_conv_transpose_params>();
  const conv_nd_geometry g = conv_nd_of_transpose(p, *c.in(0), *c.out(0), *c.in(1));
  run_backward_filter(g, f32(c.in(1)), f32(c.in(0)), f32(c.out(0)));
}

void conv2d_forward(const op_call& c) {
  nnp_conv_params q;
  conv_forward(as_conv_nd(c, &q));
}

void conv2d_backward_data(const op_call& c) {
  nnp_conv_params q;
  conv_backward_data(as_conv_nd(c, &q));
}

void conv2d_backward_filter(const op_call& c) {
  nnp_conv_params q;
  conv_backward_filter(as_conv_nd(c, &q));
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kConvOps[] = {
    {NNP_OP_CONV2D_FORWARD,                 kit::f32,            conv2d_forward},
    {NNP_OP_CONV2D_BACKWARD_DATA,           kit::f32,            conv2d_backward_data},
    {NNP_OP_CONV2D_BACKWARD_FILTER,         kit::f32,            conv2d_backward_filter},
    {NNP_OP_CONV2D_BACKWARD_BIAS,           kit::f32,            conv_backward_bias},
    {NNP_OP_CONV_FORWARD,                   kit::f32,            conv_forward},
    {NNP_OP_CONV_BACKWARD_DATA,             kit::f32,            conv_backward_data},
    {NNP_OP_CONV_BACKWARD_FILTER,           kit::f32,            conv_backward_filter},
    {NNP_OP_CONV_BACKWARD_BIAS,             kit::f32,            conv_backward_bias},
    {NNP_OP_CONV_TRANSPOSE_FORWARD,         kit::f32,            conv_transpose_forward},
    {NNP_OP_CONV_TRANSPOSE_BACKWARD_DATA,   kit::f32,            conv_transpose_backward_data},
    {NNP_OP_CONV_TRANSPOSE_BACKWARD_FILTER, kit::f32,            conv_transpose_backward_filter},
};
// clang-format on
extern const kit::op_row_list kConvRows = kit::row_list(kConvOps);

}  // namespace nnp::cpu
