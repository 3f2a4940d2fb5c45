// activation.cu — own kernels for relu, leaky_relu, sigmoid, tanh, gelu (erf and tanh forms)
// and elu, forward and backward (ONNX definitions). One fused elementwise pass, memory-bound;
// float16/bfloat16 are computed in float32.
#include "common.cuh"

#include <cstdint>
#include <type_traits>

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

// float32 with every pointer 16-byte aligned and n a multiple of 4 (at most 2^30): one float4 per
// thread in 32-bit index arithmetic, the function a template argument, so each pass streams at
// the memory's rate. y may be x (and dx x or dy): each thread reads its element before writing.
template <int F>
__global__ void act_forward_vec4(const float4* x, float4* y, unsigned n4, float alpha) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  const float4 v = x[i];
  y[i] = make_float4(act_forward(F, v.x, alpha), act_forward(F, v.y, alpha),
                     act_forward(F, v.z, alpha), act_forward(F, v.w, alpha));
}

template <int F>
__global__ void act_backward_vec4(const float4* x, const float4* dy, float4* dx, unsigned n4,
                                  float alpha) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  const float4 v = x[i], d = dy[i];
  dx[i] = make_float4(act_derivative(F, v.x, alpha) * d.x, act_derivative(F, v.y, alpha) * d.y,
                      act_derivative(F, v.z, alpha) * d.z, act_derivative(F, v.w, alpha) * d.w);
}

bool vec4_ok(const void* a, const void* b, const void* c, int64_t n) {
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return n % 4 == 0 && n / 4 <= (int64_t{1} << 28) && aligned(a) && aligned(b) && aligned(c);
}

// Calls fn(std::integral_constant<int, F>{}) for the activation function f (checked before).
template <typename Fn>
void dispatch_function(int f, Fn&& fn) {
  switch (f) {
    case NNP_ACTIVATION_RELU:
      return fn(std::integral_constant<int, NNP_ACTIVATION_RELU>{});
    case NNP_ACTIVATION_LEAKY_RELU:
      return fn(std::integral_constant<int, NNP_ACTIVATION_LEAKY_RELU>{});
    case NNP_ACTIVATION_SIGMOID:
      return fn(std::integral_constant<int, NNP_ACTIVATION_SIGMOID>{});
    case NNP_ACTIVATION_TANH:
      return fn(std::integral_constant<int, NNP_ACTIVATION_TANH>{});
    case NNP_ACTIVATION_GELU_ERF:
      return fn(std::integral_constant<int, NNP_ACTIVATION_GELU_ERF>{});
    case NNP_ACTIVATION_GELU_TANH:
      return fn(std::integral_constant<int, NNP_ACTIVATION_GELU_TANH>{});
    default:
      return fn(std::integral_constant<int, NNP_ACTIVATION_ELU>{});
  }
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
  const DLTensor& y = *c.out(0);
  if (elem_of(x.dtype) == elem::f32 &&
      vec4_ok(data_ptr<const void>(x), data_ptr<const void>(y), data_ptr<const void>(y), a.n)) {
    const unsigned n4 = static_cast<unsigned>(a.n / 4);
    dispatch_function(a.function, [&](auto fc) {
      act_forward_vec4<decltype(fc)::value><<<grid_for(n4), kThreads, 0, s.handle>>>(
          data_ptr<const float4>(x), data_ptr<float4>(y), n4, a.alpha);
    });
    NNP_CUDA_CHECK_LAUNCH();
    return;
  }
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
  const DLTensor& dy = *c.in(1);
  const DLTensor& dx = *c.out(0);
  if (elem_of(x.dtype) == elem::f32 &&
      vec4_ok(data_ptr<const void>(x), data_ptr<const void>(dy), data_ptr<const void>(dx), a.n)) {
    const unsigned n4 = static_cast<unsigned>(a.n / 4);
    dispatch_function(a.function, [&](auto fc) {
      act_backward_vec4<decltype(fc)::value><<<grid_for(n4), kThreads, 0, s.handle>>>(
          data_ptr<const float4>(x), data_ptr<const float4>(dy), data_ptr<float4>(dx), n4, a.alpha);
    });
    NNP_CUDA_CHECK_LAUNCH();
    return;
  }
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
