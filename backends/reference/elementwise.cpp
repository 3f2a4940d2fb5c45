// elementwise.cpp — reference elementwise and data-movement ops:
//   binary     y = a (+ - * / pow) b with numpy broadcasting (ONNX Add/Sub/Mul/Div/Pow), in double
//              then rounded once to T (so float32 results equal IEEE float32 arithmetic)
//   unary      forward y = f(x) (ONNX Exp, Log, Sqrt, Abs, Neg, Reciprocal, Floor, Ceil, Sin, Cos,
//              Erf), in double then rounded once to T, IEEE edge cases as C's <cmath>; backward
//              dx = f'(x) * dy, abs'(0) = 0
//   where      y = condition ? x : y with numpy broadcasting of all three (ONNX Where)
//   scale      y = alpha * x
//   clip       y = min(max(x, min), max) (ONNX Clip)
//   fill       y = value (rounded to y's dtype)
//   copy       y = x element by element, arbitrary non-negative strides on both sides
//   transpose  y[j] = x[i] with i[perm[k]] = j[k] (ONNX Transpose)
//   cast       float32 <-> float64, round to nearest even (the C++ conversion)
#include "reference.hpp"

#include <nnplug/kit/broadcast.hpp>

#include <cmath>

namespace ref {
namespace {

template <typename T>
void binary_t(const op_args& args) {
  const auto p = read_params<nnp_binary_params>(args.params);
  const DLTensor& A = *args.in(0);
  const DLTensor& B = *args.in(1);
  const DLTensor& Y = *args.out(0);
  int64_t sa[NNP_MAX_DIMS], sb[NNP_MAX_DIMS];
  nnp::broadcast_strides(A, Y.ndim, sa);
  nnp::broadcast_strides(B, Y.ndim, sb);
  const T* a = nnp::data_ptr<const T>(A);
  const T* b = nnp::data_ptr<const T>(B);
  T* y = nnp::data_ptr<T>(Y);
  const int64_t n = nnp::numel(Y);
  for (int64_t i = 0; i < n; ++i) {
    // y may alias a (or b) when it has a's shape: then a's offset is i, read before y[i] is set.
    const double va = a[nnp::broadcast_offset(i, Y.shape, Y.ndim, sa)];
    const double vb = b[nnp::broadcast_offset(i, Y.shape, Y.ndim, sb)];
    double out = 0.0;
    switch (p.op) {
      case NNP_BINARY_ADD:
        out = va + vb;
        break;
      case NNP_BINARY_SUB:
        out = va - vb;
        break;
      case NNP_BINARY_MUL:
        out = va * vb;
        break;
      case NNP_BINARY_DIV:
        out = va / vb;
        break;
      case NNP_BINARY_POW:  // C pow: pow(x, 0) = 1 (NaN x too), pow(1, y) = 1
        out = std::pow(va, vb);
        break;
      default:
        nnp::unsupported(nnp::format("binary op %d is not known", p.op));
    }
    y[i] = static_cast<T>(out);
  }
}

double unary_f(int op, double x) {
  switch (op) {
    case NNP_UNARY_EXP:
      return std::exp(x);
    case NNP_UNARY_LOG:
      return std::log(x);
    case NNP_UNARY_SQRT:
      return std::sqrt(x);
    case NNP_UNARY_ABS:
      return std::fabs(x);
    case NNP_UNARY_NEG:
      return -x;
    case NNP_UNARY_RECIPROCAL:
      return 1.0 / x;
    case NNP_UNARY_FLOOR:
      return std::floor(x);
    case NNP_UNARY_CEIL:
      return std::ceil(x);
    case NNP_UNARY_SIN:
      return std::sin(x);
    case NNP_UNARY_COS:
      return std::cos(x);
    case NNP_UNARY_ERF:
      return std::erf(x);
    default:
      nnp::unsupported(nnp::format("unary op %d is not known", op));
  }
}

// f'(x); FLOOR and CEIL were refused by the shape rule.
double unary_df(int op, double x) {
  switch (op) {
    case NNP_UNARY_EXP:
      return std::exp(x);
    case NNP_UNARY_LOG:
      return 1.0 / x;
    case NNP_UNARY_SQRT:
      return 0.5 / std::sqrt(x);
    case NNP_UNARY_ABS:
      return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);  // 0 at 0 (and NaN for NaN below)
    case NNP_UNARY_NEG:
      return -1.0;
    case NNP_UNARY_RECIPROCAL:
      return -1.0 / (x * x);
    case NNP_UNARY_SIN:
      return std::cos(x);
    case NNP_UNARY_COS:
      return -std::sin(x);
    case NNP_UNARY_ERF:
      return 1.1283791670955126 * std::exp(-x * x);  // 2 / sqrt(pi)
    default:
      nnp::unsupported(nnp::format("unary op %d has no backward", op));
  }
}

template <typename T>
void unary_forward_t(const op_args& args) {
  const int op = read_params<nnp_unary_params>(args.params).op;
  map_unary<T>(args, [op](double x) { return unary_f(op, x); });
}

template <typename T>
void unary_backward_t(const op_args& args) {
  const int op = read_params<nnp_unary_params>(args.params).op;
  const DLTensor& X = *args.in(0);
  const T* x = nnp::data_ptr<const T>(X);
  const T* dy = nnp::data_ptr<const T>(*args.in(1));
  T* dx = nnp::data_ptr<T>(*args.out(0));  // may alias dy: dy[i] is read before dx[i] is set
  const int64_t n = nnp::numel(X);
  for (int64_t i = 0; i < n; ++i) {
    const double xi = x[i];
    const double d = op == NNP_UNARY_ABS && std::isnan(xi) ? xi : unary_df(op, xi);
    dx[i] = static_cast<T>(d * double(dy[i]));
  }
}

template <typename T>
void where_t(const op_args& args) {
  const DLTensor& C = *args.in(0);
  const DLTensor& X = *args.in(1);
  const DLTensor& Yv = *args.in(2);
  const DLTensor& O = *args.out(0);
  int64_t sc[NNP_MAX_DIMS], sx[NNP_MAX_DIMS], sy[NNP_MAX_DIMS];
  nnp::broadcast_strides(C, O.ndim, sc);
  nnp::broadcast_strides(X, O.ndim, sx);
  nnp::broadcast_strides(Yv, O.ndim, sy);
  const uint8_t* c = nnp::data_ptr<const uint8_t>(C);
  const T* x = nnp::data_ptr<const T>(X);
  const T* y = nnp::data_ptr<const T>(Yv);
  T* out = nnp::data_ptr<T>(O);  // may alias x or y (same shape): element i read, then set
  const int64_t n = nnp::numel(O);
  for (int64_t i = 0; i < n; ++i) {
    const bool take_x = c[nnp::broadcast_offset(i, O.shape, O.ndim, sc)] != 0;
    out[i] = take_x ? x[nnp::broadcast_offset(i, O.shape, O.ndim, sx)]
                    : y[nnp::broadcast_offset(i, O.shape, O.ndim, sy)];
  }
}

template <typename T>
void scale_t(const op_args& args) {
  const auto p = read_params<nnp_scale_params>(args.params);
  map_unary<T>(args, [&](double x) { return p.alpha * x; });
}

// ONNX Clip: max(x, min) then min(., max), each bound when given; NaN stays NaN (the
// comparisons are false for NaN); min > max gives max everywhere.
template <typename T>
void clip_t(const op_args& args) {
  const auto p = read_params<nnp_clip_params>(args.params);
  map_unary<T>(args, [&](double v) {
    if (p.has_min && v < p.min) v = p.min;
    if (p.has_max && v > p.max) v = p.max;
    return v;
  });
}

template <typename T>
void fill_t(const op_args& args) {
  const auto p = read_params<nnp_fill_params>(args.params);
  const DLTensor& Y = *args.out(0);
  T* y = nnp::data_ptr<T>(Y);
  const T value = static_cast<T>(p.value);
  const int64_t n = nnp::numel(Y);
  for (int64_t i = 0; i < n; ++i) y[i] = value;
}

// Element offset of the row-major linear index i in tensor t (its strides, or compact ones).
int64_t strided_offset(const DLTensor& t, int64_t i) {
  int64_t offset = 0, compact = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    const int64_t extent = t.shape[d];
    const int64_t stride = t.strides != nullptr ? t.strides[d] : compact;
    offset += (i % extent) * stride;
    i /= extent;
    compact *= extent;
  }
  return offset;
}

