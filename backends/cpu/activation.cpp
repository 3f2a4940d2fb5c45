// Activations and softmax / log-softmax on the CPU (NNP_OP_ACTIVATION_*, NNP_OP_SOFTMAX_*).
//
// Speed: activations are one pass of branch-free float math over contiguous memory, split
// into ~32k-element TBB tasks (the compiler vectorises relu / leaky relu / their backward).
// GELU (erf) uses vmath.hpp's vectorised erf and exp instead of libm's scalar calls: erf8 and
// exp8 written with AVX2 + FMA intrinsics where the CPU has both, else fast_erf and fast_exp
// vectorised by the compiler (nnplug-bench "gelu" at the vit's [2176, 128], 2 threads:
// forward 285 -> 112 us, backward 572 -> 270 us from the second to the first; the first was
// 1.6x and 1.9x libm's). erf's absolute error is below 5e-7 (tests/test_vmath.cpp), so GELU's
// is below 2.5e-7 |x| (relative error grows in the far negative tail, where GELU itself is
// below 1e-2 in magnitude).
// Softmax works on rows when the axis is the last one (one read for the max, one pass for
// exp and sum, one scaling pass, all in cache), else on [axis, inner] blocks with the inner
// dimension vectorised; rows or blocks run in parallel.
#include "cpu_backend.hpp"
#include "vmath.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace nnp::cpu {
namespace {

constexpr float kSqrt1_2 = 0.70710678118654752440f;
constexpr float kSqrt2OverPi = 0.79788456080286535588f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

// GELU (erf) over [begin, end) through map_block, in functions of their own so that they get
// AVX2 clones (the plugin is built for plain x86-64; a lambda a task runs is compiled for that
// only): map_block and the lambdas are inlined into each clone. fast_erf's SSE2 code is 3.5x
// slower than its AVX2 code.
NNP_CPU_AVX2_CLONES
void gelu_erf_block(const float* x, float* y, int64_t begin, int64_t end) {
  map_block(
      y, begin, end, [x](int64_t i) __attribute__((always_inline)) {
        return 0.5f * x[i] * (1.0f + fast_erf(x[i] * kSqrt1_2));
      });
}

NNP_CPU_AVX2_CLONES
void gelu_erf_backward_block(const float* x, const float* dy, float* dx, int64_t begin,
                             int64_t end) {
  map_block(
      dx, begin, end, [ x, dy ](int64_t i) __attribute__((always_inline)) {
        const float v = x[i];
        const float cdf = 0.5f * (1.0f + fast_erf(v * kSqrt1_2));
        const float pdf = kInvSqrt2Pi * fast_exp(-0.5f * v * v);
        return dy[i] * (cdf + v * pdf);
      });
}

#ifdef NNP_CPU_X86_KERNELS
// The same with vmath.hpp's erf8 and exp8 (AVX2 + FMA), 8 elements at a time; the last few go
// through a padded copy, so that every element gets the same arithmetic wherever the tasks'
// blocks begin (results do not depend on the thread count).
NNP_CPU_AVX2_FMA inline __m256 gelu8(__m256 v) {  // 0.5 v (1 + erf(v / sqrt 2))
  const __m256 half = _mm256_set1_ps(0.5f);
  return _mm256_mul_ps(
      v, _mm256_fmadd_ps(half, erf8(_mm256_mul_ps(v, _mm256_set1_ps(kSqrt1_2))), half));
}

NNP_CPU_AVX2_FMA inline __m256 gelu_grad8(__m256 v, __m256 d) {  // d (cdf(v) + v pdf(v))
  const __m256 half = _mm256_set1_ps(0.5f);
  const __m256 cdf = _mm256_fmadd_ps(half, erf8(_mm256_mul_ps(v, _mm256_set1_ps(kSqrt1_2))), half);
  const __m256 pdf = _mm256_mul_ps(_mm256_set1_ps(kInvSqrt2Pi),
                                   exp8(_mm256_mul_ps(_mm256_set1_ps(-0.5f), _mm256_mul_ps(v, v))));
  return _mm256_mul_ps(d, _mm256_fmadd_ps(v, pdf, cdf));
}

NNP_CPU_AVX2_FMA void gelu_erf_block_fma(const float* x, float* y, int64_t begin, int64_t end) {
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) _mm256_storeu_ps(y + i, gelu8(_mm256_loadu_ps(x + i)));
  if (i < end) store_first(y + i, gelu8(load_first(x + i, end - i)), end - i);
}

NNP_CPU_AVX2_FMA void gelu_erf_backward_block_fma(const float* x, const float* dy, float* dx,
                                                  int64_t begin, int64_t end) {
  int64_t i = begin;
  for (; i + 8 <= end; i += 8)
    _mm256_storeu_ps(dx + i, gelu_grad8(_mm256_loadu_ps(x + i), _mm256_loadu_ps(dy + i)));
  if (i < end)
    store_first(dx + i, gelu_grad8(load_first(x + i, end - i), load_first(dy + i, end - i)),
                end - i);
}
#endif

