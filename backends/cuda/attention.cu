// attention.cu — scaled dot-product attention, forward and backward (NNP_OP_ATTENTION_*, ONNX
// Attention opset 23; the formulas of nnp_attention_params in nnplug_ops.h), float32, both
// layouts ([B, H, T, D] and [B, T, H*D]), grouped-query heads, additive broadcast mask, causal
// mask (upper-left), the optional softmax_lse output.
//
// Own kernels for float32 (cuDNN's fused attention takes 16-bit calls only): the tiled
// FlashAttention-2-style kernels of attention_tiled.cu (D, Dv <= 128, any Tk), the same tiles on
// tensor cores in 3xTF32 (attention_mma.cu, when forced), the short-sequence kernels of
// attention_small.cu (Tq, Tk <= 32, D, Dv <= 64), and this file's row kernels (any D, Dv; short
// sequences). path_of below chooses.
// Row kernels:
//  - forward: one block per (query row i, query head h, batch b). The block keeps q_i and the
//    row's Tk scores in shared memory: s_j = scale * q_i . k_j + mask (threads over keys), the
//    row's max and log-sum-exp by block reductions, p_j = exp(s_j - lse) in place, then
//    y_i = sum_j p_j v_j with the threads split over (output column, key slice) and the slices'
//    partial sums added in shared memory. A fully masked row gives y_i = 0, lse = -inf.
//  - backward (FlashAttention-2's formulas, Dao 2023), two passes, no atomics, so the result
//    does not depend on scheduling:
//      pass 1, one block per query row: recompute p_j from the forward's lse, delta =
//      dy_i . y_i, dp_j = dy_i . v_j, ds_j = scale * p_j * (dp_j - delta); dq_i = sum_j ds_j
//      k_j; p and ds rows go to scratch [B, Hq, Tq, Tk];
//    pass 2, one block per key row j of kv head g: dv_j = sum over the group's query heads
//      and rows of p_ij dy_i, dk_j = sum of ds_ij q_i.
// Accumulation is float32. Limits (op_supported answers UNSUPPORTED beyond them): batch and
// head counts <= 65535 (grid dimensions); D and Dv <= 128 (tiled), or else the row kernels'
// shared memory per block within 48 KiB: Tk + D + 128 floats forward, 2 Tk + D + Dv + 128
// backward.
#include "attention.cuh"
#include "attention_cudnn.hpp"

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace nnp::cuda {
namespace {

constexpr int kAttnThreads = 128;
constexpr size_t kSharedLimit = 48 * 1024;

attn_dims dims_of(const nnp::kit::attention_geometry& g) {
  attn_dims a{};
  a.batch = g.batch;
  a.hq = g.hq;
  a.hkv = g.hkv;
  a.tq = g.tq;
  a.tk = g.tk;
  a.d = g.d;
  a.dv = g.dv;
  a.scale = static_cast<float>(g.scale);
  a.causal = g.causal ? 1 : 0;
  a.qb = g.q.batch_stride, a.qh = g.q.head_stride, a.qr = g.q.row_stride;
  a.kb = g.k.batch_stride, a.kh = g.k.head_stride, a.kr = g.k.row_stride;
  a.vb = g.v.batch_stride, a.vh = g.v.head_stride, a.vr = g.v.row_stride;
  a.yb = g.y.batch_stride, a.yh = g.y.head_stride, a.yr = g.y.row_stride;
  a.m0 = g.mask_strides[0], a.m1 = g.mask_strides[1];
  a.m2 = g.mask_strides[2], a.m3 = g.mask_strides[3];
  return a;
}

// Scores of query row i (head h, batch b) into s[0, tk): -inf for keys the causal mask hides.
// qs holds q_i (d floats). Ends with a barrier.
__device__ void scores_row(const attn_dims& a, const float* __restrict k,
                           const float* __restrict mask, int64_t b, int64_t h, int64_t i,
                           const float* qs, float* s) {
  const int64_t kvh = h / a.group();
  const int64_t visible = a.visible(i);
  for (int64_t j = threadIdx.x; j < a.tk; j += blockDim.x) {
    if (j >= visible) {
      s[j] = -INFINITY;
      continue;
    }
    const float* kj = k + b * a.kb + kvh * a.kh + j * a.kr;
    float dot = 0.0f;
    for (int64_t e = 0; e < a.d; ++e) dot = fmaf(qs[e], kj[e], dot);
    float v = a.scale * dot;
    if (mask != nullptr) v += mask[b * a.m0 + h * a.m1 + i * a.m2 + j * a.m3];
    s[j] = v;
  }
  __syncthreads();
}

// out[e] = sum_{j < n} of the terms for column e (term(j, e, acc) returns acc plus term j), for
// e < width: the block's threads split over (column e, slice of j), the slices' sums added
// through red (blockDim.x floats). Every thread must call it; ends with a barrier.
template <typename Term>
__device__ void column_sums(int64_t n, int64_t width, float* red, float* out, Term term) {
  for (int64_t e0 = 0; e0 < width; e0 += blockDim.x) {
    const int64_t cols = width - e0 < blockDim.x ? width - e0 : blockDim.x;
    const int64_t slices = blockDim.x / cols;
    const int64_t e = e0 + threadIdx.x % cols, slice = threadIdx.x / cols;
    float acc = 0.0f;
    if (slice < slices)
      for (int64_t j = slice; j < n; j += slices) acc = term(j, e, acc);
    red[threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.x < cols) {
      float sum = 0.0f;
      for (int64_t sl = 0; sl < slices; ++sl) sum += red[sl * cols + threadIdx.x];
      out[e0 + threadIdx.x] = sum;
    }
    __syncthreads();
  }
}

// out[e] = sum_{j < n} w[j] * rows[j * row_stride + e] for e < width (column_sums).
__device__ void weighted_rows(const float* w, int64_t n, const float* __restrict rows,
                              int64_t row_stride, int64_t width, float* red, float* out) {
  column_sums(n, width, red, out, [&](int64_t j, int64_t e, float acc) {
    return fmaf(w[j], rows[j * row_stride + e], acc);
  });
}

__global__ void attention_forward_kernel(attn_dims a, const float* __restrict q,
                                         const float* __restrict k, const float* __restrict v,
                                         const float* __restrict mask, float* __restrict y,
                                         float* __restrict lse) {
  extern __shared__ float shm[];
  float* s = shm;         // [tk] scores, then probabilities
  float* qs = s + a.tk;   // [d]
  float* red = qs + a.d;  // [blockDim.x]
  const int64_t i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const float* qi = q + b * a.qb + h * a.qh + i * a.qr;
  for (int64_t e = threadIdx.x; e < a.d; e += blockDim.x) qs[e] = qi[e];
  __syncthreads();
  scores_row(a, k, mask, b, h, i, qs, s);
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < a.tk; j += blockDim.x) mx = fmaxf(mx, s[j]);
  mx = block_reduce(mx, max_op{}, -INFINITY);
  float* yi = y + b * a.yb + h * a.yh + i * a.yr;
  if (mx == -INFINITY || isnan(mx)) {  // fully masked (or NaN scores: propagate NaN)
    const float fill = isnan(mx) ? mx : 0.0f;
    for (int64_t e = threadIdx.x; e < a.dv; e += blockDim.x) yi[e] = fill;
    if (lse != nullptr && threadIdx.x == 0)
      lse[(b * a.hq + h) * a.tq + i] = isnan(mx) ? mx : -INFINITY;
    return;
  }
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < a.tk; j += blockDim.x) sum += expf(s[j] - mx);
  sum = block_reduce(sum, sum_op{}, 0.0f);
  const float row_lse = mx + logf(sum);
  for (int64_t j = threadIdx.x; j < a.tk; j += blockDim.x) s[j] = expf(s[j] - row_lse);
  __syncthreads();
  const int64_t kvh = h / a.group();
  weighted_rows(s, a.tk, v + b * a.vb + kvh * a.vh, a.vr, a.dv, red, yi);
  if (lse != nullptr && threadIdx.x == 0) lse[(b * a.hq + h) * a.tq + i] = row_lse;
}

