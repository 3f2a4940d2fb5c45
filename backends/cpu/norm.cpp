// Batch normalisation (training, inference, backward) and layer normalisation (forward,
// backward) on the CPU (NNP_OP_BATCH_NORM_*, NNP_OP_LAYER_NORM_*).
//
// Speed: batch norm runs channels in parallel (each channel's N planes are contiguous runs of
// H*W floats); statistics use two passes with double accumulators (exact enough to match the
// reference, one extra read of x that stays in cache for small planes). Layer norm runs rows
// in parallel with the same two-pass statistics (both directions with AVX2 + FMA intrinsics
// where the CPU has both: 4-lane double accumulators, 8-lane float outputs); its backward sums the
// parameter gradients (dscale, dbias) per block of 64 rows in the same pass as dx (reading x and dy
// once, along the rows), then adds the blocks in order per column: deterministic.
#include "cpu_backend.hpp"

#include <algorithm>
#include <cmath>

namespace nnp::cpu {
namespace {

struct bn_geom {
  int64_t n, c, hw;
  int64_t m() const { return n * hw; }
};
// Without elements (N or H*W = 0) n is 0 too, so that no loop runs over a huge extent beside
// the 0 ([2^40, 3, 0, 2] is a valid x); H*W is computed only when it fits (some dim is 0).
bn_geom bn_of(const DLTensor& x) {
  bn_geom g{x.shape[0], x.shape[1], 1};
  for (int i = 2; i < x.ndim; ++i)
    if (x.shape[i] == 0) g.hw = 0;
  for (int i = 2; i < x.ndim && g.hw != 0; ++i) g.hw *= x.shape[i];
  if (g.hw == 0) g.n = 0;
  return g;
}
int64_t bn_grain(const bn_geom& g) {
  return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, g.m()));
}

}  // namespace

void batch_norm_forward_training(const op_call& c) {
  const auto& p = c.params_as<nnp_batch_norm_params>();
  const DLTensor* X = c.in(0);
  const bn_geom g = bn_of(*X);
  const float *x = f32(X), *scale = f32(c.in(1)), *bias = f32(c.in(2));
  float *y = f32(c.out(0)), *rmean = f32(c.out(1)), *rvar = f32(c.out(2));
  float *smean = f32(c.out(3)), *sinv = f32(c.out(4));
  const double mom = p.momentum, eps = p.epsilon;
  const int32_t onnx_var = p.running_var_rule;
  const double m = static_cast<double>(g.m());
  // M = 0 (an empty batch): 0/0 = NaN statistics and running values (docs/ops.md), and no
  // loop over N or H*W (one of which may be huge beside the 0).
  const bool empty = g.m() == 0;
  parallel_for(g.c, bn_grain(g), [&](int64_t cb, int64_t ce) {
    for (int64_t ch = cb; ch < ce; ++ch) {
      double sum = 0.0;
      for (int64_t n = 0; n < (empty ? 0 : g.n); ++n) {
        const float* xp = x + (n * g.c + ch) * g.hw;
        for (int64_t i = 0; i < g.hw; ++i) sum += xp[i];
      }
      const double mean = sum / m;
      double sq = 0.0;
      for (int64_t n = 0; n < (empty ? 0 : g.n); ++n) {
        const float* xp = x + (n * g.c + ch) * g.hw;
        for (int64_t i = 0; i < g.hw; ++i) {
          const double d = xp[i] - mean;
          sq += d * d;
        }
      }
      const double var = sq / m;
      const double inv = 1.0 / std::sqrt(var + eps);
      // y = (x - mean) * (scale * inv_std) + bias, the formula's order: folding the mean into
      // the bias (a*x + b) would give inf - inf = NaN for an infinite scale where the formula
      // gives ±inf (docs/ops.md, "Non-finite values").
      const float a = static_cast<float>(scale[ch] * inv), mu = static_cast<float>(mean);
      const float b = bias[ch];
      for (int64_t n = 0; n < (empty ? 0 : g.n); ++n) {
        const float* xp = x + (n * g.c + ch) * g.hw;
        float* yp = y + (n * g.c + ch) * g.hw;
        for (int64_t i = 0; i < g.hw; ++i) yp[i] = (xp[i] - mu) * a + b;
      }
      // Unbiased (default) or, with running_var_rule = 1, ONNX's population variance.
      const double unbiased = g.m() > 1 && onnx_var == 0 ? var * m / (m - 1.0) : var;
      rmean[ch] = static_cast<float>(mom * rmean[ch] + (1.0 - mom) * mean);
      rvar[ch] = static_cast<float>(mom * rvar[ch] + (1.0 - mom) * unbiased);
      smean[ch] = static_cast<float>(mean);
      sinv[ch] = static_cast<float>(inv);
    }
  });
}

