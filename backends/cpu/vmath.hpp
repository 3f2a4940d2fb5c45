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
#pragma once

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

}  // namespace nnp::cpu
