// conv_direct.cu — direct N-d convolution kernels (forward with optional bias, backward-data with
// optional bias, backward-filter) on the geometry of nnplug/kit/conv_nd.hpp, the explicit
// zero-pad / crop of a convolution operand ("window"), and the non-finite check of conv.cpp's
// non-finite rule. float32, float16 and bfloat16, computed in float32.
//
// The direct kernels are the exact fallback of conv.cpp: one thread per result element sums
// its window in a fixed order (the reference's: channel, then the kernel taps, or the images and
// output positions for backward-filter), with every IEEE product the reference takes (padding taps
// of forward and backward-filter are zeros that take part: 0 * inf = NaN), 64-bit indices and a
// grid-stride loop. They are simple rather than fast (no tiling, no shared memory): they run
// where cuDNN cannot (or refused to), and, guarded by the non-finite flag, only when an operand
// holds ±inf or NaN; the guarded launch is one wave of blocks that return at once when the flag
// is 0. Speed of the check comes from 16-byte loads in a grid-stride loop over both operands in
// one launch.
#include "common.cuh"
#include "conv_direct.hpp"

#include <nnplug/kit/conv_nd.hpp>

#include <cstdint>

namespace nnp::cuda {
namespace {

// Blocks for a grid-stride loop of `kernel` over n items, at most one full wave: as many blocks
// of kThreads as the device's multiprocessors hold at once for this kernel (its occupancy, asked
// once), so a guarded launch whose flag is 0 costs one wave of blocks that return at once.
template <auto kernel>
unsigned wave_blocks(const stream& s, int64_t n) {
  static const int per_sm = [] {
    int b = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, kThreads, 0) != cudaSuccess ||
        b < 1) {
      (void)cudaGetLastError();  // not sticky; fall back to one block per multiprocessor
      b = 1;
    }
    return b;
  }();
  const auto& reg = devices();
  int64_t sms = 132;
  if (s.device >= 0 && static_cast<size_t>(s.device) < reg.devices.size() &&
      reg.devices[static_cast<size_t>(s.device)].multiprocessors > 0)
    sms = reg.devices[static_cast<size_t>(s.device)].multiprocessors;
  const int64_t cap = sms * per_sm;
  const int64_t b = grid_for(n);
  return static_cast<unsigned>(b < cap ? b : cap);
}

__device__ __forceinline__ int64_t global_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_threads() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

// out[n, m, o] = bias[m] + sum over c < cig, taps r of in[n, g*cig + c, o*stride - pad + r*dil] *
// w[m, c, r] (g = m / cog), a tap outside the input adding 0 * w.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    direct_forward_kernel(direct_geom g, const T* __restrict__ in, const T* __restrict__ w,
                          const T* __restrict__ bias, T* __restrict__ out, int64_t total,
                          const int* flag) {
  if (flag != nullptr && *flag == 0) return;
  for (int64_t idx = global_thread(); idx < total; idx += grid_threads()) {
    int64_t t = idx;
    const int64_t o2 = t % g.out[2];
    t /= g.out[2];
    const int64_t o1 = t % g.out[1];
    t /= g.out[1];
    const int64_t o0 = t % g.out[0];
    t /= g.out[0];
    const int64_t m = t % g.co, n = t / g.co;
    const int64_t grp = m / g.cog;
    const int64_t b0 = o0 * g.stride[0] - g.pad[0];
    const int64_t b1 = o1 * g.stride[1] - g.pad[1];
    const int64_t b2 = o2 * g.stride[2] - g.pad[2];
    float acc = bias != nullptr ? to_f(bias[m]) : 0.0f;
    const T* wp = w + m * g.cig * g.k_size;  // walks [c][r0][r1][r2] in order
    const T* xc = in + (n * g.ci + grp * g.cig) * g.in_size;
    for (int64_t c = 0; c < g.cig; ++c, xc += g.in_size) {
      for (int64_t r0 = 0; r0 < g.k[0]; ++r0) {
        const int64_t i0 = b0 + r0 * g.dil[0];
        const bool v0 = i0 >= 0 && i0 < g.in[0];
        for (int64_t r1 = 0; r1 < g.k[1]; ++r1) {
          const int64_t i1 = b1 + r1 * g.dil[1];
          const bool v01 = v0 && i1 >= 0 && i1 < g.in[1];
          for (int64_t r2 = 0; r2 < g.k[2]; ++r2, ++wp) {
            const int64_t i2 = b2 + r2 * g.dil[2];
            const float wv = to_f(*wp);
            if (v01 && i2 >= 0 && i2 < g.in[2])
              acc += to_f(xc[(i0 * g.in[1] + i1) * g.in[2] + i2]) * wv;
            else
              acc += 0.0f * wv;  // padding: a zero that takes part (0 * inf = NaN)
          }
        }
      }
    }
    out[idx] = from_f<T>(acc);
  }
}

