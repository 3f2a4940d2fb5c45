// tf32x3.hpp — the operand split of 3xTF32 products (attention_mma.cu), as code for the host and
// the device: nvcc compiles it into the kernels (rounding by cvt.rna.tf32.f32), the host compiler
// into tests/test_tf32x3.cpp (the same rounding in integer arithmetic), which checks the split's
// error bounds and its handling of non-finite operands.
//
// 3xTF32 (NVIDIA CUTLASS's OpMultiplyAddFastF32): a float32 x is split into big = x rounded to
// TF32 (8 exponent bits, 10 stored significand bits; round to nearest, ties away from zero) and
// small = (x - big) rounded to TF32, so |x - big| <= 2^-11 |x| and |x - big - small| <=
// 2^-22 |x| (for |x| >= 2^-104, where small is a normal number; below, the parts' absolute
// error is under 2^-136); a b is then a_small b_big + a_big b_small + a_big b_big, three
// tensor-core products of TF32 operands accumulated in float32, within about 3 * 2^-22 |a b| of the
// exact product before the accumulation's roundings. A non-finite x (or one that rounds to infinity
// in TF32: |x| >= (2 - 2^-11) 2^127) has small = 0 and cross = 0, the big part that the two cross
// terms use: inf times a number whose small part is 0 would give NaN there, and a_big b_big alone
// carries the infinity or NaN.
#pragma once

#include "host_device.hpp"

#include <cstdint>
#include <cstring>

namespace nnp::cuda {

NNP_CUDA_HOST_DEVICE uint32_t float_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
NNP_CUDA_HOST_DEVICE float bits_float(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// x rounded to TF32 (round to nearest, ties away from zero), as float32 bits whose low 13 bits
// are 0. Infinities stay; a NaN stays a NaN.
NNP_CUDA_HOST_DEVICE uint32_t tf32_rna(float x) {
#if defined(__CUDA_ARCH__)
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
#else
  const uint32_t u = float_bits(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return (u & 0x007fffffu) != 0 ? (u | 0x00400000u) : u;
  // Half a unit of the 10-bit significand added to the magnitude, then the low bits cut: ties
  // go away from zero, and a carry out of the significand raises the exponent (to infinity at
  // the top).
  return (u + 0x1000u) & 0xffffe000u;
#endif
}

// The parts of a 3xTF32 operand, as TF32 bits.
struct tf32_parts {
  uint32_t big, small, cross;
};

NNP_CUDA_HOST_DEVICE tf32_parts tf32_split(float x) {
  const uint32_t big = tf32_rna(x);
  const bool finite = (big & 0x7f800000u) != 0x7f800000u;
  return {big, finite ? tf32_rna(x - bits_float(big)) : 0u, finite ? big : 0u};
}

}  // namespace nnp::cuda
