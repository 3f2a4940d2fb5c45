// Philox4x32-10 counter-based RNG and the dropout mask rule shared by every backend.
//
// Source: J. K. Salmon, M. A. Moraes, R. O. Dror, D. E. Shaw, "Parallel random numbers: as easy
// as 1, 2, 3", SC'11; constants and round structure as in Random123's philox.h. Known answer:
// counter {0,0,0,0}, key {0,0} -> {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}.
//
// The dropout rule (nnplug_ops.h, NNP_OP_DROPOUT_FORWARD) is defined here once so the
// reference, CPU and CUDA backends produce bit-identical masks. Usable from CUDA device code.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define NNP_HD __host__ __device__ __forceinline__
#else
#define NNP_HD inline
#endif

namespace nnp {

struct philox_result {
  uint32_t v[4];
};

NNP_HD uint32_t philox_mulhilo(uint32_t a, uint32_t b, uint32_t* hi) {
  const uint64_t product = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
  *hi = static_cast<uint32_t>(product >> 32);
  return static_cast<uint32_t>(product);
}

// One Philox4x32-10 block: 10 rounds, the key bumped by the Weyl constants between rounds.
NNP_HD philox_result philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                                   uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kW0;
      k1 += kW1;
    }
    uint32_t hi0, hi1;
    const uint32_t lo0 = philox_mulhilo(kM0, c0, &hi0);
    const uint32_t lo1 = philox_mulhilo(kM1, c2, &hi1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  return philox_result{{c0, c1, c2, c3}};
}

// Integer keep-threshold for a drop ratio in [0, 1): keep iff (word >> 8) >= threshold.
NNP_HD uint32_t dropout_threshold(double ratio) {
  return static_cast<uint32_t>(ratio * 16777216.0);
}

// Scale applied to kept elements, computed in double then rounded to T once.
template <typename T>
NNP_HD T dropout_scale(double ratio) {
  return static_cast<T>(1.0 / (1.0 - ratio));
}

// The 4 keep bits of elements 4*block .. 4*block+3 (bit j = element 4*block + j).
NNP_HD uint32_t dropout_keep_bits4(uint64_t seed, uint64_t offset, uint64_t block,
                                   uint32_t threshold) {
  const uint64_t c = offset + block;
  const philox_result r =
      philox4x32_10(static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32), 0u, 0u,
                    static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  uint32_t bits = 0;
  for (int j = 0; j < 4; ++j) bits |= static_cast<uint32_t>((r.v[j] >> 8) >= threshold) << j;
  return bits;
}

// Keep decision for element i (row-major linear index).
NNP_HD bool dropout_keep(uint64_t seed, uint64_t offset, uint64_t i, uint32_t threshold) {
  return (dropout_keep_bits4(seed, offset, i / 4, threshold) >> (i % 4)) & 1u;
}

}  // namespace nnp
