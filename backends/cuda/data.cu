// data.cu — own kernels for the data-movement ops of ABI 1.2 and ONNX Where:
//   concat           y = the inputs joined along axis (ONNX Concat)
//   split            x cut along axis into the outputs (ONNX Split; concat's backward)
//   slice            y[.., j, ..] = x[.., start + j*step, ..] (ONNX Slice, negative steps too)
//   slice_backward   dx = 0 except dx[.., start + j*step, ..] = dy[.., j, ..]
//   gather_backward  dx = 0, then dx[.., idx(j), ..] += dy[.., j, ..] in the order of j
//   where            output = condition ? x : y, numpy broadcasting of all three
// with the semantics of the reference (backends/reference/data_movement.cpp, elementwise.cpp).
// concat, split, slice, slice_backward and where move whole elements as raw units (any 1-, 2-,
// 4- or 8-byte dtype; bit patterns, NaN payloads included, are kept).
//
// Speed: every op is memory-bound and runs as grid-stride loops with 64-bit indices and coalesced
// accesses, one launch per op where possible:
//  - concat / split: one launch for all the parts (a table of up to NNP_MAX_VARIADIC pointers
//    passed by value as a __grid_constant__); one thread per unit of the wide tensor finds its
//    part by binary search over the parts' columns. Rows are moved in the widest unit (16, 8,
//    4, 2 or 1 bytes) that divides every part's row bytes and every address.
//  - slice / slice_backward: the geometry (nnp::resolve_slice) is first simplified (size-1 dims
//    dropped, a full dim merged into the step-1 dim before it), so typical slices are 1- or 2-D
//    with a contiguous innermost run moved in wide units; a slice that is one contiguous run is
//    a cudaMemcpyAsync. slice_backward writes each element of dx once (zero or its dy element):
//    no zero pass, no scatter.
//  - gather_backward: deterministic and without atomics, like the cpu backend: the indices are
//    sorted stably by row (cub radix sort of (row, j) pairs), so each row of dx finds its
//    contributions in the order of indices; each element of dx sums them in float64 (the
//    reference's accumulation, in the same order) and is written once, zeros included.
//    Out-of-range indices (outside [-dim, dim)) cannot raise from a kernel: their rows of dy are
//    dropped (nnplug_ops.h), as op_gather (elementwise.cu) writes zeros for them.
//  - where: a same-shape fast path, else per-element broadcast offsets.
#define CCCL_DISABLE_NVTX  // no NVTX ranges from cub (no profiler dependency in the plugin)

#include "common.cuh"

#include <cub/device/device_radix_sort.cuh>

#include <nnplug/kit/broadcast.hpp>
#include <nnplug/kit/data_movement.hpp>

#include <string>

