// Winograd F(2x2, 3x3) convolution on the CPU: the fast path of 2-D convolutions with 3x3
// filters at stride 1 and dilation 1, one group and at least 16 channels in and out (the cnn's
// conv2), for every op whose geometry is such a convolution (NNP_OP_CONV2D_*, NNP_OP_CONV_* and
// NNP_OP_CONV_TRANSPOSE_* with k = 2: conv.cpp asks here first). Sizes come from the one N-D
// geometry (nnplug/kit/conv_nd.hpp; the last two spatial axes are the plane).
//
// Speed: 2.25x fewer multiplies in the SGEMMs than im2col: forward as 16 SGEMMs
// [K, C] . [C, tiles] per block of images, backward-data as a forward convolution of dy with the
// flipped filter, backward-filter as 16 SGEMMs [K, tiles] . [tiles, C] per block into dU, then
// dW = G^T dU G. A block is one image, or several side by side in the SGEMMs' tile dimension
// when an image has fewer than 128 tiles (winograd_block). The transforms work a plane at a time
// in unit-stride loops over whole padded rows or all tiles of a plane, with AVX2 clones
// (target_clones; the plugin is built for plain x86-64), and the 16 xi planes of each
// transform buffer lie an odd number of cache lines apart, so that the 16 streams a transform
// reads or writes at once do not share L1 sets (wino_plane_stride). Measured on one thread
// against the previous per-image version with 4-KiB-aligned planes, SSE2 transforms and
// per-channel zeroing of the padded plane (docs/cpu-backend.md): forward, backward-data and
// backward-filter of cnn.conv2 24.9 -> 20.5, 30.4 -> 26.4 and 29.3 -> 21.9 ms, the cnn training
// step 1104 -> 1267 images/s.
// Winograd runs only when its operands are all finite (all_finite: one vectorised pass over
// each): its transforms would turn an infinity into NaN where the direct formula gives ±inf.
// TBB runs blocks of images in parallel; backward-filter splits the batch into four chunks per
// thread, each accumulating into its own dU (call-level scratch), summed at the end.
#include "conv.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace nnp::cpu {
namespace {

// ---- Winograd F(2x2, 3x3) -----------------------------------------------------------------------
// Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks" (CVPR 2016). For 3x3 filters
// at stride 1 (dilation 1, one group) each 2x2 output tile costs 16 multiplies per (k, c)
// instead of 36: Y = A^T [ (G g G^T) .* (B^T d B) ] A, the 16 elementwise products summed over
// c as 16 SGEMMs [K, C] . [C, tiles]. Transforms use only 0, +-1 and +-1/2.

constexpr int64_t kWinoMinChannels = 16;  // below this the SGEMMs' depth is too small to pay

// u[xi][k][c] = (G g G^T)[xi] for g = w[k][c] (flip = 0) or, for backward-data as a forward
// convolution, g[r][s] = w[c][k][2-r][2-s] with w of shape [C_out_of_this, K_of_this, 3, 3].
void winograd_weights(const float* w, int64_t k_out, int64_t c_in, bool flip, float* u) {
  const int64_t kc = k_out * c_in;
  for (int64_t k = 0; k < k_out; ++k) {
    for (int64_t c = 0; c < c_in; ++c) {
      float g[3][3];
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s)
          g[r][s] = flip ? w[((c * k_out + k) * 3 + (2 - r)) * 3 + (2 - s)]
                         : w[((k * c_in + c) * 3 + r) * 3 + s];
      float gg[4][3];  // G g
      for (int s = 0; s < 3; ++s) {
        gg[0][s] = g[0][s];
        gg[1][s] = 0.5f * (g[0][s] + g[1][s] + g[2][s]);
        gg[2][s] = 0.5f * (g[0][s] - g[1][s] + g[2][s]);
        gg[3][s] = g[2][s];
      }
      for (int i = 0; i < 4; ++i) {  // (G g) G^T
        const float t[4] = {gg[i][0], 0.5f * (gg[i][0] + gg[i][1] + gg[i][2]),
                            0.5f * (gg[i][0] - gg[i][1] + gg[i][2]), gg[i][2]};
        for (int j = 0; j < 4; ++j) u[(i * 4 + j) * kc + k * c_in + c] = t[j];
      }
    }
  }
}

