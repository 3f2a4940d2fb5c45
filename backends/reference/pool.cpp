// pool.cpp — reference max / average pooling, forward and backward: N-D pooling over
// [N, C, D1..Dk], k = 1, 2, 3, with ONNX's Indices (NNP_OP_POOL_FORWARD / NNP_OP_POOL_BACKWARD,
// nnp_pool_params; ONNX MaxPool / AveragePool opset 22, geometry nnp::resolve_pool_nd), and the
// 2-D pooling of ABI 1.0 (NNP_OP_POOL2D_*), which is the same with k = 2, no dilation and no
// Indices (its params are read as nnp_pool_params).
// Every call is run as 3-D (leading unit dimensions). Window of output o: taps
// o*stride - pad_begin + j*dilation, j = 0..kernel-1, per dimension, in row-major order.
//   max:     y = the largest tap inside x (padding never wins); the first maximum in window
//            order wins ties, the first NaN wins outright; indices = its flat index in x (-1
//            for a window without taps inside x, y = -inf); backward routes dy there.
//   average: y = (sum of the taps inside x) / divisor, divisor = taps inside x, or taps inside
//            the padded extent with count_include_pad; backward spreads dy / divisor likewise.
#include "reference.hpp"

#include <nnplug/kit/pool_nd.hpp>

#include <cmath>
#include <limits>
#include <vector>