// Pass 1 of the backward: dq_i, and the rows p_i and ds_i into pbuf / dsbuf [B, Hq, Tq, Tk].
__global__ void attention_backward_rows_kernel(attn_dims a, const float* __restrict q,
                                               const float* __restrict k, const float* __restrict v,
                                               const float* __restrict mask,
                                               const float* __restrict y,
                                               const float* __restrict dy,
                                               const float* __restrict lse, float* __restrict dq,
                                               float* __restrict pbuf, float* __restrict dsbuf) {
  extern __shared__ float shm[];
  float* s = shm;           // [tk] scores, then p
  float* ds = s + a.tk;     // [tk]
  float* qs = ds + a.tk;    // [d]
  float* dys = qs + a.d;    // [dv]
  float* red = dys + a.dv;  // [blockDim.x]
  const int64_t i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int64_t row = (b * a.hq + h) * a.tq + i;
  float* p_out = pbuf + row * a.tk;
  float* ds_out = dsbuf + row * a.tk;
  float* dqi = dq + b * a.qb + h * a.qh + i * a.qr;
  const float row_lse = lse[row];
  if (row_lse == -INFINITY) {  // fully masked in the forward: no gradient
    for (int64_t j = threadIdx.x; j < a.tk; j += blockDim.x) p_out[j] = ds_out[j] = 0.0f;
    for (int64_t e = threadIdx.x; e < a.d; e += blockDim.x) dqi[e] = 0.0f;
    return;
  }
  const float* qi = q + b * a.qb + h * a.qh + i * a.qr;
  const float* yi = y + b * a.yb + h * a.yh + i * a.yr;
  const float* dyi = dy + b * a.yb + h * a.yh + i * a.yr;
  for (int64_t e = threadIdx.x; e < a.d; e += blockDim.x) qs[e] = qi[e];
  float delta = 0.0f;
  for (int64_t e = threadIdx.x; e < a.dv; e += blockDim.x) {
    dys[e] = dyi[e];
    delta = fmaf(dyi[e], yi[e], delta);
  }
  delta = block_reduce(delta, sum_op{}, 0.0f);  // its barriers also publish qs and dys
  scores_row(a, k, mask, b, h, i, qs, s);
  const int64_t kvh = h / a.group();
  const float* vg = v + b * a.vb + kvh * a.vh;
  for (int64_t j = threadIdx.x; j < a.tk; j += blockDim.x) {
    const float p = expf(s[j] - row_lse);  // 0 for hidden keys (exp(-inf))
    const float* vj = vg + j * a.vr;
    float dp = 0.0f;
    for (int64_t e = 0; e < a.dv; ++e) dp = fmaf(dys[e], vj[e], dp);
    const float d_s = a.scale * p * (dp - delta);
    s[j] = p;
    ds[j] = d_s;
    p_out[j] = p;
    ds_out[j] = d_s;
  }
  __syncthreads();
  weighted_rows(ds, a.tk, k + b * a.kb + kvh * a.kh, a.kr, a.d, red, dqi);
}