// The transforms below get an AVX2 clone where the CPU has it (NNP_CPU_AVX2_CLONES): their
// loops are adds and subtracts over rows of tiles.
#define NNP_WINO_CLONES NNP_CPU_AVX2_CLONES

// Input transform of one plane for tp x tq tiles: v[xi * xs + ti * tq + tj] = (B^T d B)[xi] for
// the 4x4 tile d at rows 2 ti.., columns 2 tj.. of `plane` (rows `ld` floats apart, at least
// 2 tp + 2 rows of 2 tq + 2 columns, the padding already in place). Per row of tiles: B^T along
// the four plane rows first (unit stride over the whole padded row), then B along each of the
// four results (stride-2 reads), both loops vectorised. tmp holds 4 (2 tq + 2) floats.
NNP_WINO_CLONES
void winograd_input_plane(const float* __restrict plane, int64_t ld, int64_t tp, int64_t tq,
                          float* __restrict v, int64_t xs, float* __restrict tmp) {
  const int64_t wp = 2 * tq + 2;
  float* __restrict b0 = tmp;
  float* __restrict b1 = tmp + wp;
  float* __restrict b2 = tmp + 2 * wp;
  float* __restrict b3 = tmp + 3 * wp;
  for (int64_t ti = 0; ti < tp; ++ti) {
    const float* r0 = plane + 2 * ti * ld;
    const float* r1 = r0 + ld;
    const float* r2 = r1 + ld;
    const float* r3 = r2 + ld;
    for (int64_t j = 0; j < wp; ++j) {  // B^T d: rows d0 - d2, d1 + d2, d2 - d1, d1 - d3
      b0[j] = r0[j] - r2[j];
      b1[j] = r1[j] + r2[j];
      b2[j] = r2[j] - r1[j];
      b3[j] = r1[j] - r3[j];
    }
    for (int i = 0; i < 4; ++i) {  // (B^T d) B along each row
      const float* __restrict d = tmp + i * wp;
      float* __restrict v0 = v + (4 * i + 0) * xs + ti * tq;
      float* __restrict v1 = v + (4 * i + 1) * xs + ti * tq;
      float* __restrict v2 = v + (4 * i + 2) * xs + ti * tq;
      float* __restrict v3 = v + (4 * i + 3) * xs + ti * tq;
      for (int64_t t = 0; t < tq; ++t) {
        v0[t] = d[2 * t] - d[2 * t + 2];
        v1[t] = d[2 * t + 1] + d[2 * t + 2];
        v2[t] = d[2 * t + 2] - d[2 * t + 1];
        v3[t] = d[2 * t + 1] - d[2 * t + 3];
      }
    }
  }
}

// Padded plane geometry of the input transform: x [h, w] with padding pad_top / pad_left, read
// as a plane of hp = 2 tp + 2 rows and wp = 2 tq + 2 columns (zero outside x). When x already is
// that plane (no padding, h = hp, w = wp) the transform reads x directly; otherwise each plane
// is copied into a task buffer whose padding was zeroed once (the copied region is the same for
// every plane, so the zeros stay).
struct wino_plane {
  int64_t h, w, tp, tq, pad_top, pad_left;
  int64_t hp() const { return 2 * tp + 2; }
  int64_t wp() const { return 2 * tq + 2; }
  bool direct() const { return pad_top == 0 && pad_left == 0 && h == hp() && w == wp(); }
  // Floats of task scratch the input transform needs: the padded plane and tmp.
  int64_t work() const { return (direct() ? 0 : hp() * wp()) + 4 * wp(); }
  // The plane the transform reads for x (rows `ld()` apart); pad from prepare().
  const float* place(const float* x, float* pad) const {
    if (direct()) return x;
    const int64_t i0 = std::max<int64_t>(0, -pad_top), i1 = std::min(h, hp() - pad_top);
    const int64_t j0 = std::max<int64_t>(0, -pad_left), j1 = std::min(w, wp() - pad_left);
    for (int64_t i = i0; i < i1; ++i) {
      const float* xr = x + i * w;
      float* pr = pad + (i + pad_top) * wp() + pad_left;
      for (int64_t j = j0; j < j1; ++j) pr[j] = xr[j];
    }
    return pad;
  }
  int64_t ld() const { return direct() ? w : wp(); }
  // Zeroes the task's padded plane (once per task, before the first place()).
  void prepare(float* pad) const {
    if (!direct()) std::fill(pad, pad + hp() * wp(), 0.0f);
  }
};

