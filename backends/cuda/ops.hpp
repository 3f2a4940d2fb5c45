// ops.hpp — the op entry points of the CUDA backend (one file per op family) and the few kernel
// launchers one family borrows from another. plugin.cpp lists them in its kernel rows.
#pragma once

#include "context.hpp"

#include <nnplug/kit/plugin.hpp>
#include <nnplug/kit/tensor.hpp>

namespace nnp {
struct conv_nd_geometry;  // nnplug/kit/conv_nd.hpp
}  // namespace nnp

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

// Bytes of one element of the float types our kernels compute in (f32, f16, bf16).
inline size_t elem_size(elem t) { return t == elem::f32 ? 4 : 2; }

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

// ---- rows -----------------------------------------------------------------------------------
// float32 and the 16-bit floats
constexpr uint32_t kHalfFloats = nnp::kit::f32 | nnp::kit::f16 | nnp::kit::bf16;
constexpr uint32_t kAllFloats = nnp::kit::all_floats;
// Checks that tensor t (input or output `index`, `role` naming which) is memory of s's device:
// INVALID_ARGUMENT otherwise (context.cpp).
void check_tensor_memory(stream& s, const DLTensor* t, const char* role, size_t index);
// The row kernel of a family: runs `family` on the call's stream (op_execute's c.stream), with
// the stream's device current, once every tensor's data is known to be memory of that device.
template <void (*family)(stream&, const op_call&)>
void on_stream(const op_call& c) {
  stream& s = *static_cast<stream*>(c.stream);
  use_device(s.device);
  for (size_t i = 0; i < c.n_inputs; ++i) check_tensor_memory(s, c.in(i), "input", i);
  for (size_t i = 0; i < c.n_outputs; ++i) check_tensor_memory(s, c.out(i), "output", i);
  family(s, c);
}
// Row checks several families share (context.cpp): every float operand one of f32, f16,
// bf16, f64 ...; element sizes of 1, 2, 4 or 8 bytes.
void check_float_operands(const op_call& c);
void check_element_size(const op_call& c);
// UNSUPPORTED unless enum value v (of `what`, e.g. "binary op") is in [lo, hi], the values the
// kernels implement (named in `implemented`): values a later ABI minor appends.
void check_implemented(const char* what, int32_t v, int32_t lo, int32_t hi,
                       const char* implemented);
// The rows of each family file (plugin.cpp lists them).
extern const kit::op_row_list kGemmRows, kConvRows, kPoolRows, kActivationRows, kSoftmaxRows,
    kNormRows, kDropoutRows, kElementwiseRows, kReduceRows, kOptimRows, kAttentionRows, kDataRows,
    kUnaryRows, kLossRows;

// ---- op families ------------------------------------------------------------------------------
void op_gemm(stream& s, const op_call& c);  // gemm.cpp (cuBLAS)
// cuBLAS's and cuDNN's 32-bit sizes, checked by op_supported and op_execute alike (row checks):
// UNSUPPORTED, naming the limit, for a call that would need a larger one.
void check_gemm_limits(const op_call& c);        // gemm.cpp
void op_binary(stream& s, const op_call& c);     // elementwise.cu
void op_scale(stream& s, const op_call& c);      // elementwise.cu
void op_clip(stream& s, const op_call& c);       // elementwise.cu
void op_fill(stream& s, const op_call& c);       // elementwise.cu
void op_copy(stream& s, const op_call& c);       // elementwise.cu
void op_gather(stream& s, const op_call& c);     // elementwise.cu (ONNX Gather)
void op_transpose(stream& s, const op_call& c);  // elementwise.cu
void op_cast(stream& s, const op_call& c);       // elementwise.cu
void op_reduce(stream& s, const op_call& c);     // reduce.cu
void op_sgd(stream& s, const op_call& c);        // optim.cu
void op_adam(stream& s, const op_call& c);       // optim.cu

