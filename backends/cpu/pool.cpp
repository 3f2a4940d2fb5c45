// 2-D max / average pooling on the CPU (NNP_OP_POOL2D_FORWARD / _BACKWARD), ONNX semantics
// with PyTorch's ceil_mode rule (nnplug_ops.h).
//
// Speed: TBB runs (image, channel) planes in parallel; each plane is a small direct loop over
// clipped windows (no padding branches inside the window loop). Max backward recomputes the
// first maximum of each window from x (no index tensor), routing dy there; planes are
// independent, so the scatter-add needs no atomics.
#include "cpu_backend.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace nnp::cpu {
namespace {

struct pool_geom {
  int64_t planes, h, w, p, q;
  pool_window win;
  bool max;
  bool include_pad;
};

pool_geom make_geom(const nnp_pool2d_params& prm, const DLTensor& x, const DLTensor& y) {
  pool_geom g{};
  g.planes = x.shape[0] * x.shape[1];
  g.h = x.shape[2];
  g.w = x.shape[3];
  g.p = y.shape[2];
  g.q = y.shape[3];
  g.win = resolve_pool_window(prm, g.h, g.w);
  g.max = prm.mode == NNP_POOL_MAX;
  g.include_pad = prm.count_include_pad != 0;
  return g;
}

struct window_span {
  int64_t h0, h1, w0, w1;  // clipped to the input
  int64_t count;           // divisor for average pooling
};

// Max pooling with 2x2 windows at stride 2 and no top / left padding, every window inside the
// input: the fast path of both directions (no clipping).
bool is_plain_2x2_max(const pool_geom& g) {
  const pool_window& wn = g.win;
  return g.max && wn.window_h == 2 && wn.window_w == 2 && wn.stride_h == 2 && wn.stride_w == 2 &&
         wn.pad_top == 0 && wn.pad_left == 0 && 2 * g.p <= g.h && 2 * g.q <= g.w;
}

window_span span_of(const pool_geom& g, int64_t p, int64_t q) {
  const pool_window& wn = g.win;
  int64_t hs = p * wn.stride_h - wn.pad_top, ws = q * wn.stride_w - wn.pad_left;
  int64_t he = std::min(hs + wn.window_h, g.h + wn.pad_bottom);
  int64_t we = std::min(ws + wn.window_w, g.w + wn.pad_right);
  window_span s{};
  const int64_t padded = (he - hs) * (we - ws);
  s.h0 = std::max<int64_t>(hs, 0);
  s.w0 = std::max<int64_t>(ws, 0);
  s.h1 = std::min(he, g.h);
  s.w1 = std::min(we, g.w);
  s.count = g.include_pad ? padded : (s.h1 - s.h0) * (s.w1 - s.w0);
  return s;
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

int64_t grain_for(const pool_geom& g) {
  const int64_t per_plane = std::max<int64_t>(1, g.h * g.w);
  return std::max<int64_t>(1, kElementwiseGrain / per_plane);
}

}  // namespace

void pool2d_forward(const op_call& c) {
  const auto& prm = c.params_as<nnp_pool2d_params>();
  const DLTensor *X = c.in(0), *Y = c.out(0);
  const pool_geom g = make_geom(prm, *X, *Y);
  const float* x = f32(X);
  float* y = f32(Y);
  const bool fast2x2 = is_plain_2x2_max(g);
  parallel_for(g.planes, grain_for(g), [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const float* xp = x + pl * g.h * g.w;
      float* yp = y + pl * g.p * g.q;
      if (fast2x2) {  // the cnn's max-pool: every window fully inside, no clipping
        for (int64_t p = 0; p < g.p; ++p) {
          const float* r0 = xp + 2 * p * g.w;
          const float* r1 = r0 + g.w;
          float* out = yp + p * g.q;
          for (int64_t q = 0; q < g.q; ++q) {
            out[q] = max4(r0[2 * q], r0[2 * q + 1], r1[2 * q], r1[2 * q + 1]);
          }
        }
        continue;
      }
      for (int64_t p = 0; p < g.p; ++p) {
        for (int64_t q = 0; q < g.q; ++q) {
          const window_span s = span_of(g, p, q);
          if (g.max) {
            float m = -std::numeric_limits<float>::infinity();
            for (int64_t i = s.h0; i < s.h1; ++i)
              for (int64_t j = s.w0; j < s.w1; ++j) {
                const float v = xp[i * g.w + j];
                if (v > m || (v != v && m == m)) m = v;
              }
            yp[p * g.q + q] = m;
          } else {
            float sum = 0.0f;
            for (int64_t i = s.h0; i < s.h1; ++i)
              for (int64_t j = s.w0; j < s.w1; ++j) sum += xp[i * g.w + j];
            // a window with no input element: 0/0 = NaN (docs/ops.md)
            yp[p * g.q + q] = sum / static_cast<float>(s.count);
          }
        }
      }
    }
  });
}

