// pool.cpp — reference 2-D max / average pooling over NCHW, forward and backward (ONNX MaxPool /
// AveragePool; PyTorch's ceil_mode output-size rule, nnp::pool_out_dim).
// Window of output (p, q): rows [p*stride_h - pad_top, + window_h), columns likewise.
//   max:     y = max over the window's input elements (padding never wins); NaN propagates;
//            backward routes dy to the FIRST maximum in row-major window order.
//   average: y = (sum over the window's input elements) / divisor, divisor = the window
//            clipped to [-pad_top, H + pad_bottom) x [-pad_left, W + pad_right) when
//            count_include_pad = 1, clipped to the input [0, H) x [0, W) when 0.
#include "reference.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace ref {
namespace {

struct pool_geometry {
  nnp::pool_window win;
  int64_t N, C, H, W, P, Q;
  bool max_mode;
  bool count_include_pad;
};

pool_geometry geometry(const nnp_pool2d_params& p, const DLTensor& x, const DLTensor& y) {
  pool_geometry g{};
  g.N = x.shape[0];
  g.C = x.shape[1];
  g.H = x.shape[2];
  g.W = x.shape[3];
  g.P = y.shape[2];
  g.Q = y.shape[3];
  g.win = nnp::resolve_pool_window(p, g.H, g.W);
  g.max_mode = p.mode == NNP_POOL_MAX;
  g.count_include_pad = p.count_include_pad != 0 && !p.global;
  return g;
}

// The window of output (oh, ow): [h0, h1) x [w0, w1) clipped to the input, and the divisor
// of average pooling.
struct window {
  int64_t h0, h1, w0, w1;
  double divisor;
};

window window_of(const pool_geometry& g, int64_t oh, int64_t ow) {
  const nnp::pool_window& v = g.win;
  const int64_t hs = oh * v.stride_h - v.pad_top, ws = ow * v.stride_w - v.pad_left;
  const int64_t he = hs + v.window_h, we = ws + v.window_w;
  window r{};
  r.h0 = std::max<int64_t>(hs, 0);
  r.h1 = std::min<int64_t>(he, g.H);
  r.w0 = std::max<int64_t>(ws, 0);
  r.w1 = std::min<int64_t>(we, g.W);
  if (g.count_include_pad) {
    // Clip to the padded extent only: with ceil_mode a window may run past it.
    const int64_t ph = std::min<int64_t>(he, g.H + v.pad_bottom) - hs;
    const int64_t pw = std::min<int64_t>(we, g.W + v.pad_right) - ws;
    r.divisor = double(ph) * double(pw);
  } else {
    r.divisor =
        double(std::max<int64_t>(r.h1 - r.h0, 0)) * double(std::max<int64_t>(r.w1 - r.w0, 0));
  }
  return r;
}

// Index (into the plane) of the first maximum of the window in row-major order; NaN counts as
// the maximum (first NaN wins). -1 for a window without input elements.
template <typename T>
int64_t first_max(const T* plane, int64_t W, const window& r) {
  int64_t best = -1;
  double best_v = -std::numeric_limits<double>::infinity();
  for (int64_t h = r.h0; h < r.h1; ++h)
    for (int64_t w = r.w0; w < r.w1; ++w) {
      const double v = plane[h * W + w];
      // Strictly greater replaces, so ties keep the first; once a NaN is kept nothing beats it.
      if (best < 0 || v > best_v || (std::isnan(v) && !std::isnan(best_v))) {
        best = h * W + w;
        best_v = v;
      }
    }
  return best;
}

template <typename T>
void forward_t(const op_args& args) {
  const auto p = read_params<nnp_pool2d_params>(args.params);
  const DLTensor& X = *args.in(0);
  const DLTensor& Y = *args.out(0);
  const pool_geometry g = geometry(p, X, Y);
  const T* x = nnp::data_ptr<const T>(X);
  T* y = nnp::data_ptr<T>(Y);

  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    const T* plane = x + nc * g.H * g.W;
    for (int64_t oh = 0; oh < g.P; ++oh)
      for (int64_t ow = 0; ow < g.Q; ++ow) {
        const window r = window_of(g, oh, ow);
        double out;
        if (g.max_mode) {
          const int64_t i = first_max(plane, g.W, r);
          out = i >= 0 ? double(plane[i]) : -std::numeric_limits<double>::infinity();
        } else {
          double sum = 0.0;
          for (int64_t h = r.h0; h < r.h1; ++h)
            for (int64_t w = r.w0; w < r.w1; ++w) sum += double(plane[h * g.W + w]);
          out = sum / r.divisor;
        }
        y[(nc * g.P + oh) * g.Q + ow] = static_cast<T>(out);
      }
  }
}

template <typename T>
void backward_t(const op_args& args) {
  const auto p = read_params<nnp_pool2d_params>(args.params);
  const DLTensor& X = *args.in(0);
  const DLTensor& DY = *args.in(2);  // inputs {x, y, dy}; y is not needed here
  const DLTensor& DX = *args.out(0);
  const pool_geometry g = geometry(p, X, DY);
  const T* x = nnp::data_ptr<const T>(X);
  const T* dy = nnp::data_ptr<const T>(DY);
  T* dx = nnp::data_ptr<T>(DX);

  // Windows overlap, so gradients are summed in a double buffer of one plane at a time.
  std::vector<double> acc(static_cast<size_t>(g.H * g.W));
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    std::fill(acc.begin(), acc.end(), 0.0);
    const T* plane = x + nc * g.H * g.W;
    for (int64_t oh = 0; oh < g.P; ++oh)
      for (int64_t ow = 0; ow < g.Q; ++ow) {
        const window r = window_of(g, oh, ow);
        const double d = dy[(nc * g.P + oh) * g.Q + ow];
        if (g.max_mode) {
          const int64_t i = first_max(plane, g.W, r);
          if (i >= 0) acc[static_cast<size_t>(i)] += d;
        } else {
          for (int64_t h = r.h0; h < r.h1; ++h)
            for (int64_t w = r.w0; w < r.w1; ++w)
              acc[static_cast<size_t>(h * g.W + w)] += d / r.divisor;
        }
      }
    for (int64_t i = 0; i < g.H * g.W; ++i)
      dx[nc * g.H * g.W + i] = static_cast<T>(acc[static_cast<size_t>(i)]);
  }
}

}  // namespace

REF_FLOAT_OP(pool2d_forward, forward_t, in(0))
REF_FLOAT_OP(pool2d_backward, backward_t, in(0))

}  // namespace ref
