// pool.cu — own kernels for max / average pooling, forward and backward: N-D pooling
// (NNP_OP_POOL_FORWARD / _BACKWARD, nnp_pool_params: ONNX MaxPool / AveragePool /
// GlobalMaxPool / GlobalAveragePool with dilations, asymmetric pads, auto_pad, ceil_mode,
// count_include_pad and ONNX's Indices in either storage order; geometry nnp::resolve_pool_nd)
// and 2-D pooling (NNP_OP_POOL2D_*, nnp_pool2d_params), which is the same window geometry with
// dilation 1 and runs on the same kernels. cuDNN pooling expresses neither dilation, ceil_mode,
// asymmetric padding, Indices nor nnplug's first-maximum / first-NaN rule, hence own kernels.
// Every call runs as 3-D (leading unit dimensions), with the semantics of the reference
// (backends/reference/pool.cpp): the first maximum in row-major window order wins ties, the
// first NaN wins outright, padding never wins, an empty window gives -inf (Indices -1) or 0/0.
//
// Speed: forward runs one thread per output element (max / average over its window's taps
// inside x); a window covering a whole plane (global pooling) runs one warp per plane instead,
// reading the plane coalesced and reducing with shuffles. Backward runs one thread per input
// element gathering dy over the windows that hold it as a tap, in the reference's window order,
// so no atomics and a deterministic result; max backward first writes each window's first
// maximum (its offset in the plane) to scratch, so the maxima are found once per window. Max
// backward over disjoint windows (the cnn's 2 x 2, stride 2) runs one thread per window instead,
// writing dy to its first maximum. Max pooling in one or two dimensions with dilation 1 runs
// these kernels in 32-bit index arithmetic (flat2d).
#include "common.cuh"

#include <nnplug/kit/pool_nd.hpp>

#include <cmath>

