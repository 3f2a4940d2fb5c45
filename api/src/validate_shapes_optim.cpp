// Shape rules of the optimiser updates: sgd_update (ABI 1.0; momentum, dampening, nesterov) and
// adam_update (grad, param, m and v share param's shape; the optional step and learning rate of
// ABI 1.4 hold one value each). The contract of a shape rule: validate_call.hpp.
#include "internal.hpp"
#include "validate_call.hpp"

#include <string>

namespace nnp::host {
namespace {

// Optimisers: every tensor has param's shape (output 0, read and written); messages name param
// as the reference shape, as a user thinks of it.
void optimiser_shapes(call& c) {
  if (!c.inferring()) c.expect_shape(c.in_label(0), c.in(0), shape_of(c.out(0)), "(param's shape)");
  same_shape_as_x(c, {});
}

}  // namespace

// ========================================================================== optimisers ====
void shapes_sgd_update(call& c, const void* params) {
  const auto& p = params_of<nnp_sgd_params>(params);
  if (p.nesterov && !(p.momentum > 0 && p.dampening == 0))
    c.fail("params->nesterov = 1 requires momentum > 0 and dampening = 0, got momentum " +
           nnp::format("%g", p.momentum) + ", dampening " + nnp::format("%g", p.dampening));
  if (p.momentum != 0 && !c.inferring() && c.out(1) == nullptr)
    c.fail(c.out_label(1) + " is NULL but required (momentum != 0)");
  optimiser_shapes(c);
}

// grad, param, m and v share param's shape; the optional step and lr (ABI 1.4) hold one value.
void shapes_adam_update(call& c, const void*) {
  expect_one_element(c, 1);
  expect_one_element(c, 2);
  optimiser_shapes(c);
}

}  // namespace nnp::host
