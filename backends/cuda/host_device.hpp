// host_device.hpp — macros for code that nvcc compiles into kernels and the host compiler into
// the host tests of tests/ (conv_direct.hpp, tf32x3.hpp).
#pragma once

#if defined(__CUDACC__)
#define NNP_CUDA_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define NNP_CUDA_HOST_DEVICE inline
#endif
// Loop unrolling in the device compilation only (the host compiler knows no such pragma).
#if defined(__CUDA_ARCH__)
#define NNP_CUDA_UNROLL _Pragma("unroll")
#else
#define NNP_CUDA_UNROLL
#endif
