// Data-movement ops of the reference backend (ABI 1.2):
//   concat           y = the inputs joined along axis (ONNX Concat)
//   split            x cut along axis into the outputs (ONNX Split; concat's backward)
//   slice            y[.., j, ..] = x[.., start + j*step, ..] (ONNX Slice, opset 13)
//   slice_backward   dx = 0, then dx[.., start + j*step, ..] = dy[.., j, ..]
//   gather           y = data indexed along axis by int64 indices (ONNX Gather)
//   gather_backward  dx = 0, then dx[.., idx(j), ..] += dy[.., j, ..] in the order of j
// Every op but gather_backward moves whole elements of any dtype (dtype_size bytes each);
// gather_backward adds in double and rounds once. The index maths of slice and the range check
// of gather's indices are the kit's (nnplug/kit/data_movement.hpp), shared with libnnplug.
#include "reference.hpp"

#include <nnplug/kit/data_movement.hpp>

#include <vector>

namespace ref {
namespace {

// A tensor seen as [outer, mid, inner] around `axis`.
struct around {
  int64_t outer, mid, inner;
};
around split_at(const DLTensor& t, int axis) {
  return around{dims_product(t, 0, axis), t.shape[axis], dims_product(t, axis + 1, t.ndim)};
}

// Copies element `from` of src to element `to` of dst (size bytes each).
inline void move(char* dst, int64_t to, const char* src, int64_t from, size_t size) {
  std::memcpy(dst + to * int64_t(size), src + from * int64_t(size), size);
}

// Calls f(y_index, x_index) for every element of the slice of x described by dims, y_index
// running over y in row-major order.
template <typename F>
void for_each_sliced(const DLTensor& X, const nnp::slice_dim* dims, F&& f) {
  const int rank = X.ndim;
  int64_t x_stride[NNP_MAX_DIMS], n = 1;
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    x_stride[d] = s;
    s *= X.shape[d];
    n *= dims[d].count;
  }
  for (int64_t j = 0; j < n; ++j) {
    int64_t rest = j, i = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t jd = rest % dims[d].count;
      rest /= dims[d].count;
      i += (dims[d].start + jd * dims[d].step) * x_stride[d];
    }
    f(j, i);
  }
}

template <typename T>
void gather_backward_t(const op_args& a) {
  const auto p = read_params<nnp_gather_params>(a.params);
  const DLTensor& DY = *a.in(0);
  const DLTensor& I = *a.in(1);
  const DLTensor& DX = *a.out(0);
  const int axis = nnp::normalize_axis(p.axis, DX.ndim);
  const around g = split_at(DX, axis);
  const int64_t n = nnp::numel(I);
  const int64_t* idx = nnp::data_ptr<const int64_t>(I);
  nnp::check_gather_indices("gather_backward", idx, n, g.mid);
  const T* dy = nnp::data_ptr<const T>(DY);
  std::vector<double> acc(static_cast<size_t>(nnp::numel(DX)), 0.0);
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t k = 0; k < n; ++k) {
      const int64_t row = idx[k] < 0 ? idx[k] + g.mid : idx[k];
      for (int64_t i = 0; i < g.inner; ++i)
        acc[static_cast<size_t>((o * g.mid + row) * g.inner + i)] +=
            double(dy[(o * n + k) * g.inner + i]);
    }
  T* dx = nnp::data_ptr<T>(DX);
  for (size_t i = 0; i < acc.size(); ++i) dx[i] = static_cast<T>(acc[i]);
}

}  // namespace

void concat(const op_args& a) {
  const auto p = read_params<nnp_concat_params>(a.params);
  const DLTensor& Y = *a.out(0);
  const int axis = nnp::normalize_axis(p.axis, Y.ndim);
  const around y = split_at(Y, axis);
  const size_t size = nnp::dtype_size(Y.dtype);
  char* yp = nnp::data_ptr<char>(Y);
  int64_t at = 0;  // offset of this input along axis in y
  for (size_t k = 0; k < a.n_inputs; ++k) {
    const DLTensor& X = *a.in(k);
    const around x = split_at(X, axis);
    const char* xp = nnp::data_ptr<const char>(X);
    for (int64_t o = 0; o < x.outer; ++o)
      for (int64_t m = 0; m < x.mid; ++m)
        for (int64_t i = 0; i < x.inner; ++i)
          move(yp, (o * y.mid + at + m) * y.inner + i, xp, (o * x.mid + m) * x.inner + i, size);
    at += x.mid;
  }
}

