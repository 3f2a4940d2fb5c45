// activation.cu — own kernels for relu, leaky_relu, sigmoid, tanh, gelu (erf and tanh forms)
// and elu, forward and backward (ONNX definitions). One fused elementwise pass, memory-bound;
// float16/bfloat16 are computed in float32.
#include "common.cuh"

namespace nnp::cuda {
namespace {

constexpr float kSqrtHalf = 0.70710678118654752440f;     // 1/sqrt(2)
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;   // 1/sqrt(2 pi)
constexpr float kSqrt2OverPi = 0.79788456080286535588f;  // sqrt(2/pi)
constexpr float kGeluCoeff = 0.044715f;

__device__ __forceinline__ float act_forward(int f, float x, float alpha) {
  switch (f) {
    case NNP_ACTIVATION_RELU:
      return x > 0.0f ? x : 0.0f;
    case NNP_ACTIVATION_LEAKY_RELU:
      return x >= 0.0f ? x : alpha * x;
    case NNP_ACTIVATION_SIGMOID:
      return 1.0f / (1.0f + expf(-x));
    case NNP_ACTIVATION_TANH:
      return tanhf(x);
    case NNP_ACTIVATION_GELU_ERF:
      return 0.5f * x * (1.0f + erff(x * kSqrtHalf));
    case NNP_ACTIVATION_GELU_TANH:
      return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + kGeluCoeff * x * x * x)));
    default:  // NNP_ACTIVATION_ELU
      return x > 0.0f ? x : alpha * expm1f(x);
  }
}

// f'(x)
__device__ __forceinline__ float act_derivative(int f, float x, float alpha) {
  switch (f) {
    case NNP_ACTIVATION_RELU:
      return x > 0.0f ? 1.0f : 0.0f;
    case NNP_ACTIVATION_LEAKY_RELU:
      return x > 0.0f ? 1.0f : alpha;
    case NNP_ACTIVATION_SIGMOID: {
      const float s = 1.0f / (1.0f + expf(-x));
      return s * (1.0f - s);
    }
    case NNP_ACTIVATION_TANH: {
      const float t = tanhf(x);
      return 1.0f - t * t;
    }
    case NNP_ACTIVATION_GELU_ERF:
      return 0.5f * (1.0f + erff(x * kSqrtHalf)) + x * kInvSqrt2Pi * expf(-0.5f * x * x);
    case NNP_ACTIVATION_GELU_TANH: {
      const float u = kSqrt2OverPi * (x + kGeluCoeff * x * x * x);
      const float t = tanhf(u);
      const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCoeff * x * x);
      return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
    }
    default:  // NNP_ACTIVATION_ELU
      return x > 0.0f ? 1.0f : alpha * expf(x);
  }
}

template <typename T>
__global__ void act_forward_kernel(const T* x, T* y, int64_t n, int f, float alpha) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    y[i] = from_f<T>(act_forward(f, to_f(x[i]), alpha));
}

template <typename T>
__global__ void act_backward_kernel(const T* x, const T* dy, T* dx, int64_t n, int f, float alpha) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    dx[i] = from_f<T>(act_derivative(f, to_f(x[i]), alpha) * to_f(dy[i]));
}

// The params shared by forward and backward, with the element count of x (input 0).
struct activation_call {
  int function;
  float alpha;
  int64_t n;
};

activation_call activation_call_of(const op_call& c) {
  const auto p = read_params<nnp_activation_params>(c.params);
  if (p.function < NNP_ACTIVATION_RELU || p.function > NNP_ACTIVATION_ELU)
    unsupported(
        format("activation function %d is not implemented by the cuda backend", p.function));
  return {p.function, static_cast<float>(p.alpha), numel(*c.in(0))};
}

}  // namespace

void op_activation_forward(stream& s, const op_call& c) {
  const activation_call a = activation_call_of(c);
  if (a.n == 0) return;
  const DLTensor& x = *c.in(0);
  dispatch_float(elem_of(x.dtype), [&](auto tg) {
    using T = typename decltype(tg)::type;
    act_forward_kernel<<<grid_for(a.n), kThreads, 0, s.handle>>>(
        data_ptr<const T>(x), data_ptr<T>(*c.out(0)), a.n, a.function, a.alpha);
  });
  NNP_CUDA_CHECK_LAUNCH();
}

void op_activation_backward(stream& s, const op_call& c) {
  const activation_call a = activation_call_of(c);
  if (a.n == 0) return;
  const DLTensor& x = *c.in(0);
  dispatch_float(elem_of(x.dtype), [&](auto tg) {
    using T = typename decltype(tg)::type;
    act_backward_kernel<<<grid_for(a.n), kThreads, 0, s.handle>>>(
        data_ptr<const T>(x), data_ptr<const T>(*c.in(1)), data_ptr<T>(*c.out(0)), a.n, a.function,
        a.alpha);
  });
  NNP_CUDA_CHECK_LAUNCH();
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kActivationOps[] = {
    {NNP_OP_ACTIVATION_FORWARD,  kHalfFloats, on_stream<op_activation_forward>},
    {NNP_OP_ACTIVATION_BACKWARD, kHalfFloats, on_stream<op_activation_backward>},
};
// clang-format on
extern const kit::op_row_list kActivationRows = kit::row_list(kActivationOps);

}  // namespace nnp::cuda