void gelu_erf_forward(const float* x, float* y, int64_t n) {
#ifdef NNP_CPU_X86_KERNELS
  if (cpu_avx2_fma()) {
    parallel_for(n, kElementwiseGrain,
                 [&](int64_t b, int64_t e) { gelu_erf_block_fma(x, y, b, e); });
    return;
  }
#endif
  parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) { gelu_erf_block(x, y, b, e); });
}

void gelu_erf_backward(const float* x, const float* dy, float* dx, int64_t n) {
#ifdef NNP_CPU_X86_KERNELS
  if (cpu_avx2_fma()) {
    parallel_for(n, kElementwiseGrain,
                 [&](int64_t b, int64_t e) { gelu_erf_backward_block_fma(x, dy, dx, b, e); });
    return;
  }
#endif
  parallel_for(n, kElementwiseGrain,
               [&](int64_t b, int64_t e) { gelu_erf_backward_block(x, dy, dx, b, e); });
}

}  // namespace

void activation_forward(const op_call& c) {
  const auto& p = c.params_as<nnp_activation_params>();
  const float* x = f32(c.in(0));
  float* y = f32(c.out(0));
  const int64_t n = numel(*c.in(0));
  const float alpha = static_cast<float>(p.alpha);
  switch (p.function) {
    case NNP_ACTIVATION_RELU:
      map_elements(y, n, [=](int64_t i) { return x[i] > 0.0f ? x[i] : 0.0f; });
      break;
    case NNP_ACTIVATION_LEAKY_RELU:
      map_elements(y, n, [=](int64_t i) { return x[i] >= 0.0f ? x[i] : alpha * x[i]; });
      break;
    case NNP_ACTIVATION_SIGMOID:
      map_elements(y, n, [=](int64_t i) { return 1.0f / (1.0f + std::exp(-x[i])); });
      break;
    case NNP_ACTIVATION_TANH:
      map_elements(y, n, [=](int64_t i) { return std::tanh(x[i]); });
      break;
    case NNP_ACTIVATION_GELU_ERF:
      gelu_erf_forward(x, y, n);
      break;
    case NNP_ACTIVATION_GELU_TANH:
      map_elements(y, n, [=](int64_t i) {
        const float v = x[i];
        return 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
      });
      break;
    case NNP_ACTIVATION_ELU:
      map_elements(y, n, [=](int64_t i) { return x[i] > 0.0f ? x[i] : alpha * std::expm1(x[i]); });
      break;
    default:
      unsupported(
          format("activation function %d is not implemented by the cpu backend", p.function));
  }
}

