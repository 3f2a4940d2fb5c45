// NNP_OP_REDUCE on the CPU: sum, mean, max, min, L1, L2, sum of squares and log-sum-exp over any
// set of axes (ONNX ReduceSum / ReduceMean / ReduceMax / ReduceMin / ReduceL1 / ReduceL2 /
// ReduceSumSquare / ReduceLogSumExp), keepdims or not.
//
// Speed: the kept and the reduced dimensions are each coalesced; output elements run in
// parallel, each reducing over its (coalesced) reduced dimensions with a contiguous inner loop
// when the reduced axes are trailing. Reducing leading axes of a row-major tensor (the bias
// gradient: [N, K] -> [K]) takes a row-streaming path instead: column blocks in parallel, rows
// added in order, so every read is contiguous (the sum-like ops). Sums accumulate in double
// (contiguous runs in float blocks first); log-sum-exp takes the max first, then sums exp(x - max).
//
// NNP_OP_CUMSUM (ABI 1.5, ONNX CumSum): x as [outer, n, inner] around the axis; the lines
// (outer x inner) run in parallel, in blocks of up to 256 neighbouring lines that step along the
// axis together (contiguous rows when inner > 1), each a running sum in double, as the reference.
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

// ---- the reductions, one type each: a row-streaming form (sum-like only) and a per-output
// form over the reduced elements (strided), both given contiguous or strided inner loops.
struct term_x {
  static float f(float v) { return v; }
};
struct term_abs {
  static float f(float v) { return std::fabs(v); }
};
struct term_square {
  static float f(float v) { return v * v; }
};
struct post_none {
  static double f(double s, int64_t) { return s; }
};
struct post_mean {
  static double f(double s, int64_t n) { return s / static_cast<double>(n); }
};
struct post_sqrt {
  static double f(double s, int64_t) { return std::sqrt(s); }
};

// Visits the reduced elements of output o: body(row pointer, inner length, inner stride) for
// each (coalesced) outer reduced index; the body returns false to stop early.
struct red_iter {
  const dims* kept;
  const dims* red_outer;
  int64_t outer, inner, inner_stride;
  template <typename F>
  void visit(const float* x, int64_t o, const F& body) const {
    const float* xo = x + offset_of(*kept, o);
    for (int64_t r = 0; r < outer; ++r)
      if (!body(xo + offset_of(*red_outer, r), inner, inner_stride)) return;
  }
};

// sum of T(x), then Post (in double; contiguous inner rows in float blocks, as before).
template <typename Term, typename Post>
struct sum_like {
  static constexpr bool kRowStream = true;
  float one(const float* x, const red_iter& it, int64_t o, int64_t n_red) const {
    double sum = 0.0;
    it.visit(x, o, [&](const float* xr, int64_t len, int64_t st) {
      if (st == 1) {
        float part = 0.0f;
        for (int64_t i = 0; i < len; ++i) part += Term::f(xr[i]);
        sum += part;
      } else {
        for (int64_t i = 0; i < len; ++i) sum += Term::f(xr[i * st]);
      }
      return true;
    });
    return static_cast<float>(Post::f(sum, n_red));
  }
  static float term(float v) { return Term::f(v); }
  static double post(double s, int64_t n) { return Post::f(s, n); }
};

// max (kMax) or min; NaN propagates (and stops the scan).
template <bool kMax>
struct extreme {
  static constexpr bool kRowStream = false;
  float one(const float* x, const red_iter& it, int64_t o, int64_t) const {
    float m =
        kMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    it.visit(x, o, [&](const float* xr, int64_t len, int64_t st) {
      for (int64_t i = 0; i < len; ++i) {
        const float v = xr[i * st];
        if ((kMax ? v > m : v < m) || v != v) m = v;
        if (m != m) return false;
      }
      return true;
    });
    return m;
  }
  static float term(float v) { return v; }
  static double post(double s, int64_t) { return s; }
};

// m + log(sum(exp(x - m))), m = the max (0 when the max is not finite: then the result is
// that max, -inf for all -inf, +inf with any +inf, NaN with any NaN).
struct log_sum_exp {
  static constexpr bool kRowStream = false;
  float one(const float* x, const red_iter& it, int64_t o, int64_t n_red) const {
    float m = extreme<true>{}.one(x, it, o, n_red);
    if (!std::isfinite(m)) m = 0.0f;
    double sum = 0.0;
    it.visit(x, o, [&](const float* xr, int64_t len, int64_t st) {
      float part = 0.0f;
      for (int64_t i = 0; i < len; ++i) part += std::exp(xr[i * st] - m);
      sum += part;
      return true;
    });
    return static_cast<float>(std::log(sum) + m);
  }
  static float term(float v) { return v; }
  static double post(double s, int64_t) { return s; }
};

