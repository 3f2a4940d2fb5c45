// attention_mma.cu — float32 attention on tensor cores in 3xTF32, forward and backward: the
// kernels and launches of the tiles of attention_mma_tiles.hpp (the design, the precision and
// the shared memory are described there), with the device's execution context.
#include "attention.cuh"
#include "attention_mma_tiles.hpp"
#include "context.hpp"

namespace nnp::cuda {
namespace {

using namespace mma_tiles;

// The block's execution context of the tiles on the device.
struct device_ctx {
  __device__ __forceinline__ int tid() const { return static_cast<int>(threadIdx.x); }
  __device__ __forceinline__ int64_t block(int axis) const {
    return axis == 0 ? blockIdx.x : axis == 1 ? blockIdx.y : blockIdx.z;
  }
  __device__ __forceinline__ void sync_block() const { __syncthreads(); }
  __device__ __forceinline__ void sync_warp() const { __syncwarp(); }
  __device__ __forceinline__ float shfl_xor(float v, int lane_mask) const {
    return __shfl_xor_sync(0xffffffffu, v, lane_mask);
  }
  // c += a b: one mma.sync.m16n8k8 with TF32 operands and float32 accumulation.
  __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4],
                                      const uint32_t (&b)[2]) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    (void)c, (void)a, (void)b;
    __trap();  // tensor_core_attention keeps these kernels off devices before compute 8.0
#endif
  }
};

template <int HD>
__global__ void __launch_bounds__(kMmaThreads, 2)
    attention_forward_mma_kernel(attn_dims a, const float* __restrict q, const float* __restrict k,
                                 const float* __restrict v, const float* __restrict mask,
                                 float* __restrict y, float* __restrict lse) {
  extern __shared__ float4 shm4[];
  device_ctx x;
  forward_tile<HD>(x, reinterpret_cast<float*>(shm4), a, q, k, v, mask, y, lse);
}

template <int HD>
__global__ void __launch_bounds__(kMmaThreads, HD > 64 ? 1 : 2)
    attention_dkdv_mma_kernel(attn_dims a, const float* __restrict q, const float* __restrict k,
                              const float* __restrict v, const float* __restrict mask,
                              const float* __restrict dy, const float* __restrict lse,
                              const float* __restrict delta, float* __restrict dk,
                              float* __restrict dv) {
  extern __shared__ float4 shm4[];
  device_ctx x;
  dkdv_tile<HD>(x, reinterpret_cast<float*>(shm4), a, q, k, v, mask, dy, lse, delta, dk, dv);
}

template <int HD>
__global__ void __launch_bounds__(kMmaThreads, HD > 64 ? 1 : 2)
    attention_dq_mma_kernel(attn_dims a, const float* __restrict q, const float* __restrict k,
                            const float* __restrict v, const float* __restrict mask,
                            const float* __restrict dy, const float* __restrict lse,
                            const float* __restrict delta, float* __restrict dq) {
  extern __shared__ float4 shm4[];
  device_ctx x;
  dq_tile<HD>(x, reinterpret_cast<float*>(shm4), a, q, k, v, mask, dy, lse, delta, dq);
}

// ---- launches ---------------------------------------------------------------------------------

template <int HD>
void forward_hd(stream& s, const attn_dims& a, const float* q, const float* k, const float* v,
                const float* mask, float* y, float* lse) {
  static std::atomic<uint64_t> done{0};
  const size_t bytes = sizeof(float) * forward_floats<HD>();
  allow_shared(attention_forward_mma_kernel<HD>, bytes, done, s.device);
  attention_forward_mma_kernel<HD>
      <<<attn_tiles(a.tq, a.hq, a.batch), kMmaThreads, bytes, s.handle>>>(a, q, k, v, mask, y, lse);
  NNP_CUDA_CHECK_LAUNCH();
}

template <int HD>
void backward_hd(stream& s, const attn_dims& a, const float* q, const float* k, const float* v,
                 const float* mask, const float* dy, const float* lse, const float* delta,
                 float* dq, float* dk, float* dv) {
  static std::atomic<uint64_t> done_kv{0}, done_q{0};
  const size_t bytes = sizeof(float) * backward_floats<HD>();
  allow_shared(attention_dkdv_mma_kernel<HD>, bytes, done_kv, s.device);
  attention_dkdv_mma_kernel<HD><<<attn_tiles(a.tk, a.hkv, a.batch), kMmaThreads, bytes, s.handle>>>(
      a, q, k, v, mask, dy, lse, delta, dk, dv);
  NNP_CUDA_CHECK_LAUNCH();
  allow_shared(attention_dq_mma_kernel<HD>, bytes, done_q, s.device);
  attention_dq_mma_kernel<HD><<<attn_tiles(a.tq, a.hq, a.batch), kMmaThreads, bytes, s.handle>>>(
      a, q, k, v, mask, dy, lse, delta, dq);
  NNP_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool tensor_core_attention(const stream& s) {
  const device_registry& r = devices();
  return s.device >= 0 && static_cast<size_t>(s.device) < r.devices.size() &&
         r.devices[static_cast<size_t>(s.device)].compute_major >= 8;
}

void attention_forward_mma(stream& s, const attn_dims& a, const float* q, const float* k,
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

void attention_backward_mma(stream& s, const attn_dims& a, const float* q, const float* k,
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
