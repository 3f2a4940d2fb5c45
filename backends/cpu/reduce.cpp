// NNP_OP_REDUCE on the CPU: sum, mean, max, min, L1, L2, sum of squares and log-sum-exp over any
// set of axes (ONNX ReduceSum / ReduceMean / ReduceMax / ReduceMin / ReduceL1 / ReduceL2 /
// ReduceSumSquare / ReduceLogSumExp), keepdims or not.
//
// Speed: the kept and the reduced dimensions are each coalesced; output elements run in
// parallel, each reducing over its (coalesced) reduced dimensions with a contiguous inner loop
// when the reduced axes are trailing; at most 8 outputs over at least 2^17 elements each (a
// reduction over all axes) run each output's range in parallel parts of 2^16 elements, joined
// in order. Reducing leading axes of a row-major tensor (the bias gradient: [N, K] -> [K])
// takes a row-streaming path instead: column blocks in parallel, rows added in order, so every
// read is contiguous (the sum-like ops). Sums accumulate in double, contiguous runs first in
// float blocks of 1024 elements over 16 lanes (sum_run); log-sum-exp takes the max first, then
// sums exp(x - max). The order of every sum depends on the shape alone, not on the threads.
//
// NNP_OP_CUMSUM (ABI 1.5, ONNX CumSum): x as [outer, n, inner] around the axis; the lines
// (outer x inner) run in parallel, in blocks of up to 256 neighbouring lines that step along the
// axis together (contiguous rows when inner > 1), each a running sum in double, as the reference.
#include "cpu_backend.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

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

// Visits the reduced elements [begin, end) of output o, numbered r * inner + i for outer reduced
// index r and inner index i: body(row pointer, run length, inner stride) for each piece of an
// inner run; the body returns false to stop early.
struct red_iter {
  const dims* kept;
  const dims* red_outer;
  int64_t inner, inner_stride;
  template <typename F>
  void visit(const float* x, int64_t o, int64_t begin, int64_t end, const F& body) const {
    const float* xo = x + offset_of(*kept, o);
    for (int64_t f = begin; f < end;) {
      const int64_t r = f / inner, i = f - r * inner;
      const int64_t len = std::min(inner - i, end - f);
      if (!body(xo + offset_of(*red_outer, r) + i * inner_stride, len, inner_stride)) return;
      f += len;
    }
  }
};

// The sum of term(xr[i * st]) for i < len. Contiguous runs go in blocks of kSumBlock elements,
// each summed in float over kSumLanes independent lanes (lane l takes elements l, l + kSumLanes,
// ...; the lanes are then added in order), and the blocks' sums are added in double: no float
// sum runs over more than kSumBlock / kSumLanes elements (a float running sum of millions of
// elements stops growing: 2^24 ones sum to 2^24 whatever follows), and the lanes are
// independent chains the compiler can put in vector registers. Strided elements are added in
// double one by one. The order depends on the run alone: the same result on any thread count.
constexpr int kSumLanes = 16;
constexpr int64_t kSumBlock = 1024;

template <typename Term>
double sum_run(const float* xr, int64_t len, int64_t st, const Term& term) {
  double sum = 0.0;
  if (st != 1) {
    for (int64_t i = 0; i < len; ++i) sum += term(xr[i * st]);
    return sum;
  }
  for (int64_t b = 0; b < len; b += kSumBlock) {
    const int64_t n = std::min(kSumBlock, len - b);
    const float* xb = xr + b;
    float lane[kSumLanes] = {};
    int64_t i = 0;
    for (; i + kSumLanes <= n; i += kSumLanes)
      for (int l = 0; l < kSumLanes; ++l) lane[l] += term(xb[i + l]);
    float part = 0.0f;
    for (int l = 0; l < kSumLanes; ++l) part += lane[l];
    for (; i < n; ++i) part += term(xb[i]);
    sum += part;
  }
  return sum;
}

