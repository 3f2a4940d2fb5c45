// attention_small.cu — scaled dot-product attention for short sequences (Tq and Tk up to 32,
// D and Dv up to 64: a vision transformer's patches, a decoder's few new tokens), forward and
// backward, with the semantics of attention.cu (nnp_attention_params in nnplug_ops.h): both
// layouts, grouped-query heads, the broadcast additive mask, the causal mask (key j hidden from
// query i when j > i), softmax_lse.
//
// A whole head fits one block's shared memory, and a query row's keys fit one warp (lane j
// holds key j), so the row's softmax needs no shared memory and no barrier: warp shuffles.
//  - forward, one block of 4 warps per (query head, batch): K (rows padded to D + 1 floats, so
//    lane j reading K[j][e] meets no bank conflict), V and Q are loaded once, coalesced; warp w
//    takes query rows w, w + 4, ..: lane j computes s_j = scale q_i . k_j + mask (-inf for a
//    hidden key or j >= Tk), the row's max m and sum l = sum_j exp(s_j - m) by shuffles,
//    p_j = exp(s_j - lse) with lse = m + log l, then y_i[e] = sum_j p_j v_j[e] with lane e
//    (and e + 32) accumulating over j while p_j is broadcast by shuffle.
//  - backward (FlashAttention-2's formulas, Dao 2023), one block per (kv head, batch), no
//    atomics (deterministic): K and V loaded once; for each query head of the group, Q and dY
//    are loaded, and warp w takes query rows as in the forward: delta_i = dy_i . y_i,
//    p_j = exp(s_j - lse_i), dp_j = dy_i . v_j, ds_j = scale p_j (dp_j - delta_i) (lane j),
//    dq_i = sum_j ds_j k_j (lanes over e); P and dS rows go to shared memory, and after a
//    barrier each thread adds its elements of dV += P^T dY and dK += dS^T Q in registers
//    (at most 16 elements of each per thread), written once after the group's last head.
// Float32 throughout (fmaf, expf, logf), the same formulas as the row kernels; results differ
// from theirs by the order of the sums. Fully masked rows give Y = 0, lse = -inf and no
// gradient; a NaN score makes the row's Y and lse NaN.
// Shared memory (static): forward 32 (65 + 64 + 64) floats = 24 704 bytes; backward
// 4 x 32 x 65 + 2 x 32 x 33 floats = 41 728 bytes.
#include "attention.cuh"

