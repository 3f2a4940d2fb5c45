// The cpu plugin's x86 code selection (shared by cpu_backend.hpp and the header-only vmath.hpp),
// and the small 8-lane helpers its AVX2 kernels share.
#pragma once

// An AVX2 clone of a hot function where the CPU has it, chosen at load time (GCC's
// target_clones; the plugin is built for plain x86-64, whose default clone is SSE2): for loops
// that vectorise, 8 float lanes instead of 4. Nothing elsewhere.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define NNP_CPU_AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define NNP_CPU_AVX2_CLONES
#endif

// Kernels written with AVX2 + FMA intrinsics (Winograd transforms and GEMM, the channel-blocked
// convolutions, Philox): defined where NNP_CPU_X86_KERNELS is, each function marked
// NNP_CPU_AVX2_FMA, and called only when cpu_avx2_fma() (cpu_backend.hpp) says the CPU has both
// (checked once); the portable code runs otherwise.
#if defined(__GNUC__) && defined(__x86_64__)
#define NNP_CPU_X86_KERNELS 1
#define NNP_CPU_AVX2_FMA __attribute__((target("avx2,fma")))
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace nnp::cpu {

// Stores the first n lanes of x at p (all 8 when n >= 8). Masked stores (vmaskmovps) would do
// it in one instruction, but on AMD Zen they are microcoded and slower than these pieces.
NNP_CPU_AVX2_FMA inline void store_first(float* p, __m256 x, int64_t n) {
  if (n >= 8) {
    _mm256_storeu_ps(p, x);
    return;
  }
  __m128 part = _mm256_castps256_ps128(x);
  if (n >= 4) {
    _mm_storeu_ps(p, part);
    part = _mm256_extractf128_ps(x, 1);
    p += 4;
    n -= 4;
  }
  if (n >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(p), part);
    part = _mm_movehl_ps(part, part);
    p += 2;
    n -= 2;
  }
  if (n >= 1) _mm_store_ss(p, part);
}

// p[0 .. n) as 8 lanes, zeros past n (n <= 8): reads nothing past p + n.
NNP_CPU_AVX2_FMA inline __m256 load_first(const float* p, int64_t n) {
  if (n >= 8) return _mm256_loadu_ps(p);
  alignas(32) float t[8] = {};
  std::memcpy(t, p, static_cast<size_t>(n) * sizeof(float));
  return _mm256_load_ps(t);
}

// The sum of a 4-lane double vector's lanes, (0 + 2) + (1 + 3).
NNP_CPU_AVX2_FMA inline double hsum4(__m256d v) {
  const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
}

}  // namespace nnp::cpu
#endif
