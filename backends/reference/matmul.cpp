// matmul.cpp — reference numpy matmul (ONNX MatMul, opset 13) with nnplug's trans_a / trans_b
// over the last two dimensions: batch dimensions broadcast (numpy rules), a 1-D A is [1, K] and
// a 1-D B is [K, 1] with the added dimension dropped from Y. Triple loop per batch entry,
// double accumulation.
#include "reference.hpp"

namespace ref {
namespace {

// One operand as a batch of matrices: rows x cols as stored, and the element stride of each of
// Y's batch dimensions (0 where the operand has no such dimension or a 1 there: broadcast).
struct operand {
  int64_t rows = 1, cols = 1;
  int64_t batch_stride[NNP_MAX_DIMS] = {};
};

// A 1-D operand is a row (A: [1, K]) or a column (B: [K, 1]) vector.
operand describe(const DLTensor& t, bool is_a, int batch_rank) {
  operand o;
  if (t.ndim == 1) {
    (is_a ? o.cols : o.rows) = t.shape[0];
    return o;
  }
  o.rows = t.shape[t.ndim - 2];
  o.cols = t.shape[t.ndim - 1];
  const int tb = t.ndim - 2;  // the operand's batch rank
  int64_t stride = o.rows * o.cols;
  for (int i = batch_rank - 1; i >= 0; --i) {
    const int ti = i - (batch_rank - tb);
    if (ti < 0) break;
    o.batch_stride[i] = t.shape[ti] == 1 ? 0 : stride;
    stride *= t.shape[ti];
  }
  return o;
}

template <typename T>
void matmul_t(const op_args& args) {
  const auto p = read_params<nnp_matmul_params>(args.params);
  const DLTensor& A = *args.in(0);
  const DLTensor& B = *args.in(1);
  const DLTensor& Y = *args.out(0);
  const bool ta = p.trans_a != 0 && A.ndim > 1, tb = p.trans_b != 0 && B.ndim > 1;
  // Y's batch rank: its rank without the M (A not 1-D) and N (B not 1-D) dimensions.
  const int batch_rank = Y.ndim - (A.ndim > 1 ? 1 : 0) - (B.ndim > 1 ? 1 : 0);
  const operand oa = describe(A, true, batch_rank), ob = describe(B, false, batch_rank);
  const int64_t M = ta ? oa.cols : oa.rows, K = ta ? oa.rows : oa.cols;
  const int64_t N = tb ? ob.rows : ob.cols;
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

}  // namespace ref
