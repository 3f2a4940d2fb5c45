// attention_tiled.cu — scaled dot-product attention in tiles, forward and backward, after
// FlashAttention-2 (T. Dao, "FlashAttention-2: Faster Attention with Better Parallelism and
// Work Partitioning", 2023, arXiv:2307.08691, Algorithms 1 and 2); the semantics are those of
// attention.cu (nnp_attention_params in nnplug_ops.h): both layouts, grouped-query heads, the
// broadcast additive mask, the causal mask (key j hidden from query i when j > i), softmax_lse.
//
// Tiles of kT = 64 query rows by kT = 64 keys, 256 threads as 16 x 16 (ty = thread / 16,
// tx = thread % 16); head dimensions padded to HD = 32, 64 or 128 (a template parameter, the
// smallest that holds max(D, Dv); the padding is zero-filled in shared memory).
//  - forward, one block per (query tile, query head, batch): Q^T of the tile in shared memory;
//    for every key tile, K^T and V are loaded (coalesced, zero outside the tensors), each
//    thread computes a 4 x 4 micro-tile of S = scale Q K^T + mask (rows 4 ty.., keys 4 tx..,
//    float4 reads of Q^T and K^T), the online softmax keeps the running row max m and sum l
//    (reduced over the row's 16 threads by shuffles; a max of -inf gives p = 0, never
//    exp(-inf + inf)), P goes to shared memory (over K^T) and each thread accumulates its
//    4 x HD/16 micro-tile of O += P V in registers. At the end Y = O / l, lse = m + log l.
//    Key tiles that the causal mask hides from the whole query tile are skipped.
//  - backward, with recomputation and no atomics (deterministic): delta_i = dY_i . Y_i (one
//    warp per row, scratch kScratchTemp0); one block per (key tile, kv head, batch) loops over
//    the group's query heads and their query tiles (causal: from the key tile's first row on),
//    recomputes P = exp(S - lse) and dS = scale P (dY V^T - delta) as 4 keys x 4 query rows
//    per thread, and accumulates dV += P^T dY and dK += dS^T Q in registers (4 keys x HD/16
//    columns each); one block per (query tile, query head, batch) loops over the key tiles and
//    accumulates dQ += dS K the same way.
// Shared memory per block (floats; kL = 68 = kT + 4, the row length of transposed tiles, so
// that transposed stores and float4 reads meet no bank conflicts; row-major tiles that threads
// read by columns have rows of HD + 1): forward HD kL + max(HD, kT) kL + kT HD (HD = 64:
// 51 200 bytes), dK/dV 2 HD kL + 2 kT (HD + 1) + 2 kT kL + 2 kT (HD = 64: 103 424 bytes), dQ
// 2 HD kL + 2 kT (HD + 1) + kT kL + 2 kT (HD = 64: 86 016 bytes); above 48 KiB the kernels
// are allowed more with cudaFuncSetAttribute, once per kernel and device.
// Precision: float32 throughout (SIMT fmaf, no TF32), expf and logf; results differ from the
// row kernels of attention.cu by the order of the sums (online rescaling, per-thread partial
// sums of l).
// Fully masked rows give Y = 0, lse = -inf and no gradient; a NaN score makes the row's Y and
// lse NaN (the max propagates NaN); rows whose lse is -inf contribute nothing to the backward.
#include "attention.cuh"