// Pass 2 of the backward: dk_j and dv_j of kv head g, summed over the group's query heads.
__global__ void attention_backward_keys_kernel(attn_dims a, const float* __restrict q,
                                               const float* __restrict dy,
                                               const float* __restrict pbuf,
                                               const float* __restrict dsbuf, float* __restrict dk,
                                               float* __restrict dv) {
  extern __shared__ float shm[];
  float* red = shm;  // [blockDim.x]
  const int64_t j = blockIdx.x, g = blockIdx.y, b = blockIdx.z;
  const int64_t group = a.group();
  float* dkj = dk + b * a.kb + g * a.kh + j * a.kr;
  float* dvj = dv + b * a.vb + g * a.vh + j * a.vr;
  // out[e] = sum over (h in the group, i < tq) of w[h, i, j] * rows[h, i, e], for both outputs.
  auto column_sum = [&](const float* w, const float* rows, int64_t rb, int64_t rh, int64_t rr,
                        int64_t width, float* out) {
    column_sums(group * a.tq, width, red, out, [&](int64_t hi, int64_t e, float acc) {
      const int64_t h = g * group + hi / a.tq, i = hi % a.tq;
      return fmaf(w[((b * a.hq + h) * a.tq + i) * a.tk + j], rows[b * rb + h * rh + i * rr + e],
                  acc);
    });
  };
  column_sum(pbuf, dy, a.yb, a.yh, a.yr, a.dv, dvj);
  column_sum(dsbuf, q, a.qb, a.qh, a.qr, a.d, dkj);
}

