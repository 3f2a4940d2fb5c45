// Branch-free float32 exp and erf that the compiler vectorises (libm's expf and erff are
// scalar calls), for the GELU activation's forward and backward.
//  fast_exp: Cody-Waite range reduction x = n ln2 + r, |r| <= ln2/2, a degree-6 Taylor
//            polynomial for e^r (relative error below 3e-6 on [-87.3, 88.3]), 2^n put into the
//            exponent bits; x < -87.3 gives 0, x > 88.3 is clamped; NaN propagates.
//  fast_erf: Abramowitz and Stegun 7.1.26, erf(|x|) = 1 - t (a1 + t (a2 + ... a5)) e^{-x^2},
//            t = 1 / (1 + p |x|), absolute error below 1.5e-7 in exact arithmetic, 4e-7 in
//            float (Handbook of Mathematical Functions, 1964), sign restored; NaN propagates.
// Both vectorise only with -fno-trapping-math (CMakeLists.txt), which lets the compiler
// evaluate both sides of the selects.
//  exp8, erf8: the same two on 8 lanes with AVX2 + FMA intrinsics (x86 only), for kernels that
//            check cpu_avx2_fma(): the same algorithms and constants and the same special
//            values (NaN propagates, exp8 is 0 below -87.33 and clamps above 88.3, erf8(+-inf)
//            = +-1). A lane may differ from the scalar function in its last bits, where a fused
//            multiply-add rounds once: exp8's relative error stays below 3e-6, erf8's absolute
//            error below 5e-7 (4.1e-7 measured next to 0, tests/test_vmath.cpp). The compiler's
//            own vectorisation of the scalar functions (target_clones "avx2", no FMA) is about
//            2.5x slower: GELU's forward at [2176, 128] took 285 us against 112 us.
#pragma once

#include "simd.hpp"

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstring>

namespace nnp::cpu {

inline float fast_exp(float x) {
  const float lo = -87.33f, hi = 88.3f;
  const float xc = std::min(std::max(x, lo), hi);  // NaN stays NaN and propagates
  // n = round(x / ln2) with the 1.5 * 2^23 trick (exact for |n| < 2^22, vectorises on SSE2).
  const float shifter = 12582912.0f;
  const float t = xc * 1.44269504088896341f + shifter;
  const float n = t - shifter;
  const float r = xc - n * 0.693145751953125f - n * 1.42860682030941723e-6f;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // For NaN x, n is NaN: converting it to int32_t is undefined, so it becomes 0 first (the
  // result stays NaN through p); the shift is unsigned (n + 127 is in [1, 254] otherwise).
  const float n_finite = n == n ? n : 0.0f;
  const uint32_t e = static_cast<uint32_t>(static_cast<int32_t>(n_finite) + 127) << 23;
  float scale;
  std::memcpy(&scale, &e, sizeof scale);
  return x < lo ? 0.0f : p * scale;
}

inline float fast_erf(float x) {
  const float a = std::fabs(x);
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  const float y = 1.0f - p * t * fast_exp(-a * a);
  return std::copysign(y, x);  // NaN: t and y are NaN
}

#ifdef NNP_CPU_X86_KERNELS
NNP_CPU_AVX2_FMA inline __m256 exp8(__m256 x) {
  const __m256 lo = _mm256_set1_ps(-87.33f), hi = _mm256_set1_ps(88.3f);
  // max_ps and min_ps return their second operand when one is NaN: a NaN x stays NaN
  const __m256 xc = _mm256_min_ps(hi, _mm256_max_ps(lo, x));
  const __m256 shifter = _mm256_set1_ps(12582912.0f);
  const __m256 n =
      _mm256_sub_ps(_mm256_fmadd_ps(xc, _mm256_set1_ps(1.44269504088896341f), shifter), shifter);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), xc);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860682030941723e-6f), r);
  __m256 p = _mm256_set1_ps(1.0f / 720.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // 2^n in the exponent bits (a NaN lane converts to INT_MIN: its p is NaN, so is the result)
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  return _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
}

NNP_CPU_AVX2_FMA inline __m256 erf8(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
  const __m256 a = _mm256_andnot_ps(sign, x);
  const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(0.3275911f), a, one));
  __m256 p = _mm256_set1_ps(1.061405429f);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
  const __m256 e = exp8(_mm256_mul_ps(_mm256_xor_ps(a, sign), a));  // e^{-a^2}
  const __m256 y = _mm256_fnmadd_ps(_mm256_mul_ps(p, t), e, one);
  // copysign(y, x): y's magnitude (it may round below zero next to x = 0), x's sign
  return _mm256_or_ps(_mm256_andnot_ps(sign, y), _mm256_and_ps(sign, x));
}
#endif

}  // namespace nnp::cpu