namespace nnp::cuda {
namespace {

#define NNP_GRID_STRIDE(i, n)                                               \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{gridDim.x} * blockDim.x)

// ---- units --------------------------------------------------------------------------------------
// The widest unit of 16, 8, 4, 2 or 1 bytes dividing `bits` (an OR of byte counts and addresses).
int64_t unit_of(uint64_t bits) {
  for (int64_t u = 16; u > 1; u >>= 1)
    if (bits % static_cast<uint64_t>(u) == 0) return u;
  return 1;
}

uint64_t address_bits(const void* p) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
}

// Calls f(tag<U>) with U the raw unit of `bytes` bytes (1, 2, 4, 8 or 16).
template <typename F>
void dispatch_unit(int64_t bytes, F&& f) {
  switch (bytes) {
    case 16:
      f(tag<uint4>{});
      return;
    case 8:
      f(tag<uint64_t>{});
      return;
    case 4:
      f(tag<uint32_t>{});
      return;
    case 2:
      f(tag<uint16_t>{});
      return;
    case 1:
      f(tag<uint8_t>{});
      return;
    default:
      unsupported(
          format("element size %lld bytes is not implemented by the cuda backend "
                 "(implemented: 1, 2, 4 or 8 bytes)",
                 static_cast<long long>(bytes)));
  }
}

// ---- concat / split -----------------------------------------------------------------------------
// The wide tensor (concat's y, split's x) seen as rows of `width` units; part k covers columns
// [begin[k], begin[k + 1]) of every row and is itself compact: rows of begin[k+1] - begin[k]
// units. Only parts with elements are listed, so begin strictly increases.
constexpr int kMaxParts = NNP_MAX_VARIADIC;
struct parts_table {
  int n;
  int64_t width;
  void* ptr[kMaxParts];
  int64_t begin[kMaxParts + 1];
};

// kToParts = false: concat (wide[i] = part[..]); true: split (part[..] = wide[i]).
template <typename U, bool kToParts>
__global__ void concat_split_kernel(U* wide, const __grid_constant__ parts_table t, int64_t total) {
  NNP_GRID_STRIDE(i, total) {
    const int64_t row = i / t.width, col = i - row * t.width;
    int lo = 0, hi = t.n - 1;  // the last part with begin <= col
    while (lo < hi) {
      const int mid = (lo + hi + 1) >> 1;
      if (t.begin[mid] <= col)
        lo = mid;
      else
        hi = mid - 1;
    }
    const int64_t w = t.begin[lo + 1] - t.begin[lo];
    U* part = static_cast<U*>(t.ptr[lo]);
    const int64_t at = row * w + (col - t.begin[lo]);
    if (kToParts)
      part[at] = wide[i];
    else
      wide[i] = part[at];
  }
}

// Concat (to_parts = false: the parts are inputs) or split (true: the parts are outputs) of the
// wide tensor along `axis`.
void concat_split(stream& s, const DLTensor& wide, const DLTensor* const* parts, size_t n_parts,
                  int axis, bool to_parts) {
  if (numel(wide) == 0) return;
  if (n_parts > static_cast<size_t>(kMaxParts))
    unsupported(format("%s: %zu tensors; the cuda backend implements at most %d",
                       to_parts ? "split" : "concat", n_parts, kMaxParts));
  const int64_t es = static_cast<int64_t>(dtype_size(wide.dtype));
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= wide.shape[d];
  for (int d = axis + 1; d < wide.ndim; ++d) inner *= wide.shape[d];
  const int64_t wide_bytes = wide.shape[axis] * inner * es;  // bytes of one row of wide
  char* wide_ptr = data_ptr<char>(wide);
  uint64_t bits = address_bits(wide_ptr) | static_cast<uint64_t>(wide_bytes);
  int64_t part_bytes[kMaxParts];
  int n = 0;
  for (size_t k = 0; k < n_parts; ++k) {
    const DLTensor& p = *parts[k];
    part_bytes[k] = p.shape[axis] * inner * es;
    if (part_bytes[k] == 0) continue;  // no elements: never addressed
    bits |= address_bits(data_ptr<const void>(p)) | static_cast<uint64_t>(part_bytes[k]);
    ++n;
  }
  if (n == 0) return;  // cannot happen: the parts' extents add up to wide's
  if (n == 1) {        // one part with elements: the whole of wide
    for (size_t k = 0; k < n_parts; ++k) {
      if (part_bytes[k] == 0) continue;
      void* part = data_ptr<void>(*parts[k]);
      const size_t bytes = static_cast<size_t>(outer * wide_bytes);
      NNP_CUDA_CHECK(cudaMemcpyAsync(to_parts ? part : wide_ptr, to_parts ? wide_ptr : part, bytes,
                                     cudaMemcpyDeviceToDevice, s.handle));
    }
    return;
  }
  int64_t u = unit_of(bits);
  if (u < es) u = es;  // (element-aligned tensors always give u >= es)
  parts_table t{};
  t.width = wide_bytes / u;
  int64_t col = 0;
  t.n = 0;
  for (size_t k = 0; k < n_parts; ++k) {
    if (part_bytes[k] == 0) continue;
    t.ptr[t.n] = data_ptr<void>(*parts[k]);
    t.begin[t.n] = col;
    col += part_bytes[k] / u;
    ++t.n;
  }
  t.begin[t.n] = col;  // == t.width
  const int64_t total = outer * t.width;
  dispatch_unit(u, [&](auto tg) {
    using U = typename decltype(tg)::type;
    if (to_parts)
      concat_split_kernel<U, true>
          <<<grid_for(total), kThreads, 0, s.handle>>>(reinterpret_cast<U*>(wide_ptr), t, total);
    else
      concat_split_kernel<U, false>
          <<<grid_for(total), kThreads, 0, s.handle>>>(reinterpret_cast<U*>(wide_ptr), t, total);
  });
  NNP_CUDA_CHECK_LAUNCH();
}

// ---- slice / slice_backward ---------------------------------------------------------------------
// A slice of x: per dim, x's extent, the first index, the step and the count of y (after
// nnp::resolve_slice), simplified and in units of `unit` bytes.
struct slice_geometry {
  int rank;
  int64_t dim[NNP_MAX_DIMS], start[NNP_MAX_DIMS], step[NNP_MAX_DIMS], count[NNP_MAX_DIMS];
  int64_t unit;  // bytes
};

// Resolves the params against x's shape (the forward's x: slice's input, slice_backward's
// output) and simplifies. Requires numel(x) > 0 and numel(y) > 0. a and b are the two data
// addresses (their alignment limits the unit).
slice_geometry make_slice_geometry(const nnp_slice_params& p, const DLTensor& x, const void* a,
                                   const void* b) {
  nnp::slice_dim dims[NNP_MAX_DIMS];
  std::string why;
  if (!nnp::resolve_slice(p, x.ndim, x.shape, dims, &why)) fail(NNP_STATUS_INVALID_ARGUMENT, why);
  slice_geometry g{};
  g.rank = 0;
  for (int d = 0; d < x.ndim; ++d) {
    const int64_t dim = x.shape[d];
    if (dim == 1) continue;  // count 1, start 0: addresses nothing
    int64_t start = dims[d].start, step = dims[d].step, count = dims[d].count;
    if (count == 1) step = 1;  // one index: the step is never used
    const bool full = start == 0 && step == 1 && count == dim;
    if (g.rank > 0 && full && g.step[g.rank - 1] == 1) {
      // (start' + j) * dim + k over j < count', k < dim is one step-1 run of count' * dim.
      const int l = g.rank - 1;
      g.dim[l] *= dim;
      g.start[l] *= dim;
      g.count[l] *= dim;
      continue;
    }
    g.dim[g.rank] = dim;
    g.start[g.rank] = start;
    g.step[g.rank] = step;
    g.count[g.rank] = count;
    ++g.rank;
  }
  if (g.rank == 0) {  // one element
    g.rank = 1;
    g.dim[0] = g.count[0] = g.step[0] = 1;
    g.start[0] = 0;
  }
  const int64_t es = static_cast<int64_t>(dtype_size(x.dtype));
  g.unit = es;
  const int l = g.rank - 1;
  if (g.step[l] == 1) {  // contiguous innermost runs: move them in wider units
    const uint64_t bits = address_bits(a) | address_bits(b) | static_cast<uint64_t>(g.dim[l] * es) |
                          static_cast<uint64_t>(g.start[l] * es) |
                          static_cast<uint64_t>(g.count[l] * es);
    const int64_t u = unit_of(bits);
    if (u > es) {
      const int64_t f = u / es;
      g.dim[l] /= f;
      g.start[l] /= f;
      g.count[l] /= f;
      g.unit = u;
    }
  }
  return g;
}

constexpr int kMaxRank = NNP_MAX_DIMS;

// y[i] = x[base + sum_d j_d * stride_d], j = i's index over count (row-major); strides may be
// negative (negative steps).
struct slice_forward_args {
  int rank;
  int64_t count[kMaxRank], stride[kMaxRank];
  int64_t base;
};

template <typename U>
__global__ void slice_kernel(const U* __restrict x, U* __restrict y, int64_t n,
                             slice_forward_args a) {
  NNP_GRID_STRIDE(i, n) {
    int64_t rest = i, off = a.base;
    for (int d = a.rank - 1; d >= 0; --d) {
      const int64_t c = a.count[d];
      const int64_t j = rest % c;
      rest /= c;
      off += j * a.stride[d];
    }
    y[i] = x[off];
  }
}

// dx[i] = dy[sum_d q_d * dy_stride_d] where i's index c_d = start_d + q_d * step_d with
// 0 <= q_d < count_d in every dim, else 0.
struct slice_backward_args {
  int rank;
  int64_t dim[kMaxRank], start[kMaxRank], step[kMaxRank], count[kMaxRank];
  int64_t dy_stride[kMaxRank];
};

template <typename U>
__global__ void slice_backward_kernel(const U* __restrict dy, U* __restrict dx, int64_t n,
                                      slice_backward_args a) {
  NNP_GRID_STRIDE(i, n) {
    int64_t rest = i, off = 0;
    bool inside = true;
    for (int d = a.rank - 1; d >= 0; --d) {
      const int64_t c = rest % a.dim[d];
      rest /= a.dim[d];
      const int64_t step = a.step[d];
      // distance from start in the direction of the step, and |step|
      const int64_t r = step > 0 ? c - a.start[d] : a.start[d] - c;
      const int64_t m = step > 0 ? step : -step;
      if (r < 0) {
        inside = false;
        break;
      }
      const int64_t q = m == 1 ? r : r / m;
      if (q * m != r || q >= a.count[d]) {
        inside = false;
        break;
      }
      off += q * a.dy_stride[d];
    }
    dx[i] = inside ? dy[off] : U{};
  }
}

// ---- gather_backward ----------------------------------------------------------------------------
__device__ __forceinline__ double to_d(float x) { return x; }
__device__ __forceinline__ double to_d(double x) { return x; }
__device__ __forceinline__ double to_d(half x) { return __half2float(x); }
__device__ __forceinline__ double to_d(bf16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_d(double d);
template <>
__device__ __forceinline__ float from_d<float>(double d) {
  return static_cast<float>(d);
}
template <>
__device__ __forceinline__ double from_d<double>(double d) {
  return d;
}
template <>
__device__ __forceinline__ half from_d<half>(double d) {
  return __double2half(d);
}
template <>
__device__ __forceinline__ bf16 from_d<bf16>(double d) {
  return __double2bfloat16(d);
}

// key[j] = the row of dx that indices[j] names (+ a when negative), or a when out of range
// (sorted last, dropped); val[j] = j.
__global__ void gather_keys_kernel(const int64_t* __restrict indices, uint64_t* __restrict key,
                                   int64_t* __restrict val, int64_t n, int64_t a) {
  NNP_GRID_STRIDE(j, n) {
    int64_t idx = indices[j];
    if (idx < 0) idx += a;  // a negative index plus a >= 1 cannot overflow
    key[j] = static_cast<uint64_t>(idx >= 0 && idx < a ? idx : a);
    val[j] = j;
  }
}

// first[r] = the first position of the sorted keys with key >= r, for r in [0, a].
__global__ void gather_segments_kernel(const uint64_t* __restrict key, int64_t n,
                                       int64_t* __restrict first, int64_t a) {
  NNP_GRID_STRIDE(r, a + 1) {
    int64_t lo = 0, hi = n;
    const uint64_t want = static_cast<uint64_t>(r);
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (key[mid] < want)
        lo = mid + 1;
      else
        hi = mid;
    }
    first[r] = lo;
  }
}

// dx[o, r, k] = sum over p in [first[r], first[r+1]) of dy[o, order[p], k], in float64, in the
// order of p (= the order of indices: the sort is stable).
template <typename T>
__global__ void gather_backward_kernel(const T* __restrict dy, const int64_t* __restrict order,
                                       const int64_t* __restrict first, T* __restrict dx,
                                       int64_t outer, int64_t a, int64_t j_count, int64_t inner) {
  const int64_t n = outer * a * inner;
  NNP_GRID_STRIDE(i, n) {
    const int64_t k = i % inner, row = i / inner;
    const int64_t r = row % a, o = row / a;
    const int64_t end = first[r + 1];
    const T* base = dy + o * j_count * inner + k;
    double acc = 0.0;
    for (int64_t p = first[r]; p < end; ++p) acc += to_d(base[order[p] * inner]);
    dx[i] = from_d<T>(acc);
  }
}

template <typename F>
void dispatch_all_floats(elem t, F&& f) {
  if (t == elem::f64) return f(tag<double>{});
  dispatch_float(t, f);
}

size_t align_up(size_t v) { return (v + 255) & ~size_t{255}; }

// ---- where --------------------------------------------------------------------------------------
template <typename U>
__global__ void where_same_kernel(const uint8_t* c, const U* x, const U* y, U* out, int64_t n) {
  // out may alias x or y: element i is read, then written (no __restrict).
  NNP_GRID_STRIDE(i, n) { out[i] = c[i] != 0 ? x[i] : y[i]; }
}

struct where_shape {
  int rank;
  int64_t shape[kMaxRank], sc[kMaxRank], sx[kMaxRank], sy[kMaxRank];
};

template <typename U>
__global__ void where_bcast_kernel(const uint8_t* c, const U* x, const U* y, U* out, int64_t n,
                                   where_shape s) {
  NNP_GRID_STRIDE(i, n) {
    int64_t rest = i, oc = 0, ox = 0, oy = 0;
    for (int d = s.rank - 1; d >= 0; --d) {
      const int64_t e = s.shape[d];
      const int64_t k = rest % e;
      rest /= e;
      oc += k * s.sc[d];
      ox += k * s.sx[d];
      oy += k * s.sy[d];
    }
    out[i] = c[oc] != 0 ? x[ox] : y[oy];
  }
}

}  // namespace

