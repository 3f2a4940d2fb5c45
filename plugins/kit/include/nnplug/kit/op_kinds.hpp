// op_kinds.hpp — GENERATED from api/ops/ops.toml by api/ops/gen_ops.py: edit the
// table, not this file. Every op kind of nnplug_ops.h with its name (as
// nnp_op_kind_name) and whether it is a collective, for plugins' messages, and the
// tensors under the `accumulation` dtype rule; header-only, as the rest of the plugin kit.
#pragma once

#include <nnplug/nnplug_ops.h>

#include <cstddef>
#include <cstdint>

namespace nnp {
namespace kit {

struct op_kind_info {
  int32_t kind;      // nnp_op_kind
  const char* name;  // lower-case, as nnp_op_kind_name
  bool collective;   // takes a communicator: run by a communication plugin
};

inline constexpr op_kind_info k_op_kinds[] = {
    {NNP_OP_GEMM, "gemm", false},
    {NNP_OP_MATMUL, "matmul", false},
    {NNP_OP_CONV2D_FORWARD, "conv2d_forward", false},
    {NNP_OP_CONV2D_BACKWARD_DATA, "conv2d_backward_data", false},
    {NNP_OP_CONV2D_BACKWARD_FILTER, "conv2d_backward_filter", false},
    {NNP_OP_CONV2D_BACKWARD_BIAS, "conv2d_backward_bias", false},
    {NNP_OP_CONV_FORWARD, "conv_forward", false},
    {NNP_OP_CONV_BACKWARD_DATA, "conv_backward_data", false},
    {NNP_OP_CONV_BACKWARD_FILTER, "conv_backward_filter", false},
    {NNP_OP_CONV_BACKWARD_BIAS, "conv_backward_bias", false},
    {NNP_OP_CONV_TRANSPOSE_FORWARD, "conv_transpose_forward", false},
    {NNP_OP_CONV_TRANSPOSE_BACKWARD_DATA, "conv_transpose_backward_data", false},
    {NNP_OP_CONV_TRANSPOSE_BACKWARD_FILTER, "conv_transpose_backward_filter", false},
    {NNP_OP_POOL2D_FORWARD, "pool2d_forward", false},
    {NNP_OP_POOL2D_BACKWARD, "pool2d_backward", false},
    {NNP_OP_POOL_FORWARD, "pool_forward", false},
    {NNP_OP_POOL_BACKWARD, "pool_backward", false},
    {NNP_OP_ACTIVATION_FORWARD, "activation_forward", false},
    {NNP_OP_ACTIVATION_BACKWARD, "activation_backward", false},
    {NNP_OP_SOFTMAX_FORWARD, "softmax_forward", false},
    {NNP_OP_SOFTMAX_BACKWARD, "softmax_backward", false},
    {NNP_OP_ATTENTION_FORWARD, "attention_forward", false},
    {NNP_OP_ATTENTION_BACKWARD, "attention_backward", false},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, "softmax_cross_entropy_forward", false},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, "softmax_cross_entropy_backward", false},
    {NNP_OP_NLL_LOSS_FORWARD, "nll_loss_forward", false},
    {NNP_OP_NLL_LOSS_BACKWARD, "nll_loss_backward", false},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_FORWARD, "softmax_cross_entropy_loss_forward", false},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_BACKWARD, "softmax_cross_entropy_loss_backward", false},
    {NNP_OP_BATCH_NORM_FORWARD_TRAINING, "batch_norm_forward_training", false},
    {NNP_OP_BATCH_NORM_FORWARD_INFERENCE, "batch_norm_forward_inference", false},
    {NNP_OP_BATCH_NORM_BACKWARD, "batch_norm_backward", false},
    {NNP_OP_LAYER_NORM_FORWARD, "layer_norm_forward", false},
    {NNP_OP_LAYER_NORM_BACKWARD, "layer_norm_backward", false},
    {NNP_OP_DROPOUT_FORWARD, "dropout_forward", false},
    {NNP_OP_DROPOUT_BACKWARD, "dropout_backward", false},
    {NNP_OP_BINARY, "binary", false},
    {NNP_OP_SCALE, "scale", false},
    {NNP_OP_FILL, "fill", false},
    {NNP_OP_COPY, "copy", false},
    {NNP_OP_TRANSPOSE, "transpose", false},
    {NNP_OP_CONCAT, "concat", false},
    {NNP_OP_SPLIT, "split", false},
    {NNP_OP_SLICE, "slice", false},
    {NNP_OP_GATHER, "gather", false},
    {NNP_OP_SLICE_BACKWARD, "slice_backward", false},
    {NNP_OP_GATHER_BACKWARD, "gather_backward", false},
    {NNP_OP_CAST, "cast", false},
    {NNP_OP_REDUCE, "reduce", false},
    {NNP_OP_CUMSUM, "cumsum", false},
    {NNP_OP_SGD_UPDATE, "sgd_update", false},
    {NNP_OP_ADAM_UPDATE, "adam_update", false},
    {NNP_OP_CLIP, "clip", false},
    {NNP_OP_UNARY_FORWARD, "unary_forward", false},
    {NNP_OP_UNARY_BACKWARD, "unary_backward", false},
    {NNP_OP_WHERE, "where", false},
    {NNP_OP_ALL_REDUCE, "all_reduce", true},
    {NNP_OP_BROADCAST, "broadcast", true},
    {NNP_OP_ALL_GATHER, "all_gather", true},
};