void batch_norm_forward_inference(const op_call& c) {
  const auto& p = c.params_as<nnp_batch_norm_params>();
  const DLTensor* X = c.in(0);
  const bn_geom g = bn_of(*X);
  const float *x = f32(X), *scale = f32(c.in(1)), *bias = f32(c.in(2));
  const float *mean = f32(c.in(3)), *var = f32(c.in(4));
  float* y = f32(c.out(0));
  parallel_for(g.c, bn_grain(g), [&](int64_t cb, int64_t ce) {
    for (int64_t ch = cb; ch < ce; ++ch) {
      const double inv = 1.0 / std::sqrt(static_cast<double>(var[ch]) + p.epsilon);
      // the formula's order, as in training
      const float a = static_cast<float>(scale[ch] * inv), mu = mean[ch], b = bias[ch];
      for (int64_t n = 0; n < g.n; ++n) {
        const float* xp = x + (n * g.c + ch) * g.hw;
        float* yp = y + (n * g.c + ch) * g.hw;
        for (int64_t i = 0; i < g.hw; ++i) yp[i] = (xp[i] - mu) * a + b;
      }
    }
  });
}

void batch_norm_backward(const op_call& c) {
  const DLTensor* X = c.in(0);
  const bn_geom g = bn_of(*X);
  const float *x = f32(X), *dy = f32(c.in(1)), *scale = f32(c.in(2));
  const float *smean = f32(c.in(3)), *sinv = f32(c.in(4));
  float *dx = f32(c.out(0)), *dscale = f32(c.out(1)), *dbias = f32(c.out(2));
  const double m = static_cast<double>(g.m());
  if (g.m() == 0) {  // sums over no elements (N or H*W may be huge beside the 0)
    std::fill(dscale, dscale + g.c, 0.0f);
    std::fill(dbias, dbias + g.c, 0.0f);
    return;
  }
  parallel_for(g.c, bn_grain(g), [&](int64_t cb, int64_t ce) {
    for (int64_t ch = cb; ch < ce; ++ch) {
      const double mean = smean[ch], inv = sinv[ch];
      double sdy = 0.0, sdyx = 0.0;
      for (int64_t n = 0; n < g.n; ++n) {
        const float* xp = x + (n * g.c + ch) * g.hw;
        const float* dyp = dy + (n * g.c + ch) * g.hw;
        for (int64_t i = 0; i < g.hw; ++i) {
          sdy += dyp[i];
          sdyx += dyp[i] * ((xp[i] - mean) * inv);
        }
      }
      dbias[ch] = static_cast<float>(sdy);
      dscale[ch] = static_cast<float>(sdyx);
      // dx = scale*inv/M * (M*dy - dbias - xhat*dscale) = k*dy + k0 + k1*x
      const double k = scale[ch] * inv;
      const double kb = -scale[ch] * inv * sdy / m;
      const double kx = -scale[ch] * inv * sdyx * inv / m;
      const float fk = static_cast<float>(k), fk0 = static_cast<float>(kb - kx * mean),
                  fk1 = static_cast<float>(kx);
      for (int64_t n = 0; n < g.n; ++n) {
        const float* xp = x + (n * g.c + ch) * g.hw;
        const float* dyp = dy + (n * g.c + ch) * g.hw;
        float* dxp = dx + (n * g.c + ch) * g.hw;
        for (int64_t i = 0; i < g.hw; ++i) dxp[i] = fk * dyp[i] + fk0 + fk1 * xp[i];
      }
    }
  });
}

