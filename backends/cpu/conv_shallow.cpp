// Shallow convolutions on the CPU, forward: the fast path of ungrouped convolutions (1-D, 2-D or
// 3-D, any stride, padding and dilation) whose depth, input channels x kernel volume, is at most
// kMaxDepth, where the CPU has AVX2 and FMA (conv.cpp asks here after Winograd and the depthwise
// kernels). MobileNetV2 has two kinds: its 1x1 expansion and projection layers with at most 32
// input channels ([32, 16, 112, 112] -> 96 channels, [32, 32, 112, 112] -> 16, ...) and its first
// layer, 3 channels through a 3x3 filter at stride 2 (depth 27).
//
// Per image, y [K, V] = w [K, D] . col [D, V] + b (D = the depth, V = the output positions, col =
// the im2col matrix: col[(c, tap), v] = the input element tap reads for output v, 0 in the
// padding), then the fused clamp. conv.cpp's general path runs it as im2col panels, one OpenBLAS
// SGEMM each and a pass for the bias and the clamp: with D <= 32 the SGEMM's depth is too short for
// its packing to pay. Here each task takes kChunk output positions of one image: it fills their
// panel of col [D, kChunk] (a plain copy of each channel's range for a 1x1, stride-1, unpadded
// convolution), then for each block of 4 output channels sweeps the panel in 4 x 24 register blocks
// over the whole depth (block4x8, conv.hpp), and writes y once, with its bias added and clamped; w
// is packed once per call in panels of 4 rows. Output channels outer, columns inner: y is written
// as 4 rows of kChunk floats at a time rather than a few floats in each of K rows (K write streams,
// one page each), and the panel stays in L1 / L2 across the row blocks. Padding taps read zeros
// from the panel, so an infinite weight over padding gives NaN, as the direct formula does. Columns
// past the last whole vector of a chunk take a scalar loop.
// Measured on a 2-core AMD EPYC (AVX2), 2 threads, per call (medians of 6 alternated runs of 20
// calls each, nnplug.conv_forward with out= and a ReLU6 clamp), against im2col + SGEMM + the
// bias and clamp pass for the first, and for the 1x1 layers against this kernel's first
// version, which swept the columns outer and wrote 24 floats to each of the K rows in turn:
//   [32, 3, 224, 224] 3x3 stride 2 pad 1 -> 32:   20.3 -> 14.8 ms
//   [32, 16, 112, 112] 1x1 -> 96:                 32.7 -> 22.0 ms
//   [32, 32, 112, 112] 1x1 -> 16:                 12.3 -> 10.4 ms
// A stride-2 tap row is gathered by a loop with the stride a constant (vectorised): the first
// layer's panels took 5.5 ms of its time with the stride a variable, 2.2 ms with it constant.
// Deeper 1x1 layers stay with OpenBLAS: at 64 to 160 input channels (14 x 14 and 7 x 7 planes)
// this kernel, with no blocking of the depth, measured 1.2-1.6x its time.
// TBB runs (image, chunk of kChunk output positions) pairs in parallel.
#include "conv.hpp"

#include <algorithm>
#include <cstring>

