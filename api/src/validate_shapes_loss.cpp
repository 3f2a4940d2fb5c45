// Shape rules of the losses. NNP_OP_SOFTMAX_CROSS_ENTROPY_* (ABI 1.0): logits [N, C], labels
// [N], the loss [N] for reduction none and [] otherwise. The ONNX losses (ABI 1.2):
// NNP_OP_NLL_LOSS_* (ONNX NegativeLogLikelihoodLoss) and NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_*
// (ONNX SoftmaxCrossEntropyLoss). Both take input
// [N, C, d1..dk] (k >= 0), target [N, d1..dk] (int64), an optional weight [C]; the loss is
// [N, d1..dk] for reduction none and [] (rank 0) for mean and sum. The params field
// `reduction` (check = "shape") is an nnp_reduction value or 0, read as MEAN.
#include "internal.hpp"
#include "validate_call.hpp"

#include <string>

namespace nnp::host {
namespace {

// The loss shape of a call (inputs 0, 1 and the optional weight at `weight_index` checked);
// *why gets the reason text for messages.
template <typename P>
shape_t loss_shape(const call& c, const void* params, size_t weight_index, const char** why) {
  const P& p = *static_cast<const P*>(params);
  if (p.reduction < 0 || p.reduction > NNP_REDUCTION_NONE)
    c.fail(
        "params->reduction: expected an nnp_reduction value (1 mean, 2 sum, 3 none) or 0 "
        "(mean), got " +
        std::to_string(p.reduction));
  const DLTensor* x = c.in(0);
  if (x->ndim < 2)
    c.fail(c.in_label(0) + ": expected rank >= 2 ([N, C] or [N, C, d1..dk]), got " +
           shape_str(shape_of(x)));
  shape_t target;
  target.push_back(x->shape[0]);
  for (int i = 2; i < x->ndim; ++i) target.push_back(x->shape[i]);
  c.expect_shape(c.in_label(1), c.in(1), target, "([N, d1..dk] from input 0's [N, C, d1..dk])");
  if (c.in(weight_index) != nullptr)
    c.expect_shape(c.in_label(weight_index), c.in(weight_index), {x->shape[1]}, "([C])");
  const bool none = p.reduction == NNP_REDUCTION_NONE;
  *why = none ? "([N, d1..dk] for reduction none)" : "([] for reduction mean/sum)";
  return none ? target : shape_t{};
}

template <typename P>
void forward_shapes(call& c, const void* params) {
  const char* why;
  const shape_t loss = loss_shape<P>(c, params, 2, &why);
  c.output_shape(0, loss, why);
  if (c.op().n_outputs > 1) c.output_shape(1, shape_of(c.in(0)), "(input 0's shape)");
}

template <typename P>
void backward_shapes(call& c, const void* params) {
  const char* why;
  const shape_t loss = loss_shape<P>(c, params, 3, &why);
  c.expect_shape(c.in_label(2), c.in(2), loss, why);
  c.output_shape(0, shape_of(c.in(0)), "(input 0's shape)");
}

shape_t sce_loss_shape(const call& c, const nnp_softmax_cross_entropy_params& p, const char** why) {
  const DLTensor* logits = c.in(0);
  c.expect_rank(c.in_label(0), logits, 2, "[N, C]");
  const int64_t n = logits->shape[0];
  c.expect_shape(c.in_label(1), c.in(1), {n}, "([N])");
  *why = p.reduction == NNP_REDUCTION_NONE ? "([N] for reduction none)"
                                           : "([] for reduction mean/sum)";
  return p.reduction == NNP_REDUCTION_NONE ? shape_t{n} : shape_t{};
}

}  // namespace

// ======================================================== softmax_cross_entropy (ABI 1.0) ====
void shapes_softmax_cross_entropy_forward(call& c, const void* params) {
  const char* why;
  const shape_t loss = sce_loss_shape(c, params_of<nnp_softmax_cross_entropy_params>(params), &why);
  c.output_shape(0, loss, why);
  c.output_shape(1, shape_of(c.in(0)), "([N, C])");
}
void shapes_softmax_cross_entropy_backward(call& c, const void* params) {
  const char* why;
  const shape_t loss = sce_loss_shape(c, params_of<nnp_softmax_cross_entropy_params>(params), &why);
  c.expect_shape(c.in_label(2), c.in(2), loss, why);
  c.output_shape(0, shape_of(c.in(0)), "([N, C])");
}

// ======================================================================= ONNX losses ====
void shapes_nll_loss_forward(call& c, const void* params) {
  forward_shapes<nnp_nll_loss_params>(c, params);
}
void shapes_nll_loss_backward(call& c, const void* params) {
  backward_shapes<nnp_nll_loss_params>(c, params);
}
void shapes_softmax_cross_entropy_loss_forward(call& c, const void* params) {
  forward_shapes<nnp_softmax_cross_entropy_loss_params>(c, params);
}
void shapes_softmax_cross_entropy_loss_backward(call& c, const void* params) {
  backward_shapes<nnp_softmax_cross_entropy_loss_params>(c, params);
}

}  // namespace nnp::host
