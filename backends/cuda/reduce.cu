// reduce.cu — own reduction kernels: sum / mean / max over any set of axes (ONNX ReduceSum,
// ReduceMean, ReduceMax), also used for convolution's bias gradient. One block per output with a
// shuffle tree when the reduced extent is large, one thread per output when it is small;
// accumulation in float32; max propagates NaN.
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

__device__ __forceinline__ float finish(int op, float acc, int64_t count) {
  if (op == NNP_REDUCE_MEAN) return acc / static_cast<float>(count);  // 0/0 = NaN when empty
  return acc;
}

template <typename T>
__global__ void reduce_block_kernel(const T* x, T* y, int64_t n_out, reduce_plan p, int op) {
  const bool is_max = op == NNP_REDUCE_MAX;
  const float identity = is_max ? -INFINITY : 0.0f;
  for (int64_t o = blockIdx.x; o < n_out; o += gridDim.x) {
    const int64_t base = decompose(o, p.n_kept, p.kept_shape, p.kept_stride);
    float acc = identity;
    for (int64_t r = threadIdx.x; r < p.red_count; r += blockDim.x) {
      const float v = to_f(x[base + decompose(r, p.n_red, p.red_shape, p.red_stride)]);
      acc = is_max ? max_op()(acc, v) : acc + v;
    }
    acc = is_max ? block_reduce(acc, max_op(), identity) : block_reduce(acc, sum_op(), identity);
    if (threadIdx.x == 0) y[o] = from_f<T>(finish(op, acc, p.red_count));
  }
}

template <typename T>
__global__ void reduce_thread_kernel(const T* x, T* y, int64_t n_out, reduce_plan p, int op) {
  const bool is_max = op == NNP_REDUCE_MAX;
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < n_out;
       o += int64_t{gridDim.x} * blockDim.x) {
    const int64_t base = decompose(o, p.n_kept, p.kept_shape, p.kept_stride);
    float acc = is_max ? -INFINITY : 0.0f;
    for (int64_t r = 0; r < p.red_count; ++r) {
      const float v = to_f(x[base + decompose(r, p.n_red, p.red_shape, p.red_stride)]);
      acc = is_max ? max_op()(acc, v) : acc + v;
    }
    y[o] = from_f<T>(finish(op, acc, p.red_count));
  }
}

// Reduces compact x of `shape` over the axes with reduced[d] = true.
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
  dispatch_float(t, [&](auto tg) {
    using T = typename decltype(tg)::type;
    if (p.red_count >= 64 || n_out < 1024) {
      const unsigned blocks = static_cast<unsigned>(n_out < (1 << 20) ? n_out : (1 << 20));
      reduce_block_kernel<<<blocks, kThreads, 0, s.handle>>>(static_cast<const T*>(x),
                                                             static_cast<T*>(y), n_out, p, op);
    } else {
      reduce_thread_kernel<<<grid_for(n_out), kThreads, 0, s.handle>>>(
          static_cast<const T*>(x), static_cast<T*>(y), n_out, p, op);
    }
  });
  NNP_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_sum_keep_axis(stream& s, elem t, const void* x, void* y, const int64_t* shape, int rank,
                          int axis) {
  bool reduced[NNP_MAX_DIMS];
  for (int d = 0; d < rank; ++d) reduced[d] = d != axis;
  launch_reduce(s, t, x, y, shape, rank, reduced, NNP_REDUCE_SUM);
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

}  // namespace nnp::cuda
