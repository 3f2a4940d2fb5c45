// matmul.cpp — reference numpy matmul (ONNX MatMul, opset 13) with nnplug's trans_a / trans_b
// over the last two dimensions: batch dimensions broadcast (numpy rules), a 1-D A is [1, K] and
// a 1-D B is [K, 1] with the added dimension dropped from Y. Triple loop per batch entry,
// double accumulation.
#include "reference.hpp"

#include <nnplug/kit/matmul.hpp>

namespace ref {
namespace {

using operand = nnp::kit::matmul_operand;

template <typename T>
void matmul_t(const op_args& args) {
  const auto p = read_params<nnp_matmul_params>(args.params);
  const DLTensor& A = *args.in(0);
  const DLTensor& B = *args.in(1);
  const DLTensor& Y = *args.out(0);
  const bool ta = p.trans_a != 0 && A.ndim > 1, tb = p.trans_b != 0 && B.ndim > 1;
  const int batch_rank = nnp::kit::matmul_batch_rank(A, B, Y);
  const operand oa(A, true, batch_rank), ob(B, false, batch_rank);
  const int64_t M = ta ? oa.cols : oa.rows, K = ta ? oa.rows : oa.cols;
  const int64_t N = tb ? ob.rows : ob.cols;
  // Y without elements: nothing to write (its batch may still be huge: [2^31, 0, N]).
  if (nnp::numel(Y) == 0) return;
  int64_t batch = 1;
  for (int i = 0; i < batch_rank; ++i) batch *= Y.shape[i];

  const T* a = nnp::data_ptr<const T>(A);
  const T* b = nnp::data_ptr<const T>(B);
  T* y = nnp::data_ptr<T>(Y);
  for (int64_t n = 0; n < batch; ++n) {
    int64_t a_off = 0, b_off = 0, rest = n;
    for (int d = batch_rank - 1; d >= 0; --d) {
      const int64_t idx = rest % Y.shape[d];
      rest /= Y.shape[d];
      a_off += idx * oa.batch_stride[d];
      b_off += idx * ob.batch_stride[d];
    }
    const T* an = a + a_off;
    const T* bn = b + b_off;
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0.0;
        for (int64_t k = 0; k < K; ++k) {
          const double aik = ta ? an[k * oa.cols + i] : an[i * oa.cols + k];
          const double bkj = tb ? bn[j * ob.cols + k] : bn[k * ob.cols + j];
          acc += aik * bkj;
        }
        y[(n * M + i) * N + j] = static_cast<T>(acc);
      }
    }
  }
}

}  // namespace

REF_FLOAT_OP(matmul, matmul_t, in(0))

// The rows of this file's kernels (rows.hpp lists the files).
// clang-format off
const nnp::kit::op_row kMatmulOps[] = {
    {NNP_OP_MATMUL, kFloats,        matmul},
};
// clang-format on
extern const nnp::kit::op_row_list kMatmulRows = nnp::kit::row_list(kMatmulOps);

}  // namespace ref