void split(const op_args& a) {
  const auto p = read_params<nnp_split_params>(a.params);
  const DLTensor& X = *a.in(0);
  const int axis = nnp::normalize_axis(p.axis, X.ndim);
  const around x = split_at(X, axis);
  const size_t size = nnp::dtype_size(X.dtype);
  const char* xp = nnp::data_ptr<const char>(X);
  int64_t at = 0;
  for (size_t k = 0; k < a.n_outputs; ++k) {
    const DLTensor& Y = *a.out(k);
    const around y = split_at(Y, axis);
    char* yp = nnp::data_ptr<char>(Y);
    for (int64_t o = 0; o < y.outer; ++o)
      for (int64_t m = 0; m < y.mid; ++m)
        for (int64_t i = 0; i < y.inner; ++i)
          move(yp, (o * y.mid + m) * y.inner + i, xp, (o * x.mid + at + m) * x.inner + i, size);
    at += y.mid;
  }
}

void slice(const op_args& a) {
  const auto p = read_params<nnp_slice_params>(a.params);
  const DLTensor& X = *a.in(0);
  nnp::slice_dim dims[NNP_MAX_DIMS];
  nnp::resolve_slice(p, X.ndim, X.shape, dims, nullptr);
  const size_t size = nnp::dtype_size(X.dtype);
  const char* x = nnp::data_ptr<const char>(X);
  char* y = nnp::data_ptr<char>(*a.out(0));
  for_each_sliced(X, dims, [&](int64_t j, int64_t i) { move(y, j, x, i, size); });
}

void slice_backward(const op_args& a) {
  const auto p = read_params<nnp_slice_params>(a.params);
  const DLTensor& DX = *a.out(0);
  nnp::slice_dim dims[NNP_MAX_DIMS];
  nnp::resolve_slice(p, DX.ndim, DX.shape, dims, nullptr);
  const size_t size = nnp::dtype_size(DX.dtype);
  const char* dy = nnp::data_ptr<const char>(*a.in(0));
  char* dx = nnp::data_ptr<char>(DX);
  const int64_t n = nnp::numel(DX);
  if (n > 0) std::memset(dx, 0, static_cast<size_t>(n) * size);  // all-zero bytes: 0 in any dtype
  for_each_sliced(DX, dims, [&](int64_t j, int64_t i) { move(dx, i, dy, j, size); });
}

void gather(const op_args& a) {
  const auto p = read_params<nnp_gather_params>(a.params);
  const DLTensor& D = *a.in(0);
  const DLTensor& I = *a.in(1);
  const int axis = nnp::normalize_axis(p.axis, D.ndim);
  const around g = split_at(D, axis);
  const int64_t n = nnp::numel(I);
  const int64_t* idx = nnp::data_ptr<const int64_t>(I);
  nnp::check_gather_indices("gather", idx, n, g.mid);
  const size_t size = nnp::dtype_size(D.dtype);
  const char* d = nnp::data_ptr<const char>(D);
  char* y = nnp::data_ptr<char>(*a.out(0));
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t k = 0; k < n; ++k) {
      const int64_t row = idx[k] < 0 ? idx[k] + g.mid : idx[k];
      for (int64_t i = 0; i < g.inner; ++i)
        move(y, (o * n + k) * g.inner + i, d, (o * g.mid + row) * g.inner + i, size);
    }
}

REF_FLOAT_OP(gather_backward, gather_backward_t, out(0))

// The rows of this file's kernels (rows.hpp lists the files).
// clang-format off
const nnp::kit::op_row kDataMovementOps[] = {
    {NNP_OP_CONCAT,          nnp::kit::any,  concat},
    {NNP_OP_SPLIT,           nnp::kit::any,  split},
    {NNP_OP_SLICE,           nnp::kit::any,  slice},
    {NNP_OP_SLICE_BACKWARD,  nnp::kit::any,  slice_backward},
    {NNP_OP_GATHER,          nnp::kit::any,  gather},
    {NNP_OP_GATHER_BACKWARD, kFloats,        gather_backward},
};
// clang-format on
extern const nnp::kit::op_row_list kDataMovementRows = nnp::kit::row_list(kDataMovementOps);

}  // namespace ref