// Floats between the 16 xi planes of v, m or dyt holding `floats` each: a whole, odd number of
// 64-byte lines, so that the 16 streams a transform reads or writes at once (one per plane)
// fall in different L1 sets. Unpadded, a plane of [64, 144] floats is 9 x 4 KiB and all 16
// streams land in one set of the 8-way L1 (padding the strides took the cnn conv2 forward from
// 23.0 to 21.3 ms on one thread, process CPU time of nnplug-bench).
int64_t wino_plane_stride(int64_t floats) {
  int64_t lines = (floats + 15) / 16;
  if (lines % 2 == 0) ++lines;
  return lines * 16;
}

// Input transform of images [c_in, h, w] (nb of them, img_stride floats apart) into
// v[xi * xs + c * ld_v + b * tiles + t], ld_v = nb * tiles: the images' tiles side by side, so
// that one SGEMM per xi covers the whole block. work: pl.work() floats, prepared.
NNP_WINO_CLONES
void winograd_input_block(const float* x, int64_t nb, int64_t img_stride, int64_t c_in,
                          const wino_plane& pl, float* v, int64_t xs, float* work) {
  const int64_t tiles = pl.tp * pl.tq, ld_v = nb * tiles;
  float* pad = work;
  float* tmp = work + (pl.direct() ? 0 : pl.hp() * pl.wp());
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t c = 0; c < c_in; ++c)
      winograd_input_plane(pl.place(x + b * img_stride + c * pl.h * pl.w, pad), pl.ld(), pl.tp,
                           pl.tq, v + c * ld_v + b * tiles, xs, tmp);
}

// Output transform, first half (A^T along the xi rows), over all tiles of a plane at once
// (unit stride, long loops): s0[j][t] = m0 + m1 + m2 and s1[j][t] = m1 - m2 - m3 for
// mi = m[(4 i + j) * ms + t]; s = s0 [4][tiles] then s1 [4][tiles].
inline void winograd_output_cols(const float* __restrict m0, const float* __restrict m1,
                                 const float* __restrict m2, const float* __restrict m3,
                                 int64_t tiles, float* __restrict s0, float* __restrict s1) {
  for (int64_t t = 0; t < tiles; ++t) {
    s0[t] = m0[t] + m1[t] + m2[t];
    s1[t] = m1[t] - m2[t] - m3[t];
  }
}

// Output transform, second half (A along each row) for one row of tiles: out[2 t], out[2 t + 1]
// = a0 + a1 + a2 + bias, a1 - a2 - a3 + bias for aj = a[j * tiles + t].
inline void winograd_output_row(const float* __restrict a, int64_t tiles, int64_t tq, float bias,
                                float* __restrict out) {
  for (int64_t t = 0; t < tq; ++t) {
    const float a0 = a[t], a1 = a[tiles + t], a2 = a[2 * tiles + t], a3 = a[3 * tiles + t];
    out[2 * t] = a0 + a1 + a2 + bias;
    out[2 * t + 1] = a1 - a2 - a3 + bias;
  }
}

