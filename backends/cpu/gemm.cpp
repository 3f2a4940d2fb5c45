// NNP_OP_GEMM on the CPU: Y = alpha * op(A) * op(B) + beta * C, batched.
//
// Speed: OpenBLAS cblas_sgemm (row-major) does the math. Following the threading policy
// (plugin.cpp), OpenBLAS is single-threaded and TBB parallelises: a batched GEMM runs one
// batch entry per task; a single large GEMM is split across threads one of two ways, each part an
// independent single-threaded SGEMM:
//  - output panels: one panel of output rows (or columns, whichever dimension is larger) per
//    thread. Each panel's SGEMM packs the whole other operand again: (T-1)*K*min(M,N) extra
//    elements packed;
//  - K slices (deep GEMMs, K > 2*max(M,N), e.g. the cnn's fc1 forward, K = 9216 against a
//    128x128 output): thread t multiplies slice t of K into its own M x N partial (thread 0
//    straight into Y), then the partials are summed into Y in parallel. Nothing is packed twice;
//    the extra cost is (T-1) M x N partials written and read once. On the 2-core machine it
//    measures the same as output panels (M=N=128, K=9216: 0.89-0.92 of OpenBLAS's own 2-thread
//    SGEMM either way, docs/benchmarks.md); it is there for more threads, where the panels'
//    repacking grows as (T-1)*K*min(M,N).
// C (any shape that broadcasts unidirectionally to Y) is broadcast by pre-filling Y (row
// copies or row fills) and calling SGEMM with beta; when Y aliases C, SGEMM accumulates in place.
#include "blas_split.hpp"
#include "cpu_backend.hpp"

#include <nnplug/kit/broadcast.hpp>

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

namespace nnp::cpu {

void sgemm_rm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
              int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    // OpenBLAS's handling of k = 0 is not guaranteed everywhere: C = beta * C by hand.
    for (int64_t i = 0; i < m; ++i) {
      float* row = c + i * ldc;
      for (int64_t j = 0; j < n; ++j) row[j] = beta == 0.0f ? 0.0f : beta * row[j];
    }
    return;
  }
  if (alpha == 0.0f) {
    // Some BLAS kernels skip op(A) op(B) when alpha = 0; the formula as written gives
    // 0 * inf = NaN (docs/ops.md, "Non-finite values"): form the product, then scale it.
    std::vector<float> t(static_cast<size_t>(m) * static_cast<size_t>(n));
    sgemm_rm(trans_a, trans_b, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, t.data(), n);
    for (int64_t i = 0; i < m; ++i) {
      float* row = c + i * ldc;
      const float* tr = t.data() + i * n;
      for (int64_t j = 0; j < n; ++j) row[j] = 0.0f * tr[j] + (beta == 0.0f ? 0.0f : beta * row[j]);
    }
    return;
  }
  // blasint may be 32-bit: sizes and leading dimensions beyond its range are split into parts
  // that fit (blas_split.hpp), never truncated.
  constexpr int64_t kLimit = std::numeric_limits<blasint>::max();
  split_gemm(gemm_part{trans_a, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc}, kLimit,
             [&](const gemm_part& p) {
               cblas_sgemm(CblasRowMajor, p.ta ? CblasTrans : CblasNoTrans,
                           p.tb ? CblasTrans : CblasNoTrans, static_cast<blasint>(p.m),
                           static_cast<blasint>(p.n), static_cast<blasint>(p.k), alpha, p.a,
                           static_cast<blasint>(p.lda), p.b, static_cast<blasint>(p.ldb), p.beta,
                           p.c, static_cast<blasint>(p.ldc));
             });
}

namespace {

// Below this many multiply-adds a GEMM runs on one thread (splitting costs more than it saves).
constexpr double kSplitFlops = 2.0e6;

// NNPLUG_CPU_GEMM_KSPLIT=0 turns the K-slice split off (output panels only), to measure it.
bool ksplit_enabled() {
  static const bool enabled = [] {
    const char* env = std::getenv("NNPLUG_CPU_GEMM_KSPLIT");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }();
  return enabled;
}

// Rounds x up to a multiple of 16 (the SGEMM micro-kernels' register blocks), at least 16.
int64_t round16(int64_t x) { return std::max<int64_t>(16, (x + 15) / 16 * 16); }

}  // namespace

