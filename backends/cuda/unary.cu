// unary.cu — own kernels for unary_forward, y = f(x) (ONNX Exp, Log, Sqrt, Abs, Neg, Reciprocal,
// Floor, Ceil, Sin, Cos, Erf), and unary_backward, dx = f'(x) * dy (FLOOR and CEIL have none:
// the host refuses them), for float32, float16 and bfloat16. As the reference, every element is
// computed in double with the IEEE (non fast-math) functions and rounded once to the storage
// type, so results and the edge values of nnplug_ops.h (log(0) = -inf, 1/-0 = -inf, abs'(0) = 0,
// ...) match it bit for bit nearly always (float32's expf, with its 2-ulp bound, would not).
// Memory-bound: speed comes from one grid-stride loop per call with the function chosen at
// compile time (one kernel per op and type).
#include "common.cuh"

#include <cmath>

namespace nnp::cuda {
namespace {

__device__ __forceinline__ double load_d(float x) { return x; }
__device__ __forceinline__ double load_d(half x) { return __half2float(x); }
__device__ __forceinline__ double load_d(bf16 x) { return __bfloat162float(x); }

// double -> storage type, rounded once to nearest even.
template <typename T>
__device__ __forceinline__ T store_d(double v);
template <>
__device__ __forceinline__ float store_d<float>(double v) {
  return static_cast<float>(v);
}
template <>
__device__ __forceinline__ half store_d<half>(double v) {
  return __double2half(v);
}
template <>
__device__ __forceinline__ bf16 store_d<bf16>(double v) {
  return __double2bfloat16(v);
}

template <int Op>
__device__ __forceinline__ double unary_f(double x) {
  if constexpr (Op == NNP_UNARY_EXP) return exp(x);
  if constexpr (Op == NNP_UNARY_LOG) return log(x);
  if constexpr (Op == NNP_UNARY_SQRT) return sqrt(x);
  if constexpr (Op == NNP_UNARY_ABS) return fabs(x);
  if constexpr (Op == NNP_UNARY_NEG) return -x;
  if constexpr (Op == NNP_UNARY_RECIPROCAL) return 1.0 / x;
  if constexpr (Op == NNP_UNARY_FLOOR) return floor(x);
  if constexpr (Op == NNP_UNARY_CEIL) return ceil(x);
  if constexpr (Op == NNP_UNARY_SIN) return sin(x);
  if constexpr (Op == NNP_UNARY_COS) return cos(x);
  if constexpr (Op == NNP_UNARY_ERF) return erf(x);
  return x;  // not reached (unary_op_dispatch instantiates the ops above only)
}

// f'(x), as backends/reference/elementwise.cpp.
template <int Op>
__device__ __forceinline__ double unary_df(double x) {
  if constexpr (Op == NNP_UNARY_EXP) return exp(x);
  if constexpr (Op == NNP_UNARY_LOG) return 1.0 / x;
  if constexpr (Op == NNP_UNARY_SQRT) return 0.5 / sqrt(x);
  if constexpr (Op == NNP_UNARY_ABS) return x > 0 ? 1.0 : (x < 0 ? -1.0 : (x == 0 ? 0.0 : x));
  if constexpr (Op == NNP_UNARY_NEG) return -1.0;
  if constexpr (Op == NNP_UNARY_RECIPROCAL) return -1.0 / (x * x);
  if constexpr (Op == NNP_UNARY_SIN) return cos(x);
  if constexpr (Op == NNP_UNARY_COS) return -sin(x);
  if constexpr (Op == NNP_UNARY_ERF) return 1.1283791670955126 * exp(-x * x);  // 2 / sqrt(pi)
  return x;                                                                    // not reached
}

// y may alias x: element i is read before it is written.
template <int Op, typename T>
__global__ void unary_forward_kernel(const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    y[i] = store_d<T>(unary_f<Op>(load_d(x[i])));
}

// dx may alias dy: element i is read before it is written.
template <int Op, typename T>
__global__ void unary_backward_kernel(const T* x, const T* dy, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    dx[i] = store_d<T>(unary_df<Op>(load_d(x[i])) * load_d(dy[i]));
}

template <int Op>
struct op_tag {
  static constexpr int value = Op;
};

// Calls f(op_tag<Op>) for the runtime op; FLOOR and CEIL only when WithFloorCeil (forward).
template <bool WithFloorCeil, typename F>
void unary_op_dispatch(int32_t op, const char* name, F&& f) {
  switch (op) {
    case NNP_UNARY_EXP:
      return f(op_tag<NNP_UNARY_EXP>{});
    case NNP_UNARY_LOG:
      return f(op_tag<NNP_UNARY_LOG>{});
    case NNP_UNARY_SQRT:
      return f(op_tag<NNP_UNARY_SQRT>{});
    case NNP_UNARY_ABS:
      return f(op_tag<NNP_UNARY_ABS>{});
    case NNP_UNARY_NEG:
      return f(op_tag<NNP_UNARY_NEG>{});
    case NNP_UNARY_RECIPROCAL:
      return f(op_tag<NNP_UNARY_RECIPROCAL>{});
    case NNP_UNARY_SIN:
      return f(op_tag<NNP_UNARY_SIN>{});
    case NNP_UNARY_COS:
      return f(op_tag<NNP_UNARY_COS>{});
    case NNP_UNARY_ERF:
      return f(op_tag<NNP_UNARY_ERF>{});
    default:
      break;
  }
  if constexpr (WithFloorCeil) {
    if (op == NNP_UNARY_FLOOR) return f(op_tag<NNP_UNARY_FLOOR>{});
    if (op == NNP_UNARY_CEIL) return f(op_tag<NNP_UNARY_CEIL>{});
  } else {
    if (op == NNP_UNARY_FLOOR || op == NNP_UNARY_CEIL)  // the host refuses these first
      fail(NNP_STATUS_INVALID_ARGUMENT,
           format("%s: params->op %s is piecewise constant and has no backward (expected EXP, "
                  "LOG, SQRT, ABS, NEG, RECIPROCAL, SIN, COS or ERF)",
                  name, op == NNP_UNARY_FLOOR ? "FLOOR" : "CEIL"));
  }
  unsupported(
      format("%s: unary op %d is not implemented by the cuda backend (implemented: EXP, "
             "LOG, SQRT, ABS, NEG, RECIPROCAL, FLOOR, CEIL, SIN, COS, ERF)",
             name, op));
}

}  // namespace

void op_unary_forward(stream& s, const op_call& c) {
  const int32_t op = c.params_as<nnp_unary_params>().op;
  const DLTensor& x = *c.in(0);
  const DLTensor& y = *c.out(0);
  const int64_t n = numel(y);
  if (n == 0) return;
  unary_op_dispatch<true>(op, "unary_forward", [&](auto otag) {
    constexpr int Op = decltype(otag)::value;
    dispatch_float(elem_of(y.dtype), [&](auto tg) {
      using T = typename decltype(tg)::type;
      unary_forward_kernel<Op, T>
          <<<grid_for(n), kThreads, 0, s.handle>>>(data_ptr<const T>(x), data_ptr<T>(y), n);
    });
  });
  NNP_CUDA_CHECK_LAUNCH();
}

void op_unary_backward(stream& s, const op_call& c) {
  const int32_t op = c.params_as<nnp_unary_params>().op;
  const DLTensor& x = *c.in(0);
  const DLTensor& dy = *c.in(1);
  const DLTensor& dx = *c.out(0);
  const int64_t n = numel(dx);
  if (n == 0) return;
  unary_op_dispatch<false>(op, "unary_backward", [&](auto otag) {
    constexpr int Op = decltype(otag)::value;
    dispatch_float(elem_of(dx.dtype), [&](auto tg) {
      using T = typename decltype(tg)::type;
      unary_backward_kernel<Op, T><<<grid_for(n), kThreads, 0, s.handle>>>(
          data_ptr<const T>(x), data_ptr<const T>(dy), data_ptr<T>(dx), n);
    });
  });
  NNP_CUDA_CHECK_LAUNCH();
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kUnaryOps[] = {
    {NNP_OP_UNARY_FORWARD,  kHalfFloats, on_stream<op_unary_forward>},
    {NNP_OP_UNARY_BACKWARD, kHalfFloats, on_stream<op_unary_backward>},
};
// clang-format on
extern const kit::op_row_list kUnaryRows = kit::row_list(kUnaryOps);

}  // namespace nnp::cuda
