// harness_codecs.cpp — dtypes and their encodings: DLPack dtype codes and names, IEEE
// float16 and bfloat16 conversion (round to nearest even), encode()/decode() of one element
// to and from device bytes, and quantize() (a value rounded to what a dtype can hold).
#include "harness.hpp"
#include "harness_codecs.hpp"

#include <nnplug/kit/half.hpp>

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>

namespace conf {

// ---- dtypes ---------------------------------------------------------------------------------
namespace {
struct dtype_info {
  dtype_id t;
  DLDataType dl;
  const char* name;        // dt_name
  const char* short_name;  // dt_short
  size_t size;
};
constexpr dtype_info kDtInfo[] = {
    {dtype_id::f32, {kDLFloat, 32, 1}, "float32", "f32", 4},
    {dtype_id::f64, {kDLFloat, 64, 1}, "float64", "f64", 8},
    {dtype_id::f16, {kDLFloat, 16, 1}, "float16", "f16", 2},
    {dtype_id::bf16, {kDLBfloat, 16, 1}, "bfloat16", "bf16", 2},
    {dtype_id::i64, {kDLInt, 64, 1}, "int64", "i64", 8},
    {dtype_id::u8, {kDLUInt, 8, 1}, "uint8", "u8", 1},
    {dtype_id::i32, {kDLInt, 32, 1}, "int32", "i32", 4},
};
constexpr bool one_row_per_dt_in_order() {
  for (size_t i = 0; i < std::size(kDtInfo); ++i)
    if (kDtInfo[i].t != static_cast<dtype_id>(i)) return false;
  return std::size(kDtInfo) == static_cast<size_t>(dtype_id::i32) + 1;
}
static_assert(one_row_per_dt_in_order(), "kDtInfo: one row per dtype_id, in the order of dtype_id");
const dtype_info& dt_info(dtype_id t) { return kDtInfo[static_cast<size_t>(t)]; }
}  // namespace

DLDataType to_dl(dtype_id t) { return dt_info(t).dl; }
const char* dt_name(dtype_id t) { return dt_info(t).name; }
const char* dt_short(dtype_id t) { return dt_info(t).short_name; }
size_t dt_size(dtype_id t) { return dt_info(t).size; }
bool dt_is_float(dtype_id t) {
  return t == dtype_id::f32 || t == dtype_id::f64 || t == dtype_id::f16 || t == dtype_id::bf16;
}
const std::vector<dtype_id>& float_dtypes() {
  static const std::vector<dtype_id> all{dtype_id::f32, dtype_id::f64, dtype_id::f16,
                                         dtype_id::bf16};
  return all;
}

namespace {
uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// IEEE binary16, round to nearest even.
uint16_t f32_to_f16(float value) {
  const uint32_t f = f32_bits(value);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t abs = f & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u)
    return static_cast<uint16_t>(sign | (abs > 0x7F800000u ? 0x7E00u : 0x7C00u));
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to inf
  if (abs < 0x38800000u) {  // below the smallest normal half: subnormal units of 2^-24
    const float a = bits_f32(abs);
    const uint32_t m = static_cast<uint32_t>(std::nearbyint(a * 16777216.0f));
    return static_cast<uint16_t>(sign | m);
  }
  uint32_t r = abs + 0xFFFu + ((abs >> 13) & 1u);
  r -= 0x38000000u;  // exponent bias 127 -> 15
  return static_cast<uint16_t>(sign | (r >> 13));
}
float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return bits_f32(sign | 0x7F800000u | (mant << 13));
  return bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}
uint16_t f32_to_bf16(float value) {
  const uint32_t u = f32_bits(value);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
float bf16_to_f32(uint16_t h) { return bits_f32(static_cast<uint32_t>(h) << 16); }

// v as an integer of type I: truncated toward zero, saturated at I's range, NaN as 0 (a
// plain cast of a value outside the range is undefined behaviour).
template <typename I>
I saturate(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  // For int64_t the max rounds up to 2^63 as a double: every v below it converts.
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

}  // namespace

void encode(double v, dtype_id t, uint8_t* dst) {
  switch (t) {
    case dtype_id::f32: {
      const float f = static_cast<float>(v);
      std::memcpy(dst, &f, 4);
      break;
    }
    case dtype_id::f64:
      std::memcpy(dst, &v, 8);
      break;
    case dtype_id::f16: {
      // Rounded once from v (float rounded to odd, then to half: kit/half.hpp).
      const uint16_t h = f32_to_f16(nnp::double_to_float_round_odd(v));
      std::memcpy(dst, &h, 2);
      break;
    }
    case dtype_id::bf16: {
      const uint16_t h = f32_to_bf16(nnp::double_to_float_round_odd(v));
      std::memcpy(dst, &h, 2);
      break;
    }
    case dtype_id::i64: {
      const int64_t i = saturate<int64_t>(v);
      std::memcpy(dst, &i, 8);
      break;
    }
    case dtype_id::i32: {
      const int32_t i = saturate<int32_t>(v);
      std::memcpy(dst, &i, 4);
      break;
    }
    case dtype_id::u8:
      *dst = saturate<uint8_t>(v);
      break;
  }
}
double decode(const uint8_t* src, dtype_id t) {
  switch (t) {
    case dtype_id::f32: {
      float f;
      std::memcpy(&f, src, 4);
      return f;
    }
    case dtype_id::f64: {
      double d;
      std::memcpy(&d, src, 8);
      return d;
    }
    case dtype_id::f16: {
      uint16_t h;
      std::memcpy(&h, src, 2);
      return f16_to_f32(h);
    }
    case dtype_id::bf16: {
      uint16_t h;
      std::memcpy(&h, src, 2);
      return bf16_to_f32(h);
    }
    case dtype_id::i64: {
      int64_t i;
      std::memcpy(&i, src, 8);
      return static_cast<double>(i);
    }
    case dtype_id::i32: {
      int32_t i;
      std::memcpy(&i, src, 4);
      return i;
    }
    case dtype_id::u8:
      return *src;
  }
  return 0;
}

double quantize(double v, dtype_id t) {
  uint8_t buf[8];
  encode(v, t, buf);
  return decode(buf, t);
}

}  // namespace conf