namespace nnp::cuda {
namespace {

// One spatial dimension (nnp::pool_dim, copied for device code).
struct dim_g {
  int64_t in, out, kernel, stride, dilation, pad_begin, pad_end;
};

// The geometry of one call as 3 spatial dimensions; planes = N * C.
struct geom {
  dim_g d[3];
  int64_t planes, in_plane, out_plane;
  int max_mode, include_pad, column_major;
};

// First tap of window o along d (negative: in the begin padding).
__device__ __forceinline__ int64_t start_of(const dim_g& d, int64_t o) {
  return o * d.stride - d.pad_begin;
}

// Taps j in [*j0, *j1) of window o along d lie inside x (empty when *j0 >= *j1).
__device__ __forceinline__ void inside(const dim_g& d, int64_t o, int64_t* j0, int64_t* j1) {
  const int64_t s = start_of(d, o);
  const int64_t a = s < 0 ? (-s + d.dilation - 1) / d.dilation : 0;
  const int64_t b = d.in - s <= 0 ? 0 : (d.in - s + d.dilation - 1) / d.dilation;
  *j0 = min(a, d.kernel);
  *j1 = min(b, d.kernel);
}

// Window o's share of the average divisor along d: its taps inside x, or with count_include_pad
// its taps inside the padded extent [-pad_begin, in + pad_end).
__device__ __forceinline__ int64_t divisor_part(const dim_g& d, int64_t o, int include_pad) {
  if (include_pad) {
    const int64_t s = start_of(d, o), end = d.in + d.pad_end;
    if (s >= end) return 0;
    return min(d.kernel, (end - s + d.dilation - 1) / d.dilation);
  }
  int64_t j0, j1;
  inside(d, o, &j0, &j1);
  return j1 > j0 ? j1 - j0 : 0;
}

// ONNX's Indices of row-major offset `off` in plane `plane`: row-major, or column-major within
// the spatial dimensions (t0 + t1*D0 + t2*D0*D1); -1 stays -1.
__device__ __forceinline__ int64_t onnx_index(const geom& g, int64_t plane, int64_t off) {
  if (off < 0) return -1;
  int64_t sp = off;
  if (g.column_major) {
    const int64_t in0 = g.d[0].in, in1 = g.d[1].in, in2 = g.d[2].in;
    const int64_t t2 = off % in2, t01 = off / in2;
    const int64_t t1 = t01 % in1, t0 = t01 / in1;
    sp = t0 + t1 * in0 + t2 * in0 * in1;
  }
  return plane * g.in_plane + sp;
}

// Element i of a row-major [planes, e0, e1, e2] tensor: its position p[3] and its plane.
__device__ __forceinline__ int64_t split_index(int64_t i, int64_t e0, int64_t e1, int64_t e2,
                                               int64_t p[3]) {
  int64_t r = i;
  p[2] = r % e2;
  r /= e2;
  p[1] = r % e1;
  r /= e1;
  p[0] = r % e0;
  return r / e0;
}

// Output element i: its window position o[3] and its plane.
__device__ __forceinline__ int64_t split_output(const geom& g, int64_t i, int64_t o[3]) {
  return split_index(i, g.d[0].out, g.d[1].out, g.d[2].out, o);
}

// The first maximum of an output element's window: its plane, its row-major offset in the plane
// (-1 for an empty window) and its value (-inf then).
struct window_max {
  int64_t plane, offset;
  float value;
};
template <typename T>
__device__ __forceinline__ window_max window_first_max(const T* x, const geom& g, int64_t i) {
  const int64_t in1 = g.d[1].in, in2 = g.d[2].in;
  int64_t o[3], j0[3], j1[3], st[3];
  const int64_t plane = split_output(g, i, o);
  for (int a = 0; a < 3; ++a) {
    inside(g.d[a], o[a], &j0[a], &j1[a]);
    st[a] = start_of(g.d[a], o[a]);
  }
  const T* xp = x + plane * g.in_plane;
  float best = -INFINITY;
  int64_t best_off = -1;
  for (int64_t a0 = j0[0]; a0 < j1[0]; ++a0) {
    const int64_t t0 = st[0] + a0 * g.d[0].dilation;
    for (int64_t a1 = j0[1]; a1 < j1[1]; ++a1) {
      const int64_t row = (t0 * in1 + st[1] + a1 * g.d[1].dilation) * in2;
      for (int64_t a2 = j0[2]; a2 < j1[2]; ++a2) {
        const int64_t off = row + st[2] + a2 * g.d[2].dilation;
        const float v = to_f(xp[off]);
        // Strictly greater replaces, so ties keep the first; once a NaN is kept nothing
        // beats it.
        if (best_off < 0 || v > best || (isnan(v) && !isnan(best))) {
          best = v;
          best_off = off;
        }
      }
    }
  }
  return {plane, best_off, best};
}

// Max forward, one thread per output: y (may be NULL), indices (ONNX's, may be NULL) and arg
// (the row-major offset in the plane of the first maximum, -1 for an empty window; may be NULL).
template <typename T>
__global__ void max_forward_kernel(const T* x, T* y, int64_t* indices, int64_t* arg, geom g) {
  const int64_t total = g.planes * g.out_plane;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const window_max m = window_first_max(x, g, i);
    if (y != nullptr) y[i] = from_f<T>(m.value);
    if (indices != nullptr) indices[i] = onnx_index(g, m.plane, m.offset);
    if (arg != nullptr) arg[i] = m.offset;
  }
}

// Max backward when no two windows share a tap (stride >= the dilated kernel extent along every
// dimension, as the cnn's 2x2 stride-2 pooling): dx was zeroed, and one thread per output writes
// its dy to the window's first maximum, which no other window can touch (deterministic, one
// pass over the outputs instead of a gather over the inputs).
template <typename T>
__global__ void max_backward_scatter_kernel(const T* x, const T* dy, T* dx, geom g) {
  const int64_t total = g.planes * g.out_plane;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const window_max m = window_first_max(x, g, i);
    if (m.offset >= 0) dx[m.plane * g.in_plane + m.offset] = from_f<T>(to_f(dy[i]));
  }
}

// ---- 2-D max pooling in 32-bit indices -----------------------------------------------------
// The common case (one or two spatial dimensions, dilation 1, every index below 2^31) with the
// same semantics as max_forward_kernel / max_backward_scatter_kernel, but 32-bit index arithmetic
// (a 64-bit division is several times the instructions of a 32-bit one on the GPU) and, for
// windows that tile x exactly (stride = kernel, no padding, out * kernel = in), a backward that
// writes every element of dx itself (no memset first).
struct flat2d {
  int planes, ih, iw, oh, ow, kh, kw, sh, sw, ph, pw;
};

