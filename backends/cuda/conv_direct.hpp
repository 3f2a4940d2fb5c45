// conv_direct.hpp — the geometry the direct convolution kernels of conv_direct.cu read, and the
// sum of the few-channel backward-data kernel, as code for the host and the device: nvcc
// compiles it into the kernels, the host compiler into tests/test_conv_direct.cpp, which checks
// the sum against the definition of backward-data on random geometries.
#pragma once

#include "host_device.hpp"

#include <nnplug/kit/conv_nd.hpp>

#include <cstdint>

namespace nnp::cuda {

// The geometry as the kernels read it (by value, a kernel argument): 3 spatial axes (unused
// leading axes have size 1), group sizes cig = ci / groups and cog = co / groups.
struct direct_geom {
  int64_t n, ci, co, cig, cog;
  int64_t in[3], k[3], out[3], stride[3], dil[3], pad[3];
  int64_t in_size, k_size, out_size;
};

inline direct_geom direct_of(const nnp::conv_nd_geometry& g) {
  direct_geom d{};
  d.n = g.n;
  d.ci = g.ci;
  d.co = g.co;
  d.cig = g.cig();
  d.cog = g.cog();
  for (int a = 0; a < 3; ++a) {
    d.in[a] = g.in[a];
    d.k[a] = g.kernel[a];
    d.out[a] = g.out[a];
    d.stride[a] = g.stride[a];
    d.dil[a] = g.dilation[a];
    d.pad[a] = g.pad[a];
  }
  d.in_size = g.in_size();
  d.k_size = g.kernel_size();
  d.out_size = g.out_size();
  return d;
}

// Element idx of an input-shaped tensor [n, ci, in[0], in[1], in[2]] (backward-data's result):
// idx = (((n * ci + c) * in[0] + i[0]) * in[1] + i[1]) * in[2] + i[2].
struct input_element {
  int64_t n, c, i[3];
};
NNP_CUDA_HOST_DEVICE input_element input_element_of(const direct_geom& g, int64_t idx) {
  input_element e;
  e.i[2] = idx % g.in[2];
  idx /= g.in[2];
  e.i[1] = idx % g.in[1];
  idx /= g.in[1];
  e.i[0] = idx % g.in[0];
  idx /= g.in[0];
  e.c = idx % g.ci;
  e.n = idx / g.ci;
  return e;
}

// ---- the few-channel backward-data --------------------------------------------------------------
// Where it applies: groups = 1, at most kSmallBwdChannels input channels, kSmallBwdTaps kernel
// taps and kSmallBwdWeights filter elements (the filter sits in shared memory), an output plane
// whose offsets fit an int.
constexpr int kSmallBwdChannels = 4, kSmallBwdTaps = 27, kSmallBwdWeights = 2048;

inline bool small_backward_data_takes(const direct_geom& g) {
  return g.cig == g.ci && g.cog == g.co && g.ci <= kSmallBwdChannels && g.k_size <= kSmallBwdTaps &&
         g.co * g.ci * g.k_size <= kSmallBwdWeights && g.out_size <= INT32_MAX;
}

// Input element idx = ((n * ci + c) * in[0] + i0) * in[1] + i1) * in[2] + i2 of backward-data:
// bias_at(c) + sum over output channels m, then taps r ascending (r = (r0 * k[1] + r1) * k[2] +
// r2), of dy_at(((n * co + m) * out_size) + o) * ws[(m * ci + c) * k_size + r], where
// o = (i + pad - r * dil) / stride on each axis when that is a whole, non-negative number below
// out (a tap without such an o takes no part): the products and the order of
// direct_backward_data_kernel for groups = 1. ws: the filter [co, ci, taps] as floats; dy_at(i)
// and bias_at(c) give dy's element i and the bias of channel c (0 without one) as floats.
// kTaps >= k_size. Each tap's output position is found once, then the channels are walked.
template <int kTaps, typename DyAt, typename BiasAt>
NNP_CUDA_HOST_DEVICE float small_backward_data_element(const direct_geom& g, int64_t idx,
                                                       const float* ws, const DyAt& dy_at,
                                                       const BiasAt& bias_at) {
  const input_element e = input_element_of(g, idx);
  const int64_t i0 = e.i[0], i1 = e.i[1], i2 = e.i[2], c = e.c, n = e.n;
  const int taps = static_cast<int>(g.k_size);
  const int k12 = static_cast<int>(g.k[1] * g.k[2]), k2 = static_cast<int>(g.k[2]);
  int offs[kTaps];
  NNP_CUDA_UNROLL
  for (int k = 0; k < kTaps; ++k) {
    offs[k] = -1;
    if (k < taps) {
      const int r0 = k / k12, r1 = (k - r0 * k12) / k2, r2 = k - r0 * k12 - r1 * k2;
      const int64_t t0 = i0 + g.pad[0] - r0 * g.dil[0];
      const int64_t t1 = i1 + g.pad[1] - r1 * g.dil[1];
      const int64_t t2 = i2 + g.pad[2] - r2 * g.dil[2];
      if (t0 >= 0 && t1 >= 0 && t2 >= 0 && t0 % g.stride[0] == 0 && t1 % g.stride[1] == 0 &&
          t2 % g.stride[2] == 0) {
        const int64_t o0 = t0 / g.stride[0], o1 = t1 / g.stride[1], o2 = t2 / g.stride[2];
        if (o0 < g.out[0] && o1 < g.out[1] && o2 < g.out[2])
          offs[k] = static_cast<int>((o0 * g.out[1] + o1) * g.out[2] + o2);
      }
    }
  }
  float acc = bias_at(c);
  int64_t dy = n * g.co * g.out_size;
  const float* wm = ws + c * taps;
  for (int64_t m = 0; m < g.co; ++m, dy += g.out_size, wm += g.ci * taps) {
    NNP_CUDA_UNROLL
    for (int k = 0; k < kTaps; ++k)
      if (offs[k] >= 0) acc += dy_at(dy + offs[k]) * wm[k];
  }
  return acc;
}

}  // namespace nnp::cuda
