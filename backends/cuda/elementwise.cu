// elementwise.cu — own kernels for binary ops (add, sub, mul, div, pow) with numpy
// broadcasting, scale, fill, strided copy, transpose, cast (every pair of float types rounded
// once, from double: cvt.rn.f16.f64 / cvt.rn.bf16.f64), gather (ONNX Gather, rows moved in the
// widest aligned unit, up to 16 bytes), and the small helpers GEMM and convolution borrow (C
// broadcast, bias add). Memory-bound: speed comes from grid-stride loops
// with coalesced accesses, a fast path when no broadcasting is needed, and float32 arithmetic
// for 16-bit types (pow: double, as the reference).
#include "common.cuh"

#include <cstring>

namespace nnp::cuda {
namespace {

// ---- shapes as kernel arguments ---------------------------------------------------------------
struct strided_shape {
  int rank;
  int64_t shape[NNP_MAX_DIMS];
  int64_t stride_a[NNP_MAX_DIMS];
  int64_t stride_b[NNP_MAX_DIMS];
};

// Offsets of linear index i (row-major over shape) under the two stride sets.
__device__ __forceinline__ void offsets(const strided_shape& s, int64_t i, int64_t* oa,
                                        int64_t* ob) {
  int64_t a = 0, b = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    const int64_t n = s.shape[d];
    const int64_t k = i % n;
    i /= n;
    a += k * s.stride_a[d];
    b += k * s.stride_b[d];
  }
  *oa = a;
  *ob = b;
}

void compact_strides(const int64_t* shape, int rank, int64_t* strides) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    strides[d] = s;
    s *= shape[d];
  }
}

// ---- binary -------------------------------------------------------------------------------------
__device__ __forceinline__ float apply_binary(int op, float a, float b) {
  switch (op) {
    case NNP_BINARY_ADD:
      return a + b;
    case NNP_BINARY_SUB:
      return a - b;
    case NNP_BINARY_MUL:
      return a * b;
    case NNP_BINARY_POW:
      // C pow in double, rounded once to float (as the reference): pow(x, 0) = 1 for every x,
      // NaN included; pow(1, y) = 1; a negative base with a non-integer exponent gives NaN.
      return static_cast<float>(pow(static_cast<double>(a), static_cast<double>(b)));
    default:
      return a / b;
  }
}

template <typename T>
__global__ void binary_same_kernel(const T* a, const T* b, T* y, int64_t n, int op) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    y[i] = from_f<T>(apply_binary(op, to_f(a[i]), to_f(b[i])));
}

template <typename T>
__global__ void binary_bcast_kernel(const T* a, const T* b, T* y, int64_t n, int op,
                                    strided_shape s) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t oa, ob;
    offsets(s, i, &oa, &ob);
    y[i] = from_f<T>(apply_binary(op, to_f(a[oa]), to_f(b[ob])));
  }
}

// ---- scale, broadcast, bias ---------------------------------------------------------------------
template <typename T>
__global__ void scale_kernel(const T* x, T* y, int64_t n, float alpha) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    y[i] = from_f<T>(alpha * to_f(x[i]));
}

// ONNX Clip: an absent bound is +-inf, so NaN stays NaN and min > max gives max.
template <typename T>
__global__ void clip_kernel(const T* x, T* y, int64_t n, float lo, float hi) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    float v = to_f(x[i]);
    v = v < lo ? lo : v;
    y[i] = from_f<T>(v > hi ? hi : v);
  }
}

template <typename U>
__global__ void broadcast_tail_kernel(const U* c, int64_t n_c, U* y, int64_t n_y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n_y;
       i += int64_t{gridDim.x} * blockDim.x)
    y[i] = c[i % n_c];
}

// y [n, k, inner] += b[k], a grid-stride loop with the index in type I: 32-bit whenever the
// tensor allows (a 64-bit division per element is several times the instructions of a 32-bit
// one). A kernel per (n, k) plane measured slower on an H200 for the cnn's planes of 784 and
// 196 elements: its blocks were partly idle.
template <typename T, typename I>
__global__ void bias_add_kernel(T* y, const T* b, I n, I k, I inner) {
  for (I i = blockIdx.x * I{blockDim.x} + threadIdx.x; i < n; i += I{gridDim.x} * blockDim.x)
    y[i] = from_f<T>(to_f(y[i]) + to_f(b[(i / inner) % k]));
}