namespace nnp::cpu {
namespace {

constexpr int64_t kMaxDepth = 32;  // input channels x kernel volume
constexpr int64_t kChunk = 384;    // output positions per task: 16 blocks of 24

#ifdef NNP_CPU_X86_KERNELS
int64_t depth_of(const conv_nd_geometry& g) { return g.ci * g.kernel_size(); }

bool applies(const conv_nd_geometry& g) {
  return cpu_avx2_fma() && g.groups == 1 && g.ci > 0 && depth_of(g) <= kMaxDepth;
}

// Rows k0.. (up to 4: `rows`) of y at columns [j, j + 8 NV): bias + sum over r of w[k][r] p[r][.]
// for w packed as wp[r][4], clamped.
template <int NV>
NNP_CPU_AVX2_FMA void block4(const float* wp, const float* p, int64_t ldp, int64_t depth,
                             const float* bias4, __m256 lo, __m256 hi, float* y, int64_t ldy,
                             int64_t rows) {
  __m256 acc[4][3];
  block4x8<NV>(wp, p, ldp, depth, bias4, acc);
  for (int64_t i = 0; i < rows && i < 4; ++i)
    for (int v = 0; v < NV; ++v) _mm256_storeu_ps(y + i * ldy + 8 * v, clamp8(acc[i][v], lo, hi));
}

// Output positions [j0, j1) of one image from their panel p [D, ldp] (column j at p[r ldp + j -
// j0]): y [K, V].
NNP_CPU_AVX2_FMA void columns(const conv_nd_geometry& g, const float* wp, const float* bias,
                              const out_clamp& clamp, const float* p, int64_t ldp, float* y,
                              int64_t j0, int64_t j1) {
  const int64_t V = g.out_size(), D = depth_of(g), K = g.co, n = j1 - j0;
  const __m256 lo = _mm256_set1_ps(clamp.lo), hi = _mm256_set1_ps(clamp.hi);
  const int64_t whole = n / 8 * 8;  // panel columns in whole vectors
  for (int64_t k0 = 0; k0 < K; k0 += 4) {
    const float* w4 = wp + k0 * D;
    float* yk = y + k0 * V + j0;
    for (int64_t j = 0; j < whole; j += 24) {
      const int64_t nv = std::min<int64_t>(3, (whole - j) / 8);
      if (nv == 3)
        block4<3>(w4, p + j, ldp, D, bias + k0, lo, hi, yk + j, V, K - k0);
      else if (nv == 2)
        block4<2>(w4, p + j, ldp, D, bias + k0, lo, hi, yk + j, V, K - k0);
      else
        block4<1>(w4, p + j, ldp, D, bias + k0, lo, hi, yk + j, V, K - k0);
    }
  }
  for (int64_t j = whole; j < n; ++j)  // fewer than 8 columns left
    for (int64_t k = 0; k < K; ++k) {
      float acc = bias[k];
      for (int64_t r = 0; r < D; ++r) acc += wp[(k / 4) * 4 * D + 4 * r + k % 4] * p[r * ldp + j];
      y[k * V + j0 + j] = clamp.apply(acc);
    }
}
#endif

}  // namespace

bool shallow_forward(const conv_nd_geometry& g, const float* in, const float* w, const float* b,
                     const out_clamp& clamp, float* out) {
#ifdef NNP_CPU_X86_KERNELS
  if (!applies(g)) return false;
  const int64_t D = depth_of(g), K = g.co, V = g.out_size(), I = g.ci * g.in_size();
  const int64_t k4 = (K + 3) / 4 * 4;
  // w [K, D] packed in panels of 4 rows, wp[(k / 4) 4 D + 4 r + k % 4], rows past K zero; the
  // bias padded to k4 the same way
  float* wp = scratch(kCallSlot0, static_cast<size_t>(k4 * D + k4));
  float* bias = wp + k4 * D;
  std::fill(wp, wp + k4 * D + k4, 0.0f);
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t r = 0; r < D; ++r) wp[(k / 4) * 4 * D + 4 * r + k % 4] = w[k * D + r];
    bias[k] = b != nullptr ? b[k] : 0.0f;
  }
  const int64_t chunks = (V + kChunk - 1) / kChunk;
  parallel_for(g.n * chunks, 1, [&](int64_t tb, int64_t te) {
    float* panel = scratch(kTaskSlot0, static_cast<size_t>(D * kChunk));
    for (int64_t t = tb; t < te; ++t) {
      const int64_t n = t / chunks, j0 = (t % chunks) * kChunk, j1 = std::min(V, j0 + kChunk);
      im2col_panel(g, in + n * I, j0, j1, panel, kChunk);
      columns(g, wp, bias, clamp, panel, kChunk, out + n * K * V, j0, j1);
    }
  });
  return true;
#else
  (void)g, (void)in, (void)w, (void)b, (void)clamp, (void)out;
  return false;
#endif
}

}  // namespace nnp::cpu