// Output transform of one plane: y [p, q] = A^T m A + bias per tile, m[xi] = m[xi * ms + t]
// for tile t = ti * tq + tj, clipped at odd edges. work: 8 tiles + 4 tq floats.
NNP_WINO_CLONES
void winograd_output_plane(const float* m, int64_t ms, int64_t tp, int64_t tq, int64_t p, int64_t q,
                           float bias, float* y, float* work) {
  const int64_t tiles = tp * tq;
  float* s = work;                     // [2][4][tiles]
  float* rows_out = work + 8 * tiles;  // two output rows of 2 tq floats
  for (int j = 0; j < 4; ++j)
    winograd_output_cols(m + j * ms, m + (4 + j) * ms, m + (8 + j) * ms, m + (12 + j) * ms, tiles,
                         s + j * tiles, s + (4 + j) * tiles);
  for (int64_t ti = 0; ti < tp; ++ti) {
    const int64_t r0 = 2 * ti;
    const bool fits = r0 + 1 < p && q % 2 == 0;  // direct when it fits
    float* out0 = fits ? y + r0 * q : rows_out;
    float* out1 = fits ? y + (r0 + 1) * q : rows_out + 2 * tq;
    winograd_output_row(s + ti * tq, tiles, tq, bias, out0);
    winograd_output_row(s + 4 * tiles + ti * tq, tiles, tq, bias, out1);
    if (!fits) {
      std::memcpy(y + r0 * q, out0, sizeof(float) * static_cast<size_t>(q));
      if (r0 + 1 < p) std::memcpy(y + (r0 + 1) * q, out1, sizeof(float) * static_cast<size_t>(q));
    }
  }
}

// Images per block of the batched transforms and SGEMMs: enough that a block has at least
// kWinoMinColumns tiles (the SGEMMs' N; small images would otherwise make SGEMMs too narrow to
// run at speed), but no more: v and m of one cnn conv2 image (144 tiles) already take 885 KB,
// most of a 1 MiB L2, and blocks of 2, 4 or 8 such images measured up to 10% slower. Fewer when
// that leaves fewer than two blocks per thread (so that 2 threads still split the batch).
constexpr int64_t kWinoMinColumns = 128;
int64_t winograd_block(int64_t n, int64_t tiles) {
  const int64_t want = (kWinoMinColumns + tiles - 1) / tiles;
  const int64_t per = (n + 2 * num_threads() - 1) / (2 * num_threads());
  return std::max<int64_t>(1, std::min(want, per));
}

// NNPLUG_CPU_WINOGRAD=0 turns the Winograd paths off (im2col everywhere), to measure them.
bool winograd_enabled() {
  static const bool enabled = [] {
    const char* env = std::getenv("NNPLUG_CPU_WINOGRAD");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }();
  return enabled;
}

// A batch of n images x [n, c_in, h, w] -> y [n, k_out, p, q] (+ bias), padding pad_top /
// pad_left (the bottom and right padding follow from p and q), after one winograd_weights of wt
// (flip as there) into call scratch. Blocks of winograd_block(n, tiles) images in parallel; per
// block the input transform of its images into v [16][c_in][nb * tiles], 16 SGEMMs m[xi] [K, nb *
// tiles] = u[xi] [K, C] . v[xi] [C, nb * tiles], and the output transform.
void winograd_batch(int64_t n, const float* x, int64_t c_in, int64_t h, int64_t w, const float* wt,
                    bool flip, int64_t k_out, int64_t p, int64_t q, int64_t pad_top,
                    int64_t pad_left, const float* bias, float* y) {
  float* u = scratch(kCallSlot1, static_cast<size_t>(16 * k_out * c_in));
  winograd_weights(wt, k_out, c_in, flip, u);
  const wino_plane pl{h, w, (p + 1) / 2, (q + 1) / 2, pad_top, pad_left};
  const int64_t tiles = pl.tp * pl.tq;
  const int64_t block = winograd_block(n, tiles), blocks = (n + block - 1) / block;
  parallel_for(blocks, 1, [&](int64_t bb, int64_t be) {
    const int64_t xs = wino_plane_stride(c_in * block * tiles), vsize = 16 * xs;
    const int64_t ms = wino_plane_stride(k_out * block * tiles);
    float* v = scratch(kTaskSlot0, static_cast<size_t>(vsize + pl.work() + 8 * tiles + 4 * pl.tq));
    float* work = v + vsize;
    float* out_work = work + pl.work();
    float* m = scratch(kTaskSlot1, static_cast<size_t>(16 * ms));
    pl.prepare(work);
    for (int64_t blk = bb; blk < be; ++blk) {
      const int64_t i0 = blk * block, nb = std::min(block, n - i0), ld = nb * tiles;
      winograd_input_block(x + i0 * c_in * h * w, nb, c_in * h * w, c_in, pl, v, xs, work);
      for (int xi = 0; xi < 16; ++xi)
        sgemm_rm(false, false, k_out, ld, c_in, 1.0f, u + xi * k_out * c_in, c_in, v + xi * xs, ld,
                 0.0f, m + xi * ms, ld);
      for (int64_t b = 0; b < nb; ++b)
        for (int64_t k = 0; k < k_out; ++k)
          winograd_output_plane(m + k * ld + b * tiles, ms, pl.tp, pl.tq, p, q,
                                bias != nullptr ? bias[k] : 0.0f,
                                y + ((i0 + b) * k_out + k) * p * q, out_work);
    }
  });
}