namespace nnp::cuda {
namespace {

constexpr int kT = kAttnTile;       // query rows and keys per tile
constexpr int kL = kT + 4;          // row length of transposed tiles and of P / dS tiles
constexpr int kTiledThreads = 256;  // 16 x 16
constexpr unsigned kFullWarp = 0xffffffffu;

template <int HD>
constexpr int kCols = HD / 16;  // head-dimension columns per thread (2, 4 or 8)

// The tile's rows [r0, r0 + kT) of a [T, width] operand (row i at src + i * rs), rows < n,
// transposed into dst[e * kL + r] for e < HD; zeros outside the operand. A warp covers 8
// columns x 4 rows: 32-byte global segments, and banks 4 e + r (mod 32) all distinct.
template <int HD>
__device__ void load_transposed(float* dst, const float* __restrict src, int64_t rs, int64_t r0,
                                int64_t n, int64_t width) {
  constexpr int kChunksPerRow = HD / 8;
  for (int idx = threadIdx.x; idx < HD * kT; idx += blockDim.x) {
    const int lane = idx & 31, chunk = idx >> 5;
    const int e = (chunk % kChunksPerRow) * 8 + (lane & 7);
    const int r = (chunk / kChunksPerRow) * 4 + (lane >> 3);
    const int64_t row = r0 + r;
    dst[e * kL + r] = (row < n && e < width) ? src[row * rs + e] : 0.0f;
  }
}

__device__ __forceinline__ float4 ld4(const float* p) {
  return *reinterpret_cast<const float4*>(p);
}
__device__ __forceinline__ void st4(float* p, float a, float b, float c, float d) {
  *reinterpret_cast<float4*>(p) = make_float4(a, b, c, d);
}
__device__ __forceinline__ float part(const float4& v, int n) {
  return n == 0 ? v.x : n == 1 ? v.y : n == 2 ? v.z : v.w;
}

// Two 4 x 4 micro-tiles of the backward at once: acc_a[i][jj] += sum over e < HD of
// ta[e * kL + 4 ty + i] * ra[(tx + 16 jj) * (HD + 1) + e], and acc_b likewise from tb and rb:
// a transposed tile (float4 reads) times the rows of a row-major tile (S and dP, or their
// transposes S^T and dP^T).
template <int HD>
__device__ __forceinline__ void micro_tile_pair(const float* ta, const float* tb, const float* ra,
                                                const float* rb, int tx, int ty,
                                                float (&acc_a)[4][4], float (&acc_b)[4][4]) {
  constexpr int LD = HD + 1;
#pragma unroll 4
  for (int e = 0; e < HD; ++e) {
    const float4 av = ld4(ta + e * kL + ty * 4), bv = ld4(tb + e * kL + ty * 4);
    float ar[4], br[4];
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {
      ar[jj] = ra[(tx + 16 * jj) * LD + e];
      br[jj] = rb[(tx + 16 * jj) * LD + e];
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        acc_a[i][jj] = fmaf(part(av, i), ar[jj], acc_a[i][jj]);
        acc_b[i][jj] = fmaf(part(bv, i), br[jj], acc_b[i][jj]);
      }
  }
}

// Reduces over the 16 threads of a tile row (lanes that differ in their low 4 bits).
template <typename Op>
__device__ __forceinline__ float row_reduce(float v, Op op) {
  for (int o = 8; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(kFullWarp, v, o));
  return v;
}

// ---- forward ----------------------------------------------------------------------------------

template <int HD>
constexpr int forward_floats() {
  return HD * kL + (HD > kT ? HD : kT) * kL + kT * HD;
}

template <int HD>
__global__ void __launch_bounds__(kTiledThreads, 2)
    attention_forward_tiled_kernel(attn_dims a, const float* __restrict q,
                                   const float* __restrict k, const float* __restrict v,
                                   const float* __restrict mask, float* __restrict y,
                                   float* __restrict lse) {
  constexpr int CO = kCols<HD>;
  extern __shared__ float4 shm4[];
  float* qt = reinterpret_cast<float*>(shm4);  // [HD][kL]: Q^T of the tile
  float* kt = qt + HD * kL;                    // [HD][kL]: K^T, then P [kT][kL]
  float* vs = kt + (HD > kT ? HD : kT) * kL;   // [kT][HD]
  const query_tile t(a, blockIdx.x, blockIdx.y, blockIdx.z, k, v, mask);
  const int tx = static_cast<int>(threadIdx.x % 16), ty = static_cast<int>(threadIdx.x / 16);
  const int64_t i0 = t.i0, h = t.h, b = t.b;
  const float *kg = t.kg, *vg = t.vg, *mg = t.mg;
  load_transposed<HD>(qt, q + b * a.qb + h * a.qh, a.qr, i0, a.tq, a.d);

  float m[4], l[4], o[4][CO];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int c = 0; c < CO; ++c) o[i][c] = 0.0f;
  }
  // Keys the tile's rows may see: causal row i sees keys j <= i.
  const int64_t rows_end = i0 + kT < a.tq ? i0 + kT : a.tq;
  const int64_t keys_end = a.causal && rows_end < a.tk ? rows_end : a.tk;
  for (int64_t j0 = 0; j0 < keys_end; j0 += kT) {
    __syncthreads();  // the previous tile's reads of P and V are done
    load_transposed<HD>(kt, kg, a.kr, j0, a.tk, a.d);
    load_rows<HD>(vs, HD, vg, a.vr, j0, a.tk, a.dv);
    __syncthreads();
    float s[4][4] = {};
#pragma unroll 8
    for (int e = 0; e < HD; ++e) {
      const float4 qv = ld4(qt + e * kL + ty * 4), kv = ld4(kt + e * kL + tx * 4);
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) s[i][jj] = fmaf(part(qv, i), part(kv, jj), s[i][jj]);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int64_t r = i0 + ty * 4 + i;
      float mt = -INFINITY;
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        const int64_t c = j0 + tx * 4 + jj;
        s[i][jj] = (c < a.tk && r < a.tq) ? score(a, mg, r, c, s[i][jj]) : -INFINITY;
        mt = max_op{}(mt, s[i][jj]);
      }
      const float mn = max_op{}(m[i], row_reduce(mt, max_op{}));
      // Safe max: while every score so far is -inf, p stays 0 (not exp(-inf + inf) = NaN).
      const float alpha = mn == -INFINITY ? 1.0f : expf(m[i] - mn);
      m[i] = mn;
      float sum = 0.0f;
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        s[i][jj] = mn == -INFINITY ? 0.0f : expf(s[i][jj] - mn);
        sum += s[i][jj];
      }
      l[i] = fmaf(l[i], alpha, sum);
