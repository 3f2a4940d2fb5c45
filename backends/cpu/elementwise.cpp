// Elementwise ops and data movement on the CPU: dropout (NNP_OP_DROPOUT_*), binary ops with
// numpy broadcasting, scale, fill, copy (any strides), transpose and cast.
//
// Speed: every op is one streaming pass split into ~32k-element TBB tasks. Broadcasting and
// strided copies first coalesce dimensions (merging neighbours that are contiguous for every
// operand, dropping size-1 dimensions), so the innermost loop is as long as possible and has
// unit or zero strides that the compiler vectorises; the outer index is decoded once per row.
// Dropout draws one Philox4x32-10 block per 4 elements (nnplug/kit/philox.hpp, the same
// stream as the reference: bit-identical masks); blocks are independent, so it parallelises
// with no shared state. The forward's keep mask stays in a per-stream cache (4 slots), so the
// backward with the same params reads it instead of running Philox again. With the optional
// step input (float32, ABI 1.4) the counter offset is offset + step * offset_per_step, step
// read inside the call (the op runs there) and refused unless a whole number >= 0
// (nnplug/kit/step.hpp); the cache is keyed by that offset.
#include "cpu_backend.hpp"

#include <nnplug/kit/half.hpp>
#include <nnplug/kit/philox.hpp>
#include <nnplug/kit/step.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace nnp::cpu {

// ---- dropout ------------------------------------------------------------------------------------
namespace {

// Philox4x32-10 for kLanes consecutive counters at once (the same arithmetic as
// nnplug/kit/philox.hpp, lane by lane): written as loops over lanes so the compiler turns
// the 32x32->64-bit products into SIMD multiplies (pmuludq) instead of one block at a time.
constexpr int kLanes = 8;

// AVX2 clone where the CPU has it (8 lanes of 32x32->64 multiplies per instruction pair).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
void philox_keep_masks(uint64_t seed, uint64_t first_counter, uint32_t threshold,
                       uint32_t* keep /* [4 * kLanes]: all ones = keep, 0 = drop */) {
  uint32_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    const uint64_t c = first_counter + static_cast<uint64_t>(l);
    c0[l] = static_cast<uint32_t>(c);
    c1[l] = static_cast<uint32_t>(c >> 32);
    c2[l] = 0;
    c3[l] = 0;
  }
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    for (int l = 0; l < kLanes; ++l) {
      const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0[l];
      const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2[l];
      const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
      const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
      const uint32_t n0 = hi1 ^ c1[l] ^ k0, n2 = hi0 ^ c3[l] ^ k1;
      c0[l] = n0;
      c1[l] = lo1;
      c2[l] = n2;
      c3[l] = lo0;
    }
  }
  // element 4*l + w of the group takes word w of counter l
  for (int l = 0; l < kLanes; ++l) {
    keep[4 * l + 0] = 0u - static_cast<uint32_t>((c0[l] >> 8) >= threshold);
    keep[4 * l + 1] = 0u - static_cast<uint32_t>((c1[l] >> 8) >= threshold);
    keep[4 * l + 2] = 0u - static_cast<uint32_t>((c2[l] >> 8) >= threshold);
    keep[4 * l + 3] = 0u - static_cast<uint32_t>((c3[l] >> 8) >= threshold);
  }
}

