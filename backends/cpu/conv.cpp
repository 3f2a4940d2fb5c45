// 2-D convolution on the CPU (NNP_OP_CONV2D_*): forward, backward-data, backward-filter,
// backward-bias; stride, per-side padding, dilation, groups (depthwise included).
//
// Speed: im2col + OpenBLAS SGEMM. Per image and group, im2col unfolds the input into a column
// matrix [C/g*R*S, P*Q] (row-wise memcpy when stride_w = 1) in a per-thread scratch buffer
// reused across calls, and one single-threaded SGEMM does the multiply-adds:
//   forward          y_g  [K/g, PQ]      = w_g [K/g, CRS] . col [CRS, PQ]
//   backward-data    col  [CRS, PQ]      = w_g^T . dy_g [K/g, PQ], then col2im (scatter-add)
//   backward-filter  dw_g [K/g, CRS]    += dy_g . col^T   (per-chunk partial sums, then summed)
// A 1x1, stride-1, unpadded convolution skips im2col (the input already is the column matrix).
// TBB runs images (and groups) in parallel; backward-filter splits the batch into four chunks per
// thread, each accumulating into its own partial dw (call-level scratch), summed at the end.
#include "cpu_backend.hpp"

#include <algorithm>
#include <cstring>

namespace nnp::cpu {
namespace {

struct conv_geom {
  int64_t n, c, h, w, k, r, s, p, q, groups, cg, kg;
  int64_t sh, sw, pt, pl, dh, dw;
  int64_t crs() const { return cg * r * s; }
  int64_t pq() const { return p * q; }
  bool direct() const {  // 1x1, stride 1, no padding: col == input
    return r == 1 && s == 1 && sh == 1 && sw == 1 && pt == 0 && pl == 0 && p == h && q == w;
  }
};

conv_geom make_geom(const nnp_conv2d_params& prm, const DLTensor& x, const DLTensor& w,
                    const DLTensor& y) {
  conv_geom g{};
  g.n = x.shape[0];
  g.c = x.shape[1];
  g.h = x.shape[2];
  g.w = x.shape[3];
  g.k = w.shape[0];
  g.r = w.shape[2];
  g.s = w.shape[3];
  g.p = y.shape[2];
  g.q = y.shape[3];
  g.groups = prm.groups;
  g.cg = g.c / g.groups;
  g.kg = g.k / g.groups;
  g.sh = prm.stride_h;
  g.sw = prm.stride_w;
  g.pt = prm.pad_top;
  g.pl = prm.pad_left;
  g.dh = prm.dilation_h;
  g.dw = prm.dilation_w;
  return g;
}

// Unfolds x_g [cg, h, w] into col [cg*r*s, p*q].
void im2col(const conv_geom& g, const float* x, float* col) {
  for (int64_t c = 0; c < g.cg; ++c) {
    const float* xc = x + c * g.h * g.w;
    for (int64_t r = 0; r < g.r; ++r) {
      for (int64_t s = 0; s < g.s; ++s) {
        float* row = col + ((c * g.r + r) * g.s + s) * g.pq();
        const int64_t col_off = s * g.dw - g.pl;
        // Output columns q whose input column iw = q*sw + col_off lies in [0, w).
        int64_t q0 = 0, q1 = g.q;
        if (col_off < 0) q0 = std::min<int64_t>(g.q, (-col_off + g.sw - 1) / g.sw);
        const int64_t lim = g.w - col_off;  // need q*sw < lim
        q1 = lim <= 0 ? 0 : std::min<int64_t>(g.q, (lim + g.sw - 1) / g.sw);
        if (q1 < q0) q1 = q0;
        for (int64_t p = 0; p < g.p; ++p) {
          float* out = row + p * g.q;
          const int64_t ih = p * g.sh - g.pt + r * g.dh;
          if (ih < 0 || ih >= g.h) {
            std::memset(out, 0, sizeof(float) * static_cast<size_t>(g.q));
            continue;
          }
          const float* xr = xc + ih * g.w + col_off;
          for (int64_t qq = 0; qq < q0; ++qq) out[qq] = 0.0f;
          if (g.sw == 1) {
            // a plain loop, not memcpy: rows are short (tens of floats) and a libc call per
            // row costs more than the copy
            for (int64_t qq = q0; qq < q1; ++qq) out[qq] = xr[qq];
          } else {
            for (int64_t qq = q0; qq < q1; ++qq) out[qq] = xr[qq * g.sw];
          }
          for (int64_t qq = q1; qq < g.q; ++qq) out[qq] = 0.0f;
        }
      }
    }
  }
}

// Folds col [cg*r*s, p*q] back, adding into dx_g [cg, h, w] (which the caller zeroed).
void col2im(const conv_geom& g, const float* col, float* dx) {
  for (int64_t c = 0; c < g.cg; ++c) {
    float* xc = dx + c * g.h * g.w;
    for (int64_t r = 0; r < g.r; ++r) {
      for (int64_t s = 0; s < g.s; ++s) {
        const float* row = col + ((c * g.r + r) * g.s + s) * g.pq();
        const int64_t col_off = s * g.dw - g.pl;
        int64_t q0 = 0, q1 = g.q;
        if (col_off < 0) q0 = std::min<int64_t>(g.q, (-col_off + g.sw - 1) / g.sw);
        const int64_t lim = g.w - col_off;
        q1 = lim <= 0 ? 0 : std::min<int64_t>(g.q, (lim + g.sw - 1) / g.sw);
        for (int64_t p = 0; p < g.p; ++p) {
          const int64_t ih = p * g.sh - g.pt + r * g.dh;
          if (ih < 0 || ih >= g.h) continue;
          const float* in = row + p * g.q;
          float* xr = xc + ih * g.w + col_off;
          if (g.sw == 1) {
            for (int64_t qq = q0; qq < q1; ++qq) xr[qq] += in[qq];
          } else {
            for (int64_t qq = q0; qq < q1; ++qq) xr[qq * g.sw] += in[qq];
          }
        }
      }
    }
  }
}

// Sum of a row with 8 independent float accumulators (vectorises without -ffast-math; each
// image's plane is short, the total is accumulated in double by the caller).
inline double sum_row(const float* row, int64_t len) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= len; j += 8)
    for (int t = 0; t < 8; ++t) acc[t] += row[j + t];
  double total = 0.0;
  for (int t = 0; t < 8; ++t) total += acc[t];
  for (; j < len; ++j) total += row[j];
  return total;
}

}  // namespace