// ---- layer norm
// ----------------------------------------------------------------------------------
namespace {

// Sums over a row in double with four independent accumulators (lanes i mod 4, added pairwise
// at the end): a single accumulator is one chain of dependent additions, which neither
// pipelines nor vectorises. term(i) is the i-th term.
template <typename F>
double lane_sum(int64_t n, const F& term) {
  double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a0 += term(i);
    a1 += term(i + 1);
    a2 += term(i + 2);
    a3 += term(i + 3);
  }
  for (; i < n; ++i) a0 += term(i);
  return (a0 + a1) + (a2 + a3);
}

struct ln_geom {
  int64_t outer, inner;
};
ln_geom ln_of(const DLTensor& x, int32_t axis_param) {
  const int axis = normalize_axis(axis_param, x.ndim);
  ln_geom g{1, 1};
  for (int i = 0; i < axis; ++i) g.outer *= x.shape[i];
  for (int i = axis; i < x.ndim; ++i) g.inner *= x.shape[i];
  return g;
}

}  // namespace

namespace {

// Layer norm's forward over rows [b, e) of [outer, inner].
void layer_norm_rows(const float* x, const float* scale, const float* bias, float* y,
                     float* mean_out, float* inv_out, int64_t inner, double epsilon, int64_t b,
                     int64_t e) {
  for (int64_t o = b; o < e; ++o) {
    const float* xr = x + o * inner;
    float* yr = y + o * inner;
    const double sum = lane_sum(inner, [&](int64_t i) { return double{xr[i]}; });
    // |I| = 0: 0/0 = NaN statistics (docs/ops.md)
    const double mean = sum / static_cast<double>(inner);
    const double sq = lane_sum(inner, [&](int64_t i) {
      const double d = xr[i] - mean;
      return d * d;
    });
    const double var = sq / static_cast<double>(inner);
    const double inv = 1.0 / std::sqrt(var + epsilon);
    const float fm = static_cast<float>(mean), fi = static_cast<float>(inv);
    if (bias != nullptr) {
      for (int64_t i = 0; i < inner; ++i) yr[i] = (xr[i] - fm) * fi * scale[i] + bias[i];
    } else {
      for (int64_t i = 0; i < inner; ++i) yr[i] = (xr[i] - fm) * fi * scale[i];
    }
    if (mean_out != nullptr) mean_out[o] = fm;
    if (inv_out != nullptr) inv_out[o] = fi;
  }
}

#ifdef NNP_CPU_X86_KERNELS
// The same with AVX2 + FMA intrinsics: the statistics in double, 8 elements a step (two
// 4-lane accumulators, lanes i mod 8; the order of the sums differs from lane_sum's), the
// output 8 floats a step (nnplug-bench "layer_norm vit" forward at [2176, 64], 2 threads: 78 ->
// 58 us, medians of 3 alternated runs).
NNP_CPU_AVX2_FMA void layer_norm_rows_fma(const float* x, const float* scale, const float* bias,
                                          float* y, float* mean_out, float* inv_out, int64_t inner,
                                          double epsilon, int64_t b, int64_t e) {
  for (int64_t o = b; o < e; ++o) {
    const float* xr = x + o * inner;
    float* yr = y + o * inner;
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 8 <= inner; i += 8) {
      const __m256 v = _mm256_loadu_ps(xr + i);
      s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
      s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    }
    double sum = hsum4(_mm256_add_pd(s0, s1));
    for (; i < inner; ++i) sum += xr[i];
    const double mean = sum / static_cast<double>(inner);  // |I| = 0: NaN, as above
    const __m256d m = _mm256_set1_pd(mean);
    s0 = _mm256_setzero_pd();
    s1 = _mm256_setzero_pd();
    for (i = 0; i + 8 <= inner; i += 8) {
      const __m256 v = _mm256_loadu_ps(xr + i);
      const __m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), m);
      const __m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), m);
      s0 = _mm256_fmadd_pd(d0, d0, s0);
      s1 = _mm256_fmadd_pd(d1, d1, s1);
    }
    double sq = hsum4(_mm256_add_pd(s0, s1));
    for (; i < inner; ++i) sq += (xr[i] - mean) * (xr[i] - mean);
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(inner) + epsilon);
    const float fm = static_cast<float>(mean), fi = static_cast<float>(inv);
    const __m256 fmv = _mm256_set1_ps(fm), fiv = _mm256_set1_ps(fi);
    for (i = 0; i + 8 <= inner; i += 8) {
      const __m256 t = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + i), fmv), fiv);
      const __m256 sc = _mm256_loadu_ps(scale + i);
      _mm256_storeu_ps(yr + i, bias != nullptr ? _mm256_fmadd_ps(t, sc, _mm256_loadu_ps(bias + i))
                                               : _mm256_mul_ps(t, sc));
    }
    for (; i < inner; ++i) {
      const float t = (xr[i] - fm) * fi * scale[i];
      yr[i] = bias != nullptr ? t + bias[i] : t;
    }
    if (mean_out != nullptr) mean_out[o] = fm;
    if (inv_out != nullptr) inv_out[o] = fi;
  }
}
#endif

}  // namespace

