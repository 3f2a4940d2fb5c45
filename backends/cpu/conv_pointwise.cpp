// Pointwise (1x1) convolutions on the CPU, forward: the fast path of 1x1 (1-D, 2-D or 3-D),
// stride-1, unpadded, ungrouped convolutions with a shallow depth (at most kMaxDepth input
// channels), where the CPU has AVX2 and FMA (conv.cpp asks here after Winograd and the
// depthwise kernels). MobileNetV2's expansion layers are such convolutions: [32, 16, 112, 112]
// -> 96 channels, [32, 24, 56, 56] -> 144, ...
//
// Per image, y [K, V] = w [K, C] . x [C, V] + b (V = the output positions), then the fused clamp.
// conv.cpp's general path runs it as one OpenBLAS SGEMM per image and a second pass for the bias
// and the clamp: with C <= 32 the SGEMM's depth is too short for its packing to pay, and the
// output, often larger than the caches (154 MB for MobileNetV2's first expansion at batch 32),
// is written, then read and written again. Here a 4 x 24 block of y stays in registers over the
// whole depth (block4x8, conv.hpp), x read in place (its C x 24 panel in L1 across the K / 4 row
// blocks), w packed once per call in panels of 4 rows; y leaves with its bias added and
// clamped, written once. Columns past the last whole vector of a task's range take a scalar
// loop (no read past x's end). Against SGEMM + the bias and clamp pass, 2 threads, alternated
// (2-core AMD EPYC): [32, 16, 112, 112] -> 96: 30-38 against 30-46 ms (bound by writing y);
// [32, 24, 56, 56] -> 144: 10-14 against 11-17 ms; [32, 32, 28, 28] -> 192: 3.9-4.7 against
// 4.2-6.4 ms. Streaming stores for outputs larger than the caches measured no better.
// TBB runs (image, chunk of kChunk columns) pairs in parallel.
#include "conv.hpp"

#include <algorithm>

namespace nnp::cpu {
namespace {

// Input channels: deeper, OpenBLAS (packing pays; at 64 channels and 14 x 14 planes it measured
// 3.8-5.1 ms against this kernel's 5.5-6.2 for MobileNetV2's [32, 64, 14, 14] -> 384).
constexpr int64_t kMaxDepth = 32;
constexpr int64_t kChunk = 384;  // columns per task: 16 blocks of 24

#ifdef NNP_CPU_X86_KERNELS
bool applies(const conv_nd_geometry& g) {
  if (!cpu_avx2_fma() || g.groups != 1 || g.ci > kMaxDepth || g.ci == 0) return false;
  for (int a = 0; a < kConvMaxSpatial; ++a)
    if (g.kernel[a] != 1 || g.stride[a] != 1 || g.pad[a] != 0 || g.in[a] != g.out[a]) return false;
  return true;
}

// Rows k0.. (up to 4: `rows`) of y at columns [j, j + 8 NV): bias + sum over c of w[k][c] x[c][.]
// for w packed as wp[c][4], clamped.
template <int NV>
NNP_CPU_AVX2_FMA void block4(const float* wp, const float* x, int64_t ldx, int64_t depth,
                             const float* bias4, __m256 lo, __m256 hi, float* y, int64_t ldy,
                             int64_t rows) {
  __m256 acc[4][3];
  block4x8<NV>(wp, x, ldx, depth, bias4, acc);
  for (int64_t i = 0; i < rows && i < 4; ++i)
    for (int v = 0; v < NV; ++v) _mm256_storeu_ps(y + i * ldy + 8 * v, clamp8(acc[i][v], lo, hi));
}

// Columns [j0, j1) of one image: x [C, V], y [K, V].
NNP_CPU_AVX2_FMA void columns(const conv_nd_geometry& g, const float* wp, const float* bias,
                              const out_clamp& clamp, const float* x, float* y, int64_t j0,
                              int64_t j1) {
  const int64_t V = g.out_size(), C = g.ci, K = g.co;
  const __m256 lo = _mm256_set1_ps(clamp.lo), hi = _mm256_set1_ps(clamp.hi);
  int64_t j = j0;
  for (; j + 8 <= j1; j += 24) {
    const int64_t nv = std::min<int64_t>(3, (j1 - j) / 8);
    for (int64_t k0 = 0; k0 < K; k0 += 4) {
      const float* w4 = wp + k0 * C;
      float* yk = y + k0 * V + j;
      if (nv == 3)
        block4<3>(w4, x + j, V, C, bias + k0, lo, hi, yk, V, K - k0);
      else if (nv == 2)
        block4<2>(w4, x + j, V, C, bias + k0, lo, hi, yk, V, K - k0);
      else
        block4<1>(w4, x + j, V, C, bias + k0, lo, hi, yk, V, K - k0);
    }
    if (nv < 3) {
      j += 8 * nv;
      break;
    }
  }
  for (; j < j1; ++j)  // fewer than 8 columns left
    for (int64_t k = 0; k < K; ++k) {
      float acc = bias[k];
      for (int64_t c = 0; c < C; ++c) acc += wp[(k / 4) * 4 * C + 4 * c + k % 4] * x[c * V + j];
      y[k * V + j] = clamp.apply(acc);
    }
}
#endif

}  // namespace

bool pointwise_forward(const conv_nd_geometry& g, const float* in, const float* w, const float* b,
                       const out_clamp& clamp, float* out) {
#ifdef NNP_CPU_X86_KERNELS
  if (!applies(g)) return false;
  const int64_t C = g.ci, K = g.co, V = g.out_size(), k4 = (K + 3) / 4 * 4;
  // w [K, C] packed in panels of 4 rows, wp[(k / 4) 4 C + 4 c + k % 4], rows past K zero; the
  // bias padded to k4 the same way
  float* wp = scratch(kCallSlot0, static_cast<size_t>(k4 * C + k4));
  float* bias = wp + k4 * C;
  std::fill(wp, wp + k4 * C + k4, 0.0f);
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t c = 0; c < C; ++c) wp[(k / 4) * 4 * C + 4 * c + k % 4] = w[k * C + c];
    bias[k] = b != nullptr ? b[k] : 0.0f;
  }
  const int64_t chunks = (V + kChunk - 1) / kChunk;
  parallel_for(g.n * chunks, 1, [&](int64_t tb, int64_t te) {
    for (int64_t t = tb; t < te; ++t) {
      const int64_t n = t / chunks, j0 = (t % chunks) * kChunk;
      columns(g, wp, bias, clamp, in + n * C * V, out + n * K * V, j0, std::min(V, j0 + kChunk));
    }
  });
  return true;
#else
  (void)g, (void)in, (void)w, (void)b, (void)clamp, (void)out;
  return false;
#endif
}

}  // namespace nnp::cpu