// Output element i's plane, its first maximum's offset in the plane (-1 for an empty window),
// the maximum, and the window's first tap (y0, x0; negative inside the padding).
struct window_max2 {
  int plane, offset, y0, x0;
  float value;
};
template <typename T>
__device__ __forceinline__ window_max2 first_max_2d(const T* x, const flat2d& f, int i) {
  const int ox = i % f.ow, t = i / f.ow;
  const int oy = t % f.oh, plane = t / f.oh;
  const int y0 = oy * f.sh - f.ph, x0 = ox * f.sw - f.pw;
  const int ya = max(y0, 0), yb = min(y0 + f.kh, f.ih);
  const int xa = max(x0, 0), xb = min(x0 + f.kw, f.iw);
  const T* xp = x + static_cast<ptrdiff_t>(plane) * f.ih * f.iw;
  float best = -INFINITY;
  int best_off = -1;
  for (int yy = ya; yy < yb; ++yy)
    for (int xx = xa; xx < xb; ++xx) {
      const int off = yy * f.iw + xx;
      const float v = to_f(xp[off]);
      if (best_off < 0 || v > best || (isnan(v) && !isnan(best))) {  // max_forward_kernel's rule
        best = v;
        best_off = off;
      }
    }
  return {plane, best_off, y0, x0, best};
}

template <typename T>
__global__ void max_forward_2d_kernel(const T* x, T* y, int64_t* indices, int64_t* arg, geom g,
                                      flat2d f) {
  const int total = f.planes * f.oh * f.ow;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const window_max2 m = first_max_2d(x, f, i);
    if (y != nullptr) y[i] = from_f<T>(m.value);
    if (indices != nullptr) indices[i] = onnx_index(g, m.plane, m.offset);
    if (arg != nullptr) arg[i] = m.offset;
  }
}

// Disjoint windows (disjoint_windows below); with kTiles the windows tile x exactly and each
// thread writes its whole window (dy at the first maximum, 0 elsewhere), else dx was zeroed and
// only the maximum is written.
template <typename T, bool kTiles>
__global__ void max_backward_2d_kernel(const T* x, const T* dy, T* dx, flat2d f) {
  const int total = f.planes * f.oh * f.ow;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const window_max2 m = first_max_2d(x, f, i);
    T* dxp = dx + static_cast<ptrdiff_t>(m.plane) * f.ih * f.iw;
    const T g = dy[i];
    if (kTiles) {
      for (int yy = m.y0; yy < m.y0 + f.kh; ++yy)
        for (int xx = m.x0; xx < m.x0 + f.kw; ++xx) {
          const int off = yy * f.iw + xx;
          dxp[off] = off == m.offset ? g : from_f<T>(0.0f);
        }
    } else if (m.offset >= 0) {
      dxp[m.offset] = g;
    }
  }
}

// Average forward, one thread per output: the sum of the taps inside x / the divisor.
template <typename T>
__global__ void avg_forward_kernel(const T* x, T* y, geom g) {
  const int64_t total = g.planes * g.out_plane;
  const int64_t in1 = g.d[1].in, in2 = g.d[2].in;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t o[3], j0[3], j1[3], st[3];
    const int64_t plane = split_output(g, i, o);
    int64_t divisor = 1;
    for (int a = 0; a < 3; ++a) {
      inside(g.d[a], o[a], &j0[a], &j1[a]);
      st[a] = start_of(g.d[a], o[a]);
      divisor *= divisor_part(g.d[a], o[a], g.include_pad);
    }
    const T* xp = x + plane * g.in_plane;
    float sum = 0.0f;
    for (int64_t a0 = j0[0]; a0 < j1[0]; ++a0) {
      const int64_t t0 = st[0] + a0 * g.d[0].dilation;
      for (int64_t a1 = j0[1]; a1 < j1[1]; ++a1) {
        const int64_t row = (t0 * in1 + st[1] + a1 * g.d[1].dilation) * in2;
        for (int64_t a2 = j0[2]; a2 < j1[2]; ++a2)
          sum += to_f(xp[row + st[2] + a2 * g.d[2].dilation]);
      }
    }
    y[i] = from_f<T>(sum / static_cast<float>(divisor));  // empty window: 0/0 = NaN
  }
}