#pragma unroll
      for (int c = 0; c < CO; ++c) o[i][c] *= alpha;
    }
    __syncthreads();  // every thread is done with K^T: P goes there
    float* ps = kt;
#pragma unroll
    for (int i = 0; i < 4; ++i)
      st4(ps + (ty * 4 + i) * kL + tx * 4, s[i][0], s[i][1], s[i][2], s[i][3]);
    __syncthreads();
#pragma unroll 2
    for (int j = 0; j < kT; j += 4) {
      float4 p[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) p[i] = ld4(ps + (ty * 4 + i) * kL + j);
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        float vv[CO];
        const float* vr = vs + (j + jj) * HD + tx * CO;
        if constexpr (CO == 2) {
          const float2 t = *reinterpret_cast<const float2*>(vr);
          vv[0] = t.x;
          vv[1] = t.y;
        } else {
#pragma unroll
          for (int c = 0; c < CO; c += 4) {
            const float4 t = ld4(vr + c);
            vv[c] = t.x;
            vv[c + 1] = t.y;
            vv[c + 2] = t.z;
            vv[c + 3] = t.w;
          }
        }
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int c = 0; c < CO; ++c) o[i][c] = fmaf(part(p[i], jj), vv[c], o[i][c]);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float sum = row_reduce(l[i], sum_op{});
    const int64_t r = i0 + ty * 4 + i;
    if (r >= a.tq) continue;
    float* yr = y + b * a.yb + h * a.yh + r * a.yr;
    // Fully masked: Y = 0, lse = -inf; a NaN score: NaN (as the row kernels).
    const bool empty = m[i] == -INFINITY || isnan(m[i]);
    const float fill = isnan(m[i]) ? m[i] : 0.0f, inv = 1.0f / sum;
#pragma unroll
    for (int c = 0; c < CO; ++c) {
      const int64_t e = int64_t(tx) * CO + c;
      if (e < a.dv) yr[e] = empty ? fill : o[i][c] * inv;
    }
    if (lse != nullptr && tx == 0)
      lse[(b * a.hq + h) * a.tq + r] = empty ? (isnan(m[i]) ? m[i] : -INFINITY) : m[i] + logf(sum);
  }
}

// ---- backward ---------------------------------------------------------------------------------

// delta_i = dY_i . Y_i for every row (b, h, i), one warp per row, into delta[(b Hq + h) Tq + i].
__global__ void attention_delta_kernel(attn_dims a, const float* __restrict y,
                                       const float* __restrict dy, float* __restrict delta) {
  const int64_t rows = a.batch * a.hq * a.tq;
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t(gridDim.x) * blockDim.x) >> 5;
  for (int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; row < rows;
       row += warps) {
    const int64_t i = row % a.tq, h = (row / a.tq) % a.hq, b = row / (a.tq * a.hq);
    const int64_t off = b * a.yb + h * a.yh + i * a.yr;
    float acc = 0.0f;
    for (int64_t e = lane; e < a.dv; e += 32) acc = fmaf(dy[off + e], y[off + e], acc);
    acc = warp_reduce(acc, sum_op{});
    if (lane == 0) delta[row] = acc;
  }
}

