// Max / average pooling on the CPU, float32: N-D pooling (NNP_OP_POOL_FORWARD / _BACKWARD,
// nnp_pool_params) with the semantics of nnplug_ops.h (ONNX MaxPool / AveragePool opset 22;
// geometry nnp::resolve_pool_nd), and the 2-D pooling of ABI 1.0 (NNP_OP_POOL2D_*), which is
// the same with k = 2, no dilation and no Indices (its params are read as nnp_pool_params).
// Every call runs as 3-D, a 1-D or 2-D call having leading unit dimensions.
//
// Speed: the unit of work is one output row (fixed plane, o0, o1; all o2). Its outputs split
// into border windows (some tap of the last dimension outside x), computed one by one, and
// interior windows, computed tap-outer / output-inner: for each tap (j0, j1, j2) one pass over
// the row's outputs reads x at a fixed stride, with selects instead of branches, which the
// compiler vectorises. Forward runs rows in parallel (TBB); backward runs (image, channel)
// planes in parallel, since windows of one plane overlap, and scatters each row's dy after
// computing its first maxima (max) or shares (average) the same way, so no atomics are needed.
// 2-D max pooling with 2x2 windows at stride 2 and every window inside x (the cnn's) has its own
// path in both directions: planes in parallel, each window's maximum from selects (with AVX2,
// 8 outputs at a time: maxpool2_row_avx2), and the backward's first-maximum masks from compares
// and bit operations (no branches). 2-D max pooling with 3x3 windows at stride 2 without Indices
// (ResNet's stem) has its own forward: the input rows of an output row reduced once, then 3
// columns at stride 2 (maxpool3s2_forward).
#include "cpu_backend.hpp"

#include <nnplug/kit/pool_nd.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