// (v, o) beats (bv, bo) in the first-maximum order: a NaN beats any number, a larger number a
// smaller one, and equal values (two NaNs included) go to the smaller offset, i.e. the earlier
// tap in window order; offset -1 (nothing yet) loses to anything. A total order, so any
// reduction tree picks what the reference's sequential scan picks.
__device__ __forceinline__ bool beats(float v, int64_t o, float bv, int64_t bo) {
  if (o < 0) return false;
  if (bo < 0) return true;
  const bool n = isnan(v), bn = isnan(bv);
  if (n != bn) return n;
  if (!n && v != bv) return v > bv;
  return o < bo;
}

// Whole-plane windows (global pooling, or a window equal to the plane): one warp per plane.
// Outputs as max_forward_kernel (max) or the plane's mean (average; y non-NULL).
template <typename T>
__global__ void plane_forward_kernel(const T* x, T* y, int64_t* indices, int64_t* arg, geom g) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = blockDim.x >> 5;
  for (int64_t w = blockIdx.x * warps + (threadIdx.x >> 5); w < g.planes;
       w += int64_t{gridDim.x} * warps) {
    const T* xp = x + w * g.in_plane;
    if (g.max_mode) {
      float best = -INFINITY;
      int64_t best_off = -1;
      for (int64_t e = lane; e < g.in_plane; e += 32) {
        const float v = to_f(xp[e]);
        if (best_off < 0 || v > best || (isnan(v) && !isnan(best))) {
          best = v;
          best_off = e;
        }
      }
      for (int m = 16; m > 0; m >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, best, m);
        const long long oo = __shfl_xor_sync(0xffffffffu, static_cast<long long>(best_off), m);
        if (beats(ov, oo, best, best_off)) {
          best = ov;
          best_off = oo;
        }
      }
      if (lane == 0) {
        if (y != nullptr) y[w] = from_f<T>(best);
        if (indices != nullptr) indices[w] = onnx_index(g, w, best_off);
        if (arg != nullptr) arg[w] = best_off;
      }
    } else {
      float sum = 0.0f;
      for (int64_t e = lane; e < g.in_plane; e += 32) sum += to_f(xp[e]);
      sum = warp_reduce(sum, sum_op{});
      if (lane == 0) y[w] = from_f<T>(sum / static_cast<float>(g.in_plane));
    }
  }
}

// Backward, one thread per input element: dx = the sum, over the windows holding the element as
// a tap (in row-major window order, as the reference), of dy (max: where the window's first
// maximum arg is this element) or dy / divisor (average; arg NULL).
template <typename T>
__global__ void backward_kernel(const T* dy, const int64_t* arg, T* dx, geom g) {
  const int64_t total = g.planes * g.in_plane;
  const int64_t out1 = g.d[1].out, out2 = g.d[2].out;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t t[3], lo[3], hi[3];
    const int64_t plane = split_index(i, g.d[0].in, g.d[1].in, g.d[2].in, t);
    const int64_t off = i - plane * g.in_plane;
    // Window o holds tap t when t = o*stride - pad_begin + j*dilation, 0 <= j < kernel:
    // o*stride in [t + pad_begin - (kernel-1)*dilation, t + pad_begin].
    for (int a = 0; a < 3; ++a) {
      const dim_g& d = g.d[a];
      const int64_t p = t[a] + d.pad_begin;
      const int64_t v = p - (d.kernel - 1) * d.dilation;
      lo[a] = v <= 0 ? 0 : (v + d.stride - 1) / d.stride;
      hi[a] = min(p / d.stride + 1, d.out);
    }
    const T* dyp = dy + plane * g.out_plane;
    const int64_t* ap = arg != nullptr ? arg + plane * g.out_plane : nullptr;
    float acc = 0.0f;
    for (int64_t o0 = lo[0]; o0 < hi[0]; ++o0) {
      if ((t[0] + g.d[0].pad_begin - o0 * g.d[0].stride) % g.d[0].dilation != 0) continue;
      const int64_t div0 = ap != nullptr ? 1 : divisor_part(g.d[0], o0, g.include_pad);
      for (int64_t o1 = lo[1]; o1 < hi[1]; ++o1) {
        if ((t[1] + g.d[1].pad_begin - o1 * g.d[1].stride) % g.d[1].dilation != 0) continue;
        const int64_t div1 = ap != nullptr ? 1 : div0 * divisor_part(g.d[1], o1, g.include_pad);
        for (int64_t o2 = lo[2]; o2 < hi[2]; ++o2) {
          if ((t[2] + g.d[2].pad_begin - o2 * g.d[2].stride) % g.d[2].dilation != 0) continue;
          const int64_t j = (o0 * out1 + o1) * out2 + o2;
          if (ap != nullptr) {
            if (ap[j] == off) acc += to_f(dyp[j]);
          } else {
            const int64_t div = div1 * divisor_part(g.d[2], o2, g.include_pad);
            acc += to_f(dyp[j]) / static_cast<float>(div);
          }
        }
      }
    }
    dx[i] = from_f<T>(acc);
  }
}

