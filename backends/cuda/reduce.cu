// reduce.cu — own reduction kernels over any set of axes: sum, mean, max, min, l2, l1,
// sum_square, log_sum_exp (ONNX ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceL2, ReduceL1,
// ReduceSumSquare, ReduceLogSumExp), with the reference's semantics (backends/reference/
// reduce.cpp): max and min propagate NaN; an empty reduction gives 0 (sum, l1, l2, sum_square),
// NaN (mean), -inf (max, log_sum_exp) or +inf (min); log_sum_exp is m + log(sum(exp(x - m)))
// with m = max(x) (a first pass), m taken as 0 when it is infinite or NaN. Also convolution's
// bias gradient (launch_sum_keep_axis). Accumulation in float32.
// Speed: reductions over a run of axes with at least 16 kept elements after it (a linear
// layer's bias gradient, [rows, features] over rows) read whole row segments per warp
// (column_reduce_kernel); otherwise one block per output with a shuffle tree when the reduced
// extent is large (and, with few outputs, several blocks per output over parts of the range,
// combined in a fixed order), one thread per output when it is small. launch_sum_keep_axis (x
// [outer, K, inner] summed to [K]) has its own kernel: a grid of K x parts blocks, each summing one
// contiguous chunk of its channel's outer * inner elements with coalesced loads (division-free
// index stepping), then a warp per channel adds the parts in a fixed order: deterministic, no
// atomics. cumsum (ABI 1.5, ONNX CumSum; float32): one thread per line along the axis, consecutive
// threads on neighbouring lines (coalesced rows when inner > 1), each a running sum in double.
#include "common.cuh"

#include <cmath>

