// ops.hpp — the op entry points of the CUDA backend (one file per op family) and the few kernel
// launchers one family borrows from another. plugin.cpp lists them in its kernel rows.
#pragma once

#include "context.hpp"

#include <nnplug/kit/plugin.hpp>
#include <nnplug/kit/tensor.hpp>

namespace nnp::cuda {

// The arguments of one validated op call (the plugin kit's; c.stream is this backend's stream).
using op_call = nnp::kit::op_call;

// Element types our kernels are instantiated for.
enum class elem { f32, f16, bf16, f64, other };
inline elem elem_of(const DLDataType& t) {
  if (is_f32(t)) return elem::f32;
  if (is_f16(t)) return elem::f16;
  if (is_bf16(t)) return elem::bf16;
  if (is_f64(t)) return elem::f64;
  return elem::other;
}

// A library's code for the float element type t (cuBLAS's cudaDataType, cuDNN's
// cudnnDataType_t): f32, f16 or bf16; any other type is UNSUPPORTED by `op`.
template <typename Code>
Code float_code(elem t, Code f32, Code f16, Code bf16, const char* op) {
  switch (t) {
    case elem::f32:
      return f32;
    case elem::f16:
      return f16;
    case elem::bf16:
      return bf16;
    default:
      unsupported(format("%s: dtype not implemented by the cuda backend", op));
  }
}

// ---- op families ------------------------------------------------------------------------------
void op_gemm(stream& s, const op_call& c);  // gemm.cpp (cuBLAS)
// cuBLAS's and cuDNN's 32-bit sizes, checked by op_supported and op_execute alike (row checks):
// UNSUPPORTED, naming the limit, for a call that would need a larger one.
void check_gemm_limits(const op_call& c);    // gemm.cpp
void check_conv2d_limits(const op_call& c);  // conv.cpp
// Attention's grid and shared-memory limits (UNSUPPORTED beyond them), the same way.
void check_attention_limits(const op_call& c);       // attention.cu
void op_conv2d(stream& s, const op_call& c);         // conv.cpp (cuDNN)
void op_pool2d(stream& s, const op_call& c);         // pool.cu
void op_activation(stream& s, const op_call& c);     // activation.cu
void op_softmax(stream& s, const op_call& c);        // softmax.cu
void op_cross_entropy(stream& s, const op_call& c);  // softmax.cu
void op_batch_norm(stream& s, const op_call& c);     // norm.cu
void op_layer_norm(stream& s, const op_call& c);     // norm.cu
void op_dropout(stream& s, const op_call& c);        // dropout.cu
void op_binary(stream& s, const op_call& c);         // elementwise.cu
void op_scale(stream& s, const op_call& c);          // elementwise.cu
void op_clip(stream& s, const op_call& c);           // elementwise.cu
void op_fill(stream& s, const op_call& c);           // elementwise.cu
void op_copy(stream& s, const op_call& c);           // elementwise.cu
void op_gather(stream& s, const op_call& c);         // elementwise.cu (ONNX Gather)
void op_transpose(stream& s, const op_call& c);      // elementwise.cu
void op_cast(stream& s, const op_call& c);           // elementwise.cu
void op_reduce(stream& s, const op_call& c);         // reduce.cu
void op_sgd(stream& s, const op_call& c);            // optim.cu
void op_adam(stream& s, const op_call& c);           // optim.cu
void op_attention(stream& s, const op_call& c);      // attention.cu (forward and backward)

// ---- launchers shared between families (elementwise.cu, reduce.cu) ----------------------------
// y[i] = c[i % n_c] for i < n_y (GEMM's C broadcast over rows and batch).
void launch_broadcast_tail(stream& s, elem t, const void* c, int64_t n_c, void* y, int64_t n_y);
// y[i] = alpha * x[i]; y may equal x.
void launch_scale(stream& s, elem t, const void* x, void* y, int64_t n, double alpha);
// y[n, k, :] += b[k] for y [N, K, inner].
void launch_bias_add(stream& s, elem t, void* y, const void* b, int64_t n, int64_t k,
                     int64_t inner);
// Zero-pads x [NC, H, W] into xp [NC, H + top + bottom, W + left + right].
void launch_pad2d(stream& s, elem t, const void* x, void* xp, int64_t nc, int64_t h, int64_t w,
                  int64_t top, int64_t bottom, int64_t left, int64_t right);
// Crops x [NC, H + top + bottom, W + left + right] to y [NC, H, W] (inverse of pad2d).
void launch_crop2d(stream& s, elem t, const void* xp, void* y, int64_t nc, int64_t h, int64_t w,
                   int64_t top, int64_t bottom, int64_t left, int64_t right);
// y[i] = x[i] converted from tx to ty (float types; round to nearest even), n elements.
void launch_cast(stream& s, elem tx, const void* x, elem ty, void* y, int64_t n);
// Sum over every axis but `axis` of a compact tensor: y[j] = sum x[..., j, ...].
void launch_sum_keep_axis(stream& s, elem t, const void* x, void* y, const int64_t* shape, int rank,
                          int axis);

}  // namespace nnp::cuda