namespace ref {
namespace {

using nnp::pool_nd_geometry;

struct geometry {
  pool_nd_geometry g;
  bool max_mode;
  bool include_pad;
  bool column_major;
};

geometry geometry_of(const nnp_pool_params& p, const DLTensor& x) {
  geometry r{nnp::resolve_pool_nd(p, x), p.mode == NNP_POOL_MAX, p.count_include_pad != 0,
             p.storage_order == 1};
  return r;
}

// One window: the taps inside x along each dimension, [j0, j1), and the average divisor.
struct window {
  int64_t j0[3], j1[3];
  double divisor;
};

window window_of(const geometry& G, const int64_t o[3]) {
  window w{};
  double inside = 1.0, padded = 1.0;
  for (int a = 0; a < 3; ++a) {
    G.g.d[a].inside(o[a], &w.j0[a], &w.j1[a]);
    inside *= double(std::max<int64_t>(w.j1[a] - w.j0[a], 0));
    padded *= double(G.g.d[a].padded_taps(o[a]));
  }
  w.divisor = G.include_pad ? padded : inside;
  return w;
}

// Calls f(row-major spatial index of x, tap coordinates t) for every tap of window o inside x,
// in row-major window order.
template <typename F>
void for_taps(const geometry& G, const int64_t o[3], const window& w, F&& f) {
  const auto& d = G.g.d;
  for (int64_t j0 = w.j0[0]; j0 < w.j1[0]; ++j0)
    for (int64_t j1 = w.j0[1]; j1 < w.j1[1]; ++j1)
      for (int64_t j2 = w.j0[2]; j2 < w.j1[2]; ++j2) {
        const int64_t t[3] = {d[0].start(o[0]) + j0 * d[0].dilation,
                              d[1].start(o[1]) + j1 * d[1].dilation,
                              d[2].start(o[2]) + j2 * d[2].dilation};
        f((t[0] * d[1].in + t[1]) * d[2].in + t[2], t);
      }
}

// ONNX's Indices within the plane: row-major, or column-major within the spatial dimensions
// (i1 + i2*D1 + i3*D1*D2; leading unit dimensions add 0).
int64_t spatial_index(const geometry& G, const int64_t t[3]) {
  const auto& d = G.g.d;
  if (G.column_major) return t[0] + t[1] * d[0].in + t[2] * d[0].in * d[1].in;
  return (t[0] * d[1].in + t[1]) * d[2].in + t[2];
}

// The first maximum of window o in one plane: its row-major offset in the plane (-1 if the
// window has no tap inside x) and its tap coordinates.
template <typename T>
int64_t first_max(const geometry& G, const T* plane, const int64_t o[3], const window& w,
                  int64_t tap[3]) {
  int64_t best = -1;
  double best_v = -std::numeric_limits<double>::infinity();
  for_taps(G, o, w, [&](int64_t off, const int64_t t[3]) {
    const double v = plane[off];
    // Strictly greater replaces, so ties keep the first; once a NaN is kept nothing beats it.
    if (best < 0 || v > best_v || (std::isnan(v) && !std::isnan(best_v))) {
      best = off;
      best_v = v;
      for (int a = 0; a < 3; ++a) tap[a] = t[a];
    }
  });
  return best;
}

// Calls f(o, w, i) for every output position o of one plane, in row-major order: w its window,
// i its index within the plane.
template <typename F>
void for_each_window(const geometry& G, F&& f) {
  const auto& d = G.g.d;
  int64_t i = 0;
  int64_t o[3];
  for (o[0] = 0; o[0] < d[0].out; ++o[0])
    for (o[1] = 0; o[1] < d[1].out; ++o[1])
      for (o[2] = 0; o[2] < d[2].out; ++o[2], ++i) f(o, window_of(G, o), i);
}

template <typename T>
void forward_t(const op_args& args) {
  const auto p = read_params<nnp_pool_params>(args.params);
  const DLTensor& X = *args.in(0);
  const geometry G = geometry_of(p, X);
  const T* x = nnp::data_ptr<const T>(X);
  T* y = nnp::data_ptr<T>(*args.out(0));
  int64_t* indices = opt_out<int64_t>(args, 1);
  const int64_t in_plane = G.g.in_plane(), out_plane = G.g.out_plane();

  for (int64_t nc = 0; nc < G.g.planes; ++nc) {
    const T* plane = x + nc * in_plane;
    for_each_window(G, [&](const int64_t* o, const window& w, int64_t j) {
      const int64_t i = nc * out_plane + j;
      if (G.max_mode) {
        int64_t tap[3];
        const int64_t best = first_max(G, plane, o, w, tap);
        y[i] = best >= 0 ? plane[best] : -std::numeric_limits<T>::infinity();
        if (indices != nullptr) indices[i] = best >= 0 ? nc * in_plane + spatial_index(G, tap) : -1;
      } else {
        double sum = 0.0;
        for_taps(G, o, w, [&](int64_t off, const int64_t*) { sum += double(plane[off]); });
        y[i] = static_cast<T>(sum / w.divisor);
      }
    });
  }
}

template <typename T>
void backward_t(const op_args& args) {
  const auto p = read_params<nnp_pool_params>(args.params);
  const DLTensor& X = *args.in(0);
  const geometry G = geometry_of(p, X);
  const T* x = nnp::data_ptr<const T>(X);
  const T* dy = nnp::data_ptr<const T>(*args.in(2));  // inputs {x, y, dy}; y is not needed here
  T* dx = nnp::data_ptr<T>(*args.out(0));
  const int64_t in_plane = G.g.in_plane(), out_plane = G.g.out_plane();

  // Windows overlap, so gradients are summed in a double buffer of one plane at a time.
  std::vector<double> acc(static_cast<size_t>(in_plane));
  for (int64_t nc = 0; nc < G.g.planes; ++nc) {
    std::fill(acc.begin(), acc.end(), 0.0);
    const T* plane = x + nc * in_plane;
    for_each_window(G, [&](const int64_t* o, const window& w, int64_t j) {
      const double g = dy[nc * out_plane + j];
      if (G.max_mode) {
        int64_t tap[3];
        const int64_t best = first_max(G, plane, o, w, tap);
        if (best >= 0) acc[static_cast<size_t>(best)] += g;
      } else {
        for_taps(G, o, w, [&](int64_t off, const int64_t*) {
          acc[static_cast<size_t>(off)] += g / w.divisor;
        });
      }
    });
    for (int64_t e = 0; e < in_plane; ++e)
      dx[nc * in_plane + e] = static_cast<T>(acc[static_cast<size_t>(e)]);
  }
}

// Runs NNP_OP_POOL2D_* call a as the NNP_OP_POOL_* op `nd` with k = 2: its params as
// nnp_pool_params (window, strides and pads [top, left, bottom, right] in their ONNX places, no
// auto_pad, dilation 1); ceil_mode, count_include_pad and global mean the same there.
void as_pool_nd(const op_args& a, void (*nd)(const op_args&)) {
  const nnp_pool_params q = nnp::pool_params_of_2d(read_params<nnp_pool2d_params>(a.params));
  nd(a.with_params(&q));
}

}  // namespace

REF_FLOAT_OP(pool_forward, forward_t, in(0))
REF_FLOAT_OP(pool_backward, backward_t, in(0))

void pool2d_forward(const op_args& a) { as_pool_nd(a, pool_forward); }
void pool2d_backward(const op_args& a) { as_pool_nd(a, pool_backward); }

// The rows of this file's kernels (rows.hpp lists the files).
// clang-format off
const nnp::kit::op_row kPoolOps[] = {
    {NNP_OP_POOL2D_FORWARD,  kFloats,        pool2d_forward},
    {NNP_OP_POOL2D_BACKWARD, kFloats,        pool2d_backward},
    {NNP_OP_POOL_FORWARD,    kFloats,        pool_forward},
    {NNP_OP_POOL_BACKWARD,   kFloats,        pool_backward},
};
// clang-format on
extern const nnp::kit::op_row_list kPoolRows = nnp::kit::row_list(kPoolOps);

}  // namespace ref
