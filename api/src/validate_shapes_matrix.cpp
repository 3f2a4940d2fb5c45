// Shape rules of the matrix products: gemm (ABI 1.0; BLAS sgemm / ONNX Gemm, batched, with C
// broadcast unidirectionally to Y) and matmul (ABI 1.2; numpy matmul, ONNX MatMul: 1-D
// operands, broadcast batch dimensions). The contract of a shape rule: validate_call.hpp.
#include "internal.hpp"
#include "validate_call.hpp"

#include <string>

namespace nnp::host {
namespace {

std::string dims_str(const int64_t* d, int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

}  // namespace

// ================================================================================ gemm ====
void shapes_gemm(call& c, const void* params) {
  const auto& p = params_of<nnp_gemm_params>(params);
  const DLTensor *a = c.in(0), *b = c.in(1), *cc = c.in(2);
  for (size_t i = 0; i < 2; ++i)
    if (c.in(i)->ndim != 2 && c.in(i)->ndim != 3)
      c.fail(c.in_label(i) + ": expected rank 2 or 3 (batched), got rank " +
             std::to_string(c.in(i)->ndim) + " " + nnp::shape_string(*c.in(i)));
  const int ao = a->ndim - 2, bo = b->ndim - 2;
  const int64_t m = p.trans_a ? a->shape[ao + 1] : a->shape[ao];
  const int64_t ka = p.trans_a ? a->shape[ao] : a->shape[ao + 1];
  const int64_t kb = p.trans_b ? b->shape[bo + 1] : b->shape[bo];
  const int64_t n = p.trans_b ? b->shape[bo] : b->shape[bo + 1];
  if (ka != kb)
    c.fail(c.in_label(1) + ": expected K = " + std::to_string(ka) + " (from A " +
           nnp::shape_string(*a) + ", trans_a=" + std::to_string(p.trans_a) +
           "), got K = " + std::to_string(kb) + " (B " + nnp::shape_string(*b) +
           ", trans_b=" + std::to_string(p.trans_b) + ")");
  int64_t batch = -1;
  if (a->ndim == 3) batch = a->shape[0];
  if (b->ndim == 3) {
    if (batch >= 0 && b->shape[0] != batch)
      c.fail(c.in_label(1) + ": expected batch " + std::to_string(batch) + " (A's), got " +
             std::to_string(b->shape[0]));
    batch = b->shape[0];
  }
  const shape_t y_shape = batch >= 0 ? shape_t{batch, m, n} : shape_t{m, n};
  c.output_shape(0, y_shape, batch >= 0 ? "([batch, M, N])" : "([M, N])");
  if (cc != nullptr) {
    expect_finite(c, "beta", p.beta);
    // Unidirectional broadcast to Y (ONNX Gemm): aligned right, each dimension Y's or 1.
    bool ok = cc->ndim <= static_cast<int>(y_shape.size());
    for (int i = 0; ok && i < cc->ndim; ++i) {
      const int64_t d = cc->shape[cc->ndim - 1 - i];
      ok = d == 1 || d == y_shape[y_shape.size() - 1 - static_cast<size_t>(i)];
    }
    if (!ok)
      c.fail(c.in_label(2) + ": expected a shape that broadcasts unidirectionally to Y " +
             shape_str(y_shape) + " (rank <= " + std::to_string(y_shape.size()) +
             ", each dimension aligned right equal to Y's or 1: e.g. [], [1], [N], [1, N], [M, 1], "
             "[M, N]), got " +
             nnp::shape_string(*cc));
  }
}

// ============================================================================== matmul ====
void shapes_matmul(call& c, const void* params) {
  const auto& p = params_of<nnp_matmul_params>(params);
  const DLTensor *a = c.in(0), *b = c.in(1);
  for (size_t i = 0; i < 2; ++i)
    if (c.in(i)->ndim < 1)
      c.fail(c.in_label(i) + ": expected rank >= 1 (ONNX MatMul refuses scalars), got rank 0");
  // op(A) is [..., M, K], op(B) is [..., K, N]; a 1-D operand is a vector (trans ignored).
  const int ra = a->ndim, rb = b->ndim;
  int64_t m = 1, ka, kb, n = 1;
  if (ra == 1) {
    ka = a->shape[0];
  } else {
    m = p.trans_a ? a->shape[ra - 1] : a->shape[ra - 2];
    ka = p.trans_a ? a->shape[ra - 2] : a->shape[ra - 1];
  }
  if (rb == 1) {
    kb = b->shape[0];
  } else {
    kb = p.trans_b ? b->shape[rb - 1] : b->shape[rb - 2];
    n = p.trans_b ? b->shape[rb - 2] : b->shape[rb - 1];
  }
  if (ka != kb)
    c.fail(c.in_label(1) + ": expected K = " + std::to_string(ka) + " (from A " +
           nnp::shape_string(*a) + ", trans_a=" + std::to_string(p.trans_a) +
           "), got K = " + std::to_string(kb) + " (B " + nnp::shape_string(*b) +
           ", trans_b=" + std::to_string(p.trans_b) + ")");
  // Batch dimensions: all but the last two of each operand, broadcast (numpy rules).
  const int ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0;
  const int batch_rank = ba > bb ? ba : bb;
  int64_t batch[NNP_MAX_DIMS] = {};
  for (int i = 0; i < batch_rank; ++i) {
    const int ia = i - (batch_rank - ba), ib = i - (batch_rank - bb);
    const int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1)
      c.fail("inputs A " + nnp::shape_string(*a) + " and B " + nnp::shape_string(*b) +
             ": batch dimensions " + dims_str(a->shape, ba) + " and " + dims_str(b->shape, bb) +
             " do not broadcast (numpy rules): batch dimension " + std::to_string(i) + " is " +
             std::to_string(da) + " vs " + std::to_string(db));
    batch[i] = da == 1 ? db : da;
  }
  shape_t y;
  for (int i = 0; i < batch_rank; ++i) y.push_back(batch[i]);
  if (ra > 1) y.push_back(m);
  if (rb > 1) y.push_back(n);
  c.output_shape(0, y, "([broadcast batch..., M, N], M dropped for a 1-D A, N for a 1-D B)");
}

}  // namespace nnp::host