// One function per op kind (the kernel rows reach the kernel directly).
void op_matmul(stream& s, const op_call& c);                          // gemm.cpp (cuBLAS)
void check_matmul(const op_call& c);                                  // gemm.cpp
void op_conv_forward(stream& s, const op_call& c);                    // conv.cpp (cuDNN N-d)
void op_conv_backward_data(stream& s, const op_call& c);              // conv.cpp
void op_conv_backward_filter(stream& s, const op_call& c);            // conv.cpp
void op_conv_backward_bias(stream& s, const op_call& c);              // conv.cpp
void op_conv_transpose_forward(stream& s, const op_call& c);          // conv.cpp
void op_conv_transpose_backward_data(stream& s, const op_call& c);    // conv.cpp
void op_conv_transpose_backward_filter(stream& s, const op_call& c);  // conv.cpp
void op_conv2d_forward(stream& s, const op_call& c);                  // conv.cpp (the N-d path)
void op_conv2d_backward_data(stream& s, const op_call& c);            // conv.cpp
void op_conv2d_backward_filter(stream& s, const op_call& c);          // conv.cpp
void op_pool2d_forward(stream& s, const op_call& c);                  // pool.cu (own kernels)
void op_pool2d_backward(stream& s, const op_call& c);                 // pool.cu
void op_pool_forward(stream& s, const op_call& c);                    // pool.cu (N-d)
void op_pool_backward(stream& s, const op_call& c);                   // pool.cu
void op_concat(stream& s, const op_call& c);                          // data.cu
void op_split(stream& s, const op_call& c);                           // data.cu
void op_slice(stream& s, const op_call& c);                           // data.cu
void op_slice_backward(stream& s, const op_call& c);                  // data.cu
void op_gather_backward(stream& s, const op_call& c);                 // data.cu
void op_where(stream& s, const op_call& c);                           // data.cu
void op_unary_forward(stream& s, const op_call& c);                   // unary.cu
void op_unary_backward(stream& s, const op_call& c);                  // unary.cu
void op_nll_loss_forward(stream& s, const op_call& c);                // loss.cu
void op_nll_loss_backward(stream& s, const op_call& c);               // loss.cu
void op_sce_loss_forward(stream& s, const op_call& c);                // loss.cu
void op_sce_loss_backward(stream& s, const op_call& c);               // loss.cu
void op_activation_forward(stream& s, const op_call& c);              // activation.cu
void op_activation_backward(stream& s, const op_call& c);             // activation.cu
void op_softmax_forward(stream& s, const op_call& c);                 // softmax.cu
void op_softmax_backward(stream& s, const op_call& c);                // softmax.cu
void op_softmax_cross_entropy_forward(stream& s, const op_call& c);   // softmax.cu
void op_softmax_cross_entropy_backward(stream& s, const op_call& c);  // softmax.cu
void op_batch_norm_forward_training(stream& s, const op_call& c);     // norm.cu
void op_batch_norm_forward_inference(stream& s, const op_call& c);    // norm.cu
void op_batch_norm_backward(stream& s, const op_call& c);             // norm.cu
void op_layer_norm_forward(stream& s, const op_call& c);              // norm.cu
void op_layer_norm_backward(stream& s, const op_call& c);             // norm.cu
void op_dropout_forward(stream& s, const op_call& c);                 // dropout.cu
void op_dropout_backward(stream& s, const op_call& c);                // dropout.cu
void op_attention_forward(stream& s, const op_call& c);               // attention.cu
void op_attention_backward(stream& s, const op_call& c);              // attention.cu
// Attention's grid and shared-memory limits (UNSUPPORTED beyond them), checked by op_supported
// and op_execute alike (row checks), one per direction.
void check_attention_forward_limits(const op_call& c);   // attention.cu
void check_attention_backward_limits(const op_call& c);  // attention.cu

// ---- launchers shared between families (elementwise.cu, reduce.cu) ----------------------------
// y[i] = c[i % n_c] for i < n_y (GEMM's C broadcast over rows and batch).
void launch_broadcast_tail(stream& s, elem t, const void* c, int64_t n_c, void* y, int64_t n_y);
// y[i] = alpha * p[i] + beta * y[i] (beta = 0: y not read), in float32 (gemm_kernels.cu).
void launch_axpby(stream& s, elem t, const void* p, void* y, int64_t n, double alpha, double beta);
// y[i] = alpha * x[i]; y may equal x.
void launch_scale(stream& s, elem t, const void* x, void* y, int64_t n, double alpha);
// y = min(max(x, lo), hi) (ONNX Clip; NaN stays NaN); y may be x. lo / hi: -inf / +inf for none.
void launch_clip(stream& s, elem t, const void* x, void* y, int64_t n, float lo, float hi);
// y[n, k, :] += b[k] for y [N, K, inner].
void launch_bias_add(stream& s, elem t, void* y, const void* b, int64_t n, int64_t k,
                     int64_t inner);
// y[i] = x[i] converted from tx to ty (float types; round to nearest even), n elements.
void launch_cast(stream& s, elem tx, const void* x, elem ty, void* y, int64_t n);
// Sum over every axis but `axis` of a compact tensor: y[j] = sum x[..., j, ...].
// Uses the stream's kScratchTemp0 for per-chunk partials: x must not live in that slot.
void launch_sum_keep_axis(stream& s, elem t, const void* x, void* y, const int64_t* shape, int rank,
                          int axis);

