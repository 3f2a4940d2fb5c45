// Internal interface of the CPU backend (oneTBB + OpenBLAS): the op call record, the device's
// task arena and the parallel-loop helper every op family uses, per-thread scratch buffers
// reused across calls, and the op entry points (one file per family).
//
// Speed: parallel_for() runs small loops inline on the calling thread (no arena entry, no task
// spawn: this keeps the dispatch of tiny ops well under a microsecond) and large loops inside
// the device's task_arena with a grain size chosen by the caller. Scratch memory (im2col
// columns, per-thread partial sums) lives in per-thread buffers that only grow, so hot paths
// do not allocate.
#pragma once

#include <nnplug/kit/plugin.hpp>
#include <nnplug/kit/tensor.hpp>

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "simd.hpp"

namespace nnp::cpu {

// Dropout keep masks a stream generated recently (dropout.cpp): dropout_backward with the
// params of a recent dropout_forward reads the mask instead of running Philox again. A mask
// depends only on (seed, offset, ratio, numel), so an entry never goes stale.
struct dropout_mask {
  uint64_t seed = 0, offset = 0;
  double ratio = 0;
  int64_t n = -1;
  uint64_t last_use = 0;
  std::vector<uint8_t> keep;  // 1 = keep
};

// Per-stream state. One stream is used by one thread at a time, so no locking.
struct stream_state {
  int32_t device_index = 0;
  uint64_t clock = 0;
  static constexpr int kMaskSlots = 4;
  dropout_mask masks[kMaskSlots];
};

// One op call as it arrives in op_execute / op_supported (already validated by libnnplug).
// The op call of the plugin kit; its stream is this backend's stream_state (NULL in
// op_supported).
using op_call = nnp::kit::op_call;
inline stream_state* stream_of(const op_call& c) { return static_cast<stream_state*>(c.stream); }

// The rows of each kernel file (plugin.cpp lists them).
extern const kit::op_row_list kGemmRows, kMatmulRows, kConvRows, kPoolRows, kActivationRows,
    kAttentionRows, kLossRows, kNormRows, kDropoutRows, kElementwiseRows, kCopyRows,
    kDataMovementRows, kReduceRows, kOptimRows;
// cast: any float dtype.
inline constexpr uint32_t kAnyFloat = kit::all_floats;

// ---- threading (policy: plugin.cpp, top of file) ----------------------------------------------
tbb::task_arena& arena();
int num_threads();
// Whether the CPU has AVX2 and FMA (plugin.cpp; false where NNP_CPU_X86_KERNELS is not defined).
bool cpu_avx2_fma();

// ThreadSanitizer builds (NNPLUG_TSAN): oneTBB is not instrumented, so ThreadSanitizer cannot
// see how TBB hands the loop from the calling thread to its workers and back. parallel_for
// declares it: each function object TBB carries across threads releases its own address when
// made and acquires it before it is read (so the caller's state before the loop happens before
// every chunk), and every chunk releases `done`, which the caller acquires when the loop is
// over. Elsewhere these calls are empty and compile to nothing. api/tests/tsan.supp says what
// is still suppressed and why.
#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
inline void tsan_acquire(const void* addr) { __tsan_acquire(const_cast<void*>(addr)); }
inline void tsan_release(const void* addr) { __tsan_release(const_cast<void*>(addr)); }
#else
inline void tsan_acquire(const void*) {}
inline void tsan_release(const void*) {}
#endif

namespace detail {

// The body tbb::parallel_for runs on each chunk (copied by TBB as it splits the range).
template <typename F>
struct chunk_body {
  const F* body;
  const void* done;
  chunk_body(const F* b, const void* d) : body(b), done(d) { tsan_release(this); }
  chunk_body(const chunk_body& other) : body(nullptr), done(nullptr) {
    tsan_acquire(&other);
    body = other.body;
    done = other.done;
    tsan_release(this);
  }
  chunk_body& operator=(const chunk_body&) = delete;
  void operator()(const tbb::blocked_range<int64_t>& r) const {
    tsan_acquire(this);
    (*body)(r.begin(), r.end());
    tsan_release(done);
  }
};

// The job task_arena::execute runs (on the caller, or on a worker when the arena is full).
template <typename F>
struct arena_job {
  int64_t n, grain;
  const F* body;
  const void* done;
  void operator()() const {
    tsan_acquire(this);
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, grain), chunk_body<F>(body, done));
  }
};

}  // namespace detail