// The entry of a kind, or nullptr for a kind this header does not know.
inline const op_kind_info* find_op_kind(int32_t kind) {
  for (const op_kind_info& k : k_op_kinds)
    if (k.kind == kind) return &k;
  return nullptr;
}

// A tensor under the `accumulation` dtype rule: float32 in a float16/bfloat16 call,
// else the call's float dtype, from ABI minor `since` on (nnplug_ops.h, docs/ops.md).
struct accumulation_tensor {
  int32_t kind;   // nnp_op_kind
  bool output;    // an output (else an input)
  uint32_t index; // its index among the op's inputs or outputs
  int32_t since;  // the ABI minor from which the rule holds for it
};

inline constexpr accumulation_tensor k_accumulation_tensors[] = {
    {NNP_OP_ATTENTION_FORWARD, true, 1, 9},  // softmax_lse
    {NNP_OP_ATTENTION_BACKWARD, false, 6, 9},  // softmax_lse
    {NNP_OP_BATCH_NORM_FORWARD_TRAINING, false, 1, 10},  // scale
    {NNP_OP_BATCH_NORM_FORWARD_TRAINING, false, 2, 10},  // bias
    {NNP_OP_BATCH_NORM_FORWARD_TRAINING, true, 1, 10},  // running_mean
    {NNP_OP_BATCH_NORM_FORWARD_TRAINING, true, 2, 10},  // running_var
    {NNP_OP_BATCH_NORM_FORWARD_TRAINING, true, 3, 10},  // saved_mean
    {NNP_OP_BATCH_NORM_FORWARD_TRAINING, true, 4, 10},  // saved_inv_std
    {NNP_OP_BATCH_NORM_FORWARD_INFERENCE, false, 1, 10},  // scale
    {NNP_OP_BATCH_NORM_FORWARD_INFERENCE, false, 2, 10},  // bias
    {NNP_OP_BATCH_NORM_FORWARD_INFERENCE, false, 3, 10},  // mean
    {NNP_OP_BATCH_NORM_FORWARD_INFERENCE, false, 4, 10},  // var
    {NNP_OP_BATCH_NORM_BACKWARD, false, 2, 10},  // scale
    {NNP_OP_BATCH_NORM_BACKWARD, false, 3, 10},  // saved_mean
    {NNP_OP_BATCH_NORM_BACKWARD, false, 4, 10},  // saved_inv_std
    {NNP_OP_BATCH_NORM_BACKWARD, true, 1, 10},  // dscale
    {NNP_OP_BATCH_NORM_BACKWARD, true, 2, 10},  // dbias
    {NNP_OP_LAYER_NORM_FORWARD, true, 1, 10},  // mean
    {NNP_OP_LAYER_NORM_FORWARD, true, 2, 10},  // inv_std
    {NNP_OP_LAYER_NORM_BACKWARD, false, 3, 10},  // mean
    {NNP_OP_LAYER_NORM_BACKWARD, false, 4, 10},  // inv_std
};

// Whether input (output = false) or output `index` of `kind` is under the rule.
inline bool is_accumulation_tensor(int32_t kind, bool output, size_t index) {
  for (const accumulation_tensor& t : k_accumulation_tensors)
    if (t.kind == kind && t.output == output && t.index == index) return true;
  return false;
}

}  // namespace kit
}  // namespace nnp
