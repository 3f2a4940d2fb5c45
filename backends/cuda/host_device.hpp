// host_device.hpp — macros for code that nvcc compiles into kernels and the host compiler into
// the host tests of tests/ (conv_direct.hpp, tf32x3.hpp, attention_tile.hpp,
// attention_mma_tiles.hpp).
#pragma once

#if defined(__CUDACC__)
#define NNP_CUDA_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define NNP_CUDA_HOST_DEVICE inline
#endif
// Loop unrolling in the device compilation only (the host compiler knows no such pragma):
// complete, or by a factor n.
#define NNP_CUDA_PRAGMA(x) _Pragma(#x)
#if defined(__CUDA_ARCH__)
#define NNP_CUDA_UNROLL _Pragma("unroll")
#define NNP_CUDA_UNROLL_N(n) NNP_CUDA_PRAGMA(unroll n)
#else
#define NNP_CUDA_UNROLL
#define NNP_CUDA_UNROLL_N(n)
#endif