namespace nnp::cpu {
namespace {

struct geom {
  pool_nd_geometry g;
  bool max, include_pad, column_major;
  int64_t in1, in2, in_plane, out_plane;
  int64_t lo, hi;  // outputs o2 in [lo, hi) have every tap of dimension 2 inside x
};

geom make_geom(const nnp_pool_params& p, const DLTensor& x) {
  geom G{};
  G.g = resolve_pool_nd(p, x);
  G.max = p.mode == NNP_POOL_MAX;
  G.include_pad = p.count_include_pad != 0;
  G.column_major = p.storage_order == 1;
  G.in1 = G.g.d[1].in;
  G.in2 = G.g.d[2].in;
  G.in_plane = G.g.in_plane();
  G.out_plane = G.g.out_plane();
  const pool_dim& d = G.g.d[2];
  // first o with start(o) >= 0; last o with start(o) + (kernel-1)*dilation <= in-1
  const int64_t lo = (d.pad_begin + d.stride - 1) / d.stride;
  const int64_t num = d.in - 1 + d.pad_begin - (d.kernel - 1) * d.dilation;
  const int64_t hi = num >= 0 ? num / d.stride + 1 : 0;
  G.hi = std::min(hi, d.out);
  G.lo = std::min(lo, G.hi);
  return G;
}

// Calls f(o2) for the border outputs of a row: [0, lo) and [hi, out).
template <typename F>
inline void for_border(const geom& G, int64_t out, const F& f) {
  for (int64_t o = 0; o < G.lo; ++o) f(o);
  for (int64_t o = G.hi; o < out; ++o) f(o);
}

// Per-thread buffers for one row (only grow; no allocation on the hot path once warm).
struct row_buffers {
  std::vector<float> val;
  std::vector<int64_t> arg;
  std::vector<int32_t> code;
  void reserve(int64_t n) {
    if (static_cast<int64_t>(val.size()) < n) {
      val.resize(static_cast<size_t>(n));
      arg.resize(static_cast<size_t>(n));
      code.resize(static_cast<size_t>(n));
    }
  }
};
row_buffers& buffers(int64_t n) {
  thread_local row_buffers b;
  b.reserve(n);
  return b;
}

// Taps of dimensions 0 and 1 inside x for row (o0, o1), and the row's part of the divisor.
struct row_span {
  int64_t a0, a1, b0, b1;  // j0 in [a0, a1), j1 in [b0, b1)
  int64_t s0, s1;          // first taps (may be negative)
  float div01;
};
row_span span_of(const geom& G, int64_t o0, int64_t o1) {
  const pool_dim &d0 = G.g.d[0], &d1 = G.g.d[1];
  row_span r{};
  d0.inside(o0, &r.a0, &r.a1);
  d1.inside(o1, &r.b0, &r.b1);
  r.s0 = d0.start(o0);
  r.s1 = d1.start(o1);
  const int64_t c0 = std::max<int64_t>(r.a1 - r.a0, 0), c1 = std::max<int64_t>(r.b1 - r.b0, 0);
  r.div01 = G.include_pad ? static_cast<float>(d0.padded_taps(o0) * d1.padded_taps(o1))
                          : static_cast<float>(c0 * c1);
  return r;
}
// Offset in the plane of row j0, j1 of the window (tap coordinates s0 + j0*d0, s1 + j1*d1).
inline int64_t row_offset(const geom& G, const row_span& r, int64_t j0, int64_t j1) {
  return ((r.s0 + j0 * G.g.d[0].dilation) * G.in1 + (r.s1 + j1 * G.g.d[1].dilation)) * G.in2;
}
// Divisor of output o2 of a row.
inline float divisor(const geom& G, const row_span& r, int64_t o2) {
  const pool_dim& d = G.g.d[2];
  if (G.include_pad) return r.div01 * static_cast<float>(d.padded_taps(o2));
  int64_t c0, c1;
  d.inside(o2, &c0, &c1);
  return r.div01 * static_cast<float>(std::max<int64_t>(c1 - c0, 0));
}

// Max over the windows of one row: m[o2] = the maximum, arg[o2] = the row-major offset in the
// plane of the first maximum in window order (first NaN wins), -1 for a window without taps
// inside x (m = -inf). With want_arg = false only m is computed.
// A per-thread table of n int64 (only grows).
int64_t* tap_table(int64_t n) {
  thread_local std::vector<int64_t> table;
  if (static_cast<int64_t>(table.size()) < n) table.resize(static_cast<size_t>(n));
  return table.data();
}

// One tap of the interior outputs: m = max(m, v) with NaN propagating (ST: the stride when a
// compile-time 1 or 2, else 0 and `st` at run time).
template <int ST>
inline void max_pass(const float* src, int64_t st, int64_t n, float* __restrict m) {
  const int64_t step = ST ? ST : st;
  for (int64_t i = 0; i < n; ++i) {
    const float v = src[i * step], cur = m[i];
    m[i] = ((v > cur) | (v != v)) ? v : cur;
  }
}
// Same, recording `ordinal` where the tap wins: strictly greater keeps the first maximum; a NaN
// wins unless one already did.
template <int ST>
inline void max_pass_arg(const float* src, int64_t st, int64_t n, float* __restrict m,
                         int32_t* __restrict code, int32_t ordinal) {
  const int64_t step = ST ? ST : st;
  for (int64_t i = 0; i < n; ++i) {
    const float v = src[i * step], cur = m[i];
    const bool take = (v > cur) | ((v != v) & (cur == cur));
    m[i] = take ? v : cur;
    code[i] = take ? ordinal : code[i];
  }
}

// The taps of a window inside x must fit max_row's int32 ordinals (pool_nd_check).
template <bool want_arg>
void max_row(const geom& G, const float* plane, const row_span& r, float* __restrict m,
             int64_t* __restrict arg, int32_t* __restrict code) {
  const pool_dim& d = G.g.d[2];
  const int64_t out = d.out, k = d.kernel, dil = d.dilation, st = d.stride;
  for (int64_t o = 0; o < out; ++o) {
    m[o] = -std::numeric_limits<float>::infinity();
    if (want_arg) arg[o] = -1;
  }
  for (int64_t j0 = r.a0; j0 < r.a1; ++j0)
    for (int64_t j1 = r.b0; j1 < r.b1; ++j1) {
      const int64_t row = row_offset(G, r, j0, j1);
      const float* xr = plane + row;
      // border windows, one by one
      for_border(G, out, [&](int64_t o) {
        int64_t c0, c1;
        d.inside(o, &c0, &c1);
        const int64_t s = d.start(o);
        for (int64_t j = c0; j < c1; ++j) {
          const int64_t t = s + j * dil;
          const float v = xr[t];
          const bool take = want_arg ? (arg[o] < 0 || v > m[o] || (v != v && m[o] == m[o]))
                                     : (v > m[o] || v != v);
          if (take) {
            m[o] = v;
            if (want_arg) arg[o] = row + t;
          }
        }
      });
      // interior windows: tap-outer, output-inner, branch-free selects. Their first tap in
      // window order, (a0, b0, 0), initialises them, so no "nothing taken yet" test is needed.
      // The winner is kept as the tap's ordinal in the window (the same for every output of a
      // pass, and as wide as a float, so the selects vectorise) and turned into an offset at
      // the end.
      const int64_t n = G.hi - G.lo;
      if (n <= 0) continue;
      float* __restrict mi = m + G.lo;
      const int64_t s0 = d.start(G.lo);
      const bool first_row = j0 == r.a0 && j1 == r.b0;
      for (int64_t j = 0; j < k; ++j) {
        const float* src = xr + s0 + j * dil;
        const int32_t ordinal =
            static_cast<int32_t>(((j0 - r.a0) * (r.b1 - r.b0) + (j1 - r.b0)) * k + j);
        if (first_row && j == 0) {
          for (int64_t i = 0; i < n; ++i) mi[i] = src[i * st];
          if (want_arg) std::fill(code, code + n, 0);
        } else if (want_arg) {
          if (st == 1)
            max_pass_arg<1>(src, st, n, mi, code, ordinal);
          else if (st == 2)
            max_pass_arg<2>(src, st, n, mi, code, ordinal);
          else
            max_pass_arg<0>(src, st, n, mi, code, ordinal);
        } else {
          if (st == 1)
            max_pass<1>(src, st, n, mi);
          else if (st == 2)
            max_pass<2>(src, st, n, mi);
          else
            max_pass<0>(src, st, n, mi);
        }
      }
    }
  if (want_arg && G.hi > G.lo && r.a1 > r.a0 && r.b1 > r.b0) {
    // ordinal -> offset of the tap in the plane, less the output's start: a table, not divisions
    const int64_t taps = (r.a1 - r.a0) * (r.b1 - r.b0) * k;
    int64_t* table = tap_table(taps);
    int64_t t = 0;
    for (int64_t j0 = r.a0; j0 < r.a1; ++j0)
      for (int64_t j1 = r.b0; j1 < r.b1; ++j1)
        for (int64_t j = 0; j < k; ++j) table[t++] = row_offset(G, r, j0, j1) + j * dil;
    for (int64_t i = 0; i < G.hi - G.lo; ++i) arg[G.lo + i] = table[code[i]] + d.start(G.lo + i);
  }
  // A window whose rows 0/1 have no tap inside x never ran the loops above: m = -inf, arg -1.
}

// Sums over the windows of one row: s[o2] = the sum of the taps inside x.
void sum_row(const geom& G, const float* plane, const row_span& r, float* __restrict s) {
  const pool_dim& d = G.g.d[2];
  const int64_t out = d.out, k = d.kernel, dil = d.dilation, st = d.stride;
  std::fill(s, s + out, 0.0f);
  for (int64_t j0 = r.a0; j0 < r.a1; ++j0)
    for (int64_t j1 = r.b0; j1 < r.b1; ++j1) {
      const float* xr = plane + row_offset(G, r, j0, j1);
      for_border(G, out, [&](int64_t o) {
        int64_t c0, c1;
        d.inside(o, &c0, &c1);
        const int64_t t0 = d.start(o);
        float acc = s[o];
        for (int64_t j = c0; j < c1; ++j) acc += xr[t0 + j * dil];
        s[o] = acc;
      });
      const int64_t n = G.hi - G.lo;
      if (n <= 0) continue;
      float* __restrict si = s + G.lo;
      const int64_t s0 = d.start(G.lo);
      for (int64_t j = 0; j < k; ++j) {
        const float* src = xr + s0 + j * dil;
        if (st == 1) {
          for (int64_t i = 0; i < n; ++i) si[i] += src[i];
        } else {
          for (int64_t i = 0; i < n; ++i) si[i] += src[i * st];
        }
      }
    }
}

// ONNX's Indices from a row-major offset in the plane.
inline int64_t to_storage_order(const geom& G, int64_t off) {
  if (!G.column_major || off < 0) return off;
  const int64_t t2 = off % G.in2, t01 = off / G.in2;
  const int64_t t1 = t01 % G.in1, t0 = t01 / G.in1;
  const int64_t in0 = G.g.d[0].in;
  return t0 + t1 * in0 + t2 * in0 * G.in1;
}

int64_t row_cost(const geom& G) {
  const auto& d = G.g.d;
  return std::max<int64_t>(1, d[2].out * d[0].kernel * d[1].kernel * d[2].kernel);
}

// ---- one window per plane (GlobalAveragePool, GlobalMaxPool) --------------------------------
// Whether every plane has one window, covering it whole with no padding inside it: the global
// pooling of ONNX, or a window the size of the input. The forward then reduces each plane as one
// contiguous row (the row path would take one strided pass per tap row and window, a scalar
// loop for a 7 x 7 plane).
bool is_whole_plane(const geom& G) {
  for (const pool_dim& d : G.g.d)
    if (d.out != 1 || d.pad_begin != 0 || d.dilation != 1 || d.kernel != d.in) return false;
  return true;
}

// y[p] = the mean (average) or maximum (NaN if any element is NaN) of plane p, planes in
// parallel. The sum is sum_floats's (8 float lanes, added in double).
void whole_plane_forward(const geom& G, const float* x, float* y) {
  const int64_t len = G.in_plane;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, len));
  parallel_for(G.g.planes, grain, [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const float* p = x + pl * len;
      if (!G.max) {
        y[pl] = static_cast<float>(sum_floats(p, len) / static_cast<double>(len));
        continue;
      }
      float m = -std::numeric_limits<float>::infinity();
      bool nan = false;
      for (int64_t i = 0; i < len; ++i) {  // vectorises: selects and an or
        m = p[i] > m ? p[i] : m;
        nan |= p[i] != p[i];
      }
      y[pl] = nan ? std::numeric_limits<float>::quiet_NaN() : m;
    }
  });
}