// ---- convolution helpers (conv_direct.cu), on nnplug/kit/conv_nd.hpp's geometry ---------------
// Direct convolution: one thread per result element sums its window in float32 in a fixed order,
// with every IEEE product the reference takes (padding taps of forward and backward-filter are
// zeros that take part: 0 * inf = NaN); 64-bit indices. bias (optional, NULL: none) is added to
// the result's channels. flag NULL: always runs; else the kernel returns at once unless
// *flag != 0 (conv.cpp's non-finite rule).
void launch_conv_direct_forward(stream& s, elem t, const nnp::conv_nd_geometry& g, const void* in,
                                const void* w, const void* bias, void* out, const int* flag);
// The few-tap forward: out = clamp(bias + conv) (lo / hi: -inf / +inf for none) by one thread per
// output position and block of 32 channels, with the reference's order and products, for
// groups = 1 and ci * kernel taps <= 27; false (nothing launched) for any other geometry.
bool launch_conv_small_forward(stream& s, elem t, const nnp::conv_nd_geometry& g, const void* in,
                               const void* w, const void* bias, void* out, float lo, float hi);
// The few-channel backward-data: in = bias + the direct kernel's sum, in its order and with its
// products, by one thread per input element with the filter in shared memory, for groups = 1,
// at most 4 input channels, 27 kernel taps and 2048 filter elements; false (nothing launched)
// for any other geometry.
bool launch_conv_small_backward_data(stream& s, elem t, const nnp::conv_nd_geometry& g,
                                     const void* out, const void* w, const void* bias, void* in);
void launch_conv_direct_backward_data(stream& s, elem t, const nnp::conv_nd_geometry& g,
                                      const void* out, const void* w, const void* bias, void* in,
                                      const int* flag);
void launch_conv_direct_backward_filter(stream& s, elem t, const nnp::conv_nd_geometry& g,
                                        const void* in, const void* out, void* w, const int* flag);
// dst [nc, dst_ext[0..3)] from src [nc, src_ext[0..3)]: dst[c, e] = src[c, e - shift] where that
// lies inside src, else 0 (zero-pads where shift > 0, crops where shift < 0, per axis).
void launch_conv_window(stream& s, elem t, const void* src, const int64_t* src_ext, void* dst,
                        const int64_t* dst_ext, const int64_t* shift, int64_t nc);
// Sets *flag = 1 when any of the na elements at a or the nb at b is ±inf or NaN (a or b may be
// NULL with a count of 0); never clears it: zero it first (cudaMemsetAsync). Queued on `on`
// (s's stream or its side stream), sized for s's device.
void launch_nonfinite_flag(stream& s, cudaStream_t on, elem t, const void* a, int64_t na,
                           const void* b, int64_t nb, int* flag);

// ---- gemm_kernels.cu (gemm.cpp's device helpers) ----------------------------------------------
// A shape with one element stride per dimension (0: broadcast), passed by value to a kernel.
struct broadcast_geometry {
  int rank;
  int64_t shape[NNP_MAX_DIMS];
  int64_t stride[NNP_MAX_DIMS];
};
// y[i] = c[sum_d idx_d(i) * g.stride[d]] for i < n, idx(i) row-major over g.shape (GEMM's C
// broadcast into Y, any ONNX unidirectional form); elem_bytes 2, 4 or 8.
void launch_broadcast_strided(stream& s, size_t elem_bytes, const void* c, void* y, int64_t n,
                              const broadcast_geometry& g);
// A batch shape with BYTE strides of two operands (0: broadcast), passed by value to a kernel.
struct batch_geometry {
  int rank;
  int64_t shape[NNP_MAX_DIMS];
  int64_t a_stride[NNP_MAX_DIMS];
  int64_t b_stride[NNP_MAX_DIMS];
};
// The pointer arrays of cublasGemmBatchedEx, on the device: ptrs[i] = a + offset_a(i),
// ptrs[batch + i] = b + offset_b(i), ptrs[2 batch + i] = y + i * y_step (bytes) for i < batch,
// i row-major over g.shape. ptrs holds 3 * batch pointers (device memory).
void launch_batch_pointers(stream& s, const void* a, const void* b, void* y, int64_t y_step,
                           int64_t batch, const batch_geometry& g, void** ptrs);

}  // namespace nnp::cuda