namespace nnp::cuda {
namespace {

struct reduce_plan {
  int n_kept, n_red;
  int64_t kept_shape[NNP_MAX_DIMS], kept_stride[NNP_MAX_DIMS];
  int64_t red_shape[NNP_MAX_DIMS], red_stride[NNP_MAX_DIMS];
  int64_t red_count;
};

__device__ __forceinline__ int64_t decompose(int64_t i, int n, const int64_t* shape,
                                             const int64_t* stride) {
  int64_t off = 0;
  for (int d = n - 1; d >= 0; --d) {
    const int64_t k = i % shape[d];
    i /= shape[d];
    off += k * stride[d];
  }
  return off;
}

// min that propagates NaN
struct min_op {
  __device__ __forceinline__ float operator()(float a, float b) const {
    return (isnan(a) || isnan(b)) ? (a + b) : fminf(a, b);
  }
};

// The accumulator's start (and an empty reduction's value before finish): -inf for max, +inf for
// min, 0 for the sums (log_sum_exp: its sum of exp(x - m)).
__device__ __forceinline__ float identity_of(int op) {
  if (op == NNP_REDUCE_MAX) return -INFINITY;
  if (op == NNP_REDUCE_MIN) return INFINITY;
  return 0.0f;
}

// acc with element v added; m is log_sum_exp's shift.
__device__ __forceinline__ float accumulate(int op, float acc, float v, float m) {
  switch (op) {
    case NNP_REDUCE_MAX:
      return max_op()(acc, v);
    case NNP_REDUCE_MIN:
      return min_op()(acc, v);
    case NNP_REDUCE_L1:
      return acc + fabsf(v);
    case NNP_REDUCE_L2:
    case NNP_REDUCE_SUM_SQUARE:
      return acc + v * v;
    case NNP_REDUCE_LOG_SUM_EXP:
      return acc + expf(v - m);
    default:  // SUM, MEAN
      return acc + v;
  }
}

// Combines the accumulators of the block's threads (every thread gets the result).
__device__ __forceinline__ float block_combine(int op, float acc) {
  if (op == NNP_REDUCE_MAX) return block_reduce(acc, max_op(), -INFINITY);
  if (op == NNP_REDUCE_MIN) return block_reduce(acc, min_op(), INFINITY);
  return block_reduce(acc, sum_op(), 0.0f);
}

// log_sum_exp's shift: the max, or 0 when the max is infinite or NaN (the result is then the
// max itself: all -inf gives log(0) = -inf, any +inf gives +inf, any NaN gives NaN).
__device__ __forceinline__ float lse_shift(float max) { return isfinite(max) ? max : 0.0f; }

__device__ __forceinline__ float finish(int op, float acc, int64_t count, float m) {
  switch (op) {
    case NNP_REDUCE_MEAN:
      return acc / static_cast<float>(count);  // 0/0 = NaN when empty
    case NNP_REDUCE_L2:
      return sqrtf(acc);
    case NNP_REDUCE_LOG_SUM_EXP:
      // log and the shift in double, rounded once (log(2) + 1000 is float(1000 + log(2))).
      return count == 0
                 ? -INFINITY
                 : static_cast<float>(log(static_cast<double>(acc)) + static_cast<double>(m));
    default:
      return acc;
  }
}

// Block (o, part) reduces elements [part * part_len, (part + 1) * part_len) of output o's
// reduced range (all of it with one part; log_sum_exp always has one part). With one part it
// writes y[o], else its partial result partial[o * parts + part] (column_parts_kernel with one
// column combines the parts in order).
template <typename T>
__global__ void reduce_block_kernel(const T* x, T* y, float* partial, int64_t n_out, reduce_plan p,
                                    int64_t part_len, int op) {
  const float identity = identity_of(op);
  const int64_t parts = gridDim.y, begin = blockIdx.y * part_len;
  const int64_t end = begin + part_len < p.red_count ? begin + part_len : p.red_count;
  for (int64_t o = blockIdx.x; o < n_out; o += gridDim.x) {
    const int64_t base = decompose(o, p.n_kept, p.kept_shape, p.kept_stride);
    float m = 0.0f;
    if (op == NNP_REDUCE_LOG_SUM_EXP) {
      float mx = -INFINITY;
      for (int64_t r = begin + threadIdx.x; r < end; r += blockDim.x)
        mx = max_op()(mx, to_f(x[base + decompose(r, p.n_red, p.red_shape, p.red_stride)]));
      m = lse_shift(block_reduce(mx, max_op(), -INFINITY));
    }
    float acc = identity;
    for (int64_t r = begin + threadIdx.x; r < end; r += blockDim.x) {
      const float v = to_f(x[base + decompose(r, p.n_red, p.red_shape, p.red_stride)]);
      acc = accumulate(op, acc, v, m);
    }
    acc = block_combine(op, acc);
    if (threadIdx.x != 0) continue;
    if (parts == 1)
      y[o] = from_f<T>(finish(op, acc, p.red_count, m));
    else
      partial[o * parts + blockIdx.y] = acc;
  }
}

template <typename T>
__global__ void reduce_thread_kernel(const T* x, T* y, int64_t n_out, reduce_plan p, int op) {
  const float identity = identity_of(op);
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < n_out;
       o += int64_t{gridDim.x} * blockDim.x) {
    const int64_t base = decompose(o, p.n_kept, p.kept_shape, p.kept_stride);
    float m = 0.0f;
    if (op == NNP_REDUCE_LOG_SUM_EXP) {
      float mx = -INFINITY;
      for (int64_t r = 0; r < p.red_count; ++r)
        mx = max_op()(mx, to_f(x[base + decompose(r, p.n_red, p.red_shape, p.red_stride)]));
      m = lse_shift(mx);
    }
    float acc = identity;
    for (int64_t r = 0; r < p.red_count; ++r) {
      const float v = to_f(x[base + decompose(r, p.n_red, p.red_shape, p.red_stride)]);
      acc = accumulate(op, acc, v, m);
    }
    y[o] = from_f<T>(finish(op, acc, p.red_count, m));
  }
}

// ---- column reductions: y[a, c] = reduce over r of x[a, r, c] (compact) ---------------------
// A linear layer's bias gradient ([rows, features] summed over rows) and any reduction whose
// reduced axes are one run with at least kColumnMinWidth kept elements after it. Blocks of
// 32 x 8 threads: threadIdx.x walks 32 neighbouring columns (one 128-byte row segment per warp
// and step, coalesced), threadIdx.y every 8th row of the block's part of r; the 8 rows' results
// are combined in shared memory in a fixed order. With parts > 1 each block writes its part's
// partial result and column_parts_kernel combines the parts in a fixed order: deterministic, no
// atomics. Not log_sum_exp (its shift needs a first pass); the generic kernels take it.
constexpr int kColumnTile = 32, kColumnRows = 8;
constexpr int64_t kColumnMinWidth = 16;

// How partial results combine: max and min by themselves, everything else is a sum.
__device__ __forceinline__ float combine(int op, float a, float b) {
  if (op == NNP_REDUCE_MAX) return max_op()(a, b);
  if (op == NNP_REDUCE_MIN) return min_op()(a, b);
  return a + b;
}

template <typename T>
__global__ void __launch_bounds__(kColumnTile* kColumnRows)
    column_reduce_kernel(const T* __restrict__ x, float* __restrict__ partial, T* __restrict__ y,
                         int64_t rows, int64_t cols, int64_t part_rows, int op) {
  __shared__ float acc_of[kColumnRows][kColumnTile + 1];
  const int64_t c = blockIdx.x * int64_t{kColumnTile} + threadIdx.x;
  const int64_t part = blockIdx.y, parts = gridDim.y, a = blockIdx.z;
  const int64_t begin = part * part_rows;
  const int64_t end = begin + part_rows < rows ? begin + part_rows : rows;
  float acc = identity_of(op);
  if (c < cols) {
    const T* xa = x + a * rows * cols + c;
    int64_t r = begin + threadIdx.y;
    // Four rows' loads issued before their (in-order) accumulation: a thread's rows are
    // independent loads, and a part has 8 per thread, so this halves the chain of latencies.
    for (; r + 3 * kColumnRows < end; r += 4 * kColumnRows) {
      const float v0 = to_f(xa[r * cols]), v1 = to_f(xa[(r + kColumnRows) * cols]);
      const float v2 = to_f(xa[(r + 2 * kColumnRows) * cols]);
      const float v3 = to_f(xa[(r + 3 * kColumnRows) * cols]);
      acc = accumulate(op, accumulate(op, acc, v0, 0.0f), v1, 0.0f);
      acc = accumulate(op, accumulate(op, acc, v2, 0.0f), v3, 0.0f);
    }
    for (; r < end; r += kColumnRows) acc = accumulate(op, acc, to_f(xa[r * cols]), 0.0f);
  }
  acc_of[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y != 0 || c >= cols) return;
  for (int t = 1; t < kColumnRows; ++t) acc = combine(op, acc, acc_of[t][threadIdx.x]);
  if (parts == 1)
    y[a * cols + c] = from_f<T>(finish(op, acc, rows, 0.0f));
  else
    partial[(a * parts + part) * cols + c] = acc;
}

struct combine_op {
  int op;
  __device__ __forceinline__ float operator()(float a, float b) const { return combine(op, a, b); }
};

// y[a, c] = finish(the parts of column c of batch a), one warp per output combining them in a
// fixed order (warp_combine_strided). A thread per output walking its parts one load after the
// other was a chain of 34 load latencies for the vit's bias gradients ([2 176, 64]).
template <typename T>
__global__ void column_parts_kernel(const float* __restrict__ partial, T* __restrict__ y,
                                    int64_t n_out, int64_t cols, int64_t parts, int64_t rows,
                                    int op) {
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x >> 5);
  for (int64_t o = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) >> 5; o < n_out; o += warps) {
    const int64_t a = o / cols, c = o - a * cols;
    const float acc = warp_combine_strided(partial + a * parts * cols + c, parts, cols,
                                           combine_op{op}, identity_of(op));
    if ((threadIdx.x & 31) == 0) y[o] = from_f<T>(finish(op, acc, rows, 0.0f));
  }
}