const float* opt_f32(const DLTensor* t) {
  return t != nullptr ? data_ptr<const float>(*t) : nullptr;
}

size_t forward_shared(const nnp::kit::attention_geometry& g) {
  return sizeof(float) * static_cast<size_t>(g.tk + g.d + kAttnThreads);
}
size_t backward_shared(const nnp::kit::attention_geometry& g) {
  return sizeof(float) * static_cast<size_t>(2 * g.tk + g.d + g.dv + kAttnThreads);
}

nnp::kit::attention_geometry geometry_of(const op_call& c) {
  return nnp::kit::attention_geometry(c.params_as<nnp_attention_params>(), *c.in(0), *c.in(1),
                                      *c.in(2), c.in(3));
}

// Which kernels run a call: the short-sequence kernels (attention_small.cu), the row kernels of
// this file or the tiled ones (attention_tiled.cu). The short-sequence kernels take Tq, Tk <= 32
// and D, Dv <= 64: a head per block, a query row per warp (the vit's B = 128, Hq = 4, T = 17:
// 512 blocks of 4 warps, where the row kernels ran 8 704 blocks of 128 threads for 17 keys
// each and wrote P and dS to memory between two backward passes). The tiled kernels take
// D, Dv <= 128 and any Tk, and run when Tk > kRowsMaxKeys (with at most 32 keys a 64 x 64 tile
// is at most half used); the row kernels any D, Dv while a row's scores fit their shared
// memory, so they run the rest: a short sequence with a head dimension above 64.
// The tensor-core kernels (attention_mma.cu: the tiled kernels' tiles in 3xTF32) take what the
// tiled ones take on devices of compute capability 8.0 and later; they run only when forced,
// until they are measured against the tiled kernels on a GPU.
// NNPLUG_CUDA_ATTENTION_KERNEL=small|rows|tiled|mma (read once) forces one path where it can
// run, for measurements side by side and as a fallback (docs/cuda-backend.md).
enum class attn_path { small, rows, tiled, mma };
constexpr int64_t kRowsMaxKeys = 32;

// 0: the rule above, 1: rows, 2: tiled, 3: small, 4: cudnn (16-bit), 5: mma
int forced_path() {
  static const int forced = [] {
    const char* e = std::getenv("NNPLUG_CUDA_ATTENTION_KERNEL");
    const std::string v = e != nullptr ? e : "";
    return v == "rows"    ? 1
           : v == "tiled" ? 2
           : v == "small" ? 3
           : v == "cudnn" ? 4
           : v == "mma"   ? 5
                          : 0;
  }();
  return forced;
}

// The path of `op` (attention_forward or attention_backward), whose row kernels need `shared`
// bytes of shared memory per block, on a device with tensor cores or not; UNSUPPORTED when no
// path takes the call.
attn_path path_of(const char* op, const nnp::kit::attention_geometry& g, size_t shared,
                  bool tensor_cores) {
  if (g.batch > 65535 || g.hq > 65535 || g.hkv > 65535)
    unsupported(
        format("%s: the cuda kernels take at most 65535 batches and heads (grid "
               "dimensions), got B = %lld, Hq = %lld, Hkv = %lld",
               op, static_cast<long long>(g.batch), static_cast<long long>(g.hq),
               static_cast<long long>(g.hkv)));
  const bool rows_ok = shared <= kSharedLimit;
  const bool tiled_ok = g.d <= kTiledMaxHeadDim && g.dv <= kTiledMaxHeadDim;
  const bool small_ok = g.tq <= kSmallMaxTokens && g.tk <= kSmallMaxTokens &&
                        g.d <= kSmallMaxHeadDim && g.dv <= kSmallMaxHeadDim;
  if (!rows_ok && !tiled_ok)
    unsupported(format(
        "%s: Tk = %lld keys with D = %lld, Dv = %lld: the cuda row kernels need %zu "
        "bytes of shared memory per block, more than their %zu, and the tiled kernels "
        "take D and Dv up to %lld",
        op, static_cast<long long>(g.tk), static_cast<long long>(g.d), static_cast<long long>(g.dv),
        shared, kSharedLimit, static_cast<long long>(kTiledMaxHeadDim)));
  switch (forced_path()) {
    case 1:
      if (rows_ok) return attn_path::rows;
      break;
    case 2:
      if (tiled_ok) return attn_path::tiled;
      break;
    case 3:
      if (small_ok) return attn_path::small;
      break;
    case 5:
      if (tiled_ok && tensor_cores) return attn_path::mma;
      break;
    default:
      break;
  }
  if (small_ok) return attn_path::small;
  bool tiled = g.tk > kRowsMaxKeys;
  if (tiled && !tiled_ok) tiled = false;
  if (!tiled && !rows_ok) tiled = true;
  return tiled ? attn_path::tiled : attn_path::rows;
}