// Whether n floats are all finite (no ±inf, no NaN): an OR over the exponent test of each
// element's bits, which vectorises; chunks in parallel. Winograd's transforms add and subtract
// inputs, so one infinity there becomes inf - inf = NaN in outputs where the direct formula
// gives ±inf (docs/ops.md, "Non-finite values"): calls with a non-finite operand take the
// im2col path. The scan reads each operand once, against Winograd's several passes.
bool all_finite(const float* p, int64_t n) {
  constexpr int64_t kChunk = int64_t{1} << 16;
  std::atomic<bool> finite{true};
  parallel_for((n + kChunk - 1) / kChunk, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t ch = cb; ch < ce && finite.load(std::memory_order_relaxed); ++ch) {
      const float* q = p + ch * kChunk;
      const int64_t len = std::min(kChunk, n - ch * kChunk);
      uint32_t bad = 0;
      for (int64_t i = 0; i < len; ++i) {
        uint32_t u;
        std::memcpy(&u, q + i, sizeof u);
        bad |= static_cast<uint32_t>((u & 0x7f800000u) == 0x7f800000u);
      }
      if (bad != 0) finite.store(false, std::memory_order_relaxed);
    }
  });
  return finite.load();
}

// Row i of (A d) A^T for a row of 2x2 dy tiles: with (a0, a1) = c0 * (e0, o0) + c1 * (e1, o1)
// (even and odd columns of the two dy rows, read at stride 2), q0..q3 = a0, a0 + a1, a0 - a1,
// -a1. c0, c1 are 0 or +-1, so the products are exact.
inline void winograd_dy_row(const float* __restrict d0, const float* __restrict d1, float c0,
                            float c1, int64_t tq, float* __restrict q0, float* __restrict q1,
                            float* __restrict q2, float* __restrict q3) {
  for (int64_t t = 0; t < tq; ++t) {
    const float a0 = c0 * d0[2 * t] + c1 * d1[2 * t];
    const float a1 = c0 * d0[2 * t + 1] + c1 * d1[2 * t + 1];
    q0[t] = a0;
    q1[t] = a0 + a1;
    q2[t] = a0 - a1;
    q3[t] = -a1;
  }
}

// dy transform of one plane dy [p, q] for backward-filter: out[xi * ks + ti * tq + tj] =
// (A d A^T)[xi] for the 2x2 dy tile d at rows 2 ti.., columns 2 tj.. (0 outside P x Q). Row i of
// A d is (c0 * row0 + c1 * row1) with (c0, c1) = (1, 0), (1, 1), (1, -1), (0, -1); then (A d) A^T
// maps a row (a0, a1) to [a0, a0 + a1, a0 - a1, -a1]. At odd edges the rows are read from
// zero-padded copies in rows (4 tq floats).
NNP_WINO_CLONES
void winograd_dy_plane(const float* dy, int64_t p, int64_t q, int64_t tp, int64_t tq, float* out,
                       int64_t ks, float* rows) {
  static constexpr float kC0[4] = {1.0f, 1.0f, 1.0f, 0.0f};
  static constexpr float kC1[4] = {0.0f, 1.0f, -1.0f, -1.0f};
  for (int64_t ti = 0; ti < tp; ++ti) {
    const float* d0 = dy + 2 * ti * q;
    const float* d1 = d0 + q;
    if (2 * ti + 1 >= p || q % 2 != 0) {  // a partial tile row or column
      std::fill(rows, rows + 4 * tq, 0.0f);
      for (int64_t j = 0; j < q; ++j) rows[j] = d0[j];
      if (2 * ti + 1 < p)
        for (int64_t j = 0; j < q; ++j) rows[2 * tq + j] = d1[j];
      d0 = rows;
      d1 = rows + 2 * tq;
    }
    for (int i = 0; i < 4; ++i) {
      float* o = out + 4 * i * ks + ti * tq;
      winograd_dy_row(d0, d1, kC0[i], kC1[i], tq, o, o + ks, o + 2 * ks, o + 3 * ks);
    }
  }
}

