// nnplug/kit/half.hpp — the float16 (IEEE binary16) and bfloat16 codec of nnplug: bit
// patterns <-> float, rounding to nearest even, NaN kept quiet, overflow to inf. One copy for
// the backends, the conformance suite and third-party plugins. Header-only, no state.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace nnp {

inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: value = man * 2^-24
      const float v = static_cast<float>(man) * 5.9604644775390625e-8f;
      std::memcpy(&bits, &v, 4);
      bits |= sign;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t float_to_half(float f) {  // round to nearest even
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u)
    return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (absx < 0x38800000u) {  // subnormal half (or zero): value / 2^-24, rounded to even
    float a;
    std::memcpy(&a, &absx, 4);
    const float scaled = a * 16777216.0f;    // exact
    const float r = std::nearbyint(scaled);  // default rounding mode: to nearest even
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(r));
  }
  const uint32_t rounded = absx + 0xfffu + ((absx >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

inline float bf16_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

// float64 -> float rounded to odd (truncate toward zero, then set the last bit if inexact):
// rounding that float again to a format of at most 22 significant bits (float16, bfloat16) gives
// the value rounded once from the double (Boldo & Melquiond, "Emulation of FMA and correctly
// rounded sums: proved algorithms using rounding to odd", IEEE TC 2008). Values beyond float's
// range become +-inf, which float16 and bfloat16 round the same way.
inline float double_to_float_round_odd(double d) {
  const float f = static_cast<float>(d);  // to nearest even
  if (!std::isfinite(f) || static_cast<double>(f) == d) return f;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  // |f| > |d|: the truncation is one unit below f (in magnitude); |f| < |d|: f itself.
  // An odd f above stays (its unit below is even, and setting that one's last bit gives f).
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) {
    if ((bits & 1u) == 0) --bits;
  } else {
    bits |= 1u;
  }
  float r;
  std::memcpy(&r, &bits, 4);
  return r;
}

// float64 -> float16 / bfloat16, rounded once to nearest even (not twice through float32).
inline uint16_t double_to_half(double d) { return float_to_half(double_to_float_round_odd(d)); }
inline uint16_t double_to_bf16(double d) { return float_to_bf16(double_to_float_round_odd(d)); }

}  // namespace nnp