// What forward and backward share: the geometry, its kernels' form and the grid of one block per
// query row.
struct attention_call {
  nnp::kit::attention_geometry g;
  attn_dims a;
  dim3 rows;
  bool any_rows;
};

attention_call attention_call_of(const op_call& c) {
  const nnp::kit::attention_geometry g = geometry_of(c);
  return {g, dims_of(g),
          dim3(static_cast<unsigned>(g.tq), static_cast<unsigned>(g.hq),
               static_cast<unsigned>(g.batch)),
          g.tq > 0 && g.hq > 0 && g.batch > 0};
}

// The forward on float32 operands (mask and lse may be NULL), by the kernels path_of chooses;
// `math` is the call's dtype (float32 copies of a 16-bit call's tensors: the tensor-core kernels
// then multiply in that type).
void forward_f32(stream& s, const attention_call& at, const float* q, const float* k,
                 const float* v, const float* mask, float* y, float* lse, elem math) {
  const attn_path path =
      path_of("attention_forward", at.g, forward_shared(at.g), tensor_core_attention(s));
  if (path == attn_path::small) {
    attention_forward_small(s, at.a, q, k, v, mask, y, lse);
    return;
  }
  if (path == attn_path::mma) {
    attention_forward_mma(s, at.a, q, k, v, mask, y, lse, math);
    return;
  }
  if (path == attn_path::tiled) {
    attention_forward_tiled(s, at.a, q, k, v, mask, y, lse);
    return;
  }
  attention_forward_kernel<<<at.rows, kAttnThreads, forward_shared(at.g), s.handle>>>(at.a, q, k, v,
                                                                                      mask, y, lse);
  NNP_CUDA_CHECK_LAUNCH();
}

// The backward on float32 operands, for a call with query rows and keys.
void backward_f32(stream& s, const attention_call& at, const float* q, const float* k,
                  const float* v, const float* mask, const float* y, const float* dy,
                  const float* lse, float* dq, float* dk, float* dv, elem math) {
  const nnp::kit::attention_geometry& g = at.g;
  const attn_path path =
      path_of("attention_backward", g, backward_shared(g), tensor_core_attention(s));
  if (path == attn_path::small) {
    attention_backward_small(s, at.a, q, k, v, mask, y, dy, lse, dq, dk, dv);
    return;
  }
  if (path == attn_path::mma) {
    attention_backward_mma(s, at.a, q, k, v, mask, y, dy, lse, dq, dk, dv, math);
    return;
  }
  if (path == attn_path::tiled) {
    attention_backward_tiled(s, at.a, q, k, v, mask, y, dy, lse, dq, dk, dv);
    return;
  }
  const size_t scores = static_cast<size_t>(g.batch * g.hq * g.tq * g.tk);
  float* pbuf = static_cast<float*>(s.scratch(kScratchTemp0, sizeof(float) * scores));
  float* dsbuf = static_cast<float*>(s.scratch(kScratchTemp1, sizeof(float) * scores));
  attention_backward_rows_kernel<<<at.rows, kAttnThreads, backward_shared(g), s.handle>>>(
      at.a, q, k, v, mask, y, dy, lse, dq, pbuf, dsbuf);
  NNP_CUDA_CHECK_LAUNCH();
  const dim3 key_rows(static_cast<unsigned>(g.tk), static_cast<unsigned>(g.hkv),
                      static_cast<unsigned>(g.batch));
  attention_backward_keys_kernel<<<key_rows, kAttnThreads, sizeof(float) * kAttnThreads,
                                   s.handle>>>(at.a, q, dy, pbuf, dsbuf, dk, dv);
  NNP_CUDA_CHECK_LAUNCH();
}

