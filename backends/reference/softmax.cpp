// softmax.cpp — reference softmax / log-softmax along one axis, forward and backward
// (ONNX Softmax / LogSoftmax, opset 13). For each slice along `axis`, in double:
//   softmax:      y = exp(x - max) / sum exp(x - max)
//   log-softmax:  y = x - max - log(sum exp(x - max))
//   backward softmax:      dx = y * (dy - sum(dy * y))
//   backward log-softmax:  dx = dy - exp(y) * sum(dy)
// The tensor is viewed as [outer, len, inner] with len = shape[axis]; y may alias x and dx may
// alias dy (each slice's sums are taken before any of its elements is written).
#include "reference.hpp"

#include <cmath>
#include <limits>

namespace ref {
namespace {

struct slices {
  int64_t outer, len, inner;
};

slices view(const DLTensor& t, int32_t axis_param) {
  const int axis = nnp::normalize_axis(axis_param, t.ndim);
  if (axis < 0)
    nnp::fail(NNP_STATUS_INVALID_ARGUMENT,
              nnp::format("softmax axis %d out of range for rank %d", axis_param, t.ndim));
  return slices{dims_product(t, 0, axis), t.shape[axis], dims_product(t, axis + 1, t.ndim)};
}

// Calls f(base) for every slice of v: the slice's element j is at base + j * v.inner.
template <typename F>
void for_each_slice(const slices& v, F&& f) {
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i = 0; i < v.inner; ++i) f(o * v.len * v.inner + i);
}

template <typename T>
void forward_t(const op_args& args) {
  const auto p = read_params<nnp_softmax_params>(args.params);
  const DLTensor& X = *args.in(0);
  const slices v = view(X, p.axis);
  const T* x = nnp::data_ptr<const T>(X);
  T* y = nnp::data_ptr<T>(*args.out(0));
  for_each_slice(v, [&](int64_t base) {
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < v.len; ++j) mx = std::max(mx, double(x[base + j * v.inner]));
    double sum = 0.0;
    for (int64_t j = 0; j < v.len; ++j) sum += std::exp(double(x[base + j * v.inner]) - mx);
    const double log_sum = std::log(sum);
    for (int64_t j = 0; j < v.len; ++j) {
      const double shifted = double(x[base + j * v.inner]) - mx;
      y[base + j * v.inner] = static_cast<T>(p.log ? shifted - log_sum : std::exp(shifted) / sum);
    }
  });
}

template <typename T>
void backward_t(const op_args& args) {
  const auto p = read_params<nnp_softmax_params>(args.params);
  const DLTensor& Y = *args.in(0);
  const slices v = view(Y, p.axis);
  const T* y = nnp::data_ptr<const T>(Y);
  const T* dy = nnp::data_ptr<const T>(*args.in(1));
  T* dx = nnp::data_ptr<T>(*args.out(0));
  for_each_slice(v, [&](int64_t base) {
    double sum = 0.0;  // softmax: sum(dy * y); log-softmax: sum(dy)
    for (int64_t j = 0; j < v.len; ++j) {
      const int64_t e = base + j * v.inner;
      sum += p.log ? double(dy[e]) : double(dy[e]) * double(y[e]);
    }
    for (int64_t j = 0; j < v.len; ++j) {
      const int64_t e = base + j * v.inner;
      const double out = p.log ? double(dy[e]) - std::exp(double(y[e])) * sum
                               : double(y[e]) * (double(dy[e]) - sum);
      dx[e] = static_cast<T>(out);
    }
  });
}

}  // namespace

REF_FLOAT_OP(softmax_forward, forward_t, in(0))
REF_FLOAT_OP(softmax_backward, backward_t, in(0))

// The rows of this file's kernels (rows.hpp lists the files).
// clang-format off
const nnp::kit::op_row kSoftmaxOps[] = {
    {NNP_OP_SOFTMAX_FORWARD,  kFloats,        softmax_forward},
    {NNP_OP_SOFTMAX_BACKWARD, kFloats,        softmax_backward},
};
// clang-format on
extern const nnp::kit::op_row_list kSoftmaxRows = nnp::kit::row_list(kSoftmaxOps);

}  // namespace ref