// ---- ops ----------------------------------------------------------------------------------------
void op_concat(stream& s, const op_call& c) {
  const DLTensor& y = *c.out(0);
  const int axis = normalize_axis(c.params_as<nnp_concat_params>().axis, y.ndim);
  const DLTensor* parts[kMaxParts];
  const size_t n = c.n_inputs < static_cast<size_t>(kMaxParts) ? c.n_inputs : kMaxParts;
  for (size_t k = 0; k < n; ++k) parts[k] = c.in(k);
  concat_split(s, y, parts, c.n_inputs, axis, false);
}

void op_split(stream& s, const op_call& c) {
  const DLTensor& x = *c.in(0);
  const int axis = normalize_axis(c.params_as<nnp_split_params>().axis, x.ndim);
  const DLTensor* parts[kMaxParts];
  const size_t n = c.n_outputs < static_cast<size_t>(kMaxParts) ? c.n_outputs : kMaxParts;
  for (size_t k = 0; k < n; ++k) parts[k] = c.out(k);
  concat_split(s, x, parts, c.n_outputs, axis, true);
}

void op_slice(stream& s, const op_call& c) {
  const DLTensor& x = *c.in(0);
  const DLTensor& y = *c.out(0);
  const int64_t n_bytes = numel(y) * static_cast<int64_t>(dtype_size(y.dtype));
  if (n_bytes == 0) return;
  const void* xp = data_ptr<const void>(x);
  void* yp = data_ptr<void>(y);
  const slice_geometry g = make_slice_geometry(c.params_as<nnp_slice_params>(), x, xp, yp);
  slice_forward_args a{};
  a.rank = g.rank;
  int64_t stride = 1;  // x's compact strides over the simplified dims, in units
  for (int d = g.rank - 1; d >= 0; --d) {
    a.count[d] = g.count[d];
    a.stride[d] = g.step[d] * stride;
    a.base += g.start[d] * stride;
    stride *= g.dim[d];
  }
  if (g.rank == 1 && g.step[0] == 1) {  // one contiguous run
    NNP_CUDA_CHECK(cudaMemcpyAsync(yp, static_cast<const char*>(xp) + a.base * g.unit,
                                   static_cast<size_t>(n_bytes), cudaMemcpyDeviceToDevice,
                                   s.handle));
    return;
  }
  const int64_t n = n_bytes / g.unit;
  dispatch_unit(g.unit, [&](auto tg) {
    using U = typename decltype(tg)::type;
    slice_kernel<U><<<grid_for(n), kThreads, 0, s.handle>>>(static_cast<const U*>(xp),
                                                            static_cast<U*>(yp), n, a);
  });
  NNP_CUDA_CHECK_LAUNCH();
}

