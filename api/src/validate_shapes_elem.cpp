// Shape rules of the ABI 1.2 elementwise and matrix ops: matmul (numpy matmul, ONNX MatMul),
// unary_forward / unary_backward and where (ONNX Where). Same contract as validate_shapes.cpp:
// they run after the table-driven checks and state each output's shape with c.output_shape().
#include "internal.hpp"
#include "validate_call.hpp"

#include <string>

namespace nnp::host {
namespace {

template <typename P>
const P& params_of(const void* params) {
  return *static_cast<const P*>(params);
}

// Every tensor of the call has x's shape (x = input 0).
void same_shape_as_x(call& c, std::initializer_list<size_t> other_inputs) {
  c.same_shape_inputs(c.in(0), c.in_label(0), other_inputs);
  for (size_t o = 0; o < c.op().n_outputs; ++o) c.output_shape(o, shape_of(c.in(0)), "(x's shape)");
}

std::string dims_str(const int64_t* d, int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

}  // namespace

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

// =============================================================================== unary ====
void shapes_unary_forward(call& c, const void*) { same_shape_as_x(c, {}); }

void shapes_unary_backward(call& c, const void* params) {
  const auto& p = params_of<nnp_unary_params>(params);
  if (p.op == NNP_UNARY_FLOOR || p.op == NNP_UNARY_CEIL)
    c.fail(std::string("params->op: ") + (p.op == NNP_UNARY_FLOOR ? "FLOOR" : "CEIL") +
           " is piecewise constant and has no backward (expected EXP, LOG, SQRT, ABS, NEG, "
           "RECIPROCAL, SIN, COS or ERF)");
  same_shape_as_x(c, {1});
}

// =============================================================================== where ====
void shapes_where(call& c, const void*) {
  const DLTensor* t[3] = {c.in(0), c.in(1), c.in(2)};
  int rank = 0;
  for (const DLTensor* x : t) rank = x->ndim > rank ? x->ndim : rank;
  shape_t y(static_cast<size_t>(rank));
  for (int i = 0; i < rank; ++i) {
    int64_t d = 1;
    for (size_t k = 0; k < 3; ++k) {
      const int ik = i - (rank - t[k]->ndim);
      const int64_t dk = ik >= 0 ? t[k]->shape[ik] : 1;
      if (dk == 1) continue;
      if (d != 1 && dk != d)
        c.fail("inputs condition " + nnp::shape_string(*t[0]) + ", x " + nnp::shape_string(*t[1]) +
               " and y " + nnp::shape_string(*t[2]) +
               " do not broadcast (numpy rules): dimension " + std::to_string(i) + " is " +
               std::to_string(d) + " vs " + std::to_string(dk) + " (" + c.in_label(k).str() + ")");
      d = dk;
    }
    y[static_cast<size_t>(i)] = d;
  }
  c.output_shape(0, y, "(the broadcast shape of condition, x and y)");
}

}  // namespace nnp::host