void conv2d_forward(const op_call& c) {
  const auto& prm = c.p<nnp_conv2d_params>();
  const DLTensor *X = c.in(0), *W = c.in(1), *B = c.in(2), *Y = c.out(0);
  const conv_geom g = make_geom(prm, *X, *W, *Y);
  const float *x = f32(X), *w = f32(W), *b = f32(B);
  float* y = f32(Y);
  const int64_t tasks = g.n * g.groups;
  parallel_for(tasks, 1, [&](int64_t tb, int64_t te) {
    float* col = g.direct() ? nullptr : scratch(kTaskSlot0, static_cast<size_t>(g.crs() * g.pq()));
    for (int64_t t = tb; t < te; ++t) {
      const int64_t n = t / g.groups, grp = t % g.groups;
      const float* xg = x + (n * g.c + grp * g.cg) * g.h * g.w;
      float* yg = y + (n * g.k + grp * g.kg) * g.pq();
      const float* src = xg;
      if (!g.direct()) {
        im2col(g, xg, col);
        src = col;
      }
      sgemm_rm(false, false, g.kg, g.pq(), g.crs(), 1.0f, w + grp * g.kg * g.crs(), g.crs(), src,
               g.pq(), 0.0f, yg, g.pq());
      if (b != nullptr) {
        for (int64_t k = 0; k < g.kg; ++k) {
          const float bk = b[grp * g.kg + k];
          float* yk = yg + k * g.pq();
          for (int64_t i = 0; i < g.pq(); ++i) yk[i] += bk;
        }
      }
    }
  });
}

