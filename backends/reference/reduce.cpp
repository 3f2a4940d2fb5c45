// reduce.cpp — reference reductions over a set of axes (ONNX ReduceSum, ReduceMean, ReduceMax,
// ReduceMin, ReduceL2, ReduceL1, ReduceSumSquare, ReduceLogSumExp), accumulated in double.
// Every element of x is added into the output element it reduces to; an empty reduction gives
// 0 (sums, L1, L2), NaN (mean, 0/0), -inf (max, log_sum_exp) or +inf (min); max and min
// propagate NaN. log_sum_exp subtracts the max first (a second pass), so it does not overflow.
// keepdims only changes y's shape, not its row-major element order.
// Also cumsum (ABI 1.5, ONNX CumSum): one running sum in double per line along the axis.
#include "reference.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace ref {
namespace {

template <typename T>
void reduce_t(const op_args& args) {
  const auto p = read_params<nnp_reduce_params>(args.params);
  const DLTensor& X = *args.in(0);
  const DLTensor& Y = *args.out(0);
  const int rank = X.ndim;

  bool reduced[NNP_MAX_DIMS] = {};
  if (p.n_axes == 0) {
    // ONNX noop_with_empty_axes: no axis listed and the flag set reduces nothing (y = x).
    for (int d = 0; d < rank; ++d) reduced[d] = p.noop_with_empty_axes == 0;
  } else {
    for (int i = 0; i < p.n_axes && i < NNP_MAX_DIMS; ++i) {
      const int d = nnp::normalize_axis(p.axes[i], rank);
      if (d < 0)
        nnp::fail(NNP_STATUS_INVALID_ARGUMENT,
                  nnp::format("reduce axis %d out of range for rank %d", p.axes[i], rank));
      reduced[d] = true;
    }
  }
  // Stride in y (compact over the kept dims) of each dim of x; 0 for reduced dims.
  int64_t y_stride[NNP_MAX_DIMS];
  int64_t s = 1, count = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (reduced[d]) {
      y_stride[d] = 0;
      count *= X.shape[d];
    } else {
      y_stride[d] = s;
      s *= X.shape[d];
    }
  }

  const int64_t n_out = nnp::numel(Y);
  const int op = p.op;
  const double inf = std::numeric_limits<double>::infinity();
  // Empty reductions give the op's identity (ONNX): -inf for max and log_sum_exp, +inf for
  // min, 0 for the sums (mean: 0/0 = NaN below).
  const double init = op == NNP_REDUCE_MAX || op == NNP_REDUCE_LOG_SUM_EXP ? -inf
                      : op == NNP_REDUCE_MIN                               ? inf
                                                                           : 0.0;
  std::vector<double> acc(static_cast<size_t>(n_out), init);
  const T* x = nnp::data_ptr<const T>(X);
  const int64_t n_in = nnp::numel(X);
  auto out_index = [&](int64_t i) {
    int64_t rest = i, o = 0;
    for (int d = rank - 1; d >= 0; --d) {
      o += (rest % X.shape[d]) * y_stride[d];
      rest /= X.shape[d];
    }
    return static_cast<size_t>(o);
  };
  // log_sum_exp = m + log(sum(exp(x - m))) with m = max(x): a first pass finds m.
  std::vector<double> shift;
  if (op == NNP_REDUCE_LOG_SUM_EXP) {
    shift.assign(static_cast<size_t>(n_out), -inf);
    for (int64_t i = 0; i < n_in; ++i) {
      double& m = shift[out_index(i)];
      const double v = x[i];
      if (v > m || std::isnan(v)) m = std::isnan(m) ? m : v;
    }
    // An infinite (or NaN) max is the result itself (all -inf: -inf; any +inf: +inf); shift
    // by 0 there so that exp(x - m) stays defined.
    for (double& m : shift)
      if (!std::isfinite(m)) m = 0.0;
  }
  for (int64_t i = 0; i < n_in; ++i) {
    const size_t o = out_index(i);
    double& a = acc[o];
    const double v = x[i];
    switch (op) {
      case NNP_REDUCE_MAX:
        if (v > a || std::isnan(v)) a = std::isnan(a) ? a : v;
        break;
      case NNP_REDUCE_MIN:
        if (v < a || std::isnan(v)) a = std::isnan(a) ? a : v;
        break;
      case NNP_REDUCE_L1:
        a += std::fabs(v);
        break;
      case NNP_REDUCE_L2:
      case NNP_REDUCE_SUM_SQUARE:
        a += v * v;
        break;
      case NNP_REDUCE_LOG_SUM_EXP:
        if (a == init) a = 0.0;  // the first element of a non-empty reduction
        a += std::exp(v - shift[o]);
        break;
      default:  // SUM, MEAN
        a += v;
    }
  }
  T* y = nnp::data_ptr<T>(Y);
  for (int64_t o = 0; o < n_out; ++o) {
    double v = acc[static_cast<size_t>(o)];
    if (op == NNP_REDUCE_MEAN) v /= double(count);
    if (op == NNP_REDUCE_L2) v = std::sqrt(v);
    if (op == NNP_REDUCE_LOG_SUM_EXP && count > 0) v = std::log(v) + shift[static_cast<size_t>(o)];
    y[o] = static_cast<T>(v);
  }
}

}  // namespace

void reduce(const op_args& a) {
  const auto op = read_params<nnp_reduce_params>(a.params).op;
  if (op < NNP_REDUCE_SUM || op > NNP_REDUCE_LOG_SUM_EXP)
    nnp::unsupported(nnp::format("reduce op %d is not known", op));
  dispatch_float(*a.in(0), [&](auto t) { reduce_t<decltype(t)>(a); });
}

namespace {

// cumsum: x as [outer, n, inner] around the axis; each line (o, k) is one running sum in double,
// adding x[j] in the order of j (from j = n-1 down with reverse); exclusive writes the sum
// before adding x[j]. x[j] is read before y[j] is written, so y may be x.
template <typename T>
void cumsum_t(const op_args& args) {
  const auto p = read_params<nnp_cumsum_params>(args.params);
  const DLTensor& X = *args.in(0);
  const int axis = nnp::normalize_axis(p.axis, X.ndim);  // in range: libnnplug checked it
  if (nnp::numel(X) == 0) return;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= X.shape[d];
  for (int d = axis + 1; d < X.ndim; ++d) inner *= X.shape[d];
  const int64_t n = X.shape[axis];
  const T* x = nnp::data_ptr<const T>(X);
  T* y = nnp::data_ptr<T>(*args.out(0));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < inner; ++k) {
      double sum = 0.0;
      for (int64_t step = 0; step < n; ++step) {
        const int64_t j = p.reverse ? n - 1 - step : step;
        const int64_t at = (o * n + j) * inner + k;
        const double v = x[at];
        if (p.exclusive) y[at] = static_cast<T>(sum);
        sum += v;
        if (!p.exclusive) y[at] = static_cast<T>(sum);
      }
    }
  }
}

REF_FLOAT_OP(cumsum, cumsum_t, in(0))

}  // namespace

// The rows of this file's kernels (rows.hpp lists the files).
// clang-format off
const nnp::kit::op_row kReduceOps[] = {
    {NNP_OP_REDUCE, kFloats,        reduce},
    {NNP_OP_CUMSUM, kFloats,        cumsum},
};
// clang-format on
extern const nnp::kit::op_row_list kReduceRows = nnp::kit::row_list(kReduceOps);

}  // namespace ref