// x as [outer, rows, cols] when the reduced axes of `shape` are one run of axes (size-1 axes
// count as either), with at least kColumnMinWidth kept elements after it; false otherwise.
bool as_columns(const int64_t* shape, int rank, const bool* reduced, int64_t* outer, int64_t* rows,
                int64_t* cols) {
  int first = -1, last = -1;
  for (int d = 0; d < rank; ++d)
    if (reduced[d] && shape[d] != 1) {
      if (first < 0) first = d;
      last = d;
    }
  if (first < 0) return false;
  *outer = *rows = *cols = 1;
  for (int d = 0; d < rank; ++d) {
    if (d < first)
      *outer *= shape[d];
    else if (d > last)
      *cols *= shape[d];
    else if (!reduced[d] && shape[d] != 1)
      return false;  // a kept axis inside the run
    else
      *rows *= shape[d];
  }
  return *cols >= kColumnMinWidth && *outer <= 65535;
}

// Uses scratch slot kScratchTemp0 (outer * parts * cols floats) when it splits the rows.
void launch_column_reduce(stream& s, elem t, const void* x, void* y, int64_t outer, int64_t rows,
                          int64_t cols, int op) {
  const int64_t tiles = (cols + kColumnTile - 1) / kColumnTile;
  // Parts of at least 64 rows (8 per thread), up to about 512 blocks in all.
  constexpr int64_t kMinPartRows = 8 * kColumnRows, kTargetBlocks = 512;
  int64_t parts = kTargetBlocks / (tiles * outer);
  const int64_t max_parts = (rows + kMinPartRows - 1) / kMinPartRows;
  if (parts > max_parts) parts = max_parts;
  if (parts > 65535) parts = 65535;
  if (parts < 1) parts = 1;
  const int64_t part_rows = (rows + parts - 1) / parts;
  parts = rows > 0 ? (rows + part_rows - 1) / part_rows : 1;  // no empty parts
  float* partial =
      parts > 1 ? static_cast<float*>(s.scratch(
                      kScratchTemp0, sizeof(float) * static_cast<size_t>(outer * parts * cols)))
                : nullptr;
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(parts),
                  static_cast<unsigned>(outer));
  const dim3 block(kColumnTile, kColumnRows);
  dispatch_float(t, [&](auto tg) {
    using T = typename decltype(tg)::type;
    column_reduce_kernel<<<grid, block, 0, s.handle>>>(
        static_cast<const T*>(x), partial, static_cast<T*>(y), rows, cols, part_rows, op);
    NNP_CUDA_CHECK_LAUNCH();
    if (parts > 1) {
      column_parts_kernel<<<grid_for(outer * cols * 32), kThreads, 0, s.handle>>>(
          partial, static_cast<T*>(y), outer * cols, cols, parts, rows, op);
      NNP_CUDA_CHECK_LAUNCH();
    }
  });
}