// Calls body(begin, end) over [0, n): inline when n <= grain or with one thread, else as a
// tbb::parallel_for inside the device arena, chunks of about `grain` iterations.
template <typename F>
void parallel_for(int64_t n, int64_t grain, const F& body) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  if (n <= grain || num_threads() == 1) {
    body(int64_t{0}, n);
    return;
  }
  char done = 0;  // a ThreadSanitizer sync object (see above)
  const detail::arena_job<F> job{n, grain, &body, &done};
  tsan_release(&job);
  arena().execute(job);
  tsan_acquire(&done);
}

// Writes out[i] = f(i) for i in [begin, end) through a small stack buffer: the loop computing
// f vectorises even when `out` aliases an input (in-place ops), which the compiler could not
// otherwise rule out; the copy-out is a memcpy from L1. Always inlined, so that f's loop is
// compiled for the caller's target (an AVX2 clone, e.g. activation.cpp's GELU), and f with it.
constexpr int64_t kMapBlock = 256;  // floats per block
template <typename F>
__attribute__((always_inline)) inline void map_block(float* out, int64_t begin, int64_t end,
                                                     const F& f) {
  alignas(64) float tmp[kMapBlock];
  for (int64_t i0 = begin; i0 < end; i0 += kMapBlock) {
    const int64_t n = end - i0 < kMapBlock ? end - i0 : kMapBlock;
    for (int64_t j = 0; j < n; ++j) tmp[j] = f(i0 + j);
    std::memcpy(out + i0, tmp, static_cast<size_t>(n) * sizeof(float));
  }
}

// Walks the outer dimensions dim[0..n) of a strided loop in row-major order from the flat
// index `start`, keeping one offset per operand (operand o's strides st[o][0..n), elements) in
// step: one division per dimension at the start, then an addition per step (and a carry where
// a dimension wraps). idx[i] is the current index in dimension i. n = 0 is one position.
struct odometer {
  static constexpr int kMaxOperands = 4;
  int n, operands;
  const int64_t* dim;
  const int64_t (*st)[NNP_MAX_DIMS];
  int64_t idx[NNP_MAX_DIMS] = {};
  int64_t off[kMaxOperands] = {0, 0, 0, 0};
  odometer(int n_, int operands_, const int64_t* dim_, const int64_t (*st_)[NNP_MAX_DIMS],
           int64_t start)
      : n(n_), operands(operands_), dim(dim_), st(st_) {
    for (int i = n - 1; i >= 0; --i) {
      idx[i] = start % dim[i];
      start /= dim[i];
      for (int o = 0; o < operands; ++o) off[o] += idx[i] * st[o][i];
    }
  }
  // The next position (after the last one, the offsets are of no use).
  void next() {
    for (int i = n - 1; i >= 0; --i) {
      for (int o = 0; o < operands; ++o) off[o] += st[o][i];
      if (++idx[i] < dim[i]) return;
      for (int o = 0; o < operands; ++o) off[o] -= st[o][i] * dim[i];
      idx[i] = 0;
    }
  }
};

// Up to NNP_MAX_DIMS dimensions with one stride per operand (0 = broadcast): the iteration
// space of the broadcasting ops (elementwise.cpp) and of strided copies (copy.cpp).
constexpr int kMaxOperands = 4;  // where: output, condition, x, y
static_assert(kMaxOperands <= odometer::kMaxOperands, "odometer steps every operand");
struct iter_shape {
  int rank = 0;
  int64_t dim[NNP_MAX_DIMS];
  int64_t st[kMaxOperands][NNP_MAX_DIMS];  // strides of up to four operands, in elements
};