// The few-tap forward (groups = 1, ci * kernel taps <= kSmallTaps): out[n, m, o] =
// clamp(bias[m] + sum over c, taps r of in[...] * w[m, c, r]) in the order of
// direct_forward_kernel (the reference's), padding taps adding 0 * w. A thread per output
// position and block of kSmallChannels output channels (blockIdx.y) gathers its taps into
// registers once and walks the block's channels, with their filter rows and bias in shared memory
// (read as broadcasts: a warp works on one channel at a time), so each store is a warp's
// coalesced row segment. For a first layer (one or three input channels, 3 x 3) it replaces
// cuDNN's implicit GEMM with a reduction of 9 or 27, the non-finite guard, the bias pass and the
// clamp pass: it computes the reference's formula, so it needs no guard. On an H200 the cnn's
// conv1 (128 x 1 x 28 x 28, 32 channels, 3 x 3) took 24 us with all 32 channels in one thread's
// walk and 39 us with blocks of 8 (each block gathers the taps again), against 71-76 us for
// cuDNN's measured choice plus the bias pass.
constexpr int kSmallTaps = 27, kSmallChannels = 32;

template <typename T, int kTaps>
__global__ void __launch_bounds__(kThreads)
    small_forward_kernel(direct_geom g, const T* __restrict__ in, const T* __restrict__ w,
                         const T* __restrict__ bias, T* __restrict__ out, int64_t pixels, float lo,
                         float hi) {
  __shared__ float ws[kSmallChannels * kTaps], bs[kSmallChannels];
  const int taps = static_cast<int>(g.ci * g.k_size);
  const int64_t m0 = int64_t{blockIdx.y} * kSmallChannels;
  const int cb = static_cast<int>(g.co - m0 < kSmallChannels ? g.co - m0 : kSmallChannels);
  for (int i = threadIdx.x; i < cb * taps; i += blockDim.x) ws[i] = to_f(w[m0 * taps + i]);
  for (int i = threadIdx.x; i < cb; i += blockDim.x)
    bs[i] = bias != nullptr ? to_f(bias[m0 + i]) : 0.0f;
  __syncthreads();
  const int ks = static_cast<int>(g.k_size), k12 = static_cast<int>(g.k[1] * g.k[2]),
            k2 = static_cast<int>(g.k[2]);
  for (int64_t idx = global_thread(); idx < pixels; idx += grid_threads()) {
    const int64_t pos = idx % g.out_size, n = idx / g.out_size;
    int64_t t = pos;
    const int64_t o2 = t % g.out[2];
    t /= g.out[2];
    const int64_t o1 = t % g.out[1];
    const int64_t o0 = t / g.out[1];
    const int64_t b0 = o0 * g.stride[0] - g.pad[0];
    const int64_t b1 = o1 * g.stride[1] - g.pad[1];
    const int64_t b2 = o2 * g.stride[2] - g.pad[2];
    const T* xn = in + n * g.ci * g.in_size;
    float xv[kTaps];
#pragma unroll
    for (int k = 0; k < kTaps; ++k) {
      float v = 0.0f;  // padding: a zero that takes part (0 * inf = NaN)
      if (k < taps) {
        const int c = k / ks, r = k - c * ks;
        const int r0 = r / k12, r1 = (r - r0 * k12) / k2, r2 = r - r0 * k12 - r1 * k2;
        const int64_t i0 = b0 + r0 * g.dil[0], i1 = b1 + r1 * g.dil[1], i2 = b2 + r2 * g.dil[2];
        if (i0 >= 0 && i0 < g.in[0] && i1 >= 0 && i1 < g.in[1] && i2 >= 0 && i2 < g.in[2])
          v = to_f(xn[c * g.in_size + (i0 * g.in[1] + i1) * g.in[2] + i2]);
      }
      xv[k] = v;
    }
    T* yp = out + (n * g.co + m0) * g.out_size + pos;
    for (int m = 0; m < cb; ++m, yp += g.out_size) {
      const float* wm = ws + m * taps;
      float acc = bs[m];
#pragma unroll
      for (int k = 0; k < kTaps; ++k)
        if (k < taps) acc += xv[k] * wm[k];
      acc = acc < lo ? lo : acc;  // ONNX Clip: NaN stays NaN, lo > hi gives hi
      *yp = from_f<T>(acc > hi ? hi : acc);
    }
  }
}