// Forward: y = keep ? x * scale : 0 from Philox; the keep bytes go to `mask` (the optional
// output) and/or `cache` (the stream's mask cache), either may be NULL.
void dropout_generate(const nnp_dropout_params& p, const float* x, float* y, uint8_t* mask,
                      uint8_t* cache, int64_t n) {
  const uint32_t threshold = dropout_threshold(p.ratio);
  const float scale = dropout_scale<float>(p.ratio);
  constexpr int64_t kGroup = 4 * kLanes;  // elements per philox_keep_masks call
  const int64_t groups = (n + kGroup - 1) / kGroup;
  parallel_for(groups, kElementwiseGrain / kGroup, [&](int64_t gb, int64_t ge) {
    alignas(64) uint32_t keep[kGroup];
    alignas(64) uint32_t out[kGroup];
    for (int64_t g = gb; g < ge; ++g) {
      const int64_t i0 = g * kGroup, len = std::min(kGroup, n - i0);
      philox_keep_masks(p.seed, p.offset + static_cast<uint64_t>(g * kLanes), threshold, keep);
      // y = keep ? x * scale : 0 as a bit mask (dropped NaN/Inf inputs give 0, as the rule
      // says), through a stack buffer so it vectorises even when y aliases x.
      for (int64_t j = 0; j < len; ++j) {
        const float v = x[i0 + j] * scale;
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        out[j] = bits & keep[j];
      }
      std::memcpy(y + i0, out, static_cast<size_t>(len) * sizeof(float));
      if (mask != nullptr)
        for (int64_t j = 0; j < len; ++j) mask[i0 + j] = static_cast<uint8_t>(keep[j] & 1u);
      if (cache != nullptr)
        for (int64_t j = 0; j < len; ++j) cache[i0 + j] = static_cast<uint8_t>(keep[j] & 1u);
    }
  });
}

// y = keep ? x * scale : 0 from stored keep bytes (backward with a cached mask).
void dropout_from_mask(const nnp_dropout_params& p, const float* x, float* y, const uint8_t* keep,
                       int64_t n) {
  const float scale = dropout_scale<float>(p.ratio);
  parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
    map_block(y, b, e, [=](int64_t i) {
      const float v = x[i] * scale;
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      bits &= 0u - static_cast<uint32_t>(keep[i]);
      float r;
      std::memcpy(&r, &bits, 4);
      return r;
    });
  });
}

// Masks up to this many elements are cached per stream (4 slots: 64 MiB at most).
constexpr int64_t kMaxCachedMask = int64_t{16} << 20;

bool same_mask(const dropout_mask& m, const nnp_dropout_params& p, int64_t n) {
  return m.n == n && m.seed == p.seed && m.offset == p.offset && m.ratio == p.ratio;
}

// The call's params with the offset its step input gives (params unchanged without one).
nnp_dropout_params params_at_step(const op_call& c, const char* op) {
  auto p = c.params_as<nnp_dropout_params>();
  if (const float* step = f32(c.in(1)))
    p.offset = dropout_step_offset(p.offset, p.offset_per_step,
                                   static_cast<uint64_t>(checked_step(op, *step, 0.0f)));
  return p;
}

}  // namespace

void dropout_forward(const op_call& c) {
  const auto p = params_at_step(c, "dropout_forward");
  const DLTensor* mask = c.out(1);
  uint8_t* mask_out = mask != nullptr ? data_ptr<uint8_t>(*mask) : nullptr;
  const int64_t n = numel(*c.in(0));
  if (stream_of(c) == nullptr || n == 0 || n > kMaxCachedMask) {
    dropout_generate(p, f32(c.in(0)), f32(c.out(0)), mask_out, nullptr, n);
    return;
  }
  // Keep the mask for the backward pass, in the least recently used slot.
  stream_state& st = *stream_of(c);
  dropout_mask* slot = &st.masks[0];
  for (dropout_mask& m : st.masks)
    if (m.last_use < slot->last_use) slot = &m;
  slot->n = -1;  // invalid until filled
  slot->keep.resize(static_cast<size_t>(n));
  dropout_generate(p, f32(c.in(0)), f32(c.out(0)), mask_out, slot->keep.data(), n);
  slot->seed = p.seed;
  slot->offset = p.offset;
  slot->ratio = p.ratio;
  slot->n = n;
  slot->last_use = ++st.clock;
}

void dropout_backward(const op_call& c) {
  const auto p = params_at_step(c, "dropout_backward");
  const int64_t n = numel(*c.in(0));
  if (stream_of(c) != nullptr) {
    for (dropout_mask& m : stream_of(c)->masks) {
      if (same_mask(m, p, n)) {
        m.last_use = ++stream_of(c)->clock;
        dropout_from_mask(p, f32(c.in(0)), f32(c.out(0)), m.keep.data(), n);
        return;
      }
    }
  }
  dropout_generate(p, f32(c.in(0)), f32(c.out(0)), nullptr, nullptr, n);
}