// ---- 16-bit calls --------------------------------------------------------------------------
// cuDNN's fused attention (attention_cudnn.cpp) where it takes the call, unless an own kernel is
// forced; else float32 copies of the 16-bit operands in scratch (slot kScratchTemp2), the
// float32 kernels above, and the results converted back (round to nearest even). softmax_lse is
// float32 in a 16-bit call (the op table's accumulation rule, ABI 1.9): both paths read and
// write it as it is.

const void* data_of(const DLTensor* t) { return t != nullptr ? data_ptr<const char>(*t) : nullptr; }
float* f32_of(const DLTensor* t) { return t != nullptr ? data_ptr<float>(*t) : nullptr; }
int64_t numel_of(const DLTensor* t) { return t != nullptr ? nnp::numel(*t) : 0; }

// Float32 buffers of counts[i] elements (NULL for a count of 0), carved out of the stream's
// kScratchTemp2 buffer, each 256-byte aligned.
std::vector<float*> f32_buffers(stream& s, std::initializer_list<int64_t> counts) {
  size_t total = 0;
  std::vector<size_t> offsets;
  for (int64_t n : counts) {
    offsets.push_back(total);
    total += (static_cast<size_t>(n) * sizeof(float) + 255) / 256 * 256;
  }
  char* base = static_cast<char*>(s.scratch(kScratchTemp2, total > 0 ? total : 1));
  std::vector<float*> out;
  size_t i = 0;
  for (int64_t n : counts) {
    out.push_back(n > 0 ? reinterpret_cast<float*>(base + offsets[i]) : nullptr);
    ++i;
  }
  return out;
}

// x (a 16-bit tensor, or NULL) into its float32 copy f.
void to_f32(stream& s, elem t, const DLTensor* x, float* f) {
  if (x != nullptr && f != nullptr) launch_cast(s, t, data_of(x), elem::f32, f, nnp::numel(*x));
}
// The float32 result f into y (a 16-bit tensor, or NULL).
void from_f32(stream& s, elem t, const float* f, const DLTensor* y) {
  if (y != nullptr && f != nullptr)
    launch_cast(s, elem::f32, f, t, data_ptr<char>(*y), nnp::numel(*y));
}

// Whether cuDNN may be asked (no own kernel forced), and whether it is forced.
bool cudnn_allowed() { return forced_path() == 0 || forced_path() == 4; }
bool cudnn_forced() { return forced_path() == 4; }

void forward_16bit(stream& s, const op_call& c, const attention_call& at, elem t) {
  float* lse = f32_of(c.out(1));
  if (cudnn_allowed()) {
    const std::string why =
        attention_forward_cudnn(s, t, at.g, data_of(c.in(0)), data_of(c.in(1)), data_of(c.in(2)),
                                c.in(3) != nullptr, data_ptr<char>(*c.out(0)), lse);
    if (why.empty()) return;
    if (cudnn_forced()) unsupported("attention_forward: " + why);
  }
  const std::vector<float*> f =
      f32_buffers(s, {numel_of(c.in(0)), numel_of(c.in(1)), numel_of(c.in(2)), numel_of(c.in(3)),
                      numel_of(c.out(0))});
  for (int i = 0; i < 4; ++i) to_f32(s, t, c.in(i), f[i]);
  forward_f32(s, at, f[0], f[1], f[2], f[3], f[4], lse, t);
  from_f32(s, t, f[4], c.out(0));
}

void backward_16bit(stream& s, const op_call& c, const attention_call& at, elem t) {
  const float* lse = opt_f32(c.in(6));
  if (cudnn_allowed()) {
    const std::string why = attention_backward_cudnn(
        s, t, at.g, data_of(c.in(0)), data_of(c.in(1)), data_of(c.in(2)), c.in(3) != nullptr,
        data_of(c.in(4)), data_of(c.in(5)), lse, data_ptr<char>(*c.out(0)),
        data_ptr<char>(*c.out(1)), data_ptr<char>(*c.out(2)));
    if (why.empty()) return;
    if (cudnn_forced()) unsupported("attention_backward: " + why);
  }
  const std::vector<float*> f =
      f32_buffers(s, {numel_of(c.in(0)), numel_of(c.in(1)), numel_of(c.in(2)), numel_of(c.in(3)),
                      numel_of(c.in(4)), numel_of(c.in(5)), numel_of(c.out(0)), numel_of(c.out(1)),
                      numel_of(c.out(2))});
  for (int i = 0; i < 6; ++i) to_f32(s, t, c.in(i), f[i]);
  backward_f32(s, at, f[0], f[1], f[2], f[3], f[4], f[5], lse, f[6], f[7], f[8], t);
  for (int i = 0; i < 3; ++i) from_f32(s, t, f[6 + i], c.out(i));
}