// ---- fill, copy, transpose (by element size) ----------------------------------------------------
template <typename U>
__global__ void fill_kernel(U* y, int64_t n, U v) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    y[i] = v;
}

// dst[offset_b(i)] = src[offset_a(i)]
template <typename U>
__global__ void strided_copy_kernel(const U* src, U* dst, int64_t n, strided_shape s) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t oa, ob;
    offsets(s, i, &oa, &ob);
    dst[ob] = src[oa];
  }
}

void launch_strided_copy(stream& s, size_t elem_bytes, const void* src, void* dst, int64_t n,
                         const strided_shape& sh) {
  const unsigned g = grid_for(n);
  switch (elem_bytes) {
    case 1:
      strided_copy_kernel<<<g, kThreads, 0, s.handle>>>(static_cast<const uint8_t*>(src),
                                                        static_cast<uint8_t*>(dst), n, sh);
      break;
    case 2:
      strided_copy_kernel<<<g, kThreads, 0, s.handle>>>(static_cast<const uint16_t*>(src),
                                                        static_cast<uint16_t*>(dst), n, sh);
      break;
    case 4:
      strided_copy_kernel<<<g, kThreads, 0, s.handle>>>(static_cast<const uint32_t*>(src),
                                                        static_cast<uint32_t*>(dst), n, sh);
      break;
    case 8:
      strided_copy_kernel<<<g, kThreads, 0, s.handle>>>(static_cast<const uint64_t*>(src),
                                                        static_cast<uint64_t*>(dst), n, sh);
      break;
    default:
      unsupported(format("element size %zu bytes is not implemented by the cuda copy", elem_bytes));
  }
  NNP_CUDA_CHECK_LAUNCH();
}

// ---- cast ---------------------------------------------------------------------------------------
// Every conversion rounds once, to nearest even.
template <typename To>
__device__ __forceinline__ To cast_from_double(double d);
template <>
__device__ __forceinline__ float cast_from_double<float>(double d) {
  return static_cast<float>(d);
}
template <>
__device__ __forceinline__ double cast_from_double<double>(double d) {
  return d;
}
template <>
__device__ __forceinline__ half cast_from_double<half>(double d) {
  return __double2half(d);
}
template <>
__device__ __forceinline__ bf16 cast_from_double<bf16>(double d) {
  return __double2bfloat16(d);
}
__device__ __forceinline__ double to_d(float x) { return x; }
__device__ __forceinline__ double to_d(double x) { return x; }
__device__ __forceinline__ double to_d(half x) { return __half2float(x); }
__device__ __forceinline__ double to_d(bf16 x) { return __bfloat162float(x); }

template <typename From, typename To>
__global__ void cast_kernel(const From* x, To* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    y[i] = cast_from_double<To>(to_d(x[i]));  // the double holds any source value exactly
}

template <typename F>
void dispatch_any_float(elem t, F&& f) {
  if (t == elem::f64) return f(tag<double>{});
  dispatch_float(t, f);
}

template <typename F>
void dispatch_bits(elem t, F&& f) {
  if (t == elem::f32) return f(tag<uint32_t>{});
  if (t == elem::f16 || t == elem::bf16) return f(tag<uint16_t>{});
  if (t == elem::f64) return f(tag<uint64_t>{});
  fail(NNP_STATUS_INTERNAL, "unexpected dtype");
}

}  // namespace

// ---- shared launchers
// -----------------------------------------------------------------------------
void launch_broadcast_tail(stream& s, elem t, const void* c, int64_t n_c, void* y, int64_t n_y) {
  if (n_y == 0) return;
  dispatch_bits(t, [&](auto tg) {
    using U = typename decltype(tg)::type;
    broadcast_tail_kernel<<<grid_for(n_y), kThreads, 0, s.handle>>>(static_cast<const U*>(c), n_c,
                                                                    static_cast<U*>(y), n_y);
  });
  NNP_CUDA_CHECK_LAUNCH();
}

void launch_scale(stream& s, elem t, const void* x, void* y, int64_t n, double alpha) {
  if (n == 0) return;
  dispatch_float(t, [&](auto tg) {
    using T = typename decltype(tg)::type;
    scale_kernel<<<grid_for(n), kThreads, 0, s.handle>>>(
        static_cast<const T*>(x), static_cast<T*>(y), n, static_cast<float>(alpha));
  });
  NNP_CUDA_CHECK_LAUNCH();
}