// ---- the reductions, one type each: a row-streaming form (sum-like only) and a per-output form
// over ranges of the reduced elements (range: a part's accumulator; join: two parts' in order;
// finish: the output from the whole range's accumulator). `shift` is log_sum_exp's max.
struct term_x {
  float operator()(float v) const { return v; }
};
struct term_abs {
  float operator()(float v) const { return std::fabs(v); }
};
struct term_square {
  float operator()(float v) const { return v * v; }
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

// sum of Term(x), then Post.
template <typename Term, typename Post>
struct sum_like {
  static constexpr bool kRowStream = true, kShift = false;
  using acc = double;
  acc range(const float* x, const red_iter& it, int64_t o, int64_t b, int64_t e, float) const {
    double sum = 0.0;
    it.visit(x, o, b, e, [&](const float* xr, int64_t len, int64_t st) {
      sum += sum_run(xr, len, st, Term{});
      return true;
    });
    return sum;
  }
  static acc join(acc a, acc b) { return a + b; }
  static float finish(acc s, int64_t n_red, float) { return static_cast<float>(Post::f(s, n_red)); }
  static float term(float v) { return Term{}(v); }
  static double post(double s, int64_t n) { return Post::f(s, n); }
};

// max (kMax) or min; NaN propagates (and stops the scan).
template <bool kMax>
struct extreme {
  static constexpr bool kRowStream = false, kShift = false;
  using acc = float;
  static acc pick(acc m, float v) { return ((kMax ? v > m : v < m) || v != v) ? v : m; }
  acc range(const float* x, const red_iter& it, int64_t o, int64_t b, int64_t e, float) const {
    float m =
        kMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    it.visit(x, o, b, e, [&](const float* xr, int64_t len, int64_t st) {
      for (int64_t i = 0; i < len; ++i) {
        m = pick(m, xr[i * st]);
        if (m != m) return false;
      }
      return true;
    });
    return m;
  }
  static acc join(acc a, acc b) { return a != a ? a : pick(a, b); }
  static float finish(acc m, int64_t, float) { return m; }
};

// m + log(sum(exp(x - m))), m = the max (0 when the max is not finite: then the result is that
// max, -inf for all -inf, +inf with any +inf, NaN with any NaN); m is the shift, found first.
struct log_sum_exp {
  static constexpr bool kRowStream = false, kShift = true;
  using acc = double;
  acc range(const float* x, const red_iter& it, int64_t o, int64_t b, int64_t e, float m) const {
    double sum = 0.0;
    it.visit(x, o, b, e, [&](const float* xr, int64_t len, int64_t st) {
      sum += sum_run(xr, len, st, [m](float v) { return std::exp(v - m); });
      return true;
    });
    return sum;
  }
  static acc join(acc a, acc b) { return a + b; }
  static float finish(acc s, int64_t, float m) { return static_cast<float>(std::log(s) + m); }
};

// Few outputs over long ranges (a reduction over all axes): each output's range is cut into
// parts of kPart elements that run in parallel, their accumulators joined in order. The parts
// depend on the shape alone (not on the thread count), so the result does too.
constexpr int64_t kPart = int64_t{1} << 16, kSplitOutputs = 8;

// Output o over its n_red reduced elements, in `parts` parts (1: one pass on this thread).
template <typename R>
float reduce_output(const R& r, const float* x, const red_iter& it, int64_t o, int64_t n_red,
                    int64_t parts) {
  auto whole = [&](const auto& red, float shift) {
    using acc = typename std::decay_t<decltype(red)>::acc;
    if (parts == 1) return red.range(x, it, o, 0, n_red, shift);
    std::vector<acc> part(static_cast<size_t>(parts));
    parallel_for(parts, 1, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p)
        part[static_cast<size_t>(p)] =
            red.range(x, it, o, p * kPart, std::min(n_red, (p + 1) * kPart), shift);
    });
    acc total = part[0];
    for (size_t p = 1; p < part.size(); ++p) total = red.join(total, part[p]);
    return total;
  };
  float shift = 0.0f;
  if constexpr (R::kShift) {
    shift = whole(extreme<true>{}, 0.0f);
    if (!std::isfinite(shift)) shift = 0.0f;
  }
  return r.finish(whole(r, shift), n_red, shift);
}

template <typename R>
void reduce_run(const float* x, float* y, const dims& kept, dims red, int64_t n_out, int64_t n_red,
                const R& r) {
  // Leading axes reduced, trailing kept, both contiguous: stream rows into column sums
  // (the sum-like reductions, which give term and post).
  if constexpr (R::kRowStream) {
    if (red.rank == 1 && kept.rank == 1 && kept.s[0] == 1 && red.s[0] == kept.d[0]) {
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
  }
  if (red.rank == 0) {  // only size-1 axes reduced: one element per output
    red.rank = 1;
    red.d[0] = 1;
    red.s[0] = 1;
  }
  const int rl = red.rank - 1;
  dims red_outer = red;
  red_outer.rank = rl;
  const red_iter it{&kept, &red_outer, red.d[rl], red.s[rl]};
  if (n_out <= kSplitOutputs && n_red >= 2 * kPart) {
    const int64_t parts = (n_red + kPart - 1) / kPart;
    for (int64_t o = 0; o < n_out; ++o) y[o] = reduce_output(r, x, it, o, n_red, parts);
    return;
  }
  parallel_for(n_out, std::max<int64_t>(1, kElementwiseGrain / n_red), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) y[o] = reduce_output(r, x, it, o, n_red, 1);
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