geom geom_of(const pool_nd_geometry& pg, bool max_mode, bool include_pad, bool column_major) {
  geom g{};
  for (int a = 0; a < 3; ++a) {
    const pool_dim& d = pg.d[a];
    g.d[a] = dim_g{d.in, d.out, d.kernel, d.stride, d.dilation, d.pad_begin, d.pad_end};
  }
  g.planes = pg.planes;
  g.in_plane = pg.in_plane();
  g.out_plane = pg.out_plane();
  g.max_mode = max_mode ? 1 : 0;
  g.include_pad = include_pad ? 1 : 0;
  g.column_major = column_major ? 1 : 0;
  return g;
}

// The geometry of a 2-D call (nnp_pool2d_params): the N-D one with dilation 1; P, Q from the
// output (forward) or dy (backward).
geom geom_of_2d(const nnp_pool2d_params& p, const DLTensor& x, const DLTensor& y) {
  const pool_window w = resolve_pool_window(p, x.shape[2], x.shape[3]);
  pool_nd_geometry pg;
  pg.k = 2;
  pg.planes = x.shape[0] * x.shape[1];
  pg.d[0] = pool_dim{1, 1, 1, 1, 1, 0, 0};
  pg.d[1] = pool_dim{x.shape[2], y.shape[2], w.window_h, w.stride_h, 1, w.pad_top, w.pad_bottom};
  pg.d[2] = pool_dim{x.shape[3], y.shape[3], w.window_w, w.stride_w, 1, w.pad_left, w.pad_right};
  return geom_of(pg, p.mode == NNP_POOL_MAX, p.count_include_pad != 0 && !p.global, false);
}

void check_mode(int32_t mode) {
  if (mode != NNP_POOL_MAX && mode != NNP_POOL_AVERAGE)
    unsupported(
        format("pool mode %d is not implemented by the cuda backend (implemented: MAX, "
               "AVERAGE)",
               mode));
}

// Every window is the whole plane (one output per plane, window = extents, no padding), and the
// plane is large enough for a warp.
bool whole_plane(const geom& g) {
  for (const dim_g& d : g.d)
    if (d.out != 1 || d.kernel != d.in || (d.dilation != 1 && d.kernel > 1) || d.pad_begin != 0 ||
        d.pad_end != 0)
      return false;
  return g.in_plane >= 16;
}

