// pool.cu — own kernels for 2-D max / average pooling, forward and backward, with nnplug's exact
// semantics: asymmetric padding, PyTorch's ceil_mode rule, count_include_pad with the window
// clipped to the padded extent, and max backward to the FIRST maximum in row-major window order
// (cuDNN expresses neither asymmetric padding nor that tie rule). Forward: one thread per output.
// Backward: one thread per input element gathering from the windows that cover it, so no atomics
// and a deterministic result.
#include "common.cuh"

#include <cmath>

namespace nnp::cuda {
namespace {

struct pool_geom {
  int64_t NC, H, W, P, Q;
  int64_t wh, ww, sh, sw, pt, pb, pl, pr;
  int max_mode, include_pad;
};

// Window of output (p, q): rows [h0, h1) x cols [w0, w1) inside the input, and the divisor.
struct window {
  int64_t h0, h1, w0, w1;
  float divisor;
};

__device__ __forceinline__ window window_of(const pool_geom& g, int64_t p, int64_t q) {
  const int64_t hs = p * g.sh - g.pt, ws = q * g.sw - g.pl;
  const int64_t he = min(hs + g.wh, g.H + g.pb), we = min(ws + g.ww, g.W + g.pr);
  window w;
  w.h0 = max(hs, int64_t{0});
  w.w0 = max(ws, int64_t{0});
  w.h1 = min(he, g.H);
  w.w1 = min(we, g.W);
  const int64_t count = g.include_pad ? (he - hs) * (we - ws) : (w.h1 - w.h0) * (w.w1 - w.w0);
  w.divisor = static_cast<float>(count);
  return w;
}

// Index (h * W + w) of the first maximum of window w in plane x; padding never wins.
template <typename T>
__device__ __forceinline__ int64_t argmax_of(const T* x, const pool_geom& g, const window& w,
                                             float* best_out) {
  float best = -INFINITY;
  int64_t best_i = -1;
  for (int64_t h = w.h0; h < w.h1; ++h)
    for (int64_t c = w.w0; c < w.w1; ++c) {
      const float v = to_f(x[h * g.W + c]);
      if (best_i < 0 || v > best || (isnan(v) && !isnan(best))) {
        best = v;
        best_i = h * g.W + c;
      }
    }
  *best_out = best;
  return best_i;
}

template <typename T>
__global__ void pool_forward_kernel(const T* x, T* y, pool_geom g) {
  const int64_t total = g.NC * g.P * g.Q;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t q = i % g.Q, p = (i / g.Q) % g.P, plane = i / (g.P * g.Q);
    const T* xp = x + plane * g.H * g.W;
    const window w = window_of(g, p, q);
    float out;
    if (g.max_mode) {
      argmax_of(xp, g, w, &out);
    } else {
      float sum = 0.0f;
      for (int64_t h = w.h0; h < w.h1; ++h)
        for (int64_t c = w.w0; c < w.w1; ++c) sum += to_f(xp[h * g.W + c]);
      out = sum / w.divisor;
    }
    y[i] = from_f<T>(out);
  }
}

template <typename T>
__global__ void pool_backward_kernel(const T* x, const T* dy, T* dx, pool_geom g) {
  const int64_t total = g.NC * g.H * g.W;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = i % g.W, h = (i / g.W) % g.H, plane = i / (g.H * g.W);
    const T* xp = x + plane * g.H * g.W;
    const T* dyp = dy + plane * g.P * g.Q;
    // Outputs whose window covers row h: p*sh - pt <= h < p*sh - pt + wh.
    const int64_t hp = h + g.pt, wp = c + g.pl;
    const int64_t p0 = hp < g.wh ? 0 : (hp - g.wh) / g.sh + 1;
    const int64_t p1 = min(hp / g.sh + 1, g.P);
    const int64_t q0 = wp < g.ww ? 0 : (wp - g.ww) / g.sw + 1;
    const int64_t q1 = min(wp / g.sw + 1, g.Q);
    float acc = 0.0f;
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t q = q0; q < q1; ++q) {
        const window w = window_of(g, p, q);
        if (g.max_mode) {
          float best;
          if (argmax_of(xp, g, w, &best) == h * g.W + c) acc += to_f(dyp[p * g.Q + q]);
        } else {
          acc += to_f(dyp[p * g.Q + q]) / w.divisor;
        }
      }
    dx[i] = from_f<T>(acc);
  }
}

}  // namespace

void op_pool2d(stream& s, const op_call& c) {
  const auto p = read_params<nnp_pool2d_params>(c.params);
  const DLTensor& x = *c.in(0);
  const pool_window pw = resolve_pool_window(p, x.shape[2], x.shape[3]);
  pool_geom g{};
  g.NC = x.shape[0] * x.shape[1];
  g.H = x.shape[2];
  g.W = x.shape[3];
  g.P = pool_out_dim(g.H, pw.window_h, pw.stride_h, pw.pad_top, pw.pad_bottom, pw.ceil_mode);
  g.Q = pool_out_dim(g.W, pw.window_w, pw.stride_w, pw.pad_left, pw.pad_right, pw.ceil_mode);
  g.wh = pw.window_h;
  g.ww = pw.window_w;
  g.sh = pw.stride_h;
  g.sw = pw.stride_w;
  g.pt = pw.pad_top;
  g.pb = pw.pad_bottom;
  g.pl = pw.pad_left;
  g.pr = pw.pad_right;
  g.max_mode = p.mode == NNP_POOL_MAX;
  g.include_pad = p.count_include_pad != 0;
  if (p.mode != NNP_POOL_MAX && p.mode != NNP_POOL_AVERAGE)
    unsupported(format("pool mode %d is not implemented by the cuda backend", p.mode));
  dispatch_float(elem_of(x.dtype), [&](auto tg) {
    using T = typename decltype(tg)::type;
    if (c.kind == NNP_OP_POOL2D_FORWARD) {
      const int64_t n = g.NC * g.P * g.Q;
      if (n == 0) return;
      pool_forward_kernel<<<grid_for(n), kThreads, 0, s.handle>>>(data_ptr<const T>(x),
                                                                  data_ptr<T>(*c.out(0)), g);
    } else {
      // inputs {x, y, dy}; y is not needed here.
      const int64_t n = g.NC * g.H * g.W;
      if (n == 0) return;
      pool_backward_kernel<<<grid_for(n), kThreads, 0, s.handle>>>(
          data_ptr<const T>(x), data_ptr<const T>(*c.in(2)), data_ptr<T>(*c.out(0)), g);
    }
  });
  NNP_CUDA_CHECK_LAUNCH();
}

}  // namespace nnp::cuda