template <int HD>
constexpr int dkdv_floats() {
  return 2 * HD * kL + 2 * kT * (HD + 1) + 2 * kT * kL + 2 * kT;
}

// dK and dV of one key tile of kv head g, summed over the group's query heads.
template <int HD>
__global__ void __launch_bounds__(kTiledThreads, HD > 64 ? 1 : 2)
    attention_dkdv_tiled_kernel(attn_dims a, const float* __restrict q, const float* __restrict k,
                                const float* __restrict v, const float* __restrict mask,
                                const float* __restrict dy, const float* __restrict lse,
                                const float* __restrict delta, float* __restrict dk,
                                float* __restrict dv) {
  constexpr int CO = kCols<HD>, LD = HD + 1;
  extern __shared__ float4 shm4[];
  float* kt = reinterpret_cast<float*>(shm4);  // [HD][kL]: K^T of the key tile
  float* vt = kt + HD * kL;                    // [HD][kL]: V^T
  float* ps = vt + HD * kL;                    // [kT][kL]: P[r][c] (query row r, key c)
  float* dss = ps + kT * kL;                   // [kT][kL]: dS[r][c]
  float* qs = dss + kT * kL;                   // [kT][LD]: Q rows
  float* dys = qs + kT * LD;                   // [kT][LD]: dY rows
  float* lse_s = dys + kT * LD;                // [kT]
  float* delta_s = lse_s + kT;                 // [kT]
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t j0 = int64_t(blockIdx.x) * kT, g = blockIdx.y, b = blockIdx.z;
  load_transposed<HD>(kt, k + b * a.kb + g * a.kh, a.kr, j0, a.tk, a.d);
  load_transposed<HD>(vt, v + b * a.vb + g * a.vh, a.vr, j0, a.tk, a.dv);
  float dka[4][CO], dva[4][CO];  // keys 4 ty + i, columns tx + 16 c
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int c = 0; c < CO; ++c) dka[i][c] = dva[i][c] = 0.0f;
  const int64_t group = a.group();
  // Causal: rows i < j0 see no key of the tile.
  const int64_t first_row = a.causal ? j0 : 0;
  for (int64_t hi = 0; hi < group; ++hi) {
    const int64_t h = g * group + hi;
    const head_rows hr = head_rows_of(a, b, h, q, dy, mask, lse, delta);
    for (int64_t i0 = first_row; i0 < a.tq; i0 += kT) {
      __syncthreads();  // the previous tile's reads are done (and K^T, V^T are published)
      load_rows<HD>(qs, LD, hr.q, a.qr, i0, a.tq, a.d);
      load_rows<HD>(dys, LD, hr.dy, a.yr, i0, a.tq, a.dv);
      for (int r = threadIdx.x; r < kT; r += blockDim.x) {
        const bool in = i0 + r < a.tq;
        lse_s[r] = in ? hr.lse[i0 + r] : -INFINITY;
        delta_s[r] = in ? hr.delta[i0 + r] : 0.0f;
      }
      __syncthreads();
      // S^T and dP^T: keys 4 ty + i, query rows tx + 16 jj.
      float st[4][4] = {}, dpt[4][4] = {};
      micro_tile_pair<HD>(kt, vt, qs, dys, tx, ty, st, dpt);
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        const int rl = tx + 16 * jj;
        const int64_t r = i0 + rl;
        float p[4], ds[4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
          grad_entry(a, hr.mask, r, j0 + ty * 4 + i, st[i][jj], lse_s[rl], delta_s[rl], dpt[i][jj],
                     p[i], ds[i]);
        st4(ps + rl * kL + ty * 4, p[0], p[1], p[2], p[3]);
        st4(dss + rl * kL + ty * 4, ds[0], ds[1], ds[2], ds[3]);
      }
      __syncthreads();
      // dV += P^T dY, dK += dS^T Q.
#pragma unroll 4
      for (int r = 0; r < kT; ++r) {
        const float4 pv = ld4(ps + r * kL + ty * 4), dsv = ld4(dss + r * kL + ty * 4);
#pragma unroll
        for (int c = 0; c < CO; ++c) {
          const float dyv = dys[r * LD + tx + 16 * c], qv = qs[r * LD + tx + 16 * c];
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            dva[i][c] = fmaf(part(pv, i), dyv, dva[i][c]);
            dka[i][c] = fmaf(part(dsv, i), qv, dka[i][c]);
          }
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t j = j0 + ty * 4 + i;
    if (j >= a.tk) continue;
    float* dkj = dk + b * a.kb + g * a.kh + j * a.kr;
    float* dvj = dv + b * a.vb + g * a.vh + j * a.vr;
#pragma unroll
    for (int c = 0; c < CO; ++c) {
      const int64_t e = tx + 16 * c;
      if (e < a.d) dkj[e] = dka[i][c];
      if (e < a.dv) dvj[e] = dva[i][c];
    }
  }
}

template <int HD>
constexpr int dq_floats() {
  return 2 * HD * kL + 2 * kT * (HD + 1) + kT * kL + 2 * kT;
}

// dQ of one query tile of query head h.
template <int HD>
__global__ void __launch_bounds__(kTiledThreads, HD > 64 ? 1 : 2)
    attention_dq_tiled_kernel(attn_dims a, const float* __restrict q, const float* __restrict k,
                              const float* __restrict v, const float* __restrict mask,
                              const float* __restrict dy, const float* __restrict lse,
                              const float* __restrict delta, float* __restrict dq) {
  constexpr int CO = kCols<HD>, LD = HD + 1;
  extern __shared__ float4 shm4[];
  float* qt = reinterpret_cast<float*>(shm4);  // [HD][kL]: Q^T of the query tile
  float* dyt = qt + HD * kL;                   // [HD][kL]: dY^T
  float* dss = dyt + HD * kL;                  // [kT][kL]: dS[c][r] (key c, query row r)
  float* ks = dss + kT * kL;                   // [kT][LD]: K rows
  float* vs = ks + kT * LD;                    // [kT][LD]: V rows
  float* lse_s = vs + kT * LD;                 // [kT]
  float* delta_s = lse_s + kT;                 // [kT]
  const query_tile t(a, blockIdx.x, blockIdx.y, blockIdx.z, k, v, mask);
  const int tx = static_cast<int>(threadIdx.x % 16), ty = static_cast<int>(threadIdx.x / 16);
  const int64_t i0 = t.i0, h = t.h, b = t.b;
  const float *kg = t.kg, *vg = t.vg, *mg = t.mg;
  load_transposed<HD>(qt, q + b * a.qb + h * a.qh, a.qr, i0, a.tq, a.d);
  load_transposed<HD>(dyt, dy + b * a.yb + h * a.yh, a.yr, i0, a.tq, a.dv);
  for (int r = threadIdx.x; r < kT; r += blockDim.x) {
    const int64_t row = i0 + r;
    const bool in = row < a.tq;
    lse_s[r] = in ? lse[(b * a.hq + h) * a.tq + row] : -INFINITY;
    delta_s[r] = in ? delta[(b * a.hq + h) * a.tq + row] : 0.0f;
  }
  float dqa[4][CO];  // rows 4 ty + i, columns tx + 16 c
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int c = 0; c < CO; ++c) dqa[i][c] = 0.0f;
  const int64_t rows_end = i0 + kT < a.tq ? i0 + kT : a.tq;
  const int64_t keys_end = a.causal && rows_end < a.tk ? rows_end : a.tk;
  for (int64_t j0 = 0; j0 < keys_end; j0 += kT) {
    __syncthreads();  // the previous tile's reads are done (and Q^T, dY^T, lse are published)
    load_rows<HD>(ks, LD, kg, a.kr, j0, a.tk, a.d);
    load_rows<HD>(vs, LD, vg, a.vr, j0, a.tk, a.dv);
    __syncthreads();
    // S and dP: query rows 4 ty + i, keys tx + 16 jj.
    float s[4][4] = {}, dp[4][4] = {};
    micro_tile_pair<HD>(qt, dyt, ks, vs, tx, ty, s, dp);
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {
      const int cl = tx + 16 * jj;
      float ds[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int rl = ty * 4 + i;
        float p;
        grad_entry(a, mg, i0 + rl, j0 + cl, s[i][jj], lse_s[rl], delta_s[rl], dp[i][jj], p, ds[i]);
      }
      st4(dss + cl * kL + ty * 4, ds[0], ds[1], ds[2], ds[3]);
    }
    __syncthreads();
    // dQ += dS K.
#pragma unroll 4
    for (int c = 0; c < kT; ++c) {
      const float4 dsv = ld4(dss + c * kL + ty * 4);
#pragma unroll
      for (int cc = 0; cc < CO; ++cc) {
        const float kv = ks[c * LD + tx + 16 * cc];
#pragma unroll
        for (int i = 0; i < 4; ++i) dqa[i][cc] = fmaf(part(dsv, i), kv, dqa[i][cc]);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t r = i0 + ty * 4 + i;
    if (r >= a.tq) continue;
    float* dqr = dq + b * a.qb + h * a.qh + r * a.qr;
#pragma unroll
    for (int c = 0; c < CO; ++c) {
      const int64_t e = tx + 16 * c;
      if (e < a.d) dqr[e] = dqa[i][c];
    }
  }
}

// ---- launches ---------------------------------------------------------------------------------

template <int HD>
void forward_hd(stream& s, const attn_dims& a, const float* q, const float* k, const float* v,
                const float* mask, float* y, float* lse) {
  static std::atomic<uint64_t> done{0};
  const size_t bytes = sizeof(float) * forward_floats<HD>();
  allow_shared(attention_forward_tiled_kernel<HD>, bytes, done, s.device);
  attention_forward_tiled_kernel<HD>
      <<<attn_tiles(a.tq, a.hq, a.batch), kTiledThreads, bytes, s.handle>>>(a, q, k, v, mask, y,
                                                                            lse);
  NNP_CUDA_CHECK_LAUNCH();
}

template <int HD>
void backward_hd(stream& s, const attn_dims& a, const float* q, const float* k, const float* v,
                 const float* mask, const float* dy, const float* lse, const float* delta,
                 float* dq, float* dk, float* dv) {
  static std::atomic<uint64_t> done_kv{0}, done_q{0};
  const size_t kv_bytes = sizeof(float) * dkdv_floats<HD>();
  allow_shared(attention_dkdv_tiled_kernel<HD>, kv_bytes, done_kv, s.device);
  attention_dkdv_tiled_kernel<HD>
      <<<attn_tiles(a.tk, a.hkv, a.batch), kTiledThreads, kv_bytes, s.handle>>>(
          a, q, k, v, mask, dy, lse, delta, dk, dv);
  NNP_CUDA_CHECK_LAUNCH();
  const size_t q_bytes = sizeof(float) * dq_floats<HD>();
  allow_shared(attention_dq_tiled_kernel<HD>, q_bytes, done_q, s.device);
  attention_dq_tiled_kernel<HD>
      <<<attn_tiles(a.tq, a.hq, a.batch), kTiledThreads, q_bytes, s.handle>>>(a, q, k, v, mask, dy,
                                                                              lse, delta, dq);
  NNP_CUDA_CHECK_LAUNCH();
}

}  // namespace

float* attention_delta(stream& s, const attn_dims& a, const float* y, const float* dy) {
  const int64_t rows = a.batch * a.hq * a.tq;
  float* delta = static_cast<float*>(s.scratch(kScratchTemp0, sizeof(float) * rows));
  attention_delta_kernel<<<grid_for(rows * 32), kThreads, 0, s.handle>>>(a, y, dy, delta);
  NNP_CUDA_CHECK_LAUNCH();
  return delta;
}

void attention_forward_tiled(stream& s, const attn_dims& a, const float* q, const float* k,
                             const float* v, const float* mask, float* y, float* lse) {
  switch (padded_head_dim(a)) {
    case 32:
      return forward_hd<32>(s, a, q, k, v, mask, y, lse);
    case 64:
      return forward_hd<64>(s, a, q, k, v, mask, y, lse);
    default:
      return forward_hd<128>(s, a, q, k, v, mask, y, lse);
  }
}

void attention_backward_tiled(stream& s, const attn_dims& a, const float* q, const float* k,
                              const float* v, const float* mask, const float* y, const float* dy,
                              const float* lse, float* dq, float* dk, float* dv) {
  const float* delta = attention_delta(s, a, y, dy);
  switch (padded_head_dim(a)) {
    case 32:
      return backward_hd<32>(s, a, q, k, v, mask, dy, lse, delta, dq, dk, dv);
    case 64:
      return backward_hd<64>(s, a, q, k, v, mask, dy, lse, delta, dq, dk, dv);
    default:
      return backward_hd<128>(s, a, q, k, v, mask, dy, lse, delta, dq, dk, dv);
  }
}

}  // namespace nnp::cuda