// Reduces compact x of `shape` over the axes with reduced[d] = true. Uses scratch slot
// kScratchTemp0 when it splits the reduced ranges.
void launch_reduce(stream& s, elem t, const void* x, void* y, const int64_t* shape, int rank,
                   const bool* reduced, int op) {
  reduce_plan p{};
  int64_t stride = 1, strides[NNP_MAX_DIMS];
  for (int d = rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= shape[d];
  }
  int64_t n_out = 1;
  p.red_count = 1;
  for (int d = 0; d < rank; ++d) {
    if (reduced[d]) {
      p.red_shape[p.n_red] = shape[d];
      p.red_stride[p.n_red++] = strides[d];
      p.red_count *= shape[d];
    } else {
      p.kept_shape[p.n_kept] = shape[d];
      p.kept_stride[p.n_kept++] = strides[d];
      n_out *= shape[d];
    }
  }
  if (n_out == 0) return;
  int64_t outer = 0, rows = 0, cols = 0;
  if (op != NNP_REDUCE_LOG_SUM_EXP && p.red_count >= 2 &&
      as_columns(shape, rank, reduced, &outer, &rows, &cols)) {
    launch_column_reduce(s, t, x, y, outer, rows, cols, op);
    return;
  }
  // Few outputs over long ranges (a reduction over all axes, or over most of them) split each
  // range into parts of at least kPartMin elements, up to about kSplitBlocks blocks in all: a
  // full reduction is not left to one block. The parts are combined in a fixed order
  // (deterministic, no atomics), by themselves for max and min, as sums otherwise; log_sum_exp
  // keeps one part (its shift needs the whole range's max first).
  constexpr int64_t kPartMin = 8 * kThreads, kSplitBlocks = 1024;
  int64_t parts = 1;
  if (op != NNP_REDUCE_LOG_SUM_EXP && n_out < kSplitBlocks && p.red_count >= 2 * kPartMin) {
    parts = (p.red_count + kPartMin - 1) / kPartMin;
    if (parts > kSplitBlocks / n_out) parts = kSplitBlocks / n_out;
  }
  const int64_t part_len = (p.red_count + parts - 1) / parts;
  if (parts > 1) parts = (p.red_count + part_len - 1) / part_len;  // no empty parts
  float* partial = parts > 1
                       ? static_cast<float*>(s.scratch(
                             kScratchTemp0, sizeof(float) * static_cast<size_t>(n_out * parts)))
                       : nullptr;
  dispatch_float(t, [&](auto tg) {
    using T = typename decltype(tg)::type;
    if (p.red_count >= 64 || n_out < 1024) {
      const dim3 blocks(static_cast<unsigned>(n_out < (1 << 20) ? n_out : (1 << 20)),
                        static_cast<unsigned>(parts));
      reduce_block_kernel<<<blocks, kThreads, 0, s.handle>>>(
          static_cast<const T*>(x), static_cast<T*>(y), partial, n_out, p, part_len, op);
      NNP_CUDA_CHECK_LAUNCH();
      if (parts > 1) {
        column_parts_kernel<<<grid_for(n_out * 32), kThreads, 0, s.handle>>>(
            partial, static_cast<T*>(y), n_out, 1, parts, p.red_count, op);
        NNP_CUDA_CHECK_LAUNCH();
      }
    } else {
      reduce_thread_kernel<<<grid_for(n_out), kThreads, 0, s.handle>>>(
          static_cast<const T*>(x), static_cast<T*>(y), n_out, p, op);
      NNP_CUDA_CHECK_LAUNCH();
    }
  });
}

