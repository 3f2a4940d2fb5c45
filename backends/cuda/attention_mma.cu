// attention_mma.cu — attention on tensor cores (3xTF32 for float32 calls, float16/bfloat16
// products for 16-bit ones), forward and backward: the kernels and launches of the tiles of
// attention_mma_tiles.hpp (the design, the precision and the shared memory are described
// there), with the device's execution context.
#include "attention.cuh"
#include "attention_mma_tiles.hpp"
#include "context.hpp"

#include <cstring>
#include <type_traits>

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
  // Two floats rounded to float16 (kBf16 false) or bfloat16, lo in the low half.
  template <bool kBf16>
  __device__ __forceinline__ uint32_t pack16(float lo, float hi) const {
    uint32_t r;
    if constexpr (kBf16) {
      const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
      memcpy(&r, &v, sizeof r);
    } else {
      const __half2 v = __floats2half2_rn(lo, hi);
      memcpy(&r, &v, sizeof r);
    }
    return r;
  }
  // c += a b: one mma.sync.m16n8k16 with float16 or bfloat16 operands, float32 accumulation.
  template <bool kBf16>
  __device__ __forceinline__ void mma16(float (&c)[4], const uint32_t (&a)[4],
                                        const uint32_t (&b)[2]) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (kBf16)
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
          "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
          : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
          "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
          : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    (void)c, (void)a, (void)b;
    __trap();
#endif
  }
};

template <int HD, class M>
__global__ void __launch_bounds__(kMmaThreads, 2)
    attention_forward_mma_kernel(attn_dims a, const float* __restrict q, const float* __restrict k,
                                 const float* __restrict v, const float* __restrict mask,
                                 float* __restrict y, float* __restrict lse) {
  extern __shared__ float4 shm4[];
  device_ctx x;
  forward_tile<HD, M>(x, reinterpret_cast<float*>(shm4), a, q, k, v, mask, y, lse);
}

template <int HD, class M>
__global__ void __launch_bounds__(kMmaThreads, HD > 64 ? 1 : 2)
    attention_dkdv_mma_kernel(attn_dims a, const float* __restrict q, const float* __restrict k,
                              const float* __restrict v, const float* __restrict mask,
                              const float* __restrict dy, const float* __restrict lse,
                              const float* __restrict delta, float* __restrict dk,
                              float* __restrict dv) {
  extern __shared__ float4 shm4[];
  device_ctx x;
  dkdv_tile<HD, M>(x, reinterpret_cast<float*>(shm4), a, q, k, v, mask, dy, lse, delta, dk, dv);
}

template <int HD, class M>
__global__ void __launch_bounds__(kMmaThreads, HD > 64 ? 1 : 2)
    attention_dq_mma_kernel(attn_dims a, const float* __restrict q, const float* __restrict k,
                            const float* __restrict v, const float* __restrict mask,
                            const float* __restrict dy, const float* __restrict lse,
                            const float* __restrict delta, float* __restrict dq) {
  extern __shared__ float4 shm4[];
  device_ctx x;
  dq_tile<HD, M>(x, reinterpret_cast<float*>(shm4), a, q, k, v, mask, dy, lse, delta, dq);
}

// ---- launches ---------------------------------------------------------------------------------

template <int HD, class M>
void forward_hd(stream& s, const attn_dims& a, const float* q, const float* k, const float* v,
                const float* mask, float* y, float* lse) {
  static std::atomic<uint64_t> done{0};
  const size_t bytes = sizeof(float) * forward_floats<HD>();
  allow_shared(attention_forward_mma_kernel<HD, M>, bytes, done, s.device);
  attention_forward_mma_kernel<HD, M>
      <<<attn_tiles(a.tq, a.hq, a.batch), kMmaThreads, bytes, s.handle>>>(a, q, k, v, mask, y, lse);
  NNP_CUDA_CHECK_LAUNCH();
}

template <int HD, class M>
void backward_hd(stream& s, const attn_dims& a, const float* q, const float* k, const float* v,
                 const float* mask, const float* dy, const float* lse, const float* delta,
                 float* dq, float* dk, float* dv) {
  static std::atomic<uint64_t> done_kv{0}, done_q{0};
  const size_t bytes = sizeof(float) * backward_floats<HD>();
  allow_shared(attention_dkdv_mma_kernel<HD, M>, bytes, done_kv, s.device);
  attention_dkdv_mma_kernel<HD, M>
      <<<attn_tiles(a.tk, a.hkv, a.batch), kMmaThreads, bytes, s.handle>>>(a, q, k, v, mask, dy,
                                                                           lse, delta, dk, dv);
  NNP_CUDA_CHECK_LAUNCH();
  allow_shared(attention_dq_mma_kernel<HD, M>, bytes, done_q, s.device);
  attention_dq_mma_kernel<HD, M><<<attn_tiles(a.tq, a.hq, a.batch), kMmaThreads, bytes, s.handle>>>(
      a, q, k, v, mask, dy, lse, delta, dq);
  NNP_CUDA_CHECK_LAUNCH();
}

// f(tag) with the padded head dimension and the arithmetic of `math` as template arguments.
template <typename F>
void dispatch(const attn_dims& a, elem math, F&& f) {
  auto by_math = [&](auto hd) {
    switch (math) {
      case elem::f16:
        return f(hd, half_math<false>{});
      case elem::bf16:
        return f(hd, half_math<true>{});
      default:
        return f(hd, tf32x3_math{});
    }
  };
  switch (padded_head_dim(a)) {
    case 32:
      return by_math(std::integral_constant<int, 32>{});
    case 64:
      return by_math(std::integral_constant<int, 64>{});
    default:
      return by_math(std::integral_constant<int, 128>{});
  }
}

}  // namespace

bool tensor_core_attention(const stream& s) {
  const device_registry& r = devices();
  return s.device >= 0 && static_cast<size_t>(s.device) < r.devices.size() &&
         r.devices[static_cast<size_t>(s.device)].compute_major >= 8;
}

void attention_forward_mma(stream& s, const attn_dims& a, const float* q, const float* k,
                           const float* v, const float* mask, float* y, float* lse, elem math) {
  dispatch(a, math, [&](auto hd, auto m) {
    forward_hd<decltype(hd)::value, decltype(m)>(s, a, q, k, v, mask, y, lse);
  });
}

void attention_backward_mma(stream& s, const attn_dims& a, const float* q, const float* k,
                            const float* v, const float* mask, const float* y, const float* dy,
                            const float* lse, float* dq, float* dk, float* dv, elem math) {
  const float* delta = attention_delta(s, a, y, dy);
  dispatch(a, math, [&](auto hd, auto m) {
    backward_hd<decltype(hd)::value, decltype(m)>(s, a, q, k, v, mask, dy, lse, delta, dq, dk, dv);
  });
}

}  // namespace nnp::cuda