void conv2d_backward_data(const op_call& c) {
  const auto& prm = c.p<nnp_conv2d_params>();
  const DLTensor *DY = c.in(0), *W = c.in(1), *DX = c.out(0);
  const conv_geom g = make_geom(prm, *DX, *W, *DY);
  const float *dy = f32(DY), *w = f32(W);
  float* dx = f32(DX);
  const int64_t tasks = g.n * g.groups;
  parallel_for(tasks, 1, [&](int64_t tb, int64_t te) {
    float* col = g.direct() ? nullptr : scratch(kTaskSlot0, static_cast<size_t>(g.crs() * g.pq()));
    for (int64_t t = tb; t < te; ++t) {
      const int64_t n = t / g.groups, grp = t % g.groups;
      float* dxg = dx + (n * g.c + grp * g.cg) * g.h * g.w;
      const float* dyg = dy + (n * g.k + grp * g.kg) * g.pq();
      const float* wg = w + grp * g.kg * g.crs();
      if (g.direct()) {
        sgemm_rm(true, false, g.crs(), g.pq(), g.kg, 1.0f, wg, g.crs(), dyg, g.pq(), 0.0f, dxg,
                 g.pq());
        continue;
      }
      sgemm_rm(true, false, g.crs(), g.pq(), g.kg, 1.0f, wg, g.crs(), dyg, g.pq(), 0.0f, col,
               g.pq());
      std::memset(dxg, 0, sizeof(float) * static_cast<size_t>(g.cg * g.h * g.w));
      col2im(g, col, dxg);
    }
  });
}

void conv2d_backward_filter(const op_call& c) {
  const auto& prm = c.p<nnp_conv2d_params>();
  const DLTensor *X = c.in(0), *DY = c.in(1), *DW = c.out(0);
  const conv_geom g = make_geom(prm, *X, *DW, *DY);
  const float *x = f32(X), *dy = f32(DY);
  float* dw = f32(DW);
  const int64_t wsize = g.k * g.crs();
  if (g.n == 0) {
    std::fill(dw, dw + wsize, 0.0f);
    return;
  }
  // Chunks of images, each summing into its own partial dw (chunk 0 into dw), then one sum.
  // Four chunks per thread, not one: a thread that the OS preempts (a shared machine) then
  // holds up a quarter of its share, and the others take the rest.
  const int64_t chunks = std::min<int64_t>(num_threads() == 1 ? 1 : 4 * num_threads(), g.n);
  float* partial =
      chunks > 1 ? scratch(kCallSlot0, static_cast<size_t>((chunks - 1) * wsize)) : nullptr;
  parallel_for(chunks, 1, [&](int64_t cb, int64_t ce) {
    float* col = g.direct() ? nullptr : scratch(kTaskSlot0, static_cast<size_t>(g.crs() * g.pq()));
    for (int64_t ch = cb; ch < ce; ++ch) {
      float* acc = ch == 0 ? dw : partial + (ch - 1) * wsize;
      const int64_t n0 = g.n * ch / chunks, n1 = g.n * (ch + 1) / chunks;
      for (int64_t n = n0; n < n1; ++n) {
        const float beta = n == n0 ? 0.0f : 1.0f;
        for (int64_t grp = 0; grp < g.groups; ++grp) {
          const float* xg = x + (n * g.c + grp * g.cg) * g.h * g.w;
          const float* dyg = dy + (n * g.k + grp * g.kg) * g.pq();
          const float* src = xg;
          if (!g.direct()) {
            im2col(g, xg, col);
            src = col;
          }
          sgemm_rm(false, true, g.kg, g.crs(), g.pq(), 1.0f, dyg, g.pq(), src, g.pq(), beta,
                   acc + grp * g.kg * g.crs(), g.crs());
        }
      }
    }
  });
  if (chunks > 1) {
    parallel_for(wsize, kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t ch = 1; ch < chunks; ++ch) {
        const float* part = partial + (ch - 1) * wsize;
        for (int64_t i = b; i < e; ++i) dw[i] += part[i];
      }
    });
  }
}

void conv2d_backward_bias(const op_call& c) {
  const DLTensor *DY = c.in(0), *DB = c.out(0);
  const int64_t n = DY->shape[0], k = DY->shape[1];
  int64_t pq = 1;
  for (int i = 2; i < DY->ndim; ++i) pq *= DY->shape[i];
  const float* dy = f32(DY);
  float* db = f32(DB);
  parallel_for(k, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, n * pq)),
               [&](int64_t kb, int64_t ke) {
                 for (int64_t kk = kb; kk < ke; ++kk) {
                   double sum = 0.0;
                   for (int64_t i = 0; i < n; ++i) sum += sum_row(dy + (i * k + kk) * pq, pq);
                   db[kk] = static_cast<float>(sum);
                 }
               });
}

}  // namespace nnp::cpu
