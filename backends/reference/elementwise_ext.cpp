// elementwise_ext.cpp — reference unary functions and where (ABI 1.2):
//   unary_forward   y = f(x) (ONNX Exp, Log, Sqrt, Abs, Neg, Reciprocal, Floor, Ceil, Sin, Cos,
//                   Erf), in double then rounded once to T; IEEE edge cases as C's <cmath>
//   unary_backward  dx = f'(x) * dy; abs'(0) = 0
//   where           output = condition ? x : y with numpy broadcasting of all three (ONNX Where)
#include "reference.hpp"

#include <nnplug/kit/broadcast.hpp>

#include <cmath>

namespace ref {
namespace {

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

}  // namespace

REF_FLOAT_OP(unary_forward, unary_forward_t, in(0))
REF_FLOAT_OP(unary_backward, unary_backward_t, in(0))
REF_FLOAT_OP(where, where_t, in(1))

}  // namespace ref
