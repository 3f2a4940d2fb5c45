// The op kinds of ABI 1.0 (nnplug_ops.h), listed once: X(enumerator, "name"). libnnplug's
// nnp_op_kind_name and the backends' "is this a kind I know" checks expand this list, so a new
// kind is added here and nowhere else.
#pragma once

#include <nnplug/nnplug_ops.h>

#include <cstdint>

#define NNP_OP_KINDS_1_0(X)                                                  \
  X(NNP_OP_GEMM, "gemm")                                                     \
  X(NNP_OP_CONV2D_FORWARD, "conv2d_forward")                                 \
  X(NNP_OP_CONV2D_BACKWARD_DATA, "conv2d_backward_data")                     \
  X(NNP_OP_CONV2D_BACKWARD_FILTER, "conv2d_backward_filter")                 \
  X(NNP_OP_CONV2D_BACKWARD_BIAS, "conv2d_backward_bias")                     \
  X(NNP_OP_POOL2D_FORWARD, "pool2d_forward")                                 \
  X(NNP_OP_POOL2D_BACKWARD, "pool2d_backward")                               \
  X(NNP_OP_ACTIVATION_FORWARD, "activation_forward")                         \
  X(NNP_OP_ACTIVATION_BACKWARD, "activation_backward")                       \
  X(NNP_OP_SOFTMAX_FORWARD, "softmax_forward")                               \
  X(NNP_OP_SOFTMAX_BACKWARD, "softmax_backward")                             \
  X(NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, "softmax_cross_entropy_forward")   \
  X(NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, "softmax_cross_entropy_backward") \
  X(NNP_OP_BATCH_NORM_FORWARD_TRAINING, "batch_norm_forward_training")       \
  X(NNP_OP_BATCH_NORM_FORWARD_INFERENCE, "batch_norm_forward_inference")     \
  X(NNP_OP_BATCH_NORM_BACKWARD, "batch_norm_backward")                       \
  X(NNP_OP_LAYER_NORM_FORWARD, "layer_norm_forward")                         \
  X(NNP_OP_LAYER_NORM_BACKWARD, "layer_norm_backward")                       \
  X(NNP_OP_DROPOUT_FORWARD, "dropout_forward")                               \
  X(NNP_OP_DROPOUT_BACKWARD, "dropout_backward")                             \
  X(NNP_OP_BINARY, "binary")                                                 \
  X(NNP_OP_SCALE, "scale")                                                   \
  X(NNP_OP_FILL, "fill")                                                     \
  X(NNP_OP_COPY, "copy")                                                     \
  X(NNP_OP_TRANSPOSE, "transpose")                                           \
  X(NNP_OP_CAST, "cast")                                                     \
  X(NNP_OP_REDUCE, "reduce")                                                 \
  X(NNP_OP_SGD_UPDATE, "sgd_update")                                         \
  X(NNP_OP_ADAM_UPDATE, "adam_update")

namespace nnp {

// Static lower-case name of a 1.0 op kind, or nullptr for any other value.
inline const char* op_kind_name(int32_t kind) {
  switch (kind) {
#define NNP_OP_KIND_CASE(kind_enum, name) \
  case kind_enum:                         \
    return name;
    NNP_OP_KINDS_1_0(NNP_OP_KIND_CASE)
#undef NNP_OP_KIND_CASE
    default:
      return nullptr;
  }
}

inline bool is_known_op_kind(int32_t kind) { return op_kind_name(kind) != nullptr; }

}  // namespace nnp