// ---- channel sums: y[k] = sum x[n, k, i] over x [outer, K, inner] (compact) --------------------
// Block (k, part) sums elements [part * chunk, min(total, (part + 1) * chunk)) of channel k's
// total = outer * inner elements, numbered j = n * inner + i; consecutive threads take
// consecutive j (consecutive addresses within a row). With parts == 1 the block writes y[k];
// else partial[k * parts + part].
template <typename T>
__global__ void channel_sum_kernel(const T* __restrict__ x, float* __restrict__ partial,
                                   T* __restrict__ y, int64_t k_count, int64_t inner, int64_t total,
                                   int64_t chunk, int parts) {
  const int64_t k = blockIdx.x;
  const int part = static_cast<int>(blockIdx.y);
  const int64_t begin = part * chunk;
  const int64_t end = begin + chunk < total ? begin + chunk : total;
  float acc = 0.0f;
  int64_t j = begin + threadIdx.x;
  if (j < end) {  // inner > 0 here
    int64_t n = j / inner, i = j - n * inner;
    const int64_t step = blockDim.x;
    const int64_t dn = step / inner, di = step - dn * inner;  // j += step as (n, i) += (dn, di)
    const int64_t row_stride = k_count * inner;
    const T* xk = x + k * inner;
    auto next = [&] {  // the offset of (n, i), then (n, i) one step on
      const int64_t off = n * row_stride + i;
      n += dn;
      i += di;
      if (i >= inner) {
        i -= inner;
        ++n;
      }
      return off;
    };
    // Four loads in flight before their (in-order) additions, then the rest one at a time.
    for (; j + 3 * step < end; j += 4 * step) {
      float v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) v[u] = to_f(xk[next()]);
      acc += v[0];
      acc += v[1];
      acc += v[2];
      acc += v[3];
    }
    for (; j < end; j += step) acc += to_f(xk[next()]);
  }
  acc = block_reduce(acc, sum_op(), 0.0f);
  if (threadIdx.x == 0) {
    if (parts == 1)
      y[k] = from_f<T>(acc);
    else
      partial[k * parts + part] = acc;
  }
}

