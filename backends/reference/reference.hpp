// Internal declarations of the reference backend (libnnplug-reference.so): the op argument
// bundle, params reading, dtype dispatch and one entry point per op kind. Each op family lives
// in its own file (gemm.cpp, conv.cpp, ...); plugin.cpp lists them as the plugin's kernel rows.
// The kernels form a static library (nnplug_reference_kernels) that the simulated accelerator
// links too.
//
// The reference is the conformance oracle: plain loops, double accumulation, one obvious
// implementation per op, exactly the formulas of nnplug_ops.h (docs/ops.md has them in full).
// Calls arrive validated by libnnplug (shapes, dtypes, params), so ops re-check nothing
// beyond what they need to stay safe on every input the header allows (empty tensors too).
#pragma once

#include <nnplug/nnplug_plugin.h>

#include <nnplug/kit/plugin.hpp>
#include <nnplug/kit/tensor.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ref {

// The tensors and params of one op call (the plugin kit's op_call), and params reading.
using op_args = nnp::kit::op_call;
using nnp::kit::f32;
using nnp::kit::f64;
// The reference kernels' dtypes: float32 and float64.
inline constexpr uint32_t kFloats = f32 | f64;
using nnp::read_params;

// Calls f(T{}) with T = float or double, the dtype of t. Other dtypes were rejected by
// op_supported before any op runs; this throw is a safety net.
template <typename F>
void dispatch_float(const DLTensor& t, F&& f) {
  if (nnp::is_f32(t.dtype)) {
    f(float{});
  } else if (nnp::is_f64(t.dtype)) {
    f(double{});
  } else {
    nnp::unsupported(nnp::format("the reference backend implements float32 and float64, not %s",
                                 nnp::dtype_name(t.dtype).c_str()));
  }
}

// Defines the op entry point `void name(const op_args& a)`: runs kernel<T>(a) with T = float or
// double, the dtype of the tensor a.operand (in(0), or out(0) for ops with no float input).
#define REF_FLOAT_OP(name, kernel, operand)                              \
  void name(const op_args& a) {                                          \
    dispatch_float(*a.operand, [&](auto t) { kernel<decltype(t)>(a); }); \
  }

// Typed pointer to the data of optional input / output i, or nullptr when it is absent.
template <typename T>
const T* opt_in(const op_args& a, size_t i) {
  return a.in(i) != nullptr ? nnp::data_ptr<const T>(*a.in(i)) : nullptr;
}
template <typename T>
T* opt_out(const op_args& a, size_t i) {
  return a.out(i) != nullptr ? nnp::data_ptr<T>(*a.out(i)) : nullptr;
}

// y = f(x) element by element, x = in(0) and y = out(0) of the same shape (y may alias x):
// f maps double to double, and its result is rounded once to T.
template <typename T, typename F>
void map_unary(const op_args& a, F&& f) {
  const DLTensor& X = *a.in(0);
  const T* x = nnp::data_ptr<const T>(X);
  T* y = nnp::data_ptr<T>(*a.out(0));
  const int64_t n = nnp::numel(X);
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(f(double(x[i])));
}

// log(sum_{c < C} exp(x(c) - mx)) with mx = max_c x(c), for the log-softmax of the losses.
// With a finite max the sum is 1 (the first maximum's term) plus the rest, and its log is
// log1p(rest): when one class holds nearly all the mass (rest ~ 1e-16), log(1 + rest) would
// keep few or none of rest's digits, and a label's p - 1 (expm1 of its log-probability) with
// them. x: int64_t -> double.
template <typename X>
double log_sum_exp_shifted(const X& x, int64_t C, double mx) {
  double sum = 0.0, rest = 0.0;
  bool first_max = true;
  for (int64_t c = 0; c < C; ++c) {
    const double e = std::exp(x(c) - mx);
    sum += e;
    if (first_max && x(c) == mx)
      first_max = false;
    else
      rest += e;
  }
  return std::isfinite(mx) ? std::log1p(rest) : std::log(sum);
}

// Product of shape[begin, end) (1 for an empty range).
inline int64_t dims_product(const DLTensor& t, int begin, int end) {
  int64_t n = 1;
  for (int i = begin; i < end; ++i) n *= t.shape[i];
  return n;
}

// ---- op entry points (one per nnp_op_kind) ---------------------------------------------------
void gemm(const op_args& a);                            // gemm.cpp
void matmul(const op_args& a);                          // matmul.cpp
void conv2d_forward(const op_args& a);                  // conv.cpp (conv2d: conv with k = 2)
void conv2d_backward_data(const op_args& a);            //
void conv2d_backward_filter(const op_args& a);          //
void conv2d_backward_bias(const op_args& a);            //
void conv_forward(const op_args& a);                    //
void conv_backward_data(const op_args& a);              //
void conv_backward_filter(const op_args& a);            //
void conv_backward_bias(const op_args& a);              //
void conv_transpose_forward(const op_args& a);          //
void conv_transpose_backward_data(const op_args& a);    //
void conv_transpose_backward_filter(const op_args& a);  //
void pool2d_forward(const op_args& a);                  // pool.cpp (pool2d: pool with k = 2)
void pool2d_backward(const op_args& a);                 //
void pool_forward(const op_args& a);                    //
void pool_backward(const op_args& a);                   //
void activation_forward(const op_args& a);              // activation.cpp
void activation_backward(const op_args& a);             //
void softmax_forward(const op_args& a);                 // softmax.cpp
void softmax_backward(const op_args& a);                //
void attention_forward(const op_args& a);               // attention.cpp
void attention_backward(const op_args& a);              //
void softmax_cross_entropy_forward(const op_args& a);   // loss.cpp
void softmax_cross_entropy_backward(const op_args& a);  //
void nll_loss_forward(const op_args& a);                //
void nll_loss_backward(const op_args& a);               //
void sce_loss_forward(const op_args& a);                // softmax_cross_entropy_loss_*
void sce_loss_backward(const op_args& a);               //
void batch_norm_forward_training(const op_args& a);     // norm.cpp
void batch_norm_forward_inference(const op_args& a);    //
void batch_norm_backward(const op_args& a);             //
void layer_norm_forward(const op_args& a);              //
void layer_norm_backward(const op_args& a);             //
void dropout_forward(const op_args& a);                 // dropout.cpp
void dropout_backward(const op_args& a);                //
void binary(const op_args& a);                          // elementwise.cpp
void unary_forward(const op_args& a);                   //
void unary_backward(const op_args& a);                  //
void where(const op_args& a);                           //
void scale(const op_args& a);                           //
void clip(const op_args& a);                            //
void fill(const op_args& a);                            //
void copy(const op_args& a);                            //
void transpose(const op_args& a);                       //
void cast(const op_args& a);                            //
void concat(const op_args& a);                          // data_movement.cpp
void split(const op_args& a);                           //
void slice(const op_args& a);                           //
void slice_backward(const op_args& a);                  //
void gather(const op_args& a);                          //
void gather_backward(const op_args& a);                 //
void reduce(const op_args& a);                          // reduce.cpp
void sgd_update(const op_args& a);                      // optimizer.cpp
void adam_update(const op_args& a);                     //

}  // namespace ref