void activation_backward(const op_call& c) {
  const auto& p = c.params_as<nnp_activation_params>();
  const float *x = f32(c.in(0)), *dy = f32(c.in(1));
  float* dx = f32(c.out(0));
  const int64_t n = numel(*c.in(0));
  const float alpha = static_cast<float>(p.alpha);
  switch (p.function) {
    case NNP_ACTIVATION_RELU:
      map_elements(dx, n, [=](int64_t i) {
        const float d = dy[i];  // unconditional load: the select vectorises
        return x[i] > 0.0f ? d : 0.0f;
      });
      break;
    case NNP_ACTIVATION_LEAKY_RELU:
      // alpha at x = 0, as PyTorch and the reference
      map_elements(dx, n, [=](int64_t i) {
        const float d = dy[i];
        return x[i] > 0.0f ? d : alpha * d;
      });
      break;
    case NNP_ACTIVATION_SIGMOID:
      map_elements(dx, n, [=](int64_t i) {
        const float s = 1.0f / (1.0f + std::exp(-x[i]));
        return dy[i] * s * (1.0f - s);
      });
      break;
    case NNP_ACTIVATION_TANH:
      map_elements(dx, n, [=](int64_t i) {
        const float t = std::tanh(x[i]);
        return dy[i] * (1.0f - t * t);
      });
      break;
    case NNP_ACTIVATION_GELU_ERF:
      gelu_erf_backward(x, dy, dx, n);
      break;
    case NNP_ACTIVATION_GELU_TANH:
      map_elements(dx, n, [=](int64_t i) {
        const float v = x[i];
        const float u = kSqrt2OverPi * (v + 0.044715f * v * v * v);
        const float t = std::tanh(u);
        const float du = kSqrt2OverPi * (1.0f + 3.0f * 0.044715f * v * v);
        return dy[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
      });
      break;
    case NNP_ACTIVATION_ELU:
      map_elements(dx, n, [=](int64_t i) {
        const float d = dy[i];
        return x[i] > 0.0f ? d : d * alpha * std::exp(x[i]);
      });
      break;
    default:
      unsupported(
          format("activation function %d is not implemented by the cpu backend", p.function));
  }
}

// ---- softmax ---------------------------------------------------------------------------------
namespace {

struct axis_split {
  int64_t outer, len, inner;
};
axis_split split_axis(const DLTensor& t, int axis) {
  axis_split s{1, t.shape[axis], 1};
  for (int i = 0; i < axis; ++i) s.outer *= t.shape[i];
  for (int i = axis + 1; i < t.ndim; ++i) s.inner *= t.shape[i];
  return s;
}

// Softmax / log-softmax of one contiguous row.
void softmax_row(const float* x, float* y, int64_t len, bool log) {
  float m, sum;
  if (log) {
    row_stats(x, len, &m, &sum);
    const float ls = std::log(sum);
    for (int64_t i = 0; i < len; ++i) y[i] = (x[i] - m) - ls;
  } else {
    row_stats(x, len, &m, &sum, y);
    const float inv = 1.0f / sum;
    for (int64_t i = 0; i < len; ++i) y[i] *= inv;
  }
}

}  // namespace

void softmax_forward(const op_call& c) {
  const auto& p = c.params_as<nnp_softmax_params>();
  const DLTensor* X = c.in(0);
  const int axis = normalize_axis(p.axis, X->ndim);
  const axis_split s = split_axis(*X, axis);
  const float* x = f32(X);
  float* y = f32(c.out(0));
  const bool log = p.log != 0;
  const int64_t block = s.len * s.inner;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, block));
  if (s.inner == 1) {
    parallel_for(s.outer, grain, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) softmax_row(x + o * s.len, y + o * s.len, s.len, log);
    });
    return;
  }
  parallel_for(s.outer, grain, [&](int64_t b, int64_t e) {
    float* m = scratch(kTaskSlot0, static_cast<size_t>(2 * s.inner));
    float* sum = m + s.inner;
    for (int64_t o = b; o < e; ++o) {
      const float* xo = x + o * block;
      float* yo = y + o * block;
      std::fill(m, m + s.inner, -std::numeric_limits<float>::infinity());
      std::fill(sum, sum + s.inner, 0.0f);
      for (int64_t a = 0; a < s.len; ++a)
        for (int64_t i = 0; i < s.inner; ++i) m[i] = std::max(m[i], xo[a * s.inner + i]);
      for (int64_t i = 0; i < s.inner; ++i)
        if (std::isinf(m[i]) && m[i] < 0) m[i] = 0.0f;
      for (int64_t a = 0; a < s.len; ++a)
        for (int64_t i = 0; i < s.inner; ++i) {
          const float ev = std::exp(xo[a * s.inner + i] - m[i]);
          sum[i] += ev;
          if (!log) yo[a * s.inner + i] = ev;
        }
      if (log) {
        for (int64_t i = 0; i < s.inner; ++i) sum[i] = std::log(sum[i]);
        for (int64_t a = 0; a < s.len; ++a)
          for (int64_t i = 0; i < s.inner; ++i)
            yo[a * s.inner + i] = (xo[a * s.inner + i] - m[i]) - sum[i];
      } else {
        for (int64_t i = 0; i < s.inner; ++i) sum[i] = 1.0f / sum[i];
        for (int64_t a = 0; a < s.len; ++a)
          for (int64_t i = 0; i < s.inner; ++i) yo[a * s.inner + i] *= sum[i];
      }
    }
  });
}

void softmax_backward(const op_call& c) {
  const auto& p = c.params_as<nnp_softmax_params>();
  const DLTensor* Y = c.in(0);
  const int axis = normalize_axis(p.axis, Y->ndim);
  const axis_split s = split_axis(*Y, axis);
  const float *y = f32(Y), *dy = f32(c.in(1));
  float* dx = f32(c.out(0));
  const bool log = p.log != 0;
  const int64_t block = s.len * s.inner;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, block));
  parallel_for(s.outer, grain, [&](int64_t b, int64_t e) {
    float* acc = scratch(kTaskSlot0, static_cast<size_t>(s.inner));
    for (int64_t o = b; o < e; ++o) {
      const float *yo = y + o * block, *dyo = dy + o * block;
      float* dxo = dx + o * block;
      std::fill(acc, acc + s.inner, 0.0f);
      // softmax: acc = sum(dy * y); log-softmax: acc = sum(dy)
      for (int64_t a = 0; a < s.len; ++a)
        for (int64_t i = 0; i < s.inner; ++i)
          acc[i] += log ? dyo[a * s.inner + i] : dyo[a * s.inner + i] * yo[a * s.inner + i];
      for (int64_t a = 0; a < s.len; ++a)
        for (int64_t i = 0; i < s.inner; ++i) {
          const int64_t j = a * s.inner + i;
          dxo[j] = log ? dyo[j] - std::exp(yo[j]) * acc[i] : yo[j] * (dyo[j] - acc[i]);
        }
    }
  });
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kActivationOps[] = {
    {NNP_OP_ACTIVATION_FORWARD,  kit::f32,            activation_forward},
    {NNP_OP_ACTIVATION_BACKWARD, kit::f32,            activation_backward},
    {NNP_OP_SOFTMAX_FORWARD,     kit::f32,            softmax_forward},
    {NNP_OP_SOFTMAX_BACKWARD,    kit::f32,            softmax_backward},
};
// clang-format on
extern const kit::op_row_list kActivationRows = kit::row_list(kActivationOps);

}  // namespace nnp::cpu