void op_slice_backward(stream& s, const op_call& c) {
  const DLTensor& dy = *c.in(0);
  const DLTensor& dx = *c.out(0);
  const int64_t es = static_cast<int64_t>(dtype_size(dx.dtype));
  const int64_t dx_bytes = numel(dx) * es;
  if (dx_bytes == 0) return;
  void* dxp = data_ptr<void>(dx);
  if (numel(dy) == 0) {  // nothing sliced: all zeros (zero bytes are 0 in any dtype)
    NNP_CUDA_CHECK(cudaMemsetAsync(dxp, 0, static_cast<size_t>(dx_bytes), s.handle));
    return;
  }
  const void* dyp = data_ptr<const void>(dy);
  const slice_geometry g = make_slice_geometry(c.params_as<nnp_slice_params>(), dx, dxp, dyp);
  if (g.rank == 1 && g.step[0] == 1 && g.count[0] == g.dim[0]) {  // dy is all of dx
    NNP_CUDA_CHECK(cudaMemcpyAsync(dxp, dyp, static_cast<size_t>(dx_bytes),
                                   cudaMemcpyDeviceToDevice, s.handle));
    return;
  }
  slice_backward_args a{};
  a.rank = g.rank;
  int64_t stride = 1;  // dy's compact strides, in units
  for (int d = g.rank - 1; d >= 0; --d) {
    a.dim[d] = g.dim[d];
    a.start[d] = g.start[d];
    a.step[d] = g.step[d];
    a.count[d] = g.count[d];
    a.dy_stride[d] = stride;
    stride *= g.count[d];
  }
  const int64_t n = dx_bytes / g.unit;
  dispatch_unit(g.unit, [&](auto tg) {
    using U = typename decltype(tg)::type;
    slice_backward_kernel<U><<<grid_for(n), kThreads, 0, s.handle>>>(static_cast<const U*>(dyp),
                                                                     static_cast<U*>(dxp), n, a);
  });
  NNP_CUDA_CHECK_LAUNCH();
}

