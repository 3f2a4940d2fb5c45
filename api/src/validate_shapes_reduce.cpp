// Shape rules of the reduce family: reduce (ABI 1.0; ONNX ReduceSum / ReduceMean / ...,
// opset 18): the axes, and noop_with_empty_axes (ABI 1.1) read only when the caller's struct has
// it; cumsum (ABI 1.5; ONNX CumSum, opset 14): the axis. The contract of a shape rule:
// validate_call.hpp.
#include "internal.hpp"
#include "validate_call.hpp"

#include <string>

namespace nnp::host {

// =========================================================================== reduction ====
void shapes_reduce(call& c, const void* params) {
  const auto& p = params_of<nnp_reduce_params>(params);
  // noop_with_empty_axes is an ABI 1.1 field: read it only when the caller's struct has it.
  const bool noop = p.struct_size >= NNP_REDUCE_PARAMS_STRUCT_SIZE_1_1 && p.noop_with_empty_axes;
  const DLTensor* x = c.in(0);
  if (p.n_axes < 0 || p.n_axes > x->ndim)
    c.fail("params->n_axes: expected in [0, rank = " + std::to_string(x->ndim) + "], got " +
           std::to_string(p.n_axes));
  bool reduced[NNP_MAX_DIMS] = {};
  for (int i = 0; i < p.n_axes; ++i) {
    const int a = nnp::normalize_axis(p.axes[i], x->ndim);
    if (a < 0)
      c.fail("params->axes[" + std::to_string(i) + "]: expected in [-rank, rank) = [" +
             std::to_string(-x->ndim) + ", " + std::to_string(x->ndim) + "), got " +
             std::to_string(p.axes[i]));
    if (reduced[a])
      c.fail("params->axes[" + std::to_string(i) + "]: axis " + std::to_string(p.axes[i]) +
             " is repeated");
    reduced[a] = true;
  }
  shape_t y;
  for (int d = 0; d < x->ndim; ++d) {
    const bool r = p.n_axes == 0 ? !noop : reduced[d];
    if (!r)
      y.push_back(x->shape[d]);
    else if (p.keepdims)
      y.push_back(1);
  }
  c.output_shape(
      0, y,
      p.keepdims ? "(x's shape with reduced axes as 1)" : "(x's shape without the reduced axes)");
}

// ====================================================================== cumulative sum ====
void shapes_cumsum(call& c, const void* params) {
  const auto& p = params_of<nnp_cumsum_params>(params);
  expect_axis(c, "axis", p.axis, c.in(0)->ndim);
  same_shape_as_x(c, {});
}

}  // namespace nnp::host