template <typename R>
void reduce_run(const float* x, float* y, const dims& kept, dims red, int64_t n_out, int64_t n_red,
                const R& r) {
  // Leading axes reduced, trailing kept, both contiguous: stream rows into column sums.
  if (R::kRowStream && red.rank == 1 && kept.rank == 1 && kept.s[0] == 1 && red.s[0] == kept.d[0]) {
    const int64_t rows = red.d[0], cols = kept.d[0];
    constexpr int64_t kBlock = 256;
    const int64_t blocks = (cols + kBlock - 1) / kBlock;
    parallel_for(blocks, std::max<int64_t>(1, kElementwiseGrain / (rows * kBlock)),
                 [&](int64_t b, int64_t e) {
                   double acc[kBlock];
                   for (int64_t blk = b; blk < e; ++blk) {
                     const int64_t c0 = blk * kBlock, c1 = std::min(cols, c0 + kBlock);
                     std::fill(acc, acc + (c1 - c0), 0.0);
                     for (int64_t row = 0; row < rows; ++row) {
                       const float* xr = x + row * cols;
                       for (int64_t j = c0; j < c1; ++j) acc[j - c0] += R::term(xr[j]);
                     }
                     for (int64_t j = c0; j < c1; ++j)
                       y[j] = static_cast<float>(R::post(acc[j - c0], rows));
                   }
                 });
    return;
  }
  if (red.rank == 0) {  // only size-1 axes reduced: one element per output
    red.rank = 1;
    red.d[0] = 1;
    red.s[0] = 1;
  }
  const int rl = red.rank - 1;
  dims red_outer = red;
  red_outer.rank = rl;
  const red_iter it{&kept, &red_outer, n_red / red.d[rl], red.d[rl], red.s[rl]};
  parallel_for(n_out, std::max<int64_t>(1, kElementwiseGrain / n_red), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) y[o] = r.one(x, it, o, n_red);
  });
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
  const float inf = std::numeric_limits<float>::infinity();
  float empty = 0.0f;  // sums, L1, L2 (ONNX)
  if (op == NNP_REDUCE_MEAN) empty = std::numeric_limits<float>::quiet_NaN();
  if (op == NNP_REDUCE_MAX || op == NNP_REDUCE_LOG_SUM_EXP) empty = -inf;
  if (op == NNP_REDUCE_MIN) empty = inf;
  if (n_out == 0) return;
  if (n_red == 0) {
    std::fill(y, y + n_out, empty);
    return;
  }
  switch (op) {
    case NNP_REDUCE_SUM:
      return reduce_run(x, y, kept, red, n_out, n_red, sum_like<term_x, post_none>{});
    case NNP_REDUCE_MEAN:
      return reduce_run(x, y, kept, red, n_out, n_red, sum_like<term_x, post_mean>{});
    case NNP_REDUCE_L1:
      return reduce_run(x, y, kept, red, n_out, n_red, sum_like<term_abs, post_none>{});
    case NNP_REDUCE_L2:
      return reduce_run(x, y, kept, red, n_out, n_red, sum_like<term_square, post_sqrt>{});
    case NNP_REDUCE_SUM_SQUARE:
      return reduce_run(x, y, kept, red, n_out, n_red, sum_like<term_square, post_none>{});
    case NNP_REDUCE_MAX:
      return reduce_run(x, y, kept, red, n_out, n_red, extreme<true>{});
    case NNP_REDUCE_MIN:
      return reduce_run(x, y, kept, red, n_out, n_red, extreme<false>{});
    case NNP_REDUCE_LOG_SUM_EXP:
      return reduce_run(x, y, kept, red, n_out, n_red, log_sum_exp{});
    default:
      unsupported(format("reduce op %d is not implemented by the cpu backend", op));
  }
}

namespace {

// cumsum: each line's running sum in double, adding x[j] in the order of j (from n-1 down with
// reverse); x[j] is read before y[j] is written, so y may be x.
void cumsum(const op_call& c) {
  const auto& p = c.params_as<nnp_cumsum_params>();
  const DLTensor& X = *c.in(0);
  const int axis = normalize_axis(p.axis, X.ndim);  // in range: libnnplug checked it
  if (numel(X) == 0) return;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= X.shape[d];
  for (int d = axis + 1; d < X.ndim; ++d) inner *= X.shape[d];
  const int64_t n = X.shape[axis];
  const float* x = f32(&X);
  float* y = f32(c.out(0));
  const bool exclusive = p.exclusive != 0, reverse = p.reverse != 0;
  constexpr int64_t kBlock = 256;  // lines per task: a run of k over inner
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / (n * std::min(inner, kBlock)));
  parallel_for(outer * blocks, grain, [&](int64_t b, int64_t e) {
    double acc[kBlock];
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / blocks, k0 = (t % blocks) * kBlock;
      const int64_t w = std::min(kBlock, inner - k0);
      std::fill(acc, acc + w, 0.0);
      const int64_t base = o * n * inner + k0;
      for (int64_t step = 0; step < n; ++step) {
        const int64_t row = base + (reverse ? n - 1 - step : step) * inner;
        const float* xr = x + row;
        float* yr = y + row;
        if (exclusive) {
          for (int64_t k = 0; k < w; ++k) {
            const double v = xr[k];
            yr[k] = static_cast<float>(acc[k]);
            acc[k] += v;
          }
        } else {
          for (int64_t k = 0; k < w; ++k) {
            acc[k] += xr[k];
            yr[k] = static_cast<float>(acc[k]);
          }
        }
      }
    }
  });
}

}  // namespace

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kReduceOps[] = {
    {NNP_OP_REDUCE, kit::f32,            reduce},
    {NNP_OP_CUMSUM, kit::f32,            cumsum},
};
// clang-format on
extern const kit::op_row_list kReduceRows = kit::row_list(kReduceOps);

}  // namespace nnp::cpu