void launch_bias_add(stream& s, elem t, void* y, const void* b, int64_t n, int64_t k,
                     int64_t inner) {
  const int64_t total = n * k * inner;
  if (total == 0) return;
  dispatch_float(t, [&](auto tg) {
    using T = typename decltype(tg)::type;
    T* yt = static_cast<T*>(y);
    const T* bt = static_cast<const T*>(b);
    if (total <= INT32_MAX)
      bias_add_kernel<T, uint32_t><<<grid_for(total), kThreads, 0, s.handle>>>(
          yt, bt, static_cast<uint32_t>(total), static_cast<uint32_t>(k),
          static_cast<uint32_t>(inner));
    else
      bias_add_kernel<T, int64_t>
          <<<grid_for(total), kThreads, 0, s.handle>>>(yt, bt, total, k, inner);
  });
  NNP_CUDA_CHECK_LAUNCH();
}

// ---- ops
// ------------------------------------------------------------------------------------------
void op_binary(stream& s, const op_call& c) {
  const auto p = read_params<nnp_binary_params>(c.params);
  const DLTensor& a = *c.in(0);
  const DLTensor& b = *c.in(1);
  const DLTensor& y = *c.out(0);
  const int64_t n = numel(y);
  if (n == 0) return;
  const elem t = elem_of(y.dtype);
  const bool same = a.ndim == y.ndim && b.ndim == y.ndim && numel(a) == n && numel(b) == n;
  strided_shape sh{};
  if (!same) {
    // numpy broadcasting: align trailing dimensions; a size-1 (or missing) dim has stride 0.
    sh.rank = y.ndim;
    int64_t ca[NNP_MAX_DIMS], cb[NNP_MAX_DIMS];
    compact_strides(a.shape, a.ndim, ca);
    compact_strides(b.shape, b.ndim, cb);
    for (int d = 0; d < y.ndim; ++d) {
      sh.shape[d] = y.shape[d];
      const int da = d - (y.ndim - a.ndim), db = d - (y.ndim - b.ndim);
      sh.stride_a[d] = (da >= 0 && a.shape[da] != 1) ? ca[da] : 0;
      sh.stride_b[d] = (db >= 0 && b.shape[db] != 1) ? cb[db] : 0;
    }
  }
  dispatch_float(t, [&](auto tg) {
    using T = typename decltype(tg)::type;
    if (same)
      binary_same_kernel<<<grid_for(n), kThreads, 0, s.handle>>>(
          data_ptr<const T>(a), data_ptr<const T>(b), data_ptr<T>(y), n, p.op);
    else
      binary_bcast_kernel<<<grid_for(n), kThreads, 0, s.handle>>>(
          data_ptr<const T>(a), data_ptr<const T>(b), data_ptr<T>(y), n, p.op, sh);
  });
  NNP_CUDA_CHECK_LAUNCH();
}

void op_scale(stream& s, const op_call& c) {
  const auto p = read_params<nnp_scale_params>(c.params);
  const DLTensor& x = *c.in(0);
  const DLTensor& y = *c.out(0);
  launch_scale(s, elem_of(y.dtype), data_ptr<const void>(x), data_ptr<void>(y), numel(y), p.alpha);
}

void launch_clip(stream& s, elem t, const void* x, void* y, int64_t n, float lo, float hi) {
  if (n == 0) return;
  dispatch_float(t, [&](auto tg) {
    using T = typename decltype(tg)::type;
    clip_kernel<<<grid_for(n), kThreads, 0, s.handle>>>(static_cast<const T*>(x),
                                                        static_cast<T*>(y), n, lo, hi);
  });
  NNP_CUDA_CHECK_LAUNCH();
}

void op_clip(stream& s, const op_call& c) {
  const auto p = c.params_as<nnp_clip_params>();
  const float lo = p.has_min ? static_cast<float>(p.min) : -INFINITY;
  const float hi = p.has_max ? static_cast<float>(p.max) : INFINITY;
  const DLTensor& y = *c.out(0);
  launch_clip(s, elem_of(y.dtype), data_ptr<const void>(*c.in(0)), data_ptr<void>(y), numel(y), lo,
              hi);
}