// With NNPLUG_CUDA_ATTENTION_KERNEL=cudnn, what cuDNN refuses before it is asked is UNSUPPORTED.
void check_forced_cudnn(const char* op, const op_call& c, const nnp::kit::attention_geometry& g) {
  if (!cudnn_forced()) return;
  const std::string why =
      cudnn_attention_refusal(elem_of(c.in(0)->dtype), g, c.in(3) != nullptr, {});
  if (!why.empty()) unsupported(format("%s: %s", op, why.c_str()));
}

}  // namespace

void check_attention_forward_limits(const op_call& c) {
  const nnp::kit::attention_geometry g = geometry_of(c);
  path_of("attention_forward", g, forward_shared(g), false);
  check_forced_cudnn("attention_forward", c, g);
}

void check_attention_backward_limits(const op_call& c) {
  const nnp::kit::attention_geometry g = geometry_of(c);
  path_of("attention_backward", g, backward_shared(g), false);
  check_forced_cudnn("attention_backward", c, g);
}

void op_attention_forward(stream& s, const op_call& c) {
  const attention_call at = attention_call_of(c);
  if (!at.any_rows) return;
  const elem t = elem_of(c.in(0)->dtype);
  if (t != elem::f32) {
    forward_16bit(s, c, at, t);
    return;
  }
  forward_f32(s, at, opt_f32(c.in(0)), opt_f32(c.in(1)), opt_f32(c.in(2)), opt_f32(c.in(3)),
              data_ptr<float>(*c.out(0)), f32_of(c.out(1)), elem::f32);
}

void op_attention_backward(stream& s, const op_call& c) {
  const attention_call at = attention_call_of(c);
  const nnp::kit::attention_geometry& g = at.g;
  const elem t = elem_of(c.in(0)->dtype);
  const size_t bytes = elem_size(t);
  const int64_t keys = g.batch * g.hkv * g.tk;
  if (!at.any_rows || g.tk == 0) {  // no query rows: dK and dV are zero; no keys: dQ is zero
    if (keys > 0) {
      NNP_CUDA_CHECK(
          cudaMemsetAsync(data_ptr<char>(*c.out(1)), 0, bytes * nnp::numel(*c.out(1)), s.handle));
      NNP_CUDA_CHECK(
          cudaMemsetAsync(data_ptr<char>(*c.out(2)), 0, bytes * nnp::numel(*c.out(2)), s.handle));
    }
    if (g.tk == 0 && at.any_rows)
      NNP_CUDA_CHECK(
          cudaMemsetAsync(data_ptr<char>(*c.out(0)), 0, bytes * nnp::numel(*c.out(0)), s.handle));
    return;
  }
  if (t != elem::f32) {
    backward_16bit(s, c, at, t);
    return;
  }
  backward_f32(s, at, opt_f32(c.in(0)), opt_f32(c.in(1)), opt_f32(c.in(2)), opt_f32(c.in(3)),
               opt_f32(c.in(4)), opt_f32(c.in(5)), opt_f32(c.in(6)), data_ptr<float>(*c.out(0)),
               data_ptr<float>(*c.out(1)), data_ptr<float>(*c.out(2)), elem::f32);
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kAttentionOps[] = {
    {NNP_OP_ATTENTION_FORWARD,  kHalfFloats, on_stream<op_attention_forward>, check_attention_forward_limits},
    {NNP_OP_ATTENTION_BACKWARD, kHalfFloats, on_stream<op_attention_backward>, check_attention_backward_limits},
};
// clang-format on
extern const kit::op_row_list kAttentionRows = kit::row_list(kAttentionOps);

}  // namespace nnp::cuda