void pool2d_backward(const op_call& c) {
  const auto& prm = c.params_as<nnp_pool2d_params>();
  const DLTensor *X = c.in(0), *DY = c.in(2), *DX = c.out(0);
  const pool_geom g = make_geom(prm, *X, *DY);
  const float *x = f32(X), *dy = f32(DY);
  float* dx = f32(DX);
  const bool fast2x2 = is_plain_2x2_max(g);
  parallel_for(g.planes, grain_for(g), [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const float* xp = x + pl * g.h * g.w;
      const float* dyp = dy + pl * g.p * g.q;
      float* dxp = dx + pl * g.h * g.w;
      if (fast2x2) {
        // The cnn's max-pool: each window writes its four dx entries (dy at the first maximum,
        // 0 elsewhere) with selects instead of unpredictable branches.
        if (2 * g.p != g.h || 2 * g.q != g.w)
          std::memset(dxp, 0, sizeof(float) * static_cast<size_t>(g.h * g.w));
        for (int64_t p = 0; p < g.p; ++p) {
          const float* r0 = xp + 2 * p * g.w;
          const float* r1 = r0 + g.w;
          float* d0 = dxp + 2 * p * g.w;
          float* d1 = d0 + g.w;
          const float* dyr = dyp + p * g.q;
          if (g.q <= kRowBlock && !rows_have_nan(r0, r1, 2 * g.q)) {
            maxpool2_backward_row(r0, r1, dyr, g.q, d0, d1);
            continue;
          }
          for (int64_t q = 0; q < g.q; ++q) {
            const float a = r0[2 * q], bb = r0[2 * q + 1], cc = r1[2 * q], dd = r1[2 * q + 1];
            // The first element equal to the maximum (row-major a, b, c, d) from selects,
            // not unpredictable branches; a window holding a NaN (rare) routes to its first NaN.
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
            std::memcpy(&dbits, dyr + q, 4);
            const uint32_t w[4] = {dbits & ma, dbits & mb, dbits & mc, dbits & md};
            std::memcpy(d0 + 2 * q, w, 8);
            std::memcpy(d1 + 2 * q, w + 2, 8);
          }
        }
        continue;
      }
      std::memset(dxp, 0, sizeof(float) * static_cast<size_t>(g.h * g.w));
      for (int64_t p = 0; p < g.p; ++p) {
        for (int64_t q = 0; q < g.q; ++q) {
          const window_span s = span_of(g, p, q);
          const float d = dyp[p * g.q + q];
          if (g.max) {
            int64_t arg = -1;
            float m = -std::numeric_limits<float>::infinity();
            for (int64_t i = s.h0; i < s.h1; ++i)
              for (int64_t j = s.w0; j < s.w1; ++j) {
                const float v = xp[i * g.w + j];
                if (arg < 0 || v > m || (v != v && m == m)) {  // first maximum; NaN wins
                  m = v;
                  arg = i * g.w + j;
                }
              }
            if (arg >= 0) dxp[arg] += d;
          } else if (s.count > 0) {
            const float share = d / static_cast<float>(s.count);
            for (int64_t i = s.h0; i < s.h1; ++i)
              for (int64_t j = s.w0; j < s.w1; ++j) dxp[i * g.w + j] += share;
          }
        }
      }
    }
  });
}

}  // namespace nnp::cpu