// y[k] = the sum of partial[k * parts + 0 .. parts), one warp per k (a fixed order).
template <typename T>
__global__ void channel_sum_parts_kernel(const float* __restrict__ partial, T* __restrict__ y,
                                         int64_t k_count, int parts) {
  const int lane = threadIdx.x & 31;
  const int64_t k = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) >> 5;
  if (k >= k_count) return;  // the whole warp (k is the same for its 32 lanes)
  const float acc = warp_combine_strided(partial + k * parts, parts, 1, sum_op(), 0.0f);
  if (lane == 0) y[k] = from_f<T>(acc);
}

}  // namespace

// Uses scratch slot kScratchTemp0 (K * parts floats, parts <= 1024, only when parts > 1).
void launch_sum_keep_axis(stream& s, elem t, const void* x, void* y, const int64_t* shape, int rank,
                          int axis) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= shape[d];
  for (int d = axis + 1; d < rank; ++d) inner *= shape[d];
  const int64_t k_count = shape[axis];
  if (k_count == 0) return;
  if (k_count > INT32_MAX) {  // beyond a grid's x extent: the general kernels
    bool reduced[NNP_MAX_DIMS];
    for (int d = 0; d < rank; ++d) reduced[d] = d != axis;
    launch_reduce(s, t, x, y, shape, rank, reduced, NNP_REDUCE_SUM);
    return;
  }
  const int64_t total = outer * inner;  // elements per channel (0: y = 0)
  // Parts per channel: about 8 elements per thread, at most 1024 blocks in all unless K alone
  // is more (then one block per channel).
  constexpr int64_t kPerBlock = 8 * kThreads;
  int64_t parts = (total + kPerBlock - 1) / kPerBlock;
  const int64_t max_parts = k_count >= 1024 ? 1 : 1024 / k_count;
  if (parts > max_parts) parts = max_parts;
  if (parts < 1) parts = 1;
  const int64_t chunk = parts == 1 ? total : (total + parts - 1) / parts;
  float* partial = parts > 1
                       ? static_cast<float*>(s.scratch(
                             kScratchTemp0, sizeof(float) * static_cast<size_t>(k_count * parts)))
                       : nullptr;
  const dim3 grid(static_cast<unsigned>(k_count), static_cast<unsigned>(parts));
  dispatch_float(t, [&](auto tg) {
    using T = typename decltype(tg)::type;
    channel_sum_kernel<<<grid, kThreads, 0, s.handle>>>(static_cast<const T*>(x), partial,
                                                        static_cast<T*>(y), k_count, inner, total,
                                                        chunk, static_cast<int>(parts));
    NNP_CUDA_CHECK_LAUNCH();
    if (parts > 1) {
      channel_sum_parts_kernel<<<grid_for(k_count * 32), kThreads, 0, s.handle>>>(
          partial, static_cast<T*>(y), k_count, static_cast<int>(parts));
      NNP_CUDA_CHECK_LAUNCH();
    }
  });
}

