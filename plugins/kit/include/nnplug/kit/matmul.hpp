// The geometry of one NNP_OP_MATMUL call (numpy matmul, ONNX MatMul, with nnplug's trans_a /
// trans_b; nnp_matmul_params in nnplug_ops.h), shared by backends: each operand as a batch of
// rows x cols matrices as stored (a 1-D A is the row [1, K], a 1-D B the column [K, 1]) and its
// element stride along each of Y's batch dimensions (0 where the operand has no such dimension
// or a 1 there: broadcast). The call must have passed libnnplug's shape rule.
#pragma once

#include <nnplug/nnplug_types.h>

#include <cstdint>

namespace nnp::kit {

struct matmul_operand {
  int64_t rows = 1, cols = 1;
  int64_t batch_stride[NNP_MAX_DIMS] = {};
  int64_t batch_count = 1;  // product of the operand's own batch dimensions

  // t is A (is_a) or B of a call whose Y has `batch_rank` batch dimensions.
  matmul_operand(const DLTensor& t, bool is_a, int batch_rank) {
    if (t.ndim == 1) {
      (is_a ? cols : rows) = t.shape[0];
      return;
    }
    rows = t.shape[t.ndim - 2];
    cols = t.shape[t.ndim - 1];
    const int own = t.ndim - 2;  // the operand's batch rank
    int64_t stride = rows * cols;
    for (int i = batch_rank - 1; i >= 0; --i) {
      const int ti = i - (batch_rank - own);
      if (ti < 0) break;
      batch_stride[i] = t.shape[ti] == 1 ? 0 : stride;
      stride *= t.shape[ti];
      batch_count *= t.shape[ti];
    }
  }
};

// Y's batch rank: its rank without the M (A not 1-D) and N (B not 1-D) dimensions.
inline int matmul_batch_rank(const DLTensor& A, const DLTensor& B, const DLTensor& Y) {
  return Y.ndim - (A.ndim > 1 ? 1 : 0) - (B.ndim > 1 ? 1 : 0);
}

}  // namespace nnp::kit