// ---- 2-D max pooling, 2x2 windows at stride 2 ------------------------------------------------
// Whether G is 2-D max pooling (leading dimension of extent 1) with 2x2 windows at stride 2, no
// dilation, no begin padding and every window inside x: the fast path of both directions (no
// clipping).
bool is_plain_2x2_max(const geom& G) {
  const pool_dim* d = G.g.d;
  if (!G.max || d[0].in != 1 || d[0].kernel != 1) return false;
  for (int a = 1; a < 3; ++a)
    if (d[a].kernel != 2 || d[a].stride != 2 || d[a].dilation != 1 || d[a].pad_begin != 0 ||
        2 * d[a].out > d[a].in)
      return false;
  return true;
}

// max of a 2x2 window; NaN propagates (a NaN anywhere gives NaN), as the reference. The
// compares are plain selects (maxss-like) and the NaN test a bitwise or: no branches.
inline bool any_nan(float a, float b, float c, float d) {
  return (a != a) | (b != b) | (c != c) | (d != d);
}
inline float max4(float a, float b, float c, float d) {
  const float ab = b > a ? b : a, cd = d > c ? d : c;
  const float m = cd > ab ? cd : ab;
  return any_nan(a, b, c, d) ? std::numeric_limits<float>::quiet_NaN() : m;
}