// in[n, ic, i] = bias[ic] + sum over m in ic's group, taps r with i = o*stride - pad + r*dil
// (0 <= o < out) of out[n, m, o] * w[m, ic - g*cig, r]. Only real products: a position no output
// reads gets bias (or 0).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    direct_backward_data_kernel(direct_geom g, const T* __restrict__ out, const T* __restrict__ w,
                                const T* __restrict__ bias, T* __restrict__ in, int64_t total,
                                const int* flag) {
  if (flag != nullptr && *flag == 0) return;
  for (int64_t idx = global_thread(); idx < total; idx += grid_threads()) {
    const input_element e = input_element_of(g, idx);
    const int64_t i0 = e.i[0], i1 = e.i[1], i2 = e.i[2], ic = e.c, n = e.n;
    const int64_t grp = ic / g.cig, c = ic - grp * g.cig;
    float acc = bias != nullptr ? to_f(bias[ic]) : 0.0f;
    for (int64_t m = grp * g.cog; m < (grp + 1) * g.cog; ++m) {
      const T* dy = out + (n * g.co + m) * g.out_size;
      const T* wm = w + (m * g.cig + c) * g.k_size;
      // t_a = i_a + pad_a - r_a * dil_a = o_a * stride_a: decreasing in r_a, so stop below 0
      for (int64_t r0 = 0; r0 < g.k[0]; ++r0) {
        const int64_t t0 = i0 + g.pad[0] - r0 * g.dil[0];
        if (t0 < 0) break;
        if (t0 % g.stride[0] != 0) continue;
        const int64_t o0 = t0 / g.stride[0];
        if (o0 >= g.out[0]) continue;
        for (int64_t r1 = 0; r1 < g.k[1]; ++r1) {
          const int64_t t1 = i1 + g.pad[1] - r1 * g.dil[1];
          if (t1 < 0) break;
          if (t1 % g.stride[1] != 0) continue;
          const int64_t o1 = t1 / g.stride[1];
          if (o1 >= g.out[1]) continue;
          for (int64_t r2 = 0; r2 < g.k[2]; ++r2) {
            const int64_t t2 = i2 + g.pad[2] - r2 * g.dil[2];
            if (t2 < 0) break;
            if (t2 % g.stride[2] != 0) continue;
            const int64_t o2 = t2 / g.stride[2];
            if (o2 >= g.out[2]) continue;
            acc += to_f(dy[(o0 * g.out[1] + o1) * g.out[2] + o2]) *
                   to_f(wm[(r0 * g.k[1] + r1) * g.k[2] + r2]);
          }
        }
      }
    }
    in[idx] = from_f<T>(acc);
  }
}

// The few-channel backward-data (conv_direct.hpp has the sum and when it applies): a thread per
// input element, the filter in shared memory. It is the gradient of a first layer (the cnn's
// conv1: one channel, 32 filters, 3 x 3, a sum of 288 products per element), where cuDNN's
// algorithms measured 1.33 of PyTorch's time; the direct kernel above spends its time in 64-bit
// index arithmetic per tap.
template <typename T, int kTaps>
__global__ void __launch_bounds__(kThreads)
    small_backward_data_kernel(direct_geom g, const T* __restrict__ out, const T* __restrict__ w,
                               const T* __restrict__ bias, T* __restrict__ in, int64_t total) {
  __shared__ float ws[kSmallBwdWeights];
  const int weights = static_cast<int>(g.co * g.ci * g.k_size);
  for (int i = threadIdx.x; i < weights; i += blockDim.x) ws[i] = to_f(w[i]);
  __syncthreads();
  const auto dy_at = [out](int64_t i) { return to_f(out[i]); };
  const auto bias_at = [bias](int64_t c) { return bias != nullptr ? to_f(bias[c]) : 0.0f; };
  for (int64_t idx = global_thread(); idx < total; idx += grid_threads())
    in[idx] = from_f<T>(small_backward_data_element<kTaps>(g, idx, ws, dy_at, bias_at));
}