// Backward-filter by Winograd F(2x2, 3x3): the forward is y = A^T [(G g G^T) .* V] A per tile,
// linear in g, so dg = G^T dU G with dU[xi] = sum over images and tiles of (A dy A^T)[xi] *
// V[xi]. The batch splits into chunks (one with one thread, else four per thread, as in
// sum_over_image_chunks), each accumulating its own dU; per block of winograd_block images the
// input transform into v [16][C][nb * tiles], the dy transform into dyt [16][K][nb * tiles], and
// 16 SGEMMs [K, nb * tiles] . [nb * tiles, C] into dU; then one 4x4 -> 3x3 transform per (k, c).
void winograd_filter_gradient(const conv_nd_geometry& g, const float* x, const float* dy,
                              float* dw) {
  const int64_t h = g.in[1], w = g.in[2], p = g.out[1], q = g.out[2];
  const wino_plane pl{h, w, (p + 1) / 2, (q + 1) / 2, g.pad[1], g.pad[2]};
  const int64_t tp = pl.tp, tq = pl.tq, tiles = tp * tq;
  const int64_t usize = 16 * g.co * g.ci;
  const int64_t chunks = std::min<int64_t>(num_threads() == 1 ? 1 : 4 * num_threads(), g.n);
  const int64_t block = std::min(winograd_block(g.n, tiles), (g.n + chunks - 1) / chunks);
  float* du_all = scratch(kCallSlot0, static_cast<size_t>(chunks * usize));
  parallel_for(chunks, 1, [&](int64_t cb, int64_t ce) {
    const int64_t xs = wino_plane_stride(g.ci * block * tiles), vsize = 16 * xs;
    const int64_t ks = wino_plane_stride(g.co * block * tiles);
    float* v = scratch(kTaskSlot0, static_cast<size_t>(vsize + pl.work()));
    float* work = v + vsize;
    float* dyt = scratch(kTaskSlot1, static_cast<size_t>(16 * ks + 4 * tq));
    float* rows = dyt + 16 * ks;
    pl.prepare(work);
    for (int64_t ch = cb; ch < ce; ++ch) {
      float* du = du_all + ch * usize;
      const int64_t n0 = g.n * ch / chunks, n1 = g.n * (ch + 1) / chunks;
      for (int64_t i0 = n0; i0 < n1; i0 += block) {
        const int64_t nb = std::min(block, n1 - i0), ld = nb * tiles;
        winograd_input_block(x + i0 * g.ci * h * w, nb, g.ci * h * w, g.ci, pl, v, xs, work);
        for (int64_t b = 0; b < nb; ++b)
          for (int64_t k = 0; k < g.co; ++k)
            winograd_dy_plane(dy + ((i0 + b) * g.co + k) * p * q, p, q, tp, tq,
                              dyt + k * ld + b * tiles, ks, rows);
        const float beta = i0 == n0 ? 0.0f : 1.0f;
        for (int xi = 0; xi < 16; ++xi)
          sgemm_rm(false, true, g.co, g.ci, ld, 1.0f, dyt + xi * ks, ld, v + xi * xs, ld, beta,
                   du + xi * g.co * g.ci, g.ci);
      }
    }
  });
  // sum the chunks' dU, then dw[k][c] = G^T dU G
  for (int64_t ch = 1; ch < chunks; ++ch) {
    const float* part = du_all + ch * usize;
    for (int64_t i = 0; i < usize; ++i) du_all[i] += part[i];
  }
  const int64_t kc = g.co * g.ci;
  for (int64_t k = 0; k < g.co; ++k) {
    for (int64_t c = 0; c < g.ci; ++c) {
      float m[4][4];
      for (int i = 0; i < 16; ++i) m[i / 4][i % 4] = du_all[i * kc + k * g.ci + c];
      float t[3][4];  // G^T m
      for (int j = 0; j < 4; ++j) {
        t[0][j] = m[0][j] + 0.5f * (m[1][j] + m[2][j]);
        t[1][j] = 0.5f * (m[1][j] - m[2][j]);
        t[2][j] = 0.5f * (m[1][j] + m[2][j]) + m[3][j];
      }
      float* out = dw + (k * g.ci + c) * 9;
      for (int i = 0; i < 3; ++i) {  // (G^T m) G
        out[i * 3 + 0] = t[i][0] + 0.5f * (t[i][1] + t[i][2]);
        out[i * 3 + 1] = 0.5f * (t[i][1] - t[i][2]);
        out[i * 3 + 2] = 0.5f * (t[i][1] + t[i][2]) + t[i][3];
      }
    }
  }
}