// Max-pool 2x2 backward for one output row without NaNs, in two vectorisable passes: the
// windows' four inputs are de-interleaved into unit-stride arrays, the first-maximum masks
// computed with compares and bit operations, then dy's bits written back interleaved.
constexpr int64_t kRowBlock = 512;

bool rows_have_nan(const float* r0, const float* r1, int64_t n) {
  int bad = 0;
  for (int64_t j = 0; j < n; ++j) bad |= (r0[j] != r0[j]) | (r1[j] != r1[j]);
  return bad != 0;
}

void maxpool2_backward_row(const float* __restrict r0, const float* __restrict r1,
                           const float* __restrict dy, int64_t q, float* __restrict d0,
                           float* __restrict d1) {
  alignas(64) float a[kRowBlock], b[kRowBlock], c[kRowBlock], d[kRowBlock];
  alignas(64) uint32_t wa[kRowBlock], wb[kRowBlock], wc[kRowBlock], wd[kRowBlock];
  for (int64_t t = 0; t < q; ++t) {
    a[t] = r0[2 * t];
    b[t] = r0[2 * t + 1];
    c[t] = r1[2 * t];
    d[t] = r1[2 * t + 1];
  }
  for (int64_t t = 0; t < q; ++t) {
    const float ab = b[t] > a[t] ? b[t] : a[t], cd = d[t] > c[t] ? d[t] : c[t];
    const float m = cd > ab ? cd : ab;
    const uint32_t ma = 0u - static_cast<uint32_t>(a[t] == m);
    const uint32_t mb = (0u - static_cast<uint32_t>(b[t] == m)) & ~ma;
    const uint32_t mc = (0u - static_cast<uint32_t>(c[t] == m)) & ~ma & ~mb;
    const uint32_t md = ~(ma | mb | mc);
    uint32_t g;
    std::memcpy(&g, dy + t, 4);
    wa[t] = g & ma;
    wb[t] = g & mb;
    wc[t] = g & mc;
    wd[t] = g & md;
  }
  uint32_t* o0 = reinterpret_cast<uint32_t*>(d0);
  uint32_t* o1 = reinterpret_cast<uint32_t*>(d1);
  for (int64_t t = 0; t < q; ++t) {
    o0[2 * t] = wa[t];
    o0[2 * t + 1] = wb[t];
    o1[2 * t] = wc[t];
    o1[2 * t + 1] = wd[t];
  }
}