// w[m, c, r] = sum over n, output positions o of in[n, g*cig + c, o*stride - pad + r*dil] *
// out[n, m, o] (g = m / cog), a tap outside the input adding 0 * out.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    direct_backward_filter_kernel(direct_geom g, const T* __restrict__ in,
                                  const T* __restrict__ out, T* __restrict__ w, int64_t total,
                                  const int* flag) {
  if (flag != nullptr && *flag == 0) return;
  for (int64_t idx = global_thread(); idx < total; idx += grid_threads()) {
    int64_t t = idx;
    const int64_t r2 = t % g.k[2];
    t /= g.k[2];
    const int64_t r1 = t % g.k[1];
    t /= g.k[1];
    const int64_t r0 = t % g.k[0];
    t /= g.k[0];
    const int64_t c = t % g.cig, m = t / g.cig;
    const int64_t ic = (m / g.cog) * g.cig + c;
    float acc = 0.0f;
    for (int64_t n = 0; n < g.n; ++n) {
      const T* xc = in + (n * g.ci + ic) * g.in_size;
      const T* dy = out + (n * g.co + m) * g.out_size;  // walks [o0][o1][o2] in order
      for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
        const int64_t i0 = o0 * g.stride[0] - g.pad[0] + r0 * g.dil[0];
        const bool v0 = i0 >= 0 && i0 < g.in[0];
        for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
          const int64_t i1 = o1 * g.stride[1] - g.pad[1] + r1 * g.dil[1];
          const bool v01 = v0 && i1 >= 0 && i1 < g.in[1];
          for (int64_t o2 = 0; o2 < g.out[2]; ++o2, ++dy) {
            const int64_t i2 = o2 * g.stride[2] - g.pad[2] + r2 * g.dil[2];
            const float d = to_f(*dy);
            if (v01 && i2 >= 0 && i2 < g.in[2])
              acc += to_f(xc[(i0 * g.in[1] + i1) * g.in[2] + i2]) * d;
            else
              acc += 0.0f * d;  // padding: a zero that takes part (0 * inf = NaN)
          }
        }
      }
    }
    w[idx] = from_f<T>(acc);
  }
}

// dst[c, e] = src[c, e - shift] where that lies inside src, else 0 (3 spatial axes).
struct window_geom {
  int64_t src[3], dst[3], shift[3];
};

template <typename T>
__global__ void __launch_bounds__(kThreads)
    window_kernel(window_geom g, const T* __restrict__ src, T* __restrict__ dst, int64_t total) {
  for (int64_t idx = global_thread(); idx < total; idx += grid_threads()) {
    int64_t t = idx;
    const int64_t j2 = t % g.dst[2] - g.shift[2];
    t /= g.dst[2];
    const int64_t j1 = t % g.dst[1] - g.shift[1];
    t /= g.dst[1];
    const int64_t j0 = t % g.dst[0] - g.shift[0];
    const int64_t nc = t / g.dst[0];
    const bool inside =
        j0 >= 0 && j0 < g.src[0] && j1 >= 0 && j1 < g.src[1] && j2 >= 0 && j2 < g.src[2];
    dst[idx] =
        inside ? src[((nc * g.src[0] + j0) * g.src[1] + j1) * g.src[2] + j2] : from_f<T>(0.0f);
  }
}

// ---- the non-finite check ---------------------------------------------------------------------
// Whether a 32-bit word holds a non-finite element: one float32 (mask16 = 0), or one or two
// 16-bit floats whose exponent field is mask16 (float16 0x7C00, bfloat16 0x7F80; a lone 16-bit
// element is a word with a zero upper half).
__device__ __forceinline__ bool nonfinite_word(uint32_t v, uint32_t mask16) {
  if (mask16 == 0) return (v & 0x7F800000u) == 0x7F800000u;
  return (v & mask16) == mask16 || ((v >> 16) & mask16) == mask16;
}

struct nf_span {
  const unsigned char* p;  // the first element (aligned to the element size)
  int64_t n;               // elements
};

