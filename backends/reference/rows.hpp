// rows.hpp — the kernel rows of the reference kernels: which op kinds and dtypes they
// implement (every kind, float32 and float64; copy, transpose and the data-movement ops but
// gather_backward any dtype). The reference
// plugin (plugin.cpp) and the simulated accelerator (backends/sim) serve op_supported and
// op_execute from these rows through the plugin kit, so both always declare the same ops.
#pragma once

#include "reference.hpp"

namespace ref {

using nnp::kit::f32;
using nnp::kit::f64;
using nnp::kit::op_call;
using nnp::kit::op_row;

// cast converts between float32 and float64 only (the row lists both dtypes for x).
inline void check_cast(const op_call& c) {
  const DLDataType& y = c.out(0)->dtype;
  if (!nnp::is_f32(y) && !nnp::is_f64(y))
    nnp::unsupported(
        nnp::format("the reference kernels implement float32 and float64 only; "
                    "output 0 is %s (cast supports float32 <-> float64 only)",
                    nnp::dtype_name(y).c_str()));
}

inline constexpr uint32_t kFloats = f32 | f64;

// clang-format off
inline const op_row kRows[] = {
    {NNP_OP_GEMM,                           kFloats,        gemm},
    {NNP_OP_MATMUL,                         kFloats,        matmul},
    {NNP_OP_CONV2D_FORWARD,                 kFloats,        conv2d_forward},
    {NNP_OP_CONV2D_BACKWARD_DATA,           kFloats,        conv2d_backward_data},
    {NNP_OP_CONV2D_BACKWARD_FILTER,         kFloats,        conv2d_backward_filter},
    {NNP_OP_CONV2D_BACKWARD_BIAS,           kFloats,        conv2d_backward_bias},
    {NNP_OP_CONV_FORWARD,                   kFloats,        conv_forward},
    {NNP_OP_CONV_BACKWARD_DATA,             kFloats,        conv_backward_data},
    {NNP_OP_CONV_BACKWARD_FILTER,           kFloats,        conv_backward_filter},
    {NNP_OP_CONV_BACKWARD_BIAS,             kFloats,        conv_backward_bias},
    {NNP_OP_CONV_TRANSPOSE_FORWARD,         kFloats,        conv_transpose_forward},
    {NNP_OP_CONV_TRANSPOSE_BACKWARD_DATA,   kFloats,        conv_transpose_backward_data},
    {NNP_OP_CONV_TRANSPOSE_BACKWARD_FILTER, kFloats,        conv_transpose_backward_filter},
    {NNP_OP_POOL2D_FORWARD,                 kFloats,        pool2d_forward},
    {NNP_OP_POOL2D_BACKWARD,                kFloats,        pool2d_backward},
    {NNP_OP_POOL_FORWARD,                   kFloats,        pool_forward},
    {NNP_OP_POOL_BACKWARD,                  kFloats,        pool_backward},
    {NNP_OP_ACTIVATION_FORWARD,             kFloats,        activation_forward},
    {NNP_OP_ACTIVATION_BACKWARD,            kFloats,        activation_backward},
    {NNP_OP_SOFTMAX_FORWARD,                kFloats,        softmax_forward},
    {NNP_OP_SOFTMAX_BACKWARD,               kFloats,        softmax_backward},
    {NNP_OP_ATTENTION_FORWARD,              kFloats,        attention_forward},
    {NNP_OP_ATTENTION_BACKWARD,             kFloats,        attention_backward},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD,  kFloats,        softmax_cross_entropy_forward},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, kFloats,        softmax_cross_entropy_backward},
    {NNP_OP_NLL_LOSS_FORWARD,               kFloats,        nll_loss_forward},
    {NNP_OP_NLL_LOSS_BACKWARD,              kFloats,        nll_loss_backward},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_FORWARD,  kFloats, sce_loss_forward},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_BACKWARD, kFloats, sce_loss_backward},
    {NNP_OP_BATCH_NORM_FORWARD_TRAINING,    kFloats,        batch_norm_forward_training},
    {NNP_OP_BATCH_NORM_FORWARD_INFERENCE,   kFloats,        batch_norm_forward_inference},
    {NNP_OP_BATCH_NORM_BACKWARD,            kFloats,        batch_norm_backward},
    {NNP_OP_LAYER_NORM_FORWARD,             kFloats,        layer_norm_forward},
    {NNP_OP_LAYER_NORM_BACKWARD,            kFloats,        layer_norm_backward},
    {NNP_OP_DROPOUT_FORWARD,                kFloats,        dropout_forward},
    {NNP_OP_DROPOUT_BACKWARD,               kFloats,        dropout_backward},
    {NNP_OP_BINARY,                         kFloats,        binary},
    {NNP_OP_SCALE,                          kFloats,        scale},
    {NNP_OP_FILL,                           kFloats,        fill},
    {NNP_OP_COPY,                           nnp::kit::any,  copy},
    {NNP_OP_TRANSPOSE,                      nnp::kit::any,  transpose},
    {NNP_OP_CONCAT,                         nnp::kit::any,  concat},
    {NNP_OP_SPLIT,                          nnp::kit::any,  split},
    {NNP_OP_SLICE,                          nnp::kit::any,  slice},
    {NNP_OP_SLICE_BACKWARD,                 nnp::kit::any,  slice_backward},
    {NNP_OP_GATHER,                         nnp::kit::any,  gather},
    {NNP_OP_GATHER_BACKWARD,                kFloats,        gather_backward},
    {NNP_OP_CAST,                           kFloats,        cast, check_cast},
    {NNP_OP_REDUCE,                         kFloats,        reduce},
    {NNP_OP_SGD_UPDATE,                     kFloats,        sgd_update},
    {NNP_OP_ADAM_UPDATE,                    kFloats,        adam_update},
    {NNP_OP_CLIP,                           kFloats,        clip},
    {NNP_OP_UNARY_FORWARD,                  kFloats,        unary_forward},
    {NNP_OP_UNARY_BACKWARD,                 kFloats,        unary_backward},
    {NNP_OP_WHERE,                          kFloats,        where},
};
// clang-format on

}  // namespace ref