template <typename From, typename To>
void cast_t(const DLTensor& X, const DLTensor& Y) {
  const From* x = nnp::data_ptr<const From>(X);
  To* y = nnp::data_ptr<To>(Y);
  const int64_t n = nnp::numel(X);
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<To>(x[i]);
}

}  // namespace

REF_FLOAT_OP(binary, binary_t, out(0))
REF_FLOAT_OP(unary_forward, unary_forward_t, in(0))
REF_FLOAT_OP(unary_backward, unary_backward_t, in(0))
REF_FLOAT_OP(where, where_t, in(1))
REF_FLOAT_OP(clip, clip_t, in(0))
REF_FLOAT_OP(scale, scale_t, in(0))
REF_FLOAT_OP(fill, fill_t, out(0))

// Copy and transpose move whole elements of any dtype (dtype_size bytes each).
void copy(const op_args& a) {
  const DLTensor& X = *a.in(0);
  const DLTensor& Y = *a.out(0);
  const size_t size = nnp::dtype_size(X.dtype);
  const char* x = nnp::data_ptr<const char>(X);
  char* y = nnp::data_ptr<char>(Y);
  const int64_t n = nnp::numel(X);
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(y + strided_offset(Y, i) * int64_t(size), x + strided_offset(X, i) * int64_t(size),
                size);
}

