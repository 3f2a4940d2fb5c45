// gemm.cpp — reference GEMM: Y = alpha * op(A) * op(B) + beta * C (BLAS xGEMM / ONNX Gemm),
// batched over a leading dimension; C broadcasts unidirectionally to Y (ONNX Gemm). Triple
// loop, double accumulation.
#include "reference.hpp"

#include <nnplug/kit/broadcast.hpp>

namespace ref {
namespace {

// Batch stride of an operand: rank-2 operands (and a batch of 1) broadcast over the batch.
int64_t batch_stride(const DLTensor& t) {
  if (t.ndim < 3 || t.shape[0] == 1) return 0;
  return t.shape[t.ndim - 2] * t.shape[t.ndim - 1];
}

template <typename T>
void gemm_t(const op_args& args) {
  const auto p = read_params<nnp_gemm_params>(args.params);
  const DLTensor& A = *args.in(0);
  const DLTensor& B = *args.in(1);
  const DLTensor* C = args.in(2);
  const DLTensor& Y = *args.out(0);

  // op(A) is [M, K], op(B) is [K, N]; A stores [M, K] or, transposed, [K, M].
  const int64_t a_rows = A.shape[A.ndim - 2], a_cols = A.shape[A.ndim - 1];
  const int64_t b_rows = B.shape[B.ndim - 2], b_cols = B.shape[B.ndim - 1];
  const int64_t M = p.trans_a ? a_cols : a_rows;
  const int64_t K = p.trans_a ? a_rows : a_cols;
  const int64_t N = p.trans_b ? b_rows : b_cols;
  const int64_t batch = Y.ndim == 3 ? Y.shape[0] : 1;

  const T* a = nnp::data_ptr<const T>(A);
  const T* b = nnp::data_ptr<const T>(B);
  T* y = nnp::data_ptr<T>(Y);
  const int64_t a_bs = batch_stride(A), b_bs = batch_stride(B);

  // C broadcasts unidirectionally to Y (ONNX): element strides against Y's shape, 0 where C
  // has no such dimension or a dimension of 1 (rank 0, [1], [N], [1, N], [M, 1], [M, N], ...).
  const T* c = C != nullptr ? nnp::data_ptr<const T>(*C) : nullptr;
  int64_t cst[NNP_MAX_DIMS] = {};
  if (C != nullptr) nnp::broadcast_strides(*C, Y.ndim, cst);

  for (int64_t n = 0; n < batch; ++n) {
    const T* an = a + n * a_bs;
    const T* bn = b + n * b_bs;
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0.0;
        for (int64_t k = 0; k < K; ++k) {
          // op(A)[i, k] and op(B)[k, j] read from the stored (possibly transposed) layout.
          const double aik = p.trans_a ? an[k * a_cols + i] : an[i * a_cols + k];
          const double bkj = p.trans_b ? bn[j * b_cols + k] : bn[k * b_cols + j];
          acc += aik * bkj;
        }
        double out = p.alpha * acc;
        // beta == 0 does not read C (BLAS convention), so NaN/Inf in C do not leak through.
        if (c != nullptr && p.beta != 0.0)
          out +=
              p.beta * double(c[nnp::broadcast_offset((n * M + i) * N + j, Y.shape, Y.ndim, cst)]);
        // Y may alias C (same shape): C[n,i,j] is read just before Y[n,i,j] is written.
        y[(n * M + i) * N + j] = static_cast<T>(out);
      }
    }
  }
}

}  // namespace

REF_FLOAT_OP(gemm, gemm_t, in(0))

// The rows of this file's kernels (rows.hpp lists the files).
// clang-format off
const nnp::kit::op_row kGemmOps[] = {
    {NNP_OP_GEMM, kFloats,        gemm},
};
// clang-format on
extern const nnp::kit::op_row_list kGemmRows = nnp::kit::row_list(kGemmOps);

}  // namespace ref