#ifdef NNP_CPU_X86_KERNELS
// max(a, b) per lane with NaN propagating (a NaN in either gives NaN): vmaxps returns its
// second operand when either is NaN, so the unordered lanes take a + b (a NaN) instead.
NNP_CPU_AVX2_FMA inline __m256 max_nan8(__m256 a, __m256 b) {
  return _mm256_blendv_ps(_mm256_max_ps(a, b), _mm256_add_ps(a, b),
                          _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
}
NNP_CPU_AVX2_FMA inline __m128 max_nan4(__m128 a, __m128 b) {
  return _mm_blendv_ps(_mm_max_ps(a, b), _mm_add_ps(a, b), _mm_cmpunord_ps(a, b));
}

// One output row of 2x2 max pooling: out[j] = the maximum of r0[2j], r0[2j+1], r1[2j],
// r1[2j+1] (NaN if any is NaN), 8 outputs from 16 columns of both rows at a time: the rows'
// maximum, then the even and odd columns de-interleaved within 128-bit lanes and combined; 4
// outputs from 8 columns; the last ones by max4. The same results as max4 (NaN payloads aside).
NNP_CPU_AVX2_FMA void maxpool2_row_avx2(const float* r0, const float* r1, int64_t q, float* out) {
  int64_t j = 0;
  for (; j + 8 <= q; j += 8) {
    const __m256 a = max_nan8(_mm256_loadu_ps(r0 + 2 * j), _mm256_loadu_ps(r1 + 2 * j));
    const __m256 b = max_nan8(_mm256_loadu_ps(r0 + 2 * j + 8), _mm256_loadu_ps(r1 + 2 * j + 8));
    // lane 0: outputs j..j+1 (from a) and j+4..j+5 (from b); lane 1: j+2..j+3 and j+6..j+7
    const __m256 even = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    const __m256 odd = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    const __m256 m = max_nan8(even, odd);  // [j j+1 j+4 j+5 | j+2 j+3 j+6 j+7]
    _mm256_storeu_ps(out + j, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(m),
                                                                     _MM_SHUFFLE(3, 1, 2, 0))));
  }
  if (j + 4 <= q) {
    const __m128 a = max_nan4(_mm_loadu_ps(r0 + 2 * j), _mm_loadu_ps(r1 + 2 * j));
    const __m128 b = max_nan4(_mm_loadu_ps(r0 + 2 * j + 4), _mm_loadu_ps(r1 + 2 * j + 4));
    _mm_storeu_ps(out + j, max_nan4(_mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                                    _mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1))));
    j += 4;
  }
  for (; j < q; ++j) out[j] = max4(r0[2 * j], r0[2 * j + 1], r1[2 * j], r1[2 * j + 1]);
}
#endif

// Forward of one plane x [h, w] -> y [p, q] (is_plain_2x2_max); with AVX2, 8 outputs at a time
// (maxpool2_row_avx2).
void maxpool2_forward_plane(const float* xp, int64_t w, int64_t p, int64_t q, float* yp) {
  for (int64_t i = 0; i < p; ++i) {
    const float* r0 = xp + 2 * i * w;
    const float* r1 = r0 + w;
    float* out = yp + i * q;
#ifdef NNP_CPU_X86_KERNELS
    if (cpu_avx2_fma()) {
      maxpool2_row_avx2(r0, r1, q, out);
      continue;
    }
#endif
    for (int64_t j = 0; j < q; ++j)
      out[j] = max4(r0[2 * j], r0[2 * j + 1], r1[2 * j], r1[2 * j + 1]);
  }
}

// Backward of one plane: each window writes its four dx entries (dy at the first maximum, 0
// elsewhere) with selects instead of unpredictable branches.
void maxpool2_backward_plane(const float* xp, const float* dyp, int64_t h, int64_t w, int64_t p,
                             int64_t q, float* dxp) {
  if (2 * p != h || 2 * q != w) std::memset(dxp, 0, sizeof(float) * static_cast<size_t>(h * w));
  for (int64_t i = 0; i < p; ++i) {
    const float* r0 = xp + 2 * i * w;
    const float* r1 = r0 + w;
    float* d0 = dxp + 2 * i * w;
    float* d1 = d0 + w;
    const float* dyr = dyp + i * q;
    if (q <= kRowBlock && !rows_have_nan(r0, r1, 2 * q)) {
      maxpool2_backward_row(r0, r1, dyr, q, d0, d1);
      continue;
    }
    for (int64_t j = 0; j < q; ++j) {
      const float a = r0[2 * j], bb = r0[2 * j + 1], cc = r1[2 * j], dd = r1[2 * j + 1];
      // The first element equal to the maximum (row-major a, b, c, d) from selects, not
      // unpredictable branches; a window holding a NaN (rare) routes to its first NaN.
      uint32_t ta, tb, tc;  // 1 where that element is the maximum
      if (!any_nan(a, bb, cc, dd)) {
        const float ab = bb > a ? bb : a, cd = dd > cc ? dd : cc;
        const float m = cd > ab ? cd : ab;
        ta = a == m;
        tb = bb == m;
        tc = cc == m;
      } else {
        ta = a != a;
        tb = bb != bb;
        tc = cc != cc;
      }
      // first maximum only: masks of all ones or zeros, applied to dy's bits
      const uint32_t ma = 0u - ta, mb = (0u - tb) & ~ma, mc = (0u - tc) & ~ma & ~mb;
      const uint32_t md = ~(ma | mb | mc);
      uint32_t dbits;
      std::memcpy(&dbits, dyr + j, 4);
      const uint32_t wv[4] = {dbits & ma, dbits & mb, dbits & mc, dbits & md};
      std::memcpy(d0 + 2 * j, wv, 8);
      std::memcpy(d1 + 2 * j, wv + 2, 8);
    }
  }
}