void op_fill(stream& s, const op_call& c) {
  const auto p = read_params<nnp_fill_params>(c.params);
  const DLTensor& y = *c.out(0);
  const int64_t n = numel(y);
  if (n == 0) return;
  const unsigned g = grid_for(n);
  switch (elem_of(y.dtype)) {
    case elem::f32: {
      const float v = static_cast<float>(p.value);
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof(bits));
      fill_kernel<<<g, kThreads, 0, s.handle>>>(data_ptr<uint32_t>(y), n, bits);
      break;
    }
    case elem::f64: {
      uint64_t bits;
      std::memcpy(&bits, &p.value, sizeof(bits));
      fill_kernel<<<g, kThreads, 0, s.handle>>>(data_ptr<uint64_t>(y), n, bits);
      break;
    }
    case elem::f16: {
      const half v = __double2half(p.value);
      uint16_t bits;
      std::memcpy(&bits, &v, sizeof(bits));
      fill_kernel<<<g, kThreads, 0, s.handle>>>(data_ptr<uint16_t>(y), n, bits);
      break;
    }
    case elem::bf16: {
      const bf16 v = __double2bfloat16(p.value);
      uint16_t bits;
      std::memcpy(&bits, &v, sizeof(bits));
      fill_kernel<<<g, kThreads, 0, s.handle>>>(data_ptr<uint16_t>(y), n, bits);
      break;
    }
    default:
      unsupported("fill: dtype not implemented by the cuda backend");
  }
  NNP_CUDA_CHECK_LAUNCH();
}

void op_copy(stream& s, const op_call& c) {
  const DLTensor& x = *c.in(0);
  const DLTensor& y = *c.out(0);
  const int64_t n = numel(y);
  if (n == 0) return;
  const size_t es = dtype_size(y.dtype);
  if (is_compact(x) && is_compact(y)) {
    NNP_CUDA_CHECK(cudaMemcpyAsync(data_ptr<void>(y), data_ptr<const void>(x),
                                   static_cast<size_t>(n) * es, cudaMemcpyDeviceToDevice,
                                   s.handle));
    return;
  }
  strided_shape sh{};
  sh.rank = y.ndim;
  int64_t cs[NNP_MAX_DIMS];
  compact_strides(y.shape, y.ndim, cs);
  for (int d = 0; d < y.ndim; ++d) {
    sh.shape[d] = y.shape[d];
    sh.stride_a[d] = x.strides != nullptr ? x.strides[d] : cs[d];
    sh.stride_b[d] = y.strides != nullptr ? y.strides[d] : cs[d];
  }
  launch_strided_copy(s, es, data_ptr<const void>(x), data_ptr<void>(y), n, sh);
}

// ---- gather -------------------------------------------------------------------------------------
// y[o, j, k] = data[o, idx(j), k] over data [outer, A, inner] and indices [J] (ONNX Gather:
// idx(j) = indices[j], + A when negative); an index outside [-A, A) gives zeros (the kernel
// cannot raise: nnplug_ops.h). U is the widest unit that divides a row's bytes and both base
// addresses, so a row of float32 images moves as 16-byte vectors.
template <typename U>
__global__ void gather_kernel(const U* __restrict data, const int64_t* __restrict indices,
                              U* __restrict y, int64_t outer, int64_t a, int64_t j_count,
                              int64_t inner) {
  const int64_t n = outer * j_count * inner;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t k = i % inner, row = i / inner;
    const int64_t j = row % j_count, o = row / j_count;
    int64_t idx = indices[j];
    if (idx < 0) idx += a;
    y[i] = idx >= 0 && idx < a ? data[(o * a + idx) * inner + k] : U{};
  }
}

template <typename U>
void launch_gather(stream& s, const void* data, const int64_t* indices, void* y, int64_t outer,
                   int64_t a, int64_t j_count, int64_t row_bytes) {
  const int64_t inner = row_bytes / static_cast<int64_t>(sizeof(U));
  gather_kernel<U><<<grid_for(outer * j_count * inner), kThreads, 0, s.handle>>>(
      static_cast<const U*>(data), indices, static_cast<U*>(y), outer, a, j_count, inner);
  NNP_CUDA_CHECK_LAUNCH();
}