void layer_norm_forward(const op_call& c) {
  const auto& p = c.params_as<nnp_layer_norm_params>();
  const DLTensor* X = c.in(0);
  const ln_geom g = ln_of(*X, p.axis);
  const float *x = f32(X), *scale = f32(c.in(1)), *bias = f32(c.in(2));
  float *y = f32(c.out(0)), *mean_out = f32(c.out(1)), *inv_out = f32(c.out(2));
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, g.inner));
#ifdef NNP_CPU_X86_KERNELS
  if (cpu_avx2_fma()) {
    parallel_for(g.outer, grain, [&](int64_t b, int64_t e) {
      layer_norm_rows_fma(x, scale, bias, y, mean_out, inv_out, g.inner, p.epsilon, b, e);
    });
    return;
  }
#endif
  parallel_for(g.outer, grain, [&](int64_t b, int64_t e) {
    layer_norm_rows(x, scale, bias, y, mean_out, inv_out, g.inner, p.epsilon, b, e);
  });
}

namespace {

// Layer norm's backward over rows [o0, o1) of [outer, inner]: dx, and the rows' terms of dscale
// and dbias added into ps and pb (double).
void layer_norm_backward_rows(const float* x, const float* dy, const float* scale,
                              const float* mean, const float* inv, float* dx, double* ps,
                              double* pb, int64_t inner, int64_t o0, int64_t o1) {
  for (int64_t o = o0; o < o1; ++o) {
    const float *xr = x + o * inner, *dyr = dy + o * inner;
    float* dxr = dx + o * inner;
    const float mu = mean[o], is = inv[o];
    // the means of dxhat and of dxhat * xhat; the row's terms of dscale and dbias
    const double s1 =
        lane_sum(inner, [&](int64_t i) { return static_cast<double>(dyr[i]) * scale[i]; });
    const double s2 = lane_sum(inner, [&](int64_t i) {
      return static_cast<double>(dyr[i]) * scale[i] * ((xr[i] - mu) * is);
    });
    for (int64_t i = 0; i < inner; ++i) {
      ps[i] += static_cast<double>(dyr[i]) * ((xr[i] - mu) * is);
      pb[i] += dyr[i];
    }
    const float m1 = static_cast<float>(s1 / static_cast<double>(inner));
    const float m2 = static_cast<float>(s2 / static_cast<double>(inner));
    for (int64_t i = 0; i < inner; ++i) {
      const float xh = (xr[i] - mu) * is;
      dxr[i] = is * (dyr[i] * scale[i] - m1 - xh * m2);
    }
  }
}

#ifdef NNP_CPU_X86_KERNELS
// dx of 8 elements of a row: is (dy scale - m1 - xh m2) with xh = (x - mu) is, dy scale rounded
// to float before m1 is subtracted, as in the portable code (the empty asm keeps GCC from
// contracting the two into one fused multiply-subtract): a row of one element gets exactly 0.
struct ln_dx8 {
  __m256 mu, is, m1, m2;
  NNP_CPU_AVX2_FMA __m256 operator()(__m256 x, __m256 dy, __m256 sc) const {
    const __m256 xh = _mm256_mul_ps(_mm256_sub_ps(x, mu), is);
    __m256 g = _mm256_mul_ps(dy, sc);
    __asm__("" : "+x"(g));
    const __m256 t = _mm256_sub_ps(g, m1);
    return _mm256_mul_ps(is, _mm256_fnmadd_ps(xh, m2, t));
  }
};

// The same with AVX2 + FMA intrinsics: 8 elements a step, the sums and the parameter-gradient
// terms in double (4-lane halves; a product and its sum rounded once), dx in float
// (nnplug-bench "layer_norm bwd vit" at [2176, 64], 2 threads: 88 -> 44 us, medians of 3
// alternated runs).
NNP_CPU_AVX2_FMA void layer_norm_backward_rows_fma(const float* x, const float* dy,
                                                   const float* scale, const float* mean,
                                                   const float* inv, float* dx, double* ps,
                                                   double* pb, int64_t inner, int64_t o0,
                                                   int64_t o1) {
  for (int64_t o = o0; o < o1; ++o) {
    const float *xr = x + o * inner, *dyr = dy + o * inner;
    float* dxr = dx + o * inner;
    const float mu = mean[o], is = inv[o];
    const __m256 muv = _mm256_set1_ps(mu), isv = _mm256_set1_ps(is);
    __m256d s1 = _mm256_setzero_pd(), s2 = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 8 <= inner; i += 8) {
      const __m256 dyv = _mm256_loadu_ps(dyr + i), sc = _mm256_loadu_ps(scale + i);
      const __m256 xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + i), muv), isv);
      for (int half = 0; half < 2; ++half) {
        const __m128 d4 = half ? _mm256_extractf128_ps(dyv, 1) : _mm256_castps256_ps128(dyv);
        const __m128 s4 = half ? _mm256_extractf128_ps(sc, 1) : _mm256_castps256_ps128(sc);
        const __m128 h4 = half ? _mm256_extractf128_ps(xh, 1) : _mm256_castps256_ps128(xh);
        const __m256d dd = _mm256_cvtps_pd(d4), hd = _mm256_cvtps_pd(h4);
        const __m256d t = _mm256_mul_pd(dd, _mm256_cvtps_pd(s4));  // exact
        s1 = _mm256_add_pd(s1, t);
        s2 = _mm256_fmadd_pd(t, hd, s2);
        double* psi = ps + i + 4 * half;
        double* pbi = pb + i + 4 * half;
        _mm256_storeu_pd(psi, _mm256_fmadd_pd(dd, hd, _mm256_loadu_pd(psi)));
        _mm256_storeu_pd(pbi, _mm256_add_pd(_mm256_loadu_pd(pbi), dd));
      }
    }
    double sum1 = hsum4(s1), sum2 = hsum4(s2);
    for (int64_t j = i; j < inner; ++j) {
      const double t = static_cast<double>(dyr[j]) * scale[j];
      const float xh = (xr[j] - mu) * is;
      sum1 += t;
      sum2 += t * xh;
      ps[j] += static_cast<double>(dyr[j]) * xh;
      pb[j] += dyr[j];
    }
    const float m1 = static_cast<float>(sum1 / static_cast<double>(inner));
    const float m2 = static_cast<float>(sum2 / static_cast<double>(inner));
    // dx (ln_dx8), the last inner % 8 elements through zero-padded lanes
    const __m256 m1v = _mm256_set1_ps(m1), m2v = _mm256_set1_ps(m2);
    const ln_dx8 dx8{muv, isv, m1v, m2v};
    for (i = 0; i + 8 <= inner; i += 8)
      _mm256_storeu_ps(dxr + i, dx8(_mm256_loadu_ps(xr + i), _mm256_loadu_ps(dyr + i),
                                    _mm256_loadu_ps(scale + i)));
    if (i < inner)
      store_first(dxr + i,
                  dx8(load_first(xr + i, inner - i), load_first(dyr + i, inner - i),
                      load_first(scale + i, inner - i)),
                  inner - i);
  }
}
#endif

}  // namespace