// Both directions of the fast path over every plane, planes in parallel.
void maxpool2_forward(const geom& G, const float* x, float* y) {
  const pool_dim* d = G.g.d;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, G.in_plane));
  parallel_for(G.g.planes, grain, [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl)
      maxpool2_forward_plane(x + pl * G.in_plane, d[2].in, d[1].out, d[2].out,
                             y + pl * G.out_plane);
  });
}

void maxpool2_backward(const geom& G, const float* x, const float* dy, float* dx) {
  const pool_dim* d = G.g.d;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, G.in_plane));
  parallel_for(G.g.planes, grain, [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl)
      maxpool2_backward_plane(x + pl * G.in_plane, dy + pl * G.out_plane, d[1].in, d[2].in,
                              d[1].out, d[2].out, dx + pl * G.in_plane);
  });
}

// ---- 2-D max pooling forward, 3x3 windows at stride 2 ----------------------------------------
// ResNet's stem pooling (kernel 3, stride 2, padding 1 over [N, 64, 112, 112]: 24-35 ms -> 6.5-10
// ms at N = 32, 2 threads, alternated runs). The general row path takes 9 strided passes per
// output row; here each output row takes the maximum of its (up to 3) input rows inside x once,
// column by column (unit stride), then of 3 columns at stride 2 of that, 8 outputs at a time
// with AVX2 (even and odd columns de-interleaved within 128-bit lanes, as maxpool2_row_avx2).
// Any padding: border windows clip their taps to x (a window with none inside x gives -inf, as
// max_row). No Indices (the general path gives them).
bool is_3x3_s2_max(const geom& G) {
  const pool_dim* d = G.g.d;
  if (!G.max || d[0].in != 1 || d[0].kernel != 1) return false;
  for (int a = 1; a < 3; ++a)
    if (d[a].kernel != 3 || d[a].stride != 2 || d[a].dilation != 1) return false;
  return true;
}

// max with NaN propagating (a NaN in either gives NaN), as max4.
inline float max_nan(float a, float b) { return ((a != a) | (b != b)) ? a + b : (b > a ? b : a); }

#ifdef NNP_CPU_X86_KERNELS
// The even and odd columns of 16 consecutive ones (a, then b), within 128-bit lanes.
NNP_CPU_AVX2_FMA inline void even_odd(__m256 a, __m256 b, __m256* even, __m256* odd) {
  *even = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
  *odd = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
}

// out[j] = max(v[2j + s], v[2j + s + 1], v[2j + s + 2]) for j in [0, n), NaN propagating. It
// reads v in blocks of 8 outputs, up to v[2n + s + 15]: for interior windows (2(n - 1) + s + 2
// below v's length w) that is at most 16 floats past w, which the caller's buffer holds
// (kMax3Slack); what the lanes past n read is not stored.
NNP_CPU_AVX2_FMA void max3_s2_avx2(const float* v, int64_t s, int64_t n, float* out) {
  int64_t j = 0;
  for (; j < n; j += 8) {
    const float* p = v + 2 * j + s;
    __m256 e0, o0, e1, o1;
    even_odd(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8), &e0, &o0);
    even_odd(_mm256_loadu_ps(p + 2), _mm256_loadu_ps(p + 10), &e1, &o1);
    // lanes [j j+1 j+4 j+5 | j+2 j+3 j+6 j+7], as in maxpool2_row_avx2
    const __m256 m = max_nan8(max_nan8(e0, o0), e1);
    const __m256 r =
        _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(m), _MM_SHUFFLE(3, 1, 2, 0)));
    store_first(out + j, r, n - j);
  }
}
#endif

// v[c] = max over the rows of x (a [rows][w] block w apart) for c in [c0, w), NaN propagating.
void max_rows(const float* x, int64_t rows, int64_t w, int64_t c0, float* v) {
  for (int64_t c = c0; c < w; ++c) {
    float m = x[c];
    for (int64_t r = 1; r < rows; ++r) m = max_nan(m, x[r * w + c]);
    v[c] = m;
  }
}

#ifdef NNP_CPU_X86_KERNELS
// The same for c in [0, w), 8 columns at a time.
NNP_CPU_AVX2_FMA void max_rows_avx2(const float* x, int64_t rows, int64_t w, float* v) {
  int64_t c = 0;
  for (; c + 8 <= w; c += 8) {
    __m256 m = _mm256_loadu_ps(x + c);
    for (int64_t r = 1; r < rows; ++r) m = max_nan8(m, _mm256_loadu_ps(x + r * w + c));
    _mm256_storeu_ps(v + c, m);
  }
  max_rows(x, rows, w, c, v);
}
#endif

constexpr int64_t kMax3Slack = 32;  // floats past a row's end that max3_s2_avx2 may read

