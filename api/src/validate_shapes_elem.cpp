// Shape rules of the elementwise ops: binary (numpy broadcasting), scale, fill, copy, cast and
// clip (ABI 1.0), unary_forward / unary_backward and where (ABI 1.2; ONNX Where), and dropout
// (whose optional step counter, ABI 1.4, holds one value). The contract of a shape rule:
// validate_call.hpp.
#include "internal.hpp"
#include "validate_call.hpp"

#include <cmath>
#include <string>

namespace nnp::host {

// ========================================================================= elementwise ====
void shapes_binary(call& c, const void*) {
  const DLTensor *a = c.in(0), *b = c.in(1);
  const int rank = std::max(a->ndim, b->ndim);
  shape_t y(static_cast<size_t>(rank));
  for (int i = 0; i < rank; ++i) {
    const int ia = i - (rank - a->ndim), ib = i - (rank - b->ndim);
    const int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1)
      c.fail("inputs a " + nnp::shape_string(*a) + " and b " + nnp::shape_string(*b) +
             " do not broadcast (numpy rules): dimension " + std::to_string(i) + " is " +
             std::to_string(da) + " vs " + std::to_string(db));
    y[static_cast<size_t>(i)] = da == 1 ? db : da;
  }
  c.output_shape(0, y, "(the broadcast shape of a and b)");
}

void shapes_scale(call& c, const void*) { same_shape_as_x(c, {}); }
void shapes_fill(call&, const void*) {}  // any output shape; not inferable
void shapes_copy(call& c, const void*) { same_shape_as_x(c, {}); }
void shapes_cast(call& c, const void*) { same_shape_as_x(c, {}); }

void shapes_clip(call& c, const void* params) {
  const auto& p = params_of<nnp_clip_params>(params);
  if (p.has_min && std::isnan(p.min)) c.fail("params->min: expected a number, got NaN");
  if (p.has_max && std::isnan(p.max)) c.fail("params->max: expected a number, got NaN");
  same_shape_as_x(c, {});
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

// ============================================================================= dropout ====
// Input 1, the optional step counter (ABI 1.4), holds one value.
void shapes_dropout_forward(call& c, const void*) {
  expect_one_element(c, 1);
  same_shape_as_x(c, {});
}
void shapes_dropout_backward(call& c, const void*) {
  expect_one_element(c, 1);
  same_shape_as_x(c, {});
}

}  // namespace nnp::host