void op_gather_backward(stream& s, const op_call& c) {
  const DLTensor& dy = *c.in(0);
  const DLTensor& ind = *c.in(1);
  const DLTensor& dx = *c.out(0);
  const int64_t n_dx = numel(dx);
  if (n_dx == 0) return;
  const elem t = elem_of(dx.dtype);
  const int axis = normalize_axis(c.params_as<nnp_gather_params>().axis, dx.ndim);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= dx.shape[d];
  for (int d = axis + 1; d < dx.ndim; ++d) inner *= dx.shape[d];
  const int64_t a = dx.shape[axis];  // >= 1: dx has elements
  const int64_t j_count = numel(ind);
  void* dxp = data_ptr<void>(dx);
  if (j_count == 0) {  // no index: dx = 0
    NNP_CUDA_CHECK(
        cudaMemsetAsync(dxp, 0, static_cast<size_t>(n_dx) * dtype_size(dx.dtype), s.handle));
    return;
  }
  // Keys are rows in [0, a] (a: out of range): end_bit bits of them decide the order.
  int end_bit = 0;
  while (end_bit < 64 && (static_cast<uint64_t>(a) >> end_bit) != 0) ++end_bit;
  size_t sort_bytes = 0;
  NNP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, sort_bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
      static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr), j_count, 0, end_bit,
      s.handle));
  // Scratch: keys in / out, values in / out (j_count each), first (a + 1), cub's storage.
  const size_t list = align_up(static_cast<size_t>(j_count) * 8);
  const size_t firsts = align_up(static_cast<size_t>(a + 1) * 8);
  char* base = static_cast<char*>(s.scratch(kScratchTemp0, 4 * list + firsts + sort_bytes));
  uint64_t* key_in = reinterpret_cast<uint64_t*>(base);
  uint64_t* key_out = reinterpret_cast<uint64_t*>(base + list);
  int64_t* val_in = reinterpret_cast<int64_t*>(base + 2 * list);
  int64_t* order = reinterpret_cast<int64_t*>(base + 3 * list);
  int64_t* first = reinterpret_cast<int64_t*>(base + 4 * list);
  void* sort_storage = base + 4 * list + firsts;

  gather_keys_kernel<<<grid_for(j_count), kThreads, 0, s.handle>>>(data_ptr<const int64_t>(ind),
                                                                   key_in, val_in, j_count, a);
  NNP_CUDA_CHECK_LAUNCH();
  NNP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_storage, sort_bytes, key_in, key_out, val_in,
                                                 order, j_count, 0, end_bit, s.handle));
  gather_segments_kernel<<<grid_for(a + 1), kThreads, 0, s.handle>>>(key_out, j_count, first, a);
  NNP_CUDA_CHECK_LAUNCH();
  dispatch_all_floats(t, [&](auto tg) {
    using T = typename decltype(tg)::type;
    gather_backward_kernel<T><<<grid_for(n_dx), kThreads, 0, s.handle>>>(
        data_ptr<const T>(dy), order, first, static_cast<T*>(dxp), outer, a, j_count, inner);
  });
  NNP_CUDA_CHECK_LAUNCH();
}