void op_reduce(stream& s, const op_call& c) {
  const auto p = read_params<nnp_reduce_params>(c.params);
  const DLTensor& x = *c.in(0);
  const DLTensor& y = *c.out(0);
  bool reduced[NNP_MAX_DIMS] = {};
  if (p.n_axes == 0) {
    for (int d = 0; d < x.ndim; ++d) reduced[d] = p.noop_with_empty_axes == 0;  // ONNX
  } else {
    for (int i = 0; i < p.n_axes; ++i) {
      const int a = normalize_axis(p.axes[i], x.ndim);
      if (a < 0)
        fail(NNP_STATUS_INVALID_ARGUMENT, format("reduce axis %d out of range", p.axes[i]));
      reduced[a] = true;
    }
  }
  launch_reduce(s, elem_of(x.dtype), data_ptr<const void>(x), data_ptr<void>(y), x.shape, x.ndim,
                reduced, p.op);
}

// reduce: sum, mean, max (ABI 1.0), min, l2, l1, sum_square, log_sum_exp (ABI 1.2); later ops
// are not implemented.
void check_reduce(const op_call& c) {
  check_implemented("reduce op", c.params_as<nnp_reduce_params>().op, NNP_REDUCE_SUM,
                    NNP_REDUCE_LOG_SUM_EXP, "SUM, MEAN, MAX, MIN, L2, L1, SUM_SQUARE, LOG_SUM_EXP");
}
namespace {

// cumsum: x as [outer, n, inner] around the axis; thread t runs line (o, k) = (t / inner,
// t % inner), so consecutive threads take consecutive addresses at each step along the axis.
// The running sum is double, adding x[j] in the order of j (from n-1 down with reverse), as the
// reference's; x[j] is read before y[j] is written, so y may be x (no __restrict__).
__global__ void cumsum_kernel(const float* x, float* y, int64_t lines, int64_t n, int64_t inner,
                              bool exclusive, bool reverse) {
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < lines;
       t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t o = t / inner, k = t - o * inner;
    const int64_t step = reverse ? -inner : inner;
    int64_t at = o * n * inner + k + (reverse ? (n - 1) * inner : 0);
    double sum = 0.0;
    for (int64_t j = 0; j < n; ++j, at += step) {
      const double v = x[at];
      if (exclusive) y[at] = static_cast<float>(sum);
      sum += v;
      if (!exclusive) y[at] = static_cast<float>(sum);
    }
  }
}

void op_cumsum(stream& s, const op_call& c) {
  const auto p = read_params<nnp_cumsum_params>(c.params);
  const DLTensor& x = *c.in(0);
  const int axis = normalize_axis(p.axis, x.ndim);  // in range: libnnplug checked it
  if (numel(x) == 0) return;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape[d];
  for (int d = axis + 1; d < x.ndim; ++d) inner *= x.shape[d];
  const int64_t lines = outer * inner;
  cumsum_kernel<<<grid_for(lines), kThreads, 0, s.handle>>>(
      data_ptr<const float>(x), data_ptr<float>(*c.out(0)), lines, x.shape[axis], inner,
      p.exclusive != 0, p.reverse != 0);
  NNP_CUDA_CHECK_LAUNCH();
}

}  // namespace

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kReduceOps[] = {
    {NNP_OP_REDUCE, kHalfFloats, on_stream<op_reduce>, check_reduce},
    {NNP_OP_CUMSUM, kit::f32,    on_stream<op_cumsum>},
};
// clang-format on
extern const kit::op_row_list kReduceRows = kit::row_list(kReduceOps);

}  // namespace nnp::cuda