// ---- broadcasting binary ops --------------------------------------------------------------------
namespace {

// Up to NNP_MAX_DIMS dimensions with one stride per operand (0 = broadcast), coalesced.
struct iter_shape {
  int rank = 0;
  int64_t dim[NNP_MAX_DIMS];
  int64_t st[3][NNP_MAX_DIMS];  // strides of up to three operands, in elements
};

// Drops size-1 dimensions and merges dimension i into i+1 when every operand is contiguous
// across them. Leaves at least one dimension.
iter_shape coalesce(const iter_shape& in, int operands) {
  iter_shape out;
  for (int i = 0; i < in.rank; ++i) {
    if (in.dim[i] == 1) continue;
    if (out.rank > 0) {
      const int j = out.rank - 1;
      bool merge = true;
      for (int o = 0; o < operands; ++o)
        if (out.st[o][j] != in.st[o][i] * in.dim[i]) merge = false;
      if (merge) {
        out.dim[j] *= in.dim[i];
        for (int o = 0; o < operands; ++o) out.st[o][j] = in.st[o][i];
        continue;
      }
    }
    out.dim[out.rank] = in.dim[i];
    for (int o = 0; o < operands; ++o) out.st[o][out.rank] = in.st[o][i];
    ++out.rank;
  }
  if (out.rank == 0) {
    out.rank = 1;
    out.dim[0] = 1;
    for (int o = 0; o < operands; ++o) out.st[o][0] = 1;
  }
  return out;
}

// Runs body(row_offsets[operands], inner_len) for every row of the coalesced iteration space
// (the last dimension is the row), rows in parallel.
template <typename F>
void for_each_row(const iter_shape& s, int operands, const F& body) {
  const int last = s.rank - 1;
  const int64_t len = s.dim[last];
  int64_t rows = 1;
  for (int i = 0; i < last; ++i) rows *= s.dim[i];
  parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, len)),
               [&](int64_t b, int64_t e) {
                 for (int64_t r = b; r < e; ++r) {
                   int64_t off[3] = {0, 0, 0};
                   int64_t rem = r;
                   for (int i = last - 1; i >= 0; --i) {
                     const int64_t idx = rem % s.dim[i];
                     rem /= s.dim[i];
                     for (int o = 0; o < operands; ++o) off[o] += idx * s.st[o][i];
                   }
                   body(off, len);
                 }
               });
}

template <typename Op>
void binary_run(const DLTensor& A, const DLTensor& B, const DLTensor& Y, Op op) {
  const float *a = f32(&A), *b = f32(&B);
  float* y = f32(&Y);
  const int64_t n = numel(Y);
  const int64_t na = numel(A), nb = numel(B);
  if (na == n && nb == n) {
    parallel_for(n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) y[i] = op(a[i], b[i]);
    });
    return;
  }
  // Strides of a, b and y in y's index space (numpy broadcasting: align to the right).
  iter_shape s;
  s.rank = Y.ndim;
  int64_t sy = 1, sa = 1, sb = 1;
  for (int i = Y.ndim - 1; i >= 0; --i) {
    s.dim[i] = Y.shape[i];
    const int ia = i - (Y.ndim - A.ndim), ib = i - (Y.ndim - B.ndim);
    const int64_t da = ia >= 0 ? A.shape[ia] : 1, db = ib >= 0 ? B.shape[ib] : 1;
    s.st[0][i] = sy;
    s.st[1][i] = da == 1 ? 0 : sa;
    s.st[2][i] = db == 1 ? 0 : sb;
    sy *= Y.shape[i];
    sa *= da;
    sb *= db;
  }
  const iter_shape cs = coalesce(s, 3);
  const int last = cs.rank - 1;
  const int64_t ta = cs.st[1][last], tb = cs.st[2][last];
  for_each_row(cs, 3, [&](const int64_t* off, int64_t len) {
    float* yr = y + off[0];
    const float *ar = a + off[1], *br = b + off[2];
    if (ta == 1 && tb == 1) {
      for (int64_t i = 0; i < len; ++i) yr[i] = op(ar[i], br[i]);
    } else if (ta == 1 && tb == 0) {
      const float bv = br[0];
      for (int64_t i = 0; i < len; ++i) yr[i] = op(ar[i], bv);
    } else if (ta == 0 && tb == 1) {
      const float av = ar[0];
      for (int64_t i = 0; i < len; ++i) yr[i] = op(av, br[i]);
    } else {
      for (int64_t i = 0; i < len; ++i) yr[i] = op(ar[i * ta], br[i * tb]);
    }
  });
}

}  // namespace

