// Shape rules of the activations (activation_forward / _backward: alpha finite where the
// function reads it) and softmax (softmax_forward / _backward: the axis), ABI 1.0. Every tensor
// has x's shape. The contract of a shape rule: validate_call.hpp.
#include "internal.hpp"
#include "validate_call.hpp"

namespace nnp::host {
namespace {

void activation_alpha(const call& c, const void* params) {
  const auto& p = params_of<nnp_activation_params>(params);
  if (p.function == NNP_ACTIVATION_LEAKY_RELU || p.function == NNP_ACTIVATION_ELU)
    expect_finite(c, "alpha", p.alpha);
}

}  // namespace

// ========================================================================== activation ====
void shapes_activation_forward(call& c, const void* params) {
  activation_alpha(c, params);
  same_shape_as_x(c, {});
}
void shapes_activation_backward(call& c, const void* params) {
  activation_alpha(c, params);
  same_shape_as_x(c, {1});
}

// ============================================================================= softmax ====
void shapes_softmax_forward(call& c, const void* params) {
  expect_axis(c, "axis", params_of<nnp_softmax_params>(params).axis, c.in(0)->ndim);
  same_shape_as_x(c, {});
}
void shapes_softmax_backward(call& c, const void* params) {
  expect_axis(c, "axis", params_of<nnp_softmax_params>(params).axis, c.in(0)->ndim);
  same_shape_as_x(c, {1});
}

}  // namespace nnp::host