namespace nnp::cuda {
namespace {

constexpr int kSmallThreads = 128;  // 4 warps
constexpr int kWarps = kSmallThreads / 32;
constexpr int kMaxT = static_cast<int>(kSmallMaxTokens);
constexpr int kMaxD = static_cast<int>(kSmallMaxHeadDim);
constexpr int kLd = kMaxD + 1;   // row length of head-dimension rows in shared memory
constexpr int kPLd = kMaxT + 1;  // row length of P and dS rows
constexpr int kPerThread = kMaxT * kMaxD / kSmallThreads;  // dK / dV elements per thread
constexpr unsigned kFullWarp = 0xffffffffu;

// dst[r * kLd + e] = src[r * rs + e] for r < n, e < width (coalesced over e).
__device__ void load_rows(float* dst, const float* __restrict src, int64_t rs, int n, int width) {
  for (int idx = threadIdx.x; idx < n * width; idx += blockDim.x) {
    const int r = idx / width, e = idx - r * width;
    dst[r * kLd + e] = src[r * rs + e];
  }
}

// Lane j's score of query row i against key j: scale q_i . k_j + mask, -inf when the key is
// hidden (causal) or j >= Tk. qs is q_i in shared memory, ks the keys (rows of kLd).
__device__ __forceinline__ float score(const attn_dims& a, const float* qs, const float* ks,
                                       const float* __restrict mask, int64_t b, int64_t h, int i,
                                       int j) {
  if (j >= a.tk || j >= a.visible(i)) return -INFINITY;
  const float* kj = ks + j * kLd;
  float dot = 0.0f;
  for (int e = 0; e < a.d; ++e) dot = fmaf(qs[e], kj[e], dot);
  float v = a.scale * dot;
  if (mask != nullptr) v += mask[b * a.m0 + h * a.m1 + i * a.m2 + j * a.m3];
  return v;
}

// out[e] = sum_{j < n} w_j rows[j * kLd + e] for e < width (width <= 64), w_j being lane j's
// w; every lane of the warp must call it.
__device__ __forceinline__ void weighted_keys(float w, int n, const float* rows, int width,
                                              float* __restrict out) {
  const int lane = threadIdx.x & 31;
  float acc0 = 0.0f, acc1 = 0.0f;
  for (int j = 0; j < n; ++j) {
    const float wj = __shfl_sync(kFullWarp, w, j);
    if (lane < width) acc0 = fmaf(wj, rows[j * kLd + lane], acc0);
    if (lane + 32 < width) acc1 = fmaf(wj, rows[j * kLd + lane + 32], acc1);
  }
  if (lane < width) out[lane] = acc0;
  if (lane + 32 < width) out[lane + 32] = acc1;
}

__global__ void __launch_bounds__(kSmallThreads)
    attention_small_forward_kernel(attn_dims a, const float* __restrict q,
                                   const float* __restrict k, const float* __restrict v,
                                   const float* __restrict mask, float* __restrict y,
                                   float* __restrict lse) {
  __shared__ float ks[kMaxT * kLd], vs[kMaxT * kLd], qs[kMaxT * kLd];
  const int64_t h = blockIdx.x, b = blockIdx.y, kvh = h / a.group();
  const int tq = static_cast<int>(a.tq), tk = static_cast<int>(a.tk);
  const int d = static_cast<int>(a.d), dv = static_cast<int>(a.dv);
  load_rows(ks, k + b * a.kb + kvh * a.kh, a.kr, tk, d);
  load_rows(vs, v + b * a.vb + kvh * a.vh, a.vr, tk, dv);
  load_rows(qs, q + b * a.qb + h * a.qh, a.qr, tq, d);
  __syncthreads();
  const int lane = threadIdx.x & 31;
  for (int i = threadIdx.x >> 5; i < tq; i += kWarps) {
    const float s = score(a, qs + i * kLd, ks, mask, b, h, i, lane);
    const float mx = warp_reduce(s, max_op{});
    float* yi = y + b * a.yb + h * a.yh + i * a.yr;
    float* lse_i = lse != nullptr ? lse + (b * a.hq + h) * a.tq + i : nullptr;
    if (mx == -INFINITY || isnan(mx)) {  // fully masked (or NaN scores: propagate NaN)
      const float fill = isnan(mx) ? mx : 0.0f;
      for (int e = lane; e < dv; e += 32) yi[e] = fill;
      if (lse_i != nullptr && lane == 0) *lse_i = isnan(mx) ? mx : -INFINITY;
      continue;
    }
    const float sum = warp_reduce(expf(s - mx), sum_op{});  // exp(-inf) = 0 beyond the keys
    const float row_lse = mx + logf(sum);
    weighted_keys(expf(s - row_lse), tk, vs, dv, yi);
    if (lse_i != nullptr && lane == 0) *lse_i = row_lse;
  }
}

__global__ void __launch_bounds__(kSmallThreads) attention_small_backward_kernel(
    attn_dims a, const float* __restrict q, const float* __restrict k, const float* __restrict v,
    const float* __restrict mask, const float* __restrict y, const float* __restrict dy,
    const float* __restrict lse, float* __restrict dq, float* __restrict dk, float* __restrict dv) {
  __shared__ float ks[kMaxT * kLd], vs[kMaxT * kLd], qs[kMaxT * kLd], dys[kMaxT * kLd];
  __shared__ float ps[kMaxT * kPLd], dss[kMaxT * kPLd];
  const int64_t g = blockIdx.x, b = blockIdx.y, group = a.group();
  const int tq = static_cast<int>(a.tq), tk = static_cast<int>(a.tk);
  const int d = static_cast<int>(a.d), dvw = static_cast<int>(a.dv);
  load_rows(ks, k + b * a.kb + g * a.kh, a.kr, tk, d);
  load_rows(vs, v + b * a.vb + g * a.vh, a.vr, tk, dvw);
  float dk_acc[kPerThread], dv_acc[kPerThread];
#pragma unroll
  for (int t = 0; t < kPerThread; ++t) dk_acc[t] = dv_acc[t] = 0.0f;
  const int lane = threadIdx.x & 31;
  for (int64_t hh = 0; hh < group; ++hh) {
    const int64_t h = g * group + hh;
    const int64_t row_base = b * a.yb + h * a.yh;
    load_rows(qs, q + b * a.qb + h * a.qh, a.qr, tq, d);
    load_rows(dys, dy + row_base, a.yr, tq, dvw);
    __syncthreads();  // publishes qs, dys (and ks, vs for the first head)
    for (int i = threadIdx.x >> 5; i < tq; i += kWarps) {
      float* dqi = dq + b * a.qb + h * a.qh + i * a.qr;
      const float row_lse = lse[(b * a.hq + h) * a.tq + i];
      float p = 0.0f, d_s = 0.0f;
      if (row_lse != -INFINITY) {  // else fully masked in the forward: no gradient
        const float* yi = y + row_base + i * a.yr;
        const float* dyi = dys + i * kLd;
        float delta = 0.0f;
        for (int e = lane; e < dvw; e += 32) delta = fmaf(dyi[e], yi[e], delta);
        delta = warp_reduce(delta, sum_op{});
        const float s = score(a, qs + i * kLd, ks, mask, b, h, i, lane);
        p = expf(s - row_lse);  // 0 for hidden keys and beyond Tk (exp(-inf))
        if (lane < tk) {
          const float* vj = vs + lane * kLd;
          float dp = 0.0f;
          for (int e = 0; e < dvw; ++e) dp = fmaf(dyi[e], vj[e], dp);
          d_s = a.scale * p * (dp - delta);
        } else {
          p = 0.0f;
        }
      }
      ps[i * kPLd + lane] = p;
      dss[i * kPLd + lane] = d_s;
      weighted_keys(d_s, tk, ks, d, dqi);
    }
    __syncthreads();
    // dV[j][e] += sum_i P[i][j] dY[i][e], dK[j][e] += sum_i dS[i][j] Q[i][e]
#pragma unroll
    for (int t = 0; t < kPerThread; ++t) {
      const int idx = threadIdx.x + t * kSmallThreads;
      const int jv = idx / dvw, ev = idx - jv * dvw;
      if (jv < tk) {
        float acc = dv_acc[t];
        for (int i = 0; i < tq; ++i) acc = fmaf(ps[i * kPLd + jv], dys[i * kLd + ev], acc);
        dv_acc[t] = acc;
      }
      const int jk = idx / d, ek = idx - jk * d;
      if (jk < tk) {
        float acc = dk_acc[t];
        for (int i = 0; i < tq; ++i) acc = fmaf(dss[i * kPLd + jk], qs[i * kLd + ek], acc);
        dk_acc[t] = acc;
      }
    }
    __syncthreads();  // the next head's rows overwrite qs, dys, ps and dss
  }
#pragma unroll
  for (int t = 0; t < kPerThread; ++t) {
    const int idx = threadIdx.x + t * kSmallThreads;
    const int jv = idx / dvw, ev = idx - jv * dvw;
    if (jv < tk) dv[b * a.vb + g * a.vh + jv * a.vr + ev] = dv_acc[t];
    const int jk = idx / d, ek = idx - jk * d;
    if (jk < tk) dk[b * a.kb + g * a.kh + jk * a.kr + ek] = dk_acc[t];
  }
}

}  // namespace

void attention_forward_small(stream& s, const attn_dims& a, const float* q, const float* k,
                             const float* v, const float* mask, float* y, float* lse) {
  const dim3 grid(static_cast<unsigned>(a.hq), static_cast<unsigned>(a.batch));
  attention_small_forward_kernel<<<grid, kSmallThreads, 0, s.handle>>>(a, q, k, v, mask, y, lse);
  NNP_CUDA_CHECK_LAUNCH();
}

void attention_backward_small(stream& s, const attn_dims& a, const float* q, const float* k,
                              const float* v, const float* mask, const float* y, const float* dy,
                              const float* lse, float* dq, float* dk, float* dv) {
  const dim3 grid(static_cast<unsigned>(a.hkv), static_cast<unsigned>(a.batch));
  attention_small_backward_kernel<<<grid, kSmallThreads, 0, s.handle>>>(a, q, k, v, mask, y, dy,
                                                                        lse, dq, dk, dv);
  NNP_CUDA_CHECK_LAUNCH();
}

}  // namespace nnp::cuda