void binary(const op_call& c) {
  const auto& p = c.params_as<nnp_binary_params>();
  const DLTensor &A = *c.in(0), &B = *c.in(1), &Y = *c.out(0);
  switch (p.op) {
    case NNP_BINARY_ADD:
      return binary_run(A, B, Y, [](float u, float v) { return u + v; });
    case NNP_BINARY_SUB:
      return binary_run(A, B, Y, [](float u, float v) { return u - v; });
    case NNP_BINARY_MUL:
      return binary_run(A, B, Y, [](float u, float v) { return u * v; });
    case NNP_BINARY_DIV:
      return binary_run(A, B, Y, [](float u, float v) { return u / v; });
    case NNP_BINARY_POW:  // C powf: pow(x, 0) = 1 for NaN x too
      return binary_run(A, B, Y, [](float u, float v) { return std::pow(u, v); });
    default:
      unsupported(format("binary op %d is not implemented by the cpu backend", p.op));
  }
}

void scale(const op_call& c) {
  const float alpha = static_cast<float>(c.params_as<nnp_scale_params>().alpha);
  const float* x = f32(c.in(0));
  float* y = f32(c.out(0));
  parallel_for(numel(*c.in(0)), kElementwiseGrain, [&](int64_t b, int64_t e) {
    map_block(y, b, e, [&](int64_t i) { return alpha * x[i]; });
  });
}

// ONNX Clip: one pass, vectorisable compares; a bound that is not given is +-inf, so NaN
// stays NaN (both compares are false) and min > max gives max.
void clip(const op_call& c) {
  const auto p = c.params_as<nnp_clip_params>();
  const float lo = p.has_min ? static_cast<float>(p.min) : -std::numeric_limits<float>::infinity();
  const float hi = p.has_max ? static_cast<float>(p.max) : std::numeric_limits<float>::infinity();
  const float* x = f32(c.in(0));
  float* y = f32(c.out(0));
  parallel_for(numel(*c.in(0)), kElementwiseGrain, [&](int64_t b, int64_t e) {
    map_block(y, b, e, [&](int64_t i) {
      float v = x[i];
      v = v < lo ? lo : v;
      return v > hi ? hi : v;
    });
  });
}

void fill(const op_call& c) {
  const float v = static_cast<float>(c.params_as<nnp_fill_params>().value);
  float* y = f32(c.out(0));
  const int64_t n = numel(*c.out(0));
  if (n == 1) {  // the common scalar case, kept minimal (dispatch-overhead benchmark)
    y[0] = v;
    return;
  }
  parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) { std::fill(y + b, y + e, v); });
}

