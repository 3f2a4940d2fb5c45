// NNP_OP_MATMUL on the CPU: numpy matmul (ONNX MatMul) with trans_a / trans_b, float32.
//
// Speed: OpenBLAS SGEMM (single-threaded, the backend's threading policy) does the math.
//  - When B has no batch dimensions (or only 1s), A has every batch dimension of Y and is not
//    transposed, the batch folds into M: one [batch*M, K] x [K, N] GEMM, which gemm_one
//    splits across threads when large (the layer case: activations [B, T, C] x weights [C, D]).
//  - Otherwise one SGEMM per batch entry, batch entries in parallel (TBB) with a grain that
//    gives each task ~2e5 multiply-adds (attention's [512, 17, 16] x [512, 16, 17]: 512 tiny
//    GEMMs, a few tasks of many GEMMs each). Few large batch entries instead split each GEMM
//    across threads in turn. Broadcast batch dimensions cost nothing: an operand's batch
//    stride is 0 there.
#include "cpu_backend.hpp"

#include <nnplug/kit/matmul.hpp>

#include <algorithm>

namespace nnp::cpu {
namespace {

using operand = nnp::kit::matmul_operand;

// Multiply-adds per task when batch entries run in parallel.
constexpr double kTaskFlops = 2.0e5;

}  // namespace

void matmul(const op_call& c) {
  const auto& p = c.params_as<nnp_matmul_params>();
  const DLTensor &A = *c.in(0), &B = *c.in(1), &Y = *c.out(0);
  const bool ta = p.trans_a != 0 && A.ndim > 1, tb = p.trans_b != 0 && B.ndim > 1;
  const int batch_rank = nnp::kit::matmul_batch_rank(A, B, Y);
  const operand oa(A, true, batch_rank), ob(B, false, batch_rank);
  const int64_t m = ta ? oa.cols : oa.rows, k = ta ? oa.rows : oa.cols;
  const int64_t n = tb ? ob.rows : ob.cols;
  int64_t batch = 1;
  for (int i = 0; i < batch_rank; ++i) batch *= Y.shape[i];
  const float *a = f32(&A), *b = f32(&B);
  float* y = f32(&Y);
  if (batch == 0 || m == 0 || n == 0) return;

  // The batch folds into M: A holds every batch entry in order, B is shared.
  if (!ta && ob.batch_count == 1 && oa.batch_count == batch) {
    gemm_one(false, tb, batch * m, n, k, 1.0f, a, b, 0.0f, y, true);
    return;
  }
  if (batch == 1) {
    gemm_one(ta, tb, m, n, k, 1.0f, a, b, 0.0f, y, true);
    return;
  }
  auto offsets = [&](int64_t idx, int64_t* ao, int64_t* bo) {
    int64_t off_a = 0, off_b = 0;
    for (int d = batch_rank - 1; d >= 0; --d) {
      const int64_t i = idx % Y.shape[d];
      idx /= Y.shape[d];
      off_a += i * oa.batch_stride[d];
      off_b += i * ob.batch_stride[d];
    }
    *ao = off_a;
    *bo = off_b;
  };
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (batch >= num_threads()) {
    const int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(kTaskFlops / (work + 1.0)));
    parallel_for(batch, grain, [&](int64_t bb, int64_t be) {
      for (int64_t i = bb; i < be; ++i) {
        int64_t ao = 0, bo = 0;
        offsets(i, &ao, &bo);
        gemm_one(ta, tb, m, n, k, 1.0f, a + ao, b + bo, 0.0f, y + i * m * n, false);
      }
    });
  } else {
    for (int64_t i = 0; i < batch; ++i) {
      int64_t ao = 0, bo = 0;
      offsets(i, &ao, &bo);
      gemm_one(ta, tb, m, n, k, 1.0f, a + ao, b + bo, 0.0f, y + i * m * n, true);
    }
  }
}

// The rows of this file's kernels (plugin.cpp lists the files).
// clang-format off
const kit::op_row kMatmulOps[] = {
    {NNP_OP_MATMUL, kit::f32,            matmul},
};
// clang-format on
extern const kit::op_row_list kMatmulRows = kit::row_list(kMatmulOps);

}  // namespace nnp::cpu
