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
// pad_left; taps that fall in the padding contribute nothing. Each (r, s) tap is one unit-stride
// multiply-add over the output row's valid range (stride 1; strided reads otherwise), which the
// compiler vectorises (an AVX2 clone where the CPU has it). A single group with one input channel
// (the cnn's conv1) stays with im2col + SGEMM: there the SGEMM's [co, R*S] filter block is reused
// across the plane, and it measured 3-4x faster than this loop (nnplug-bench, conv * cnn.conv1).
// Measured on MobileNetV2 at batch 32, 224x224 (2-core AMD EPYC, AVX2): its 17 depthwise
// convolutions 227 -> 179 ms against im2col + SGEMM per group.
// TBB runs planes in parallel: forward over (image, output channel), backward-data over
// (image, input channel) (each input plane gathers its group's output channels: no two tasks
// write one element), backward-filter over output channels (each sums over the batch).
#include "conv.hpp"

#include <algorithm>
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

// One output plane y [P, Q] of input plane x [H, W] and filter wk [R, S] (y starts at `bias`).
NNP_CPU_AVX2_CLONES
void forward_plane(const conv_nd_geometry& g, const tap_range* taps, const float* x,
                   const float* wk, float bias, float* y) {
  const int64_t W = g.in[2], P = g.out[1], Q = g.out[2], R = g.kernel[1], S = g.kernel[2];
  const int64_t stride = g.stride[2];
  std::fill(y, y + P * Q, bias);
  for (int64_t p = 0; p < P; ++p) {
    float* yr = y + p * Q;
    for (int64_t r = 0; r < R; ++r) {
      const int64_t ih = input_row(g, p, r);
      if (ih < 0) continue;
      const float* xr = x + ih * W;
      for (int64_t s = 0; s < S; ++s) {
        const float wv = wk[r * S + s];
        const tap_range& t = taps[s];
        if (stride == 1) {
          const float* xs = xr + t.off;
          for (int64_t q = t.lo; q < t.hi; ++q) yr[q] += wv * xs[q];
        } else {
          for (int64_t q = t.lo; q < t.hi; ++q) yr[q] += wv * xr[q * stride + t.off];
        }
      }
    }
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

// sum over p, q of dy [P, Q] times input plane x [H, W] at tap (r, s): one image's part of
// dw[oc, 0, r, s], each row's dot in float, their total in double.
NNP_CPU_AVX2_CLONES
double filter_tap(const conv_nd_geometry& g, const tap_range& t, const float* x, const float* dy,
                  int64_t r) {
  const int64_t W = g.in[2], P = g.out[1], Q = g.out[2], stride = g.stride[2];
  double total = 0.0;
  for (int64_t p = 0; p < P; ++p) {
    const int64_t ih = input_row(g, p, r);
    if (ih < 0) continue;
    const float* xr = x + ih * W;
    const float* dyr = dy + p * Q;
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

}  // namespace

bool depthwise_forward(const conv_nd_geometry& g, const float* in, const float* w, const float* b,
                       float* out) {
  if (!applies(g)) return false;
  const int64_t HW = g.in[1] * g.in[2], PQ = g.out[1] * g.out[2], RS = g.kernel[1] * g.kernel[2];
  const int64_t cog = g.cog();
  const std::vector<tap_range> taps = taps_of(g);
  parallel_for(g.n * g.co, grain_of(g), [&](int64_t tb, int64_t te) {
    for (int64_t t = tb; t < te; ++t) {
      const int64_t n = t / g.co, oc = t % g.co;
      forward_plane(g, taps.data(), in + (n * g.ci + oc / cog) * HW, w + oc * RS,
                    b != nullptr ? b[oc] : 0.0f, out + t * PQ);
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
