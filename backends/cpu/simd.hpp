// The cpu plugin's x86 code selection (shared by cpu_backend.hpp and the header-only vmath.hpp).
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
#endif