void op_gather(stream& s, const op_call& c) {
  const DLTensor& x = *c.in(0);
  const DLTensor& ind = *c.in(1);
  const DLTensor& y = *c.out(0);
  if (numel(y) == 0) return;
  const int axis = normalize_axis(c.params_as<nnp_gather_params>().axis, x.ndim);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape[d];
  for (int d = axis + 1; d < x.ndim; ++d) inner *= x.shape[d];
  const int64_t row_bytes = inner * static_cast<int64_t>(dtype_size(x.dtype));
  const void* src = data_ptr<const void>(x);
  void* dst = data_ptr<void>(y);
  const uintptr_t align = reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst) |
                          static_cast<uintptr_t>(row_bytes);
  const int64_t* idx = data_ptr<const int64_t>(ind);
  const int64_t a = x.shape[axis], j_count = numel(ind);
  if (align % 16 == 0)
    launch_gather<uint4>(s, src, idx, dst, outer, a, j_count, row_bytes);
  else if (align % 8 == 0)
    launch_gather<uint64_t>(s, src, idx, dst, outer, a, j_count, row_bytes);
  else if (align % 4 == 0)
    launch_gather<uint32_t>(s, src, idx, dst, outer, a, j_count, row_bytes);
  else if (align % 2 == 0)
    launch_gather<uint16_t>(s, src, idx, dst, outer, a, j_count, row_bytes);
  else
    launch_gather<uint8_t>(s, src, idx, dst, outer, a, j_count, row_bytes);
}

void op_transpose(stream& s, const op_call& c) {
  const auto p = read_params<nnp_transpose_params>(c.params);
  const DLTensor& x = *c.in(0);
  const DLTensor& y = *c.out(0);
  const int64_t n = numel(y);
  if (n == 0) return;
  int64_t xs[NNP_MAX_DIMS], ys[NNP_MAX_DIMS];
  compact_strides(x.shape, x.ndim, xs);
  compact_strides(y.shape, y.ndim, ys);
  strided_shape sh{};
  sh.rank = y.ndim;
  for (int d = 0; d < y.ndim; ++d) {
    sh.shape[d] = y.shape[d];
    sh.stride_a[d] = xs[p.perm[d]];  // y index j[d] walks x dimension perm[d]
    sh.stride_b[d] = ys[d];
  }
  launch_strided_copy(s, dtype_size(y.dtype), data_ptr<const void>(x), data_ptr<void>(y), n, sh);
}

void launch_cast(stream& s, elem tx, const void* x, elem ty, void* y, int64_t n) {
  if (n == 0) return;
  dispatch_any_float(tx, [&](auto tin) {
    using From = typename decltype(tin)::type;
    dispatch_any_float(ty, [&](auto tout) {
      using To = typename decltype(tout)::type;
      cast_kernel<<<grid_for(n), kThreads, 0, s.handle>>>(static_cast<const From*>(x),
                                                          static_cast<To*>(y), n);
    });
  });
  NNP_CUDA_CHECK_LAUNCH();
}

void op_cast(stream& s, const op_call& c) {
  const DLTensor& x = *c.in(0);
  const DLTensor& y = *c.out(0);
  const int64_t n = numel(y);
  if (n == 0) return;
  const elem tx = elem_of(x.dtype), ty = elem_of(y.dtype);
  if (tx == ty) {
    NNP_CUDA_CHECK(cudaMemcpyAsync(data_ptr<void>(y), data_ptr<const void>(x),
                                   static_cast<size_t>(n) * dtype_size(y.dtype),
                                   cudaMemcpyDeviceToDevice, s.handle));
    return;
  }
  launch_cast(s, tx, data_ptr<const void>(x), ty, data_ptr<void>(y), n);
}

// binary: add, sub, mul, div (ABI 1.0) and pow (ABI 1.2); later ops are not implemented.
void check_binary(const op_call& c) {
  check_implemented("binary op", c.params_as<nnp_binary_params>().op, NNP_BINARY_ADD,
                    NNP_BINARY_POW, "ADD, SUB, MUL, DIV, POW");
}
// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kElementwiseOps[] = {
    {NNP_OP_BINARY,    kHalfFloats, on_stream<op_binary>, check_binary},
    {NNP_OP_SCALE,     kHalfFloats, on_stream<op_scale>},
    {NNP_OP_FILL,      kAllFloats,  on_stream<op_fill>, check_float_operands},
    {NNP_OP_COPY,      kit::any,         on_stream<op_copy>, check_element_size},
    {NNP_OP_TRANSPOSE, kit::any,         on_stream<op_transpose>, check_element_size},
    {NNP_OP_GATHER,    kit::any,         on_stream<op_gather>, check_element_size},
    {NNP_OP_CAST,      kAllFloats,  on_stream<op_cast>, check_float_operands},
    {NNP_OP_CLIP,      kHalfFloats, on_stream<op_clip>},
};
// clang-format on
extern const kit::op_row_list kElementwiseRows = kit::row_list(kElementwiseOps);

}  // namespace nnp::cuda