// Whether g is a convolution that Winograd F(2x2, 3x3) runs: 2-D, 3x3 filters, stride 1,
// dilation 1, one group, at least kWinoMinChannels channels in and out, no negative begin
// padding (ConvTranspose's output_shape can ask for one); and the path is not turned off.
bool winograd_fits(const conv_nd_geometry& g) {
  return winograd_enabled() && g.spatial == 2 && g.kernel[1] == 3 && g.kernel[2] == 3 &&
         g.stride[1] == 1 && g.stride[2] == 1 && g.dilation[1] == 1 && g.dilation[2] == 1 &&
         g.groups == 1 && g.ci >= kWinoMinChannels && g.co >= kWinoMinChannels && g.pad[1] >= 0 &&
         g.pad[2] >= 0;
}

// The end padding of spatial axis a that the sizes imply (negative when the last input rows are
// never read).
int64_t end_pad(const conv_nd_geometry& g, int a) {
  return (g.out[a] - 1) * g.stride[a] + g.dilation[a] * (g.kernel[a] - 1) + 1 - g.in[a] - g.pad[a];
}

}  // namespace

bool winograd_forward(const conv_nd_geometry& g, const float* in, const float* w, const float* b,
                      float* out) {
  if (!winograd_fits(g) || !all_finite(w, g.co * g.ci * 9) ||
      !all_finite(in, g.n * g.ci * g.in_size()))
    return false;
  winograd_batch(g.n, in, g.ci, g.in[1], g.in[2], w, false, g.co, g.out[1], g.out[2], g.pad[1],
                 g.pad[2], b, out);
  return true;
}

bool winograd_backward_data(const conv_nd_geometry& g, const float* dout, const float* w,
                            const float* b, float* din) {
  // As a forward convolution of dout with the flipped, transposed filter (padding 2 - pad), so
  // every padding must be at most 2.
  if (!winograd_fits(g) || g.pad[1] > 2 || g.pad[2] > 2 || end_pad(g, 1) > 2 || end_pad(g, 2) > 2 ||
      !all_finite(w, g.co * g.ci * 9) || !all_finite(dout, g.n * g.co * g.out_size()))
    return false;
  winograd_batch(g.n, dout, g.co, g.out[1], g.out[2], w, true, g.ci, g.in[1], g.in[2], 2 - g.pad[1],
                 2 - g.pad[2], b, din);
  return true;
}

bool winograd_backward_filter(const conv_nd_geometry& g, const float* in, const float* dout,
                              float* dw) {
  if (g.n == 0 || !winograd_fits(g) || !all_finite(dout, g.n * g.co * g.out_size()) ||
      !all_finite(in, g.n * g.ci * g.in_size()))
    return false;
  winograd_filter_gradient(g, in, dout, dw);
  return true;
}

}  // namespace nnp::cpu