// The call as 2-D pooling in 32-bit indices (flat2d above): a unit first dimension, dilation 1
// (or a kernel of 1) along the others, and every input and output index below 2^31.
bool as_flat2d(const geom& g, flat2d* f) {
  const dim_g& u = g.d[0];
  if (u.in != 1 || u.out != 1 || u.kernel != 1 || u.pad_begin != 0 || u.pad_end != 0) return false;
  for (int a = 1; a < 3; ++a) {
    const dim_g& d = g.d[a];
    if ((d.dilation != 1 && d.kernel > 1) || d.kernel > INT32_MAX / 4 || d.stride > INT32_MAX / 4 ||
        d.pad_begin > INT32_MAX / 4 || d.pad_end > INT32_MAX / 4)
      return false;
  }
  if (g.planes > INT32_MAX || g.in_plane > INT32_MAX / (g.planes > 0 ? g.planes : 1) ||
      g.out_plane > INT32_MAX / (g.planes > 0 ? g.planes : 1))
    return false;
  // window starts and ends (out * stride + kernel) stay below 2^31 with the bounds above
  if (g.d[1].out > INT32_MAX / 4 || g.d[2].out > INT32_MAX / 4) return false;
  if (g.d[1].out * g.d[1].stride > INT32_MAX / 2 || g.d[2].out * g.d[2].stride > INT32_MAX / 2)
    return false;
  *f = flat2d{static_cast<int>(g.planes),        static_cast<int>(g.d[1].in),
              static_cast<int>(g.d[2].in),       static_cast<int>(g.d[1].out),
              static_cast<int>(g.d[2].out),      static_cast<int>(g.d[1].kernel),
              static_cast<int>(g.d[2].kernel),   static_cast<int>(g.d[1].stride),
              static_cast<int>(g.d[2].stride),   static_cast<int>(g.d[1].pad_begin),
              static_cast<int>(g.d[2].pad_begin)};
  return true;
}

// Forward: y, and for max pooling optionally indices (ONNX's) and arg (row-major plane offsets
// of the first maxima); y may be NULL when arg is wanted alone.
void launch_forward(stream& s, const geom& g, elem t, const void* x, void* y, int64_t* indices,
                    int64_t* arg) {
  if (g.planes == 0) return;  // no elements; the extents' products may not fit int64
  const int64_t n = g.planes * g.out_plane;
  if (n == 0) return;
  dispatch_float(t, [&](auto tg) {
    using T = typename decltype(tg)::type;
    const T* xt = static_cast<const T*>(x);
    T* yt = static_cast<T*>(y);
    if (whole_plane(g)) {
      plane_forward_kernel<<<grid_for(g.planes * 32), kThreads, 0, s.handle>>>(xt, yt, indices, arg,
                                                                               g);
    } else if (flat2d f{}; g.max_mode && as_flat2d(g, &f)) {
      max_forward_2d_kernel<<<grid_for(n), kThreads, 0, s.handle>>>(xt, yt, indices, arg, g, f);
    } else if (g.max_mode) {
      max_forward_kernel<<<grid_for(n), kThreads, 0, s.handle>>>(xt, yt, indices, arg, g);
    } else {
      avg_forward_kernel<<<grid_for(n), kThreads, 0, s.handle>>>(xt, yt, g);
    }
  });
  NNP_CUDA_CHECK_LAUNCH();
}

// No two windows share a tap: along every dimension consecutive windows start at least one
// dilated kernel extent apart.
bool disjoint_windows(const geom& g) {
  for (const dim_g& d : g.d)
    if (d.out > 1 && d.stride < (d.kernel - 1) * d.dilation + 1) return false;
  return true;
}

// Backward: dx from x and dy (the forward's y is not needed: max recomputes its first maxima).
void launch_backward(stream& s, const geom& g, elem t, const void* x, const void* dy, void* dx) {
  if (g.planes == 0) return;
  const int64_t n = g.planes * g.in_plane;
  if (n == 0) return;  // dx has no elements
  const int64_t n_out = g.planes * g.out_plane;
  flat2d f{};
  if (g.max_mode && disjoint_windows(g) && n_out > 0 && as_flat2d(g, &f)) {
    const bool tiles = f.sh == f.kh && f.sw == f.kw && f.ph == 0 && f.pw == 0 &&
                       g.d[1].pad_end == 0 && g.d[2].pad_end == 0 && f.oh * f.kh == f.ih &&
                       f.ow * f.kw == f.iw;
    if (!tiles)
      NNP_CUDA_CHECK(cudaMemsetAsync(dx, 0, static_cast<size_t>(n) * elem_size(t), s.handle));
    dispatch_float(t, [&](auto tg) {
      using T = typename decltype(tg)::type;
      const T* xt = static_cast<const T*>(x);
      const T* dyt = static_cast<const T*>(dy);
      T* dxt = static_cast<T*>(dx);
      if (tiles)
        max_backward_2d_kernel<T, true>
            <<<grid_for(n_out), kThreads, 0, s.handle>>>(xt, dyt, dxt, f);
      else
        max_backward_2d_kernel<T, false>
            <<<grid_for(n_out), kThreads, 0, s.handle>>>(xt, dyt, dxt, f);
    });
    NNP_CUDA_CHECK_LAUNCH();
    return;
  }
  if (g.max_mode && disjoint_windows(g)) {
    NNP_CUDA_CHECK(cudaMemsetAsync(dx, 0, static_cast<size_t>(n) * elem_size(t), s.handle));
    if (n_out == 0) return;
    dispatch_float(t, [&](auto tg) {
      using T = typename decltype(tg)::type;
      max_backward_scatter_kernel<<<grid_for(n_out), kThreads, 0, s.handle>>>(
          static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dx), g);
    });
    NNP_CUDA_CHECK_LAUNCH();
    return;
  }
  int64_t* arg = nullptr;
  if (g.max_mode) {
    arg = static_cast<int64_t*>(
        s.scratch(kScratchTemp0, sizeof(int64_t) * static_cast<size_t>(n_out > 0 ? n_out : 1)));
    launch_forward(s, g, t, x, nullptr, nullptr, arg);
  }
  dispatch_float(t, [&](auto tg) {
    using T = typename decltype(tg)::type;
    backward_kernel<<<grid_for(n), kThreads, 0, s.handle>>>(static_cast<const T*>(dy), arg,
                                                            static_cast<T*>(dx), g);
  });
  NNP_CUDA_CHECK_LAUNCH();
}