// ---- copy / transpose (any element size, any strides on the source)
// -------------------------------
namespace {

template <typename T>
void strided_copy_t(const iter_shape& s, const char* src, char* dst) {
  const T* x = reinterpret_cast<const T*>(src);
  T* y = reinterpret_cast<T*>(dst);
  const int last = s.rank - 1;
  const int64_t tx = s.st[0][last], ty = s.st[1][last];
  for_each_row(s, 2, [&](const int64_t* off, int64_t len) {
    const T* xr = x + off[0];
    T* yr = y + off[1];
    if (tx == 1 && ty == 1) {
      std::memcpy(yr, xr, sizeof(T) * static_cast<size_t>(len));
    } else {
      for (int64_t i = 0; i < len; ++i) yr[i * ty] = xr[i * tx];
    }
  });
}

// Copies y[j] = x[offset(j)] for y's shape, with per-dimension strides of x and y (elements).
void strided_copy(const DLTensor& Y, const int64_t* xstrides, const int64_t* ystrides,
                  const void* x, void* y) {
  if (numel(Y) == 0) return;
  iter_shape s;
  s.rank = Y.ndim;
  for (int i = 0; i < Y.ndim; ++i) {
    s.dim[i] = Y.shape[i];
    s.st[0][i] = xstrides[i];
    s.st[1][i] = ystrides[i];
  }
  const iter_shape cs = coalesce(s, 2);
  const char* src = static_cast<const char*>(x);
  char* dst = static_cast<char*>(y);
  switch (dtype_size(Y.dtype)) {
    case 1:
      return strided_copy_t<uint8_t>(cs, src, dst);
    case 2:
      return strided_copy_t<uint16_t>(cs, src, dst);
    case 4:
      return strided_copy_t<uint32_t>(cs, src, dst);
    case 8:
      return strided_copy_t<uint64_t>(cs, src, dst);
    default:
      unsupported("cpu copies elements of 1, 2, 4 or 8 bytes only");
  }
}

void compact_strides(const DLTensor& t, int64_t* st) {
  int64_t s = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    st[i] = s;
    s *= t.shape[i];
  }
}
void strides_of(const DLTensor& t, int64_t* st) {
  if (t.strides == nullptr) return compact_strides(t, st);
  for (int i = 0; i < t.ndim; ++i) st[i] = t.strides[i];
}
// data + byte_offset as nnp::data_ptr computes it (NULL stays NULL; integer arithmetic).
const void* byte_ptr(const DLTensor& t) { return nnp::data_ptr<const char>(t); }

}  // namespace

void copy(const op_call& c) {
  const DLTensor &X = *c.in(0), &Y = *c.out(0);
  int64_t xs[NNP_MAX_DIMS], ys[NNP_MAX_DIMS];
  strides_of(X, xs);
  strides_of(Y, ys);
  strided_copy(Y, xs, ys, byte_ptr(X), const_cast<void*>(byte_ptr(Y)));
}

void transpose(const op_call& c) {
  const auto& p = c.params_as<nnp_transpose_params>();
  const DLTensor &X = *c.in(0), &Y = *c.out(0);
  int64_t xs[NNP_MAX_DIMS], permuted[NNP_MAX_DIMS], ys[NNP_MAX_DIMS];
  compact_strides(X, xs);
  compact_strides(Y, ys);
  for (int k = 0; k < Y.ndim; ++k) permuted[k] = xs[p.perm[k]];
  strided_copy(Y, permuted, ys, byte_ptr(X), const_cast<void*>(byte_ptr(Y)));
}

// ---- cast between float16, bfloat16, float32, float64
// ----------------------------------------------
namespace {

double load_as_double(const DLDataType& t, const void* p, int64_t i) {
  if (is_f32(t)) return static_cast<const float*>(p)[i];
  if (is_f64(t)) return static_cast<const double*>(p)[i];
  if (is_f16(t)) return half_to_float(static_cast<const uint16_t*>(p)[i]);
  return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
}

void store_from_double(const DLDataType& t, void* p, int64_t i, double v) {
  if (is_f64(t)) {
    static_cast<double*>(p)[i] = v;
  } else if (is_f32(t)) {
    static_cast<float*>(p)[i] = static_cast<float>(v);
  } else if (is_f16(t)) {
    static_cast<uint16_t*>(p)[i] = double_to_half(v);  // rounded once (kit/half.hpp)
  } else {
    static_cast<uint16_t*>(p)[i] = double_to_bf16(v);
  }
}

}  // namespace

void cast(const op_call& c) {
  const DLTensor &X = *c.in(0), &Y = *c.out(0);
  const void* x = byte_ptr(X);
  void* y = const_cast<void*>(byte_ptr(Y));
  const int64_t n = numel(X);
  if (n == 0) return;  // data may be NULL (memcpy must not see it)
  if (same_dtype(X.dtype, Y.dtype)) {
    std::memcpy(y, x, static_cast<size_t>(n) * dtype_size(X.dtype));
    return;
  }
  if (is_f32(X.dtype) && is_f64(Y.dtype)) {
    parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) static_cast<double*>(y)[i] = static_cast<const float*>(x)[i];
    });
    return;
  }
  parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) store_from_double(Y.dtype, y, i, load_as_double(X.dtype, x, i));
  });
}

}  // namespace nnp::cpu