// Drops size-1 dimensions and merges dimension i into i+1 when every operand is contiguous
// across them. Leaves at least one dimension.
inline iter_shape coalesce(const iter_shape& in, int operands) {
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

// Grain for an elementwise loop: about 32k elements per task (~10 us of work), so tasks cost
// little against their work and small tensors stay on the calling thread.
constexpr int64_t kElementwiseGrain = 32768;

// out[i] = f(i) for i in [0, n), in parallel blocks of about kElementwiseGrain elements through
// map_block (vectorised even in place).
template <typename F>
void map_elements(float* out, int64_t n, const F& f) {
  parallel_for(n, kElementwiseGrain, [&](int64_t b, int64_t e) { map_block(out, b, e, f); });
}

// The softmax statistics of one contiguous row x[0..C): the shift m = its maximum (0 when every
// element is -inf: no inf - inf) and s = sum exp(x - m); with e, the exponentials go there too.
// Log-softmax is (x - m) - log(s), in that order: m + log(s) rounded to float first would lose
// the low bits of a large shift (x near 1e5 has an ulp of 2^-7).
inline void row_stats(const float* x, int64_t C, float* m, float* s, float* e = nullptr) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t c = 0; c < C; ++c) mx = std::max(mx, x[c]);
  if (mx == -std::numeric_limits<float>::infinity()) mx = 0.0f;
  float sum = 0.0f;
  if (e == nullptr) {
    for (int64_t c = 0; c < C; ++c) sum += std::exp(x[c] - mx);
  } else {
    for (int64_t c = 0; c < C; ++c) {
      e[c] = std::exp(x[c] - mx);
      sum += e[c];
    }
  }
  *m = mx;
  *s = sum;
}

// The sum of len floats, with 8 independent float accumulators (vectorises without -ffast-math)
// added in double at the end. Each lane's rounding error grows with len / 8, as a float running
// sum's does with len: callers sum one plane with it and add longer totals in double.
inline double sum_floats(const float* row, int64_t len) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= len; j += 8)
    for (int t = 0; t < 8; ++t) acc[t] += row[j + t];
  double total = 0.0;
  for (int t = 0; t < 8; ++t) total += acc[t];
  for (; j < len; ++j) total += row[j];
  return total;
}

// Per-thread scratch buffer number `slot` (0..kScratchSlots-1) of at least n floats. Buffers
// only grow and are reused across calls. The pointer stays valid until the same thread asks
// for the same slot again. Slots kTaskSlot0/1 are for use inside one task body (fetched at the
// start of the body, never held across a parallel_for); slots kCallSlot0/1 are for the calling
// thread at call level (outside any task), e.g. per-chunk partial sums that tasks fill and the
// caller then combines. A thread waiting in parallel_for may run tasks of another stream's
// call; this split keeps their buffers apart.
// kCallSlot2 holds conv_forward's unpooled output when its fused max pooling runs apart from
// the convolution (conv.cpp), around calls that use the other call slots.
constexpr int kScratchSlots = 5;
constexpr int kTaskSlot0 = 0, kTaskSlot1 = 1, kCallSlot0 = 2, kCallSlot1 = 3, kCallSlot2 = 4;
float* scratch(int slot, size_t n);

// A filter gradient summed over `images` in parallel: the images split into chunks, four per
// thread (a thread the OS preempts on a shared machine then holds up a quarter of its share);
// chunk 0 accumulates into dw, the others into partial buffers (call-level scratch slot 0),
// which are added into dw at the end. body(acc, n0, n1) writes into acc (wsize floats) the
// gradient summed over images [n0, n1), overwriting acc with its first image. images >= 1.
template <typename F>
void sum_over_image_chunks(int64_t images, int64_t wsize, float* dw, const F& body) {
  const int64_t chunks = std::min<int64_t>(num_threads() == 1 ? 1 : 4 * num_threads(), images);
  float* partial =
      chunks > 1 ? scratch(kCallSlot0, static_cast<size_t>((chunks - 1) * wsize)) : nullptr;
  parallel_for(chunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t ch = cb; ch < ce; ++ch)
      body(ch == 0 ? dw : partial + (ch - 1) * wsize, images * ch / chunks,
           images * (ch + 1) / chunks);
  });
  if (chunks > 1) {
    parallel_for(wsize, kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t ch = 1; ch < chunks; ++ch) {
        const float* part = partial + (ch - 1) * wsize;
        for (int64_t i = b; i < e; ++i) dw[i] += part[i];
      }
    });
  }
}