// Forward of one plane x [h, w] -> y [p, q]; v: a buffer of w + kMax3Slack floats.
void maxpool3s2_forward_plane(const geom& G, const float* xp, float* yp, float* v) {
  const pool_dim &dr = G.g.d[1], &dc = G.g.d[2];
  const int64_t w = dc.in, q = dc.out;
  for (int64_t i = 0; i < dr.out; ++i) {
    float* out = yp + i * q;
    int64_t r0, r1;
    dr.inside(i, &r0, &r1);
    if (r0 >= r1) {  // no row of the window inside x (a ceil_mode window past the end)
      std::fill(out, out + q, -std::numeric_limits<float>::infinity());
      continue;
    }
    const float* x0 = xp + (dr.start(i) + r0) * w;
    const int64_t rows = r1 - r0;
    bool vectorised = false;
#ifdef NNP_CPU_X86_KERNELS
    if (cpu_avx2_fma()) {
      max_rows_avx2(x0, rows, w, v);
      if (G.hi > G.lo) max3_s2_avx2(v, dc.start(G.lo), G.hi - G.lo, out + G.lo);
      vectorised = true;
    }
#endif
    if (!vectorised) {
      max_rows(x0, rows, w, 0, v);
      for (int64_t j = G.lo; j < G.hi; ++j) {
        const float* t = v + dc.start(j);
        out[j] = max_nan(max_nan(t[0], t[1]), t[2]);
      }
    }
    for_border(G, q, [&](int64_t j) {
      int64_t c0, c1;
      dc.inside(j, &c0, &c1);
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t c = c0; c < c1; ++c) m = max_nan(m, v[dc.start(j) + c]);
      out[j] = m;
    });
  }
}

void maxpool3s2_forward(const geom& G, const float* x, float* y) {
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, G.in_plane));
  const int64_t w = G.g.d[2].in;
  parallel_for(G.g.planes, grain, [&](int64_t b, int64_t e) {
    float* v = buffers(w + kMax3Slack).val.data();
    for (int64_t pl = b; pl < e; ++pl)
      maxpool3s2_forward_plane(G, x + pl * G.in_plane, y + pl * G.out_plane, v);
  });
}

// The NNP_OP_POOL_* call of NNP_OP_POOL2D_* call c: its params as nnp_pool_params (window,
// strides and pads [top, left, bottom, right] in their ONNX places, no auto_pad, dilation 1;
// ceil_mode, count_include_pad and global mean the same there) in q, which the returned call
// points to.
op_call as_pool_nd(const op_call& c, nnp_pool_params* q) {
  *q = nnp::pool_params_of_2d(c.params_as<nnp_pool2d_params>());
  return c.with_params(q);
}

}  // namespace

void pool_nd_check(const op_call& c) {
  const auto prm = c.params_as<nnp_pool_params>();
  if (prm.mode != NNP_POOL_MAX) return;
  const pool_nd_geometry g = resolve_pool_nd(prm, *c.in(0));
  // Each factor is below 2^31 (kernel_shape is int32) and the product is checked after each
  // step, so it cannot overflow.
  int64_t taps = 1;
  for (const pool_dim& d : g.d) {
    taps *= std::min(d.kernel, d.in);
    if (taps > std::numeric_limits<int32_t>::max()) break;
  }
  if (taps > std::numeric_limits<int32_t>::max())
    unsupported(
        "max pooling windows of 2^31 or more taps inside x: the cpu backend supports up to "
        "2^31 - 1");
}

void pool_forward(const op_call& c) {
  const auto prm = c.params_as<nnp_pool_params>();
  const geom G = make_geom(prm, *c.in(0));
  if (G.g.planes == 0) return;  // no elements; the extents' products may not fit int64
  const float* x = f32(c.in(0));
  float* y = f32(c.out(0));
  int64_t* indices = c.out(1) != nullptr ? data_ptr<int64_t>(*c.out(1)) : nullptr;
  if (indices == nullptr && is_plain_2x2_max(G)) {
    maxpool2_forward(G, x, y);
    return;
  }
  if (indices == nullptr && is_whole_plane(G)) {
    whole_plane_forward(G, x, y);
    return;
  }
  if (indices == nullptr && is_3x3_s2_max(G)) {
    maxpool3s2_forward(G, x, y);
    return;
  }
  const auto& d = G.g.d;
  const int64_t rows_per_plane = d[0].out * d[1].out, out2 = d[2].out;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / row_cost(G));
  parallel_for(G.g.planes * rows_per_plane, grain, [&](int64_t b, int64_t e) {
    row_buffers& buf = buffers(out2);
    for (int64_t row = b; row < e; ++row) {
      const int64_t pl = row / rows_per_plane, rr = row % rows_per_plane;
      const row_span r = span_of(G, rr / d[1].out, rr % d[1].out);
      const float* plane = x + pl * G.in_plane;
      float* yr = y + row * out2;
      if (G.max && indices != nullptr) {
        max_row<true>(G, plane, r, yr, buf.arg.data(), buf.code.data());
        int64_t* ir = indices + row * out2;
        const int64_t base = pl * G.in_plane;
        for (int64_t o = 0; o < out2; ++o) {
          const int64_t a = buf.arg[static_cast<size_t>(o)];
          ir[o] = a < 0 ? -1 : base + to_storage_order(G, a);
        }
      } else if (G.max) {
        max_row<false>(G, plane, r, yr, nullptr, nullptr);
      } else {
        sum_row(G, plane, r, yr);
        for (int64_t o = 0; o < out2; ++o) yr[o] = yr[o] / divisor(G, r, o);
      }
    }
  });
}

