// NNP_OP_REDUCE on the CPU: sum, mean, max over any set of axes (ONNX ReduceSum / ReduceMean /
// ReduceMax), keepdims or not.
//
// Speed: the kept and the reduced dimensions are each coalesced; output elements run in
// parallel, each reducing over its (coalesced) reduced dimensions with a contiguous inner loop
// when the reduced axes are trailing. Reducing leading axes of a row-major tensor (the bias
// gradient: [N, K] -> [K]) takes a row-streaming path instead: column blocks in parallel, rows
// added in order, so every read is contiguous. Sums accumulate in double.
#include "cpu_backend.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nnp::cpu {
namespace {

struct dims {
  int rank = 0;
  int64_t d[NNP_MAX_DIMS];
  int64_t s[NNP_MAX_DIMS];  // x strides
};

void push_coalesced(dims& v, int64_t dim, int64_t stride) {
  if (dim == 1) return;
  if (v.rank > 0 && v.s[v.rank - 1] == stride * dim) {
    v.d[v.rank - 1] *= dim;
    v.s[v.rank - 1] = stride;
    return;
  }
  v.d[v.rank] = dim;
  v.s[v.rank] = stride;
  ++v.rank;
}

int64_t offset_of(const dims& v, int64_t idx) {
  int64_t off = 0;
  for (int i = v.rank - 1; i >= 0; --i) {
    off += (idx % v.d[i]) * v.s[i];
    idx /= v.d[i];
  }
  return off;
}

}  // namespace

void reduce(const op_call& c) {
  const auto& p = c.params_as<nnp_reduce_params>();
  const DLTensor& X = *c.in(0);
  const float* x = f32(&X);
  float* y = f32(c.out(0));
  bool reduced[NNP_MAX_DIMS] = {};
  if (p.n_axes == 0) {
    for (int i = 0; i < X.ndim; ++i) reduced[i] = p.noop_with_empty_axes == 0;  // ONNX
  } else {
    for (int i = 0; i < p.n_axes; ++i) reduced[normalize_axis(p.axes[i], X.ndim)] = true;
  }
  dims kept, red;
  int64_t stride = 1, xs[NNP_MAX_DIMS];
  for (int i = X.ndim - 1; i >= 0; --i) {
    xs[i] = stride;
    stride *= X.shape[i];
  }
  int64_t n_out = 1, n_red = 1;
  for (int i = 0; i < X.ndim; ++i) {
    if (reduced[i]) {
      push_coalesced(red, X.shape[i], xs[i]);
      n_red *= X.shape[i];
    } else {
      push_coalesced(kept, X.shape[i], xs[i]);
      n_out *= X.shape[i];
    }
  }
  const int op = p.op;
  const float empty = op == NNP_REDUCE_SUM    ? 0.0f
                      : op == NNP_REDUCE_MEAN ? std::numeric_limits<float>::quiet_NaN()
                                              : -std::numeric_limits<float>::infinity();
  if (n_out == 0) return;
  if (n_red == 0) {
    std::fill(y, y + n_out, empty);
    return;
  }

  // Leading axes reduced, trailing kept, both contiguous: stream rows into column sums.
  if (op != NNP_REDUCE_MAX && red.rank == 1 && kept.rank == 1 && kept.s[0] == 1 &&
      red.s[0] == kept.d[0]) {
    const int64_t rows = red.d[0], cols = kept.d[0];
    constexpr int64_t kBlock = 256;
    const int64_t blocks = (cols + kBlock - 1) / kBlock;
    const double div = op == NNP_REDUCE_MEAN ? static_cast<double>(rows) : 1.0;
    parallel_for(blocks, std::max<int64_t>(1, kElementwiseGrain / (rows * kBlock)),
                 [&](int64_t b, int64_t e) {
                   double acc[kBlock];
                   for (int64_t blk = b; blk < e; ++blk) {
                     const int64_t c0 = blk * kBlock, c1 = std::min(cols, c0 + kBlock);
                     std::fill(acc, acc + (c1 - c0), 0.0);
                     for (int64_t r = 0; r < rows; ++r) {
                       const float* xr = x + r * cols;
                       for (int64_t j = c0; j < c1; ++j) acc[j - c0] += xr[j];
                     }
                     for (int64_t j = c0; j < c1; ++j) y[j] = static_cast<float>(acc[j - c0] / div);
                   }
                 });
    return;
  }

  if (red.rank == 0) {  // only size-1 axes reduced: a copy (mean divides by 1)
    red.rank = 1;
    red.d[0] = 1;
    red.s[0] = 1;
  }
  const int rl = red.rank - 1;
  const int64_t inner = red.d[rl], inner_stride = red.s[rl];
  const int64_t outer_red = n_red / inner;
  dims red_outer = red;
  red_outer.rank = rl;
  parallel_for(n_out, std::max<int64_t>(1, kElementwiseGrain / n_red), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      const float* xo = x + offset_of(kept, o);
      if (op == NNP_REDUCE_MAX) {
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t r = 0; r < outer_red; ++r) {
          const float* xr = xo + offset_of(red_outer, r);
          for (int64_t i = 0; i < inner; ++i) {
            const float v = xr[i * inner_stride];
            if (v > m || v != v) m = v;
            if (m != m) break;
          }
          if (m != m) break;
        }
        y[o] = m;
      } else {
        double sum = 0.0;
        for (int64_t r = 0; r < outer_red; ++r) {
          const float* xr = xo + offset_of(red_outer, r);
          if (inner_stride == 1) {
            float part = 0.0f;
            for (int64_t i = 0; i < inner; ++i) part += xr[i];
            sum += part;
          } else {
            for (int64_t i = 0; i < inner; ++i) sum += xr[i * inner_stride];
          }
        }
        y[o] = static_cast<float>(op == NNP_REDUCE_MEAN ? sum / static_cast<double>(n_red) : sum);
      }
    }
  });
}

}  // namespace nnp::cpu
