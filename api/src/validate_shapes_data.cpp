// Shape rules of the data-movement ops: transpose (ABI 1.0) and those of ABI 1.2 (ONNX Concat,
// Split, Slice, Gather and the backward ops of slice and gather); validate_call.hpp says what a
// shape rule may assume.
// Concat takes a variadic input list and split a variadic output list: every tensor of the
// list passed the table's checks (count, presence, rank, dtype) before the rule runs.
#include "internal.hpp"
#include "validate_call.hpp"

#include <nnplug/geometry/slice.hpp>

#include <string>

namespace nnp::host {
namespace {

// t must have ref's rank and dims except along axis.
void expect_same_but_axis(const call& c, const arg_name& label, const DLTensor* t,
                          const arg_name& ref_label, const DLTensor* ref, int axis) {
  bool ok = t->ndim == ref->ndim;
  for (int d = 0; ok && d < t->ndim; ++d) ok = d == axis || t->shape[d] == ref->shape[d];
  if (!ok)
    c.fail(label + ": expected rank " + std::to_string(ref->ndim) + " and the dims of " +
           ref_label + " " + nnp::shape_string(*ref) + " except along axis " +
           std::to_string(axis) + ", got " + nnp::shape_string(*t));
}

// y's shape for gather of data (or dx) along axis with indices.
shape_t gather_shape(const call& c, const arg_name& data_label, const DLTensor* data,
                     const DLTensor* indices, int32_t axis_field) {
  if (data->ndim < 1) c.fail(data_label + ": expected rank >= 1 (ONNX Gather), got rank 0 []");
  const int axis = expect_axis(c, "axis", axis_field, data->ndim);
  if (indices->ndim + data->ndim - 1 > NNP_MAX_DIMS)
    c.fail("the output rank rank(indices) + rank(data) - 1 = " +
           std::to_string(indices->ndim + data->ndim - 1) +
           " exceeds NNP_MAX_DIMS = " + std::to_string(NNP_MAX_DIMS));
  shape_t y;
  for (int d = 0; d < axis; ++d) y.push_back(data->shape[d]);
  for (int d = 0; d < indices->ndim; ++d) y.push_back(indices->shape[d]);
  for (int d = axis + 1; d < data->ndim; ++d) y.push_back(data->shape[d]);
  return y;
}

shape_t slice_shape(const call& c, const nnp_slice_params& p, const DLTensor* x) {
  nnp::slice_dim dims[NNP_MAX_DIMS];
  std::string why;
  if (!nnp::resolve_slice(p, x->ndim, x->shape, dims, &why)) c.fail(why);
  shape_t y;
  for (int d = 0; d < x->ndim; ++d) y.push_back(dims[d].count);
  return y;
}

}  // namespace

// =========================================================================== transpose ====
void shapes_transpose(call& c, const void* params) {
  const auto& p = params_of<nnp_transpose_params>(params);
  const DLTensor* x = c.in(0);
  bool seen[NNP_MAX_DIMS] = {};
  shape_t y;
  for (int i = 0; i < NNP_MAX_DIMS; ++i) {
    const int32_t v = p.perm[i];
    if (i >= x->ndim) {
      if (v != 0)
        c.fail("params->perm[" + std::to_string(i) + "]: expected 0 beyond rank " +
               std::to_string(x->ndim) + ", got " + std::to_string(v));
      continue;
    }
    if (v < 0 || v >= x->ndim || seen[v])
      c.fail("params->perm: expected a permutation of 0.." + std::to_string(x->ndim - 1) +
             ", got perm[" + std::to_string(i) + "] = " + std::to_string(v) +
             (v >= 0 && v < x->ndim ? " (repeated)" : " (out of range)"));
    seen[v] = true;
    y.push_back(x->shape[v]);
  }
  c.output_shape(0, y, "(x.shape permuted by perm)");
}

// =========================================== concat, split, slice, gather (ABI 1.2) ====
void shapes_concat(call& c, const void* params) {
  const DLTensor* x0 = c.in(0);
  if (x0->ndim < 1) c.fail(c.in_label(0) + ": expected rank >= 1 (ONNX Concat), got rank 0 []");
  const int axis = expect_axis(c, "axis", params_of<nnp_concat_params>(params).axis, x0->ndim);
  shape_t y = shape_of(x0);
  for (size_t i = 1; i < c.n_in(); ++i) {
    expect_same_but_axis(c, c.in_label(i), c.in(i), c.in_label(0), x0, axis);
    int64_t& extent = y[static_cast<size_t>(axis)];
    if (__builtin_add_overflow(extent, c.in(i)->shape[axis], &extent))
      c.fail("the sum of the inputs' dims along axis " + std::to_string(axis) +
             " overflows int64 (at " + c.in_label(i).str() + " " + nnp::shape_string(*c.in(i)) +
             ")");
  }
  c.output_shape(0, y, "(the inputs' shape with the sum of their dims along axis)");
}

void shapes_split(call& c, const void* params) {
  const auto& p = params_of<nnp_split_params>(params);
  const DLTensor* x = c.in(0);
  if (x->ndim < 1) c.fail(c.in_label(0) + ": expected rank >= 1 (ONNX Split), got rank 0 []");
  const int axis = expect_axis(c, "axis", p.axis, x->ndim);
  const int64_t d = x->shape[axis];
  if (p.num_outputs < 0)
    c.fail(
        "params->num_outputs: expected >= 0 (0: the outputs' extents are the split sizes), "
        "got " +
        std::to_string(p.num_outputs));
  if (p.num_outputs > 0) {  // ONNX num_outputs: ceil(d / n) each, the rest to the last
    const int64_t n = p.num_outputs;
    if ((!c.inferring() && static_cast<int64_t>(c.n_out()) != n) ||
        static_cast<int64_t>(c.n_out()) > n)
      c.fail("params->num_outputs = " + std::to_string(n) + ": expected that many outputs, got " +
             std::to_string(c.n_out()));
    // ceil(d / n) and d - chunk * (n - 1) without overflow for any d <= INT64_MAX
    const int64_t chunk = d / n + (d % n != 0 ? 1 : 0);
    const nnp::wide_int last_wide = nnp::wide_int{d} - nnp::wide_int{chunk} * (n - 1);
    const int64_t last = last_wide < 0 ? -1 : static_cast<int64_t>(last_wide);
    if (last < 0)
      c.fail("params->num_outputs = " + std::to_string(n) +
             ": x.shape[axis] = " + std::to_string(d) + " cannot be split into chunks of ceil(" +
             std::to_string(d) + " / " + std::to_string(n) + ") = " + std::to_string(chunk) +
             " with a non-negative last chunk (ONNX's rule for uneven splits)");
    for (size_t o = 0; o < c.n_out(); ++o) {
      shape_t y = shape_of(x);
      y[static_cast<size_t>(axis)] = static_cast<int64_t>(o) + 1 == n ? last : chunk;
      c.output_shape(o, y, "(x's shape with ONNX's num_outputs chunk along axis)");
    }
    return;
  }
  if (c.inferring())
    c.not_inferable(0,
                    "the split sizes are the outputs' extents; num_outputs > 0 selects "
                    "ONNX's equal split");
  int64_t sum = 0;
  for (size_t o = 0; o < c.n_out(); ++o) {
    expect_same_but_axis(c, c.out_label(o), c.out(o), c.in_label(0), x, axis);
    if (__builtin_add_overflow(sum, c.out(o)->shape[axis], &sum))
      c.fail("outputs: the sum of their extents along axis " + std::to_string(axis) +
             " overflows int64 (x.shape[axis] = " + std::to_string(d) + ")");
  }
  if (sum != d)
    c.fail("outputs: expected extents along axis " + std::to_string(axis) + " that add up to " +
           std::to_string(d) + " (x.shape[axis] of " + c.in_label(0) + " " + nnp::shape_string(*x) +
           "), got a sum of " + std::to_string(sum));
}

void shapes_slice(call& c, const void* params) {
  c.output_shape(0, slice_shape(c, params_of<nnp_slice_params>(params), c.in(0)),
                 "(x's shape with the sliced counts)");
}

void shapes_slice_backward(call& c, const void* params) {
  if (c.inferring()) c.not_inferable(0, "dx has the forward's x shape, which dy does not give");
  const shape_t dy = slice_shape(c, params_of<nnp_slice_params>(params), c.out(0));
  c.expect_shape(c.in_label(0), c.in(0), dy, "(the slice of dx's shape)");
}

void shapes_gather(call& c, const void* params) {
  const shape_t y =
      gather_shape(c, c.in_label(0), c.in(0), c.in(1), params_of<nnp_gather_params>(params).axis);
  c.output_shape(0, y, "(data.shape[:axis] + indices.shape + data.shape[axis+1:])");
}

void shapes_gather_backward(call& c, const void* params) {
  if (c.inferring())
    c.not_inferable(0, "dx has data's shape, and dy does not give data.shape[axis]");
  const shape_t dy =
      gather_shape(c, c.out_label(0), c.out(0), c.in(1), params_of<nnp_gather_params>(params).axis);
  c.expect_shape(c.in_label(0), c.in(0), dy,
                 "(dx.shape[:axis] + indices.shape + dx.shape[axis+1:])");
}

}  // namespace nnp::host
