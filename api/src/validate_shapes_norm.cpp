// Shape rules of the normalisations (ABI 1.0): batch_norm (x [N, C] or [N, C, H, W], per-channel
// tensors [C]) and layer_norm (normalised over x.shape[axis:], statistics with 1 from axis on).
// The contract of a shape rule: validate_call.hpp.
#include "internal.hpp"
#include "validate_call.hpp"

namespace nnp::host {
namespace {

// x is [N, C] or [N, C, H, W]; returns C.
int64_t bn_channels(const call& c, const DLTensor* x) {
  if (x->ndim != 2 && x->ndim != 4)
    c.fail(c.in_label(0) + ": expected rank 2 [N, C] or rank 4 [N, C, H, W], got rank " +
           std::to_string(x->ndim) + " " + nnp::shape_string(*x));
  return x->shape[1];
}

struct ln_shapes {
  shape_t inner, stats;
};
ln_shapes layer_norm_shapes(const call& c, const nnp_layer_norm_params& p, const DLTensor* x) {
  const int axis = expect_axis(c, "axis", p.axis, x->ndim);
  ln_shapes s;
  for (int d = 0; d < x->ndim; ++d) {
    if (d >= axis) s.inner.push_back(x->shape[d]);
    s.stats.push_back(d >= axis ? 1 : x->shape[d]);
  }
  return s;
}

}  // namespace

// ======================================================================= normalisation ====
void shapes_batch_norm_forward_training(call& c, const void*) {
  const int64_t ch = bn_channels(c, c.in(0));
  for (size_t i = 1; i < 3; ++i) c.expect_shape(c.in_label(i), c.in(i), {ch}, "([C])");
  c.output_shape(0, shape_of(c.in(0)), "(x's shape)");
  for (size_t i = 1; i < 5; ++i) c.output_shape(i, {ch}, "([C])");
}

void shapes_batch_norm_forward_inference(call& c, const void*) {
  const int64_t ch = bn_channels(c, c.in(0));
  for (size_t i = 1; i < 5; ++i) c.expect_shape(c.in_label(i), c.in(i), {ch}, "([C])");
  c.output_shape(0, shape_of(c.in(0)), "(x's shape)");
}

void shapes_batch_norm_backward(call& c, const void*) {
  const int64_t ch = bn_channels(c, c.in(0));
  c.expect_shape(c.in_label(1), c.in(1), shape_of(c.in(0)), "(x's shape)");
  for (size_t i = 2; i < 5; ++i) c.expect_shape(c.in_label(i), c.in(i), {ch}, "([C])");
  c.output_shape(0, shape_of(c.in(0)), "(x's shape)");
  for (size_t i = 1; i < 3; ++i) c.output_shape(i, {ch}, "([C])");
}

void shapes_layer_norm_forward(call& c, const void* params) {
  const DLTensor* x = c.in(0);
  const ln_shapes s = layer_norm_shapes(c, params_of<nnp_layer_norm_params>(params), x);
  c.expect_shape(c.in_label(1), c.in(1), s.inner, "(x.shape[axis:])");
  c.expect_shape(c.in_label(2), c.in(2), s.inner, "(x.shape[axis:])");
  c.output_shape(0, shape_of(x), "(x's shape)");
  c.output_shape(1, s.stats, "(x's shape with 1 from axis on)");
  c.output_shape(2, s.stats, "(x's shape with 1 from axis on)");
}

void shapes_layer_norm_backward(call& c, const void* params) {
  const DLTensor* x = c.in(0);
  const ln_shapes s = layer_norm_shapes(c, params_of<nnp_layer_norm_params>(params), x);
  c.expect_shape(c.in_label(1), c.in(1), shape_of(x), "(x's shape)");
  c.expect_shape(c.in_label(2), c.in(2), s.inner, "(x.shape[axis:])");
  c.expect_shape(c.in_label(3), c.in(3), s.stats, "(x's shape with 1 from axis on)");
  c.expect_shape(c.in_label(4), c.in(4), s.stats, "(x's shape with 1 from axis on)");
  c.output_shape(0, shape_of(x), "(x's shape)");
  c.output_shape(1, s.inner, "(x.shape[axis:])");
  c.output_shape(2, s.inner, "(x.shape[axis:])");
}

}  // namespace nnp::host