// Scans a span: the elements before the first 16-byte boundary and after the last one one at a
// time, the rest in 16-byte loads; true at the first non-finite element this thread sees.
__device__ __forceinline__ bool span_has_nonfinite(const nf_span& s, int es, uint32_t mask16,
                                                   int64_t tid, int64_t nth) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(s.p);
  int64_t head = static_cast<int64_t>((16 - addr % 16) % 16) / es;
  if (head > s.n) head = s.n;
  const int64_t per_chunk = 16 / es;
  const int64_t chunks = (s.n - head) / per_chunk;
  const int64_t body_end = head + chunks * per_chunk;
  const int64_t scalars = head + (s.n - body_end);
  const uint4* __restrict__ body = reinterpret_cast<const uint4*>(s.p + head * es);
  for (int64_t i = tid; i < chunks; i += nth) {
    const uint4 v = body[i];
    if (nonfinite_word(v.x, mask16) || nonfinite_word(v.y, mask16) || nonfinite_word(v.z, mask16) ||
        nonfinite_word(v.w, mask16))
      return true;
  }
  for (int64_t i = tid; i < scalars; i += nth) {
    const int64_t e = i < head ? i : body_end + (i - head);
    const uint32_t v = es == 4 ? *reinterpret_cast<const uint32_t*>(s.p + e * 4)
                               : *reinterpret_cast<const uint16_t*>(s.p + e * 2);
    if (nonfinite_word(v, mask16)) return true;
  }
  return false;
}

// *flag = 1 when a or b holds a non-finite element (a thread writes as soon as it finds one;
// blocks that start after the flag is set return at once).
__global__ void __launch_bounds__(kThreads)
    nonfinite_kernel(nf_span a, nf_span b, int es, uint32_t mask16, int* flag) {
  if (*static_cast<volatile int*>(flag) != 0) return;
  const int64_t tid = global_thread(), nth = grid_threads();
  if (span_has_nonfinite(a, es, mask16, tid, nth) || span_has_nonfinite(b, es, mask16, tid, nth))
    *flag = 1;
}

template <typename T>
const T* typed(const void* p) {
  return static_cast<const T*>(p);
}

}  // namespace

void launch_conv_direct_forward(stream& s, elem t, const nnp::conv_nd_geometry& geom,
                                const void* in, const void* w, const void* bias, void* out,
                                const int* flag) {
  const direct_geom g = direct_of(geom);
  const int64_t total = g.n * g.co * g.out_size;
  if (total == 0) return;
  dispatch_float(t, [&](auto tg) {
    using T = typename decltype(tg)::type;
    direct_forward_kernel<T>
        <<<wave_blocks<direct_forward_kernel<T>>(s, total), kThreads, 0, s.handle>>>(
            g, typed<T>(in), typed<T>(w), typed<T>(bias), static_cast<T*>(out), total, flag);
  });
  NNP_CUDA_CHECK_LAUNCH();
}

bool launch_conv_small_forward(stream& s, elem t, const nnp::conv_nd_geometry& geom, const void* in,
                               const void* w, const void* bias, void* out, float lo, float hi) {
  const direct_geom g = direct_of(geom);
  const int64_t chunks = (g.co + kSmallChannels - 1) / kSmallChannels;
  if (g.cig != g.ci || g.cog != g.co || g.ci * g.k_size > kSmallTaps || chunks > 65535)
    return false;
  const int64_t pixels = g.n * g.out_size;
  if (pixels == 0 || g.co == 0) return true;
  const dim3 grid(grid_for(pixels), static_cast<unsigned>(chunks));
  dispatch_float(t, [&](auto tg) {
    using T = typename decltype(tg)::type;
    if (g.ci * g.k_size <= 9)
      small_forward_kernel<T, 9><<<grid, kThreads, 0, s.handle>>>(
          g, typed<T>(in), typed<T>(w), typed<T>(bias), static_cast<T*>(out), pixels, lo, hi);
    else
      small_forward_kernel<T, kSmallTaps><<<grid, kThreads, 0, s.handle>>>(
          g, typed<T>(in), typed<T>(w), typed<T>(bias), static_cast<T*>(out), pixels, lo, hi);
  });
  NNP_CUDA_CHECK_LAUNCH();
  return true;
}