const void* cdata(const DLTensor& t) { return data_ptr<const char>(t); }
void* mdata(const DLTensor& t) { return data_ptr<char>(t); }

}  // namespace

void op_pool2d_forward(stream& s, const op_call& c) {
  const auto p = c.params_as<nnp_pool2d_params>();
  check_mode(p.mode);
  const DLTensor& x = *c.in(0);
  const DLTensor& y = *c.out(0);
  launch_forward(s, geom_of_2d(p, x, y), elem_of(x.dtype), cdata(x), mdata(y), nullptr, nullptr);
}

void op_pool2d_backward(stream& s, const op_call& c) {
  const auto p = c.params_as<nnp_pool2d_params>();
  check_mode(p.mode);
  const DLTensor& x = *c.in(0);
  const DLTensor& dy = *c.in(2);  // inputs {x, y, dy}; y is not needed here
  launch_backward(s, geom_of_2d(p, x, dy), elem_of(x.dtype), cdata(x), cdata(dy), mdata(*c.out(0)));
}

void op_pool_forward(stream& s, const op_call& c) {
  const auto p = c.params_as<nnp_pool_params>();
  check_mode(p.mode);
  const DLTensor& x = *c.in(0);
  const bool max_mode = p.mode == NNP_POOL_MAX;
  const geom g =
      geom_of(resolve_pool_nd(p, x), max_mode, p.count_include_pad != 0, p.storage_order == 1);
  const DLTensor* indices = max_mode ? c.out(1) : nullptr;
  launch_forward(s, g, elem_of(x.dtype), cdata(x), mdata(*c.out(0)),
                 indices != nullptr ? data_ptr<int64_t>(*indices) : nullptr, nullptr);
}

void op_pool_backward(stream& s, const op_call& c) {
  const auto p = c.params_as<nnp_pool_params>();
  check_mode(p.mode);
  const DLTensor& x = *c.in(0);
  const geom g = geom_of(resolve_pool_nd(p, x), p.mode == NNP_POOL_MAX, p.count_include_pad != 0,
                         p.storage_order == 1);
  // inputs {x, y, dy}; y is not needed here
  launch_backward(s, g, elem_of(x.dtype), cdata(x), cdata(*c.in(2)), mdata(*c.out(0)));
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kPoolOps[] = {
    {NNP_OP_POOL2D_FORWARD,  kHalfFloats, on_stream<op_pool2d_forward>},
    {NNP_OP_POOL2D_BACKWARD, kHalfFloats, on_stream<op_pool2d_backward>},
    {NNP_OP_POOL_FORWARD,    kHalfFloats, on_stream<op_pool_forward>},
    {NNP_OP_POOL_BACKWARD,   kHalfFloats, on_stream<op_pool_backward>},
};
// clang-format on
extern const kit::op_row_list kPoolRows = kit::row_list(kPoolOps);

}  // namespace nnp::cuda