void transpose(const op_args& a) {
  const auto p = read_params<nnp_transpose_params>(a.params);
  const DLTensor& X = *a.in(0);
  const DLTensor& Y = *a.out(0);
  const int rank = X.ndim;
  // x's compact strides, then the stride in x of each output dim k: x_stride[perm[k]].
  int64_t x_stride[NNP_MAX_DIMS], y_to_x[NNP_MAX_DIMS];
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    x_stride[d] = s;
    s *= X.shape[d];
  }
  for (int k = 0; k < rank; ++k) y_to_x[k] = x_stride[p.perm[k]];
  const size_t size = nnp::dtype_size(X.dtype);
  const char* x = nnp::data_ptr<const char>(X);
  char* y = nnp::data_ptr<char>(Y);
  const int64_t n = nnp::numel(Y);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t i = nnp::broadcast_offset(j, Y.shape, rank, y_to_x);
    std::memcpy(y + j * int64_t(size), x + i * int64_t(size), size);
  }
}

void cast(const op_args& a) {
  const DLTensor& X = *a.in(0);
  const DLTensor& Y = *a.out(0);
  dispatch_float(X, [&](auto from) {
    dispatch_float(Y, [&](auto to) { cast_t<decltype(from), decltype(to)>(X, Y); });
  });
}

// cast converts between float32 and float64 only (the row lists both dtypes for x).
void check_cast(const op_args& c) {
  const DLDataType& y = c.out(0)->dtype;
  if (!nnp::is_f32(y) && !nnp::is_f64(y))
    nnp::unsupported(
        nnp::format("the reference kernels implement float32 and float64 only; "
                    "output 0 is %s (cast supports float32 <-> float64 only)",
                    nnp::dtype_name(y).c_str()));
}

// The rows of this file's kernels (rows.hpp lists the files).
// clang-format off
const nnp::kit::op_row kElementwiseOps[] = {
    {NNP_OP_BINARY,         kFloats,        binary},
    {NNP_OP_SCALE,          kFloats,        scale},
    {NNP_OP_FILL,           kFloats,        fill},
    {NNP_OP_COPY,           nnp::kit::any,  copy},
    {NNP_OP_TRANSPOSE,      nnp::kit::any,  transpose},
    {NNP_OP_CAST,           kFloats,        cast, check_cast},
    {NNP_OP_CLIP,           kFloats,        clip},
    {NNP_OP_UNARY_FORWARD,  kFloats,        unary_forward},
    {NNP_OP_UNARY_BACKWARD, kFloats,        unary_backward},
    {NNP_OP_WHERE,          kFloats,        where},
};
// clang-format on
extern const nnp::kit::op_row_list kElementwiseRows = nnp::kit::row_list(kElementwiseOps);

}  // namespace ref