// ---- op families -------------------------------------------------------------------------------
void gemm(const op_call& c);
void conv2d_forward(const op_call& c);  // conv.cpp (conv2d: conv with k = 2), conv_winograd.cpp
void conv2d_backward_data(const op_call& c);
void conv2d_backward_filter(const op_call& c);
void conv_forward(const op_call& c);
void conv_backward_data(const op_call& c);
void conv_backward_filter(const op_call& c);
void conv_backward_bias(const op_call& c);  // also NNP_OP_CONV2D_BACKWARD_BIAS
void conv_transpose_forward(const op_call& c);
void conv_transpose_backward_data(const op_call& c);
void conv_transpose_backward_filter(const op_call& c);
void pool2d_forward(const op_call& c);  // pool.cpp (pool2d: pool with k = 2)
void pool2d_backward(const op_call& c);
void pool2d_check(const op_call& c);  // UNSUPPORTED beyond 2^31 - 1 taps per max window
void pool_forward(const op_call& c);
void pool_backward(const op_call& c);
void pool_nd_check(const op_call& c);       //
void activation_forward(const op_call& c);  // activation.cpp
void activation_backward(const op_call& c);
void softmax_forward(const op_call& c);
void softmax_backward(const op_call& c);
void softmax_cross_entropy_forward(const op_call& c);
void softmax_cross_entropy_backward(const op_call& c);
void attention_forward(const op_call& c);  // attention.cpp
void attention_backward(const op_call& c);
void nll_loss_forward(const op_call& c);  // loss.cpp
void nll_loss_backward(const op_call& c);
void softmax_cross_entropy_loss_forward(const op_call& c);
void softmax_cross_entropy_loss_backward(const op_call& c);
void batch_norm_forward_training(const op_call& c);  // norm.cpp
void batch_norm_forward_inference(const op_call& c);
void batch_norm_backward(const op_call& c);
void layer_norm_forward(const op_call& c);
void layer_norm_backward(const op_call& c);
void dropout_forward(const op_call& c);  // dropout.cpp
void dropout_backward(const op_call& c);
void binary(const op_call& c);  // elementwise.cpp
void unary_forward(const op_call& c);
void unary_backward(const op_call& c);
void where(const op_call& c);
void scale(const op_call& c);
void clip(const op_call& c);
void fill(const op_call& c);
void cast(const op_call& c);
void copy(const op_call& c);  // copy.cpp
void transpose(const op_call& c);
void concat(const op_call& c);  // data_movement.cpp
void split(const op_call& c);
void slice(const op_call& c);
void slice_backward(const op_call& c);
void gather(const op_call& c);
void gather_backward(const op_call& c);
void reduce(const op_call& c);      // reduce.cpp
void sgd_update(const op_call& c);  // optim.cpp
void adam_update(const op_call& c);
void matmul(const op_call& c);  // matmul.cpp

// Single-threaded SGEMM on row-major operands (the OpenBLAS call; beta = 0 never reads C).
void sgemm_rm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
              int64_t ldc);

// One row-major GEMM y = alpha op(a) op(b) + beta y (lda = op(a) stored row length, etc. as
// in gemm.cpp), split across threads when large and allow_split is true (call level only: the
// K split uses scratch slot kCallSlot0). gemm.cpp.
void gemm_one(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
              const float* b, float beta, float* y, bool allow_split);

inline float* f32(const DLTensor* t) { return t ? data_ptr<float>(*t) : nullptr; }

}  // namespace nnp::cpu