// One (non-batched) GEMM, split across threads when large. Called at call level (outside any
// task) when allow_split is true: the K split uses the caller's scratch slot kCallSlot0.
void gemm_one(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
              const float* b, float beta, float* y, bool allow_split) {
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  const int threads = num_threads();
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (!allow_split || threads == 1 || work < kSplitFlops || k == 0) {
    sgemm_rm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, y, n);
    return;
  }
  if (ksplit_enabled() && k > 2 * std::max(m, n)) {
    // K slices: slice p of K into partial p (partial 0 is Y itself, with beta).
    const int64_t slice = round16((k + threads - 1) / threads);
    const int64_t slices = (k + slice - 1) / slice;
    const int64_t mn = m * n;
    float* partial = scratch(kCallSlot0, static_cast<size_t>((slices - 1) * mn));
    parallel_for(slices, 1, [&](int64_t pb, int64_t pe) {
      for (int64_t p = pb; p < pe; ++p) {
        const int64_t lo = p * slice, len = std::min(slice, k - lo);
        const float* ap = ta ? a + lo * lda : a + lo;  // A is [K, M] when transposed
        const float* bp = tb ? b + lo : b + lo * ldb;  // B is [N, K] when transposed
        float* dst = p == 0 ? y : partial + (p - 1) * mn;
        sgemm_rm(ta, tb, m, n, len, alpha, ap, lda, bp, ldb, p == 0 ? beta : 0.0f, dst, n);
      }
    });
    parallel_for(mn, kElementwiseGrain, [&](int64_t ib, int64_t ie) {
      for (int64_t p = 1; p < slices; ++p) {
        const float* src = partial + (p - 1) * mn;
        for (int64_t i = ib; i < ie; ++i) y[i] += src[i];
      }
    });
    return;
  }
  // Output panels: split the larger of m and n into `threads` panels aligned to 16, so each
  // panel is a full-speed SGEMM.
  const bool split_rows = m >= n;
  const int64_t dim = split_rows ? m : n;
  const int64_t panel = round16((dim + threads - 1) / threads);
  const int64_t panels = (dim + panel - 1) / panel;
  parallel_for(panels, 1, [&](int64_t pb, int64_t pe) {
    for (int64_t p = pb; p < pe; ++p) {
      const int64_t lo = p * panel, len = std::min(panel, dim - lo);
      if (split_rows) {
        const float* ap = ta ? a + lo : a + lo * k;
        sgemm_rm(ta, tb, len, n, k, alpha, ap, lda, b, ldb, beta, y + lo * n, n);
      } else {
        const float* bp = tb ? b + lo * k : b + lo;
        sgemm_rm(ta, tb, m, len, k, alpha, a, lda, bp, ldb, beta, y + lo, n);
      }
    }
  });
}

void gemm(const op_call& c) {
  const auto& p = c.params_as<nnp_gemm_params>();
  const DLTensor *A = c.in(0), *B = c.in(1), *C = c.in(2), *Y = c.out(0);
  const bool ta = p.trans_a != 0, tb = p.trans_b != 0;
  const int ra = A->ndim, rb = B->ndim;
  const int64_t m = ta ? A->shape[ra - 1] : A->shape[ra - 2];
  const int64_t k = ta ? A->shape[ra - 2] : A->shape[ra - 1];
  const int64_t n = tb ? B->shape[rb - 2] : B->shape[rb - 1];
  const int64_t batch = Y->ndim == 3 ? Y->shape[0] : 1;
  const int64_t sa = ra == 3 ? m * k : 0, sb = rb == 3 ? k * n : 0, sy = m * n;
  const float *a = f32(A), *b = f32(B);
  float* y = f32(Y);
  if (batch == 0 || m == 0 || n == 0) return;
  const float alpha = static_cast<float>(p.alpha);
  float beta = 0.0f;

  if (C != nullptr && p.beta != 0.0) {
    beta = static_cast<float>(p.beta);
    const float* cp = f32(C);
    const bool alias = cp == y && numel(*C) == numel(*Y);
    if (!alias) {
      // Pre-fill Y with C broadcast unidirectionally to Y's shape (ONNX: rank 0, [1], [N],
      // [1, N], [M, 1], [M, N], [batch, M, N], ...): a row copy, or a row of one value where C
      // has 1 column; SGEMM then accumulates with beta.
      int64_t cst[NNP_MAX_DIMS] = {};
      broadcast_strides(*C, Y->ndim, cst);
      const int yr = Y->ndim;
      const int64_t s_batch = yr == 3 ? cst[0] : 0, s_row = cst[yr - 2], s_col = cst[yr - 1];
      const int64_t rows = batch * m;
      parallel_for(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(n, 1)),
                   [&](int64_t rb0, int64_t re) {
                     for (int64_t r = rb0; r < re; ++r) {
                       const float* src = cp + (r / m) * s_batch + (r % m) * s_row;
                       float* dst = y + r * n;
                       if (s_col != 0)
                         std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
                       else
                         std::fill(dst, dst + n, src[0]);
                     }
                   });
    }
  }

  if (batch == 1) {
    gemm_one(ta, tb, m, n, k, alpha, a, b, beta, y, true);
    return;
  }
  // Batched: one batch entry per task when there are enough of them; else split each GEMM.
  if (batch >= num_threads()) {
    parallel_for(batch, 1, [&](int64_t bb, int64_t be) {
      for (int64_t i = bb; i < be; ++i)
        gemm_one(ta, tb, m, n, k, alpha, a + i * sa, b + i * sb, beta, y + i * sy, false);
    });
  } else {
    for (int64_t i = 0; i < batch; ++i)
      gemm_one(ta, tb, m, n, k, alpha, a + i * sa, b + i * sb, beta, y + i * sy, true);
  }
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kGemmOps[] = {
    {NNP_OP_GEMM, kit::f32,            gemm},
};
// clang-format on
extern const kit::op_row_list kGemmRows = kit::row_list(kGemmOps);

}  // namespace nnp::cpu