void layer_norm_backward(const op_call& c) {
  const auto& p = c.params_as<nnp_layer_norm_params>();
  const DLTensor* X = c.in(0);
  const ln_geom g = ln_of(*X, p.axis);
  const float *x = f32(X), *dy = f32(c.in(1)), *scale = f32(c.in(2));
  const float *mean = f32(c.in(3)), *inv = f32(c.in(4));
  float *dx = f32(c.out(0)), *dscale = f32(c.out(1)), *dbias = f32(c.out(2));
  // Rows in fixed blocks of kLnRows: each block writes its rows of dx and its own partial sums
  // of dscale and dbias (double, along the row: unit stride), then the blocks' partials are
  // added in block order per column. The order of every sum is fixed, whatever the threads.
  constexpr int64_t kLnRows = 64;
  const int64_t blocks = (g.outer + kLnRows - 1) / kLnRows;
  // The partials live in call-level scratch (no allocation per call), two floats per double.
  static_assert(sizeof(double) == 2 * sizeof(float), "a double in two scratch floats");
  double* partial =
      reinterpret_cast<double*>(scratch(kCallSlot0, static_cast<size_t>(4 * blocks * g.inner)));
  const int64_t grain =
      std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, kLnRows * g.inner));
  parallel_for(blocks, grain, [&](int64_t bb, int64_t be) {
    for (int64_t blk = bb; blk < be; ++blk) {
      double* ps = partial + 2 * blk * g.inner;
      double* pb = ps + g.inner;
      std::fill(ps, pb + g.inner, 0.0);
      const int64_t o0 = blk * kLnRows, o1 = std::min(g.outer, (blk + 1) * kLnRows);
#ifdef NNP_CPU_X86_KERNELS
      if (cpu_avx2_fma()) {
        layer_norm_backward_rows_fma(x, dy, scale, mean, inv, dx, ps, pb, g.inner, o0, o1);
        continue;
      }
#endif
      layer_norm_backward_rows(x, dy, scale, mean, inv, dx, ps, pb, g.inner, o0, o1);
    }
  });
  const int64_t cgrain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, blocks));
  parallel_for(g.inner, cgrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      double ds = 0.0, db = 0.0;
      for (int64_t blk = 0; blk < blocks; ++blk) {
        ds += partial[static_cast<size_t>(2 * blk * g.inner + i)];
        db += partial[static_cast<size_t>((2 * blk + 1) * g.inner + i)];
      }
      dscale[i] = static_cast<float>(ds);
      if (dbias != nullptr) dbias[i] = static_cast<float>(db);
    }
  });
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kNormOps[] = {
    {NNP_OP_BATCH_NORM_FORWARD_TRAINING,  kit::f32,            batch_norm_forward_training},
    {NNP_OP_BATCH_NORM_FORWARD_INFERENCE, kit::f32,            batch_norm_forward_inference},
    {NNP_OP_BATCH_NORM_BACKWARD,          kit::f32,            batch_norm_backward},
    {NNP_OP_LAYER_NORM_FORWARD,           kit::f32,            layer_norm_forward},
    {NNP_OP_LAYER_NORM_BACKWARD,          kit::f32,            layer_norm_backward},
};
// clang-format on
extern const kit::op_row_list kNormRows = kit::row_list(kNormOps);

}  // namespace nnp::cpu