void launch_conv_direct_backward_data(stream& s, elem t, const nnp::conv_nd_geometry& geom,
                                      const void* out, const void* w, const void* bias, void* in,
                                      const int* flag) {
  const direct_geom g = direct_of(geom);
  const int64_t total = g.n * g.ci * g.in_size;
  if (total == 0) return;
  dispatch_float(t, [&](auto tg) {
    using T = typename decltype(tg)::type;
    direct_backward_data_kernel<T>
        <<<wave_blocks<direct_backward_data_kernel<T>>(s, total), kThreads, 0, s.handle>>>(
            g, typed<T>(out), typed<T>(w), typed<T>(bias), static_cast<T*>(in), total, flag);
  });
  NNP_CUDA_CHECK_LAUNCH();
}

bool launch_conv_small_backward_data(stream& s, elem t, const nnp::conv_nd_geometry& geom,
                                     const void* out, const void* w, const void* bias, void* in) {
  const direct_geom g = direct_of(geom);
  if (!small_backward_data_takes(g)) return false;
  const int64_t total = g.n * g.ci * g.in_size;
  if (total == 0) return true;
  dispatch_float(t, [&](auto tg) {
    using T = typename decltype(tg)::type;
    if (g.k_size <= 9)
      small_backward_data_kernel<T, 9>
          <<<wave_blocks<small_backward_data_kernel<T, 9>>(s, total), kThreads, 0, s.handle>>>(
              g, typed<T>(out), typed<T>(w), typed<T>(bias), static_cast<T*>(in), total);
    else
      small_backward_data_kernel<T, kSmallBwdTaps>
          <<<wave_blocks<small_backward_data_kernel<T, kSmallBwdTaps>>(s, total), kThreads, 0,
             s.handle>>>(g, typed<T>(out), typed<T>(w), typed<T>(bias), static_cast<T*>(in), total);
  });
  NNP_CUDA_CHECK_LAUNCH();
  return true;
}

void launch_conv_direct_backward_filter(stream& s, elem t, const nnp::conv_nd_geometry& geom,
                                        const void* in, const void* out, void* w, const int* flag) {
  const direct_geom g = direct_of(geom);
  const int64_t total = g.co * g.cig * g.k_size;
  if (total == 0) return;
  dispatch_float(t, [&](auto tg) {
    using T = typename decltype(tg)::type;
    direct_backward_filter_kernel<T>
        <<<wave_blocks<direct_backward_filter_kernel<T>>(s, total), kThreads, 0, s.handle>>>(
            g, typed<T>(in), typed<T>(out), static_cast<T*>(w), total, flag);
  });
  NNP_CUDA_CHECK_LAUNCH();
}

void launch_conv_window(stream& s, elem t, const void* src, const int64_t* src_ext, void* dst,
                        const int64_t* dst_ext, const int64_t* shift, int64_t nc) {
  window_geom g{};
  int64_t total = nc;
  for (int a = 0; a < 3; ++a) {
    g.src[a] = src_ext[a];
    g.dst[a] = dst_ext[a];
    g.shift[a] = shift[a];
    total *= dst_ext[a];
  }
  if (total == 0) return;
  dispatch_float(t, [&](auto tg) {
    using T = typename decltype(tg)::type;
    window_kernel<T>
        <<<grid_for(total), kThreads, 0, s.handle>>>(g, typed<T>(src), static_cast<T*>(dst), total);
  });
  NNP_CUDA_CHECK_LAUNCH();
}

void launch_nonfinite_flag(stream& s, cudaStream_t on, elem t, const void* a, int64_t na,
                           const void* b, int64_t nb, int* flag) {
  int es = 4;
  uint32_t mask16 = 0;
  switch (t) {
    case elem::f32:
      break;
    case elem::f16:
      es = 2;
      mask16 = 0x7C00u;
      break;
    case elem::bf16:
      es = 2;
      mask16 = 0x7F80u;
      break;
    default:
      fail(NNP_STATUS_UNSUPPORTED, "dtype not implemented by the non-finite check");
  }
  const nf_span sa{static_cast<const unsigned char*>(a), a != nullptr ? na : 0};
  const nf_span sb{static_cast<const unsigned char*>(b), b != nullptr ? nb : 0};
  // one 16-byte load per thread and pass: blocks for the larger span, at most one wave
  const int64_t work = (sa.n > sb.n ? sa.n : sb.n) * es / 16 + 1;
  nonfinite_kernel<<<wave_blocks<nonfinite_kernel>(s, work), kThreads, 0, on>>>(sa, sb, es, mask16,
                                                                                flag);
  NNP_CUDA_CHECK_LAUNCH();
}

}  // namespace nnp::cuda