void pool_backward(const op_call& c) {
  const auto prm = c.params_as<nnp_pool_params>();
  const geom G = make_geom(prm, *c.in(0));
  if (G.g.planes == 0) return;  // no elements; the extents' products may not fit int64
  const float* x = f32(c.in(0));
  const float* dy = f32(c.in(2));  // inputs {x, y, dy}; the maxima are recomputed from x
  float* dx = f32(c.out(0));
  if (is_plain_2x2_max(G)) {
    maxpool2_backward(G, x, dy, dx);
    return;
  }
  const auto& d = G.g.d;
  const int64_t out2 = d[2].out, k2 = d[2].kernel, dil = d[2].dilation, st = d[2].stride;
  const int64_t plane_cost = std::max<int64_t>(1, d[0].out * d[1].out) * row_cost(G);
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / plane_cost);
  parallel_for(G.g.planes, grain, [&](int64_t b, int64_t e) {
    row_buffers& buf = buffers(out2);
    float* __restrict val = buf.val.data();
    for (int64_t pl = b; pl < e; ++pl) {
      const float* plane = x + pl * G.in_plane;
      float* dxp = dx + pl * G.in_plane;
      std::memset(dxp, 0, sizeof(float) * static_cast<size_t>(G.in_plane));
      for (int64_t o0 = 0; o0 < d[0].out; ++o0)
        for (int64_t o1 = 0; o1 < d[1].out; ++o1) {
          const row_span r = span_of(G, o0, o1);
          const float* dyr = dy + ((pl * d[0].out + o0) * d[1].out + o1) * out2;
          if (G.max) {
            int64_t* arg = buf.arg.data();
            max_row<true>(G, plane, r, val, arg, buf.code.data());
            for (int64_t o = 0; o < out2; ++o)
              if (arg[o] >= 0) dxp[arg[o]] += dyr[o];
            continue;
          }
          // average: dy / divisor to every tap inside x
          for (int64_t o = 0; o < out2; ++o) val[o] = dyr[o] / divisor(G, r, o);
          for (int64_t j0 = r.a0; j0 < r.a1; ++j0)
            for (int64_t j1 = r.b0; j1 < r.b1; ++j1) {
              float* dr = dxp + row_offset(G, r, j0, j1);
              for_border(G, out2, [&](int64_t o) {
                int64_t c0, c1;
                d[2].inside(o, &c0, &c1);
                const int64_t t0 = d[2].start(o);
                for (int64_t j = c0; j < c1; ++j) dr[t0 + j * dil] += val[o];
              });
              const int64_t n = G.hi - G.lo;
              if (n <= 0) continue;
              const float* __restrict vi = val + G.lo;
              const int64_t s0 = d[2].start(G.lo);
              for (int64_t j = 0; j < k2; ++j) {
                float* dst = dr + s0 + j * dil;
                if (st == 1) {
                  for (int64_t i = 0; i < n; ++i) dst[i] += vi[i];
                } else {
                  for (int64_t i = 0; i < n; ++i) dst[i * st] += vi[i];
                }
              }
            }
        }
    }
  });
}

void pool2d_check(const op_call& c) {
  nnp_pool_params q;
  pool_nd_check(as_pool_nd(c, &q));
}

void pool2d_forward(const op_call& c) {
  nnp_pool_params q;
  pool_forward(as_pool_nd(c, &q));
}

void pool2d_backward(const op_call& c) {
  nnp_pool_params q;
  pool_backward(as_pool_nd(c, &q));
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kPoolOps[] = {
    {NNP_OP_POOL2D_FORWARD,  kit::f32,            pool2d_forward, pool2d_check},
    {NNP_OP_POOL2D_BACKWARD, kit::f32,            pool2d_backward, pool2d_check},
    {NNP_OP_POOL_FORWARD,    kit::f32,            pool_forward, pool_nd_check},
    {NNP_OP_POOL_BACKWARD,   kit::f32,            pool_backward, pool_nd_check},
};
// clang-format on
extern const kit::op_row_list kPoolRows = kit::row_list(kPoolOps);

}  // namespace nnp::cpu
