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

// The axis of params P (nnp_concat_params, nnp_split_params, nnp_gather_params) as a
// dimension of t (negative axes count from the end).
template <typename P>
int axis_of(const op_args& a, const DLTensor& t) {
  return nnp::normalize_axis(read_params<P>(a.params).axis, t.ndim);
}

// Copies element `from` of src to element `to` of dst (size bytes each).
inline void move(char* dst, int64_t to, const char* src, int64_t from, size_t size) {
  std::memcpy(dst + to * int64_t(size), src + from * int64_t(size), size);
}

// Calls f(whole_index, part_index) for every element of `part`, the piece of `whole` that
// starts at offset `at` along axis (concat's inputs in y, split's outputs in x: the pieces laid
// end to end), part_index running over part in row-major order. Returns the offset of the next
// piece.
template <typename F>
int64_t for_each_part(const DLTensor& whole, const DLTensor& part, int axis, int64_t at, F&& f) {
  const around w = split_at(whole, axis);
  const around p = split_at(part, axis);
  for (int64_t o = 0; o < p.outer; ++o)
    for (int64_t m = 0; m < p.mid; ++m)
      for (int64_t i = 0; i < p.inner; ++i)
        f((o * w.mid + at + m) * w.inner + i, (o * p.mid + m) * p.inner + i);
  return at + p.mid;
}

// Calls f(y_index, x_index) for every element of the slice of x that params p describe,
// y_index running over y in row-major order.
template <typename F>
void for_each_sliced(const nnp_slice_params& p, const DLTensor& X, F&& f) {
  nnp::slice_dim dims[NNP_MAX_DIMS];
  nnp::resolve_slice(p, X.ndim, X.shape, dims, nullptr);
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

// Calls f(y_index, d_index) for every element of gather's y ([outer, n, inner]: n the number of
// indices I) and the element of the data D ([outer, mid, inner] around axis) it reads, y_index
// in row-major order. The indices are checked first (`op` names the op in the message).
template <typename F>
void for_each_gathered(const char* op, const DLTensor& D, const DLTensor& I, int axis, F&& f) {
  const around g = split_at(D, axis);
  const int64_t n = nnp::numel(I);
  const int64_t* idx = nnp::data_ptr<const int64_t>(I);
  nnp::check_gather_indices(op, idx, n, g.mid);
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t k = 0; k < n; ++k) {
      const int64_t row = idx[k] < 0 ? idx[k] + g.mid : idx[k];
      for (int64_t i = 0; i < g.inner; ++i)
        f((o * n + k) * g.inner + i, (o * g.mid + row) * g.inner + i);
    }
}

template <typename T>
void gather_backward_t(const op_args& a) {
  const DLTensor& DX = *a.out(0);
  const int axis = axis_of<nnp_gather_params>(a, DX);
  const T* dy = nnp::data_ptr<const T>(*a.in(0));
  std::vector<double> acc(static_cast<size_t>(nnp::numel(DX)), 0.0);
  for_each_gathered("gather_backward", DX, *a.in(1), axis,
                    [&](int64_t j, int64_t i) { acc[static_cast<size_t>(i)] += double(dy[j]); });
  T* dx = nnp::data_ptr<T>(DX);
  for (size_t i = 0; i < acc.size(); ++i) dx[i] = static_cast<T>(acc[i]);
}

}  // namespace

void concat(const op_args& a) {
  const DLTensor& Y = *a.out(0);
  const int axis = axis_of<nnp_concat_params>(a, Y);
  const size_t size = nnp::dtype_size(Y.dtype);
  char* yp = nnp::data_ptr<char>(Y);
  int64_t at = 0;  // offset of this input along axis in y
  for (size_t k = 0; k < a.n_inputs; ++k) {
    const char* xp = nnp::data_ptr<const char>(*a.in(k));
    at = for_each_part(Y, *a.in(k), axis, at,
                       [&](int64_t w, int64_t j) { move(yp, w, xp, j, size); });
  }
}

void split(const op_args& a) {
  const DLTensor& X = *a.in(0);
  const int axis = axis_of<nnp_split_params>(a, X);
  const size_t size = nnp::dtype_size(X.dtype);
  const char* xp = nnp::data_ptr<const char>(X);
  int64_t at = 0;  // offset of this output along axis in x
  for (size_t k = 0; k < a.n_outputs; ++k) {
    char* yp = nnp::data_ptr<char>(*a.out(k));
    at = for_each_part(X, *a.out(k), axis, at,
                       [&](int64_t w, int64_t j) { move(yp, j, xp, w, size); });
  }
}

void slice(const op_args& a) {
  const DLTensor& X = *a.in(0);
  const size_t size = nnp::dtype_size(X.dtype);
  const char* x = nnp::data_ptr<const char>(X);
  char* y = nnp::data_ptr<char>(*a.out(0));
  for_each_sliced(read_params<nnp_slice_params>(a.params), X,
                  [&](int64_t j, int64_t i) { move(y, j, x, i, size); });
}

void slice_backward(const op_args& a) {
  const DLTensor& DX = *a.out(0);
  const size_t size = nnp::dtype_size(DX.dtype);
  const char* dy = nnp::data_ptr<const char>(*a.in(0));
  char* dx = nnp::data_ptr<char>(DX);
  const int64_t n = nnp::numel(DX);
  if (n > 0) std::memset(dx, 0, static_cast<size_t>(n) * size);  // all-zero bytes: 0 in any dtype
  for_each_sliced(read_params<nnp_slice_params>(a.params), DX,
                  [&](int64_t j, int64_t i) { move(dx, i, dy, j, size); });
}

void gather(const op_args& a) {
  const DLTensor& D = *a.in(0);
  const int axis = axis_of<nnp_gather_params>(a, D);
  const size_t size = nnp::dtype_size(D.dtype);
  const char* d = nnp::data_ptr<const char>(D);
  char* y = nnp::data_ptr<char>(*a.out(0));
  for_each_gathered("gather", D, *a.in(1), axis,
                    [&](int64_t j, int64_t i) { move(y, j, d, i, size); });
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
