// gemm_kernels.cu — the small device helpers of gemm.cpp: GEMM's general C broadcast (ONNX
// unidirectional broadcasting of C into Y through per-dimension element strides) and the
// pointer arrays of a batched matmul whose batch broadcast no single stride per operand can
// express (cublasGemmBatchedEx), computed on the device so that the op stays capturable in a
// CUDA graph. Memory-bound and tiny next to the GEMM: grid-stride loops with coalesced writes.
#include "common.cuh"

namespace nnp::cuda {
namespace {

// y[i] = c[offset of i under c's broadcast strides], i row-major over Y's shape.
template <typename U>
__global__ void broadcast_strided_kernel(const U* c, U* y, int64_t n, broadcast_geometry g) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t rest = i, off = 0;
    for (int d = g.rank - 1; d >= 0; --d) {
      const int64_t extent = g.shape[d];
      off += (rest % extent) * g.stride[d];
      rest /= extent;
    }
    y[i] = c[off];
  }
}

// ptrs[i] = a + offset_a(i), ptrs[batch + i] = b + offset_b(i), ptrs[2 batch + i] = y + i y_step
// (byte offsets), i row-major over g.shape.
__global__ void batch_pointers_kernel(const char* a, const char* b, char* y, int64_t y_step,
                                      int64_t batch, batch_geometry g, void** ptrs) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < batch;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t rest = i, oa = 0, ob = 0;
    for (int d = g.rank - 1; d >= 0; --d) {
      const int64_t extent = g.shape[d];
      const int64_t k = rest % extent;
      rest /= extent;
      oa += k * g.a_stride[d];
      ob += k * g.b_stride[d];
    }
    ptrs[i] = const_cast<char*>(a + oa);
    ptrs[batch + i] = const_cast<char*>(b + ob);
    ptrs[2 * batch + i] = y + i * y_step;
  }
}

// y[i] = alpha * p[i] + beta * y[i] in float32 (beta = 0: y is not read), for alpha = 0,
// which cuBLAS would not multiply (BLAS skips the product): 0 * inf and 0 * NaN stay NaN.
template <typename T>
__global__ void axpby_kernel(const T* p, T* y, int64_t n, float alpha, float beta) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const float v = alpha * to_f(p[i]);
    y[i] = from_f<T>(beta == 0.0f ? v : v + beta * to_f(y[i]));
  }
}

}  // namespace

void launch_axpby(stream& s, elem t, const void* p, void* y, int64_t n, double alpha, double beta) {
  if (n == 0) return;
  dispatch_float(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    axpby_kernel<<<grid_for(n), kThreads, 0, s.handle>>>(
        static_cast<const T*>(p), static_cast<T*>(y), n, static_cast<float>(alpha),
        static_cast<float>(beta));
  });
  NNP_CUDA_CHECK_LAUNCH();
}

void launch_broadcast_strided(stream& s, size_t elem_bytes, const void* c, void* y, int64_t n,
                              const broadcast_geometry& g) {
  if (n == 0) return;
  const unsigned blocks = grid_for(n);
  switch (elem_bytes) {
    case 2:
      broadcast_strided_kernel<<<blocks, kThreads, 0, s.handle>>>(static_cast<const uint16_t*>(c),
                                                                  static_cast<uint16_t*>(y), n, g);
      break;
    case 4:
      broadcast_strided_kernel<<<blocks, kThreads, 0, s.handle>>>(static_cast<const uint32_t*>(c),
                                                                  static_cast<uint32_t*>(y), n, g);
      break;
    case 8:
      broadcast_strided_kernel<<<blocks, kThreads, 0, s.handle>>>(static_cast<const uint64_t*>(c),
                                                                  static_cast<uint64_t*>(y), n, g);
      break;
    default:
      fail(NNP_STATUS_INTERNAL,
           format("gemm: C broadcast of %zu-byte elements is not implemented", elem_bytes));
  }
  NNP_CUDA_CHECK_LAUNCH();
}

void launch_batch_pointers(stream& s, const void* a, const void* b, void* y, int64_t y_step,
                           int64_t batch, const batch_geometry& g, void** ptrs) {
  if (batch == 0) return;
  batch_pointers_kernel<<<grid_for(batch), kThreads, 0, s.handle>>>(
      static_cast<const char*>(a), static_cast<const char*>(b), static_cast<char*>(y), y_step,
      batch, g, ptrs);
  NNP_CUDA_CHECK_LAUNCH();
}

}  // namespace nnp::cuda