void op_where(stream& s, const op_call& c) {
  const DLTensor& cond = *c.in(0);
  const DLTensor& x = *c.in(1);
  const DLTensor& y = *c.in(2);
  const DLTensor& out = *c.out(0);
  const int64_t n = numel(out);
  if (n == 0) return;
  const uint8_t* cp = data_ptr<const uint8_t>(cond);
  const void* xp = data_ptr<const void>(x);
  const void* yp = data_ptr<const void>(y);
  void* op = data_ptr<void>(out);
  const bool same = numel(cond) == n && numel(x) == n && numel(y) == n;
  where_shape sh{};
  if (!same) {
    sh.rank = out.ndim;
    for (int d = 0; d < out.ndim; ++d) sh.shape[d] = out.shape[d];
    nnp::broadcast_strides(cond, out.ndim, sh.sc);
    nnp::broadcast_strides(x, out.ndim, sh.sx);
    nnp::broadcast_strides(y, out.ndim, sh.sy);
  }
  dispatch_unit(static_cast<int64_t>(dtype_size(out.dtype)), [&](auto tg) {
    using U = typename decltype(tg)::type;
    if (same)
      where_same_kernel<U><<<grid_for(n), kThreads, 0, s.handle>>>(
          cp, static_cast<const U*>(xp), static_cast<const U*>(yp), static_cast<U*>(op), n);
    else
      where_bcast_kernel<U><<<grid_for(n), kThreads, 0, s.handle>>>(
          cp, static_cast<const U*>(xp), static_cast<const U*>(yp), static_cast<U*>(op), n, sh);
  });
  NNP_CUDA_CHECK_LAUNCH();
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kDataOps[] = {
    {NNP_OP_CONCAT,          kit::any,         on_stream<op_concat>, check_element_size},
    {NNP_OP_SPLIT,           kit::any,         on_stream<op_split>, check_element_size},
    {NNP_OP_SLICE,           kit::any,         on_stream<op_slice>, check_element_size},
    {NNP_OP_SLICE_BACKWARD,  kit::any,         on_stream<op_slice_backward>, check_element_size},
    {NNP_OP_GATHER_BACKWARD, kAllFloats,  on_stream<op_gather_backward>},
    {NNP_OP_WHERE,           kAllFloats,  on_stream<op_where>},
};
// clang-format on
extern const kit::op_row_list kDataRows = kit::row_list(kDataOps);

}  // namespace nnp::cuda
