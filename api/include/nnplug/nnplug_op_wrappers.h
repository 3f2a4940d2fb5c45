/*
 * nnplug_op_wrappers.h — typed wrappers of nnp_op_execute(), one per op kind; included by
 * nnplug.h. GENERATED from api/ops/ops.toml by api/ops/gen_ops.py: edit the table, not this file.
 *
 * Each wrapper is nnp_op_execute(stream, kind, params, inputs, outputs) with the tensors in
 * the order of nnplug_ops.h: inputs first, then outputs. Optional tensors may be NULL.
 * A variadic tensor (name[n]) is passed as a count and an array of n tensors. A wrapper
 * takes the tensors its op had when it was added; optional tensors added in a later ABI
 * minor ("Added later") are passed through nnp_op_execute, so that no wrapper's
 * signature ever changes.
 * Statuses, ownership and thread safety are those of nnp_op_execute (nnplug.h).
 */
#ifndef NNPLUG_OP_WRAPPERS_H_
#define NNPLUG_OP_WRAPPERS_H_

#include <nnplug/nnplug.h> /* nnp_stream, NNP_API; it includes this header too */

#ifdef __cplusplus
extern "C" {
#endif

/** NNP_OP_GEMM: inputs A, B, C?; outputs Y; nnp_gemm_params. */
NNP_API nnp_status nnp_gemm(nnp_stream* stream, const nnp_gemm_params* params, const DLTensor* A,
    const DLTensor* B, const DLTensor* C, const DLTensor* Y);
/** NNP_OP_MATMUL: inputs A, B; outputs Y; nnp_matmul_params. */
NNP_API nnp_status nnp_matmul(nnp_stream* stream, const nnp_matmul_params* params,
    const DLTensor* A, const DLTensor* B, const DLTensor* Y);
/** NNP_OP_CONV2D_FORWARD: inputs x, w, b?; outputs y; nnp_conv2d_params. */
NNP_API nnp_status nnp_conv2d_forward(nnp_stream* stream, const nnp_conv2d_params* params,
    const DLTensor* x, const DLTensor* w, const DLTensor* b, const DLTensor* y);
/** NNP_OP_CONV2D_BACKWARD_DATA: inputs dy, w; outputs dx; nnp_conv2d_params. */
NNP_API nnp_status nnp_conv2d_backward_data(nnp_stream* stream, const nnp_conv2d_params* params,
    const DLTensor* dy, const DLTensor* w, const DLTensor* dx);
/** NNP_OP_CONV2D_BACKWARD_FILTER: inputs x, dy; outputs dw; nnp_conv2d_params. */
NNP_API nnp_status nnp_conv2d_backward_filter(nnp_stream* stream, const nnp_conv2d_params* params,
    const DLTensor* x, const DLTensor* dy, const DLTensor* dw);
/** NNP_OP_CONV2D_BACKWARD_BIAS: inputs dy; outputs db; params NULL. */
NNP_API nnp_status nnp_conv2d_backward_bias(nnp_stream* stream, const DLTensor* dy,
    const DLTensor* db);
/** NNP_OP_CONV_FORWARD: inputs x, w, b?; outputs y; nnp_conv_params. */
NNP_API nnp_status nnp_conv_forward(nnp_stream* stream, const nnp_conv_params* params,
    const DLTensor* x, const DLTensor* w, const DLTensor* b, const DLTensor* y);
/** NNP_OP_CONV_BACKWARD_DATA: inputs dy, w; outputs dx; nnp_conv_params. */
NNP_API nnp_status nnp_conv_backward_data(nnp_stream* stream, const nnp_conv_params* params,
    const DLTensor* dy, const DLTensor* w, const DLTensor* dx);
/** NNP_OP_CONV_BACKWARD_FILTER: inputs x, dy; outputs dw; nnp_conv_params. */
NNP_API nnp_status nnp_conv_backward_filter(nnp_stream* stream, const nnp_conv_params* params,
    const DLTensor* x, const DLTensor* dy, const DLTensor* dw);
/** NNP_OP_CONV_BACKWARD_BIAS: inputs dy; outputs db; params NULL. */
NNP_API nnp_status nnp_conv_backward_bias(nnp_stream* stream, const DLTensor* dy,
    const DLTensor* db);
/** NNP_OP_CONV_TRANSPOSE_FORWARD: inputs x, w, b?; outputs y; nnp_conv_transpose_params. */
NNP_API nnp_status nnp_conv_transpose_forward(nnp_stream* stream,
    const nnp_conv_transpose_params* params, const DLTensor* x, const DLTensor* w,
    const DLTensor* b, const DLTensor* y);
/** NNP_OP_CONV_TRANSPOSE_BACKWARD_DATA: inputs dy, w; outputs dx; nnp_conv_transpose_params. */
NNP_API nnp_status nnp_conv_transpose_backward_data(nnp_stream* stream,
    const nnp_conv_transpose_params* params, const DLTensor* dy, const DLTensor* w,
    const DLTensor* dx);
/** NNP_OP_CONV_TRANSPOSE_BACKWARD_FILTER: inputs x, dy; outputs dw; nnp_conv_transpose_params. */
NNP_API nnp_status nnp_conv_transpose_backward_filter(nnp_stream* stream,
    const nnp_conv_transpose_params* params, const DLTensor* x, const DLTensor* dy,
    const DLTensor* dw);
/** NNP_OP_POOL2D_FORWARD: inputs x; outputs y; nnp_pool2d_params. */
NNP_API nnp_status nnp_pool2d_forward(nnp_stream* stream, const nnp_pool2d_params* params,
    const DLTensor* x, const DLTensor* y);
/** NNP_OP_POOL2D_BACKWARD: inputs x, y, dy; outputs dx; nnp_pool2d_params. */
NNP_API nnp_status nnp_pool2d_backward(nnp_stream* stream, const nnp_pool2d_params* params,
    const DLTensor* x, const DLTensor* y, const DLTensor* dy, const DLTensor* dx);
/** NNP_OP_POOL_FORWARD: inputs x; outputs y, indices?; nnp_pool_params. */
NNP_API nnp_status nnp_pool_forward(nnp_stream* stream, const nnp_pool_params* params,
    const DLTensor* x, const DLTensor* y, const DLTensor* indices);
/** NNP_OP_POOL_BACKWARD: inputs x, y, dy; outputs dx; nnp_pool_params. */
NNP_API nnp_status nnp_pool_backward(nnp_stream* stream, const nnp_pool_params* params,
    const DLTensor* x, const DLTensor* y, const DLTensor* dy, const DLTensor* dx);
/** NNP_OP_ACTIVATION_FORWARD: inputs x; outputs y; nnp_activation_params. */
NNP_API nnp_status nnp_activation_forward(nnp_stream* stream, const nnp_activation_params* params,
    const DLTensor* x, const DLTensor* y);
/** NNP_OP_ACTIVATION_BACKWARD: inputs x, dy; outputs dx; nnp_activation_params. */
NNP_API nnp_status nnp_activation_backward(nnp_stream* stream, const nnp_activation_params* params,
    const DLTensor* x, const DLTensor* dy, const DLTensor* dx);
/** NNP_OP_SOFTMAX_FORWARD: inputs x; outputs y; nnp_softmax_params. */
NNP_API nnp_status nnp_softmax_forward(nnp_stream* stream, const nnp_softmax_params* params,
    const DLTensor* x, const DLTensor* y);
/** NNP_OP_SOFTMAX_BACKWARD: inputs y, dy; outputs dx; nnp_softmax_params. */
NNP_API nnp_status nnp_softmax_backward(nnp_stream* stream, const nnp_softmax_params* params,
    const DLTensor* y, const DLTensor* dy, const DLTensor* dx);
/** NNP_OP_ATTENTION_FORWARD: inputs Q, K, V, attn_mask?; outputs Y, softmax_lse?; nnp_attention_params. */
NNP_API nnp_status nnp_attention_forward(nnp_stream* stream, const nnp_attention_params* params,
    const DLTensor* Q, const DLTensor* K, const DLTensor* V, const DLTensor* attn_mask,
    const DLTensor* Y, const DLTensor* softmax_lse);
/** NNP_OP_ATTENTION_BACKWARD: inputs Q, K, V, attn_mask?, Y, dY, softmax_lse; outputs dQ, dK, dV; nnp_attention_params. */
NNP_API nnp_status nnp_attention_backward(nnp_stream* stream, const nnp_attention_params* params,
    const DLTensor* Q, const DLTensor* K, const DLTensor* V, const DLTensor* attn_mask,
    const DLTensor* Y, const DLTensor* dY, const DLTensor* softmax_lse, const DLTensor* dQ,
    const DLTensor* dK, const DLTensor* dV);
/** NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD: inputs logits, labels; outputs loss, log_prob?; nnp_softmax_cross_entropy_params. */
NNP_API nnp_status nnp_softmax_cross_entropy_forward(nnp_stream* stream,
    const nnp_softmax_cross_entropy_params* params, const DLTensor* logits, const DLTensor* labels,
    const DLTensor* loss, const DLTensor* log_prob);
/** NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD: inputs logits, labels, dloss; outputs dlogits; nnp_softmax_cross_entropy_params. */
NNP_API nnp_status nnp_softmax_cross_entropy_backward(nnp_stream* stream,
    const nnp_softmax_cross_entropy_params* params, const DLTensor* logits, const DLTensor* labels,
    const DLTensor* dloss, const DLTensor* dlogits);
/** NNP_OP_NLL_LOSS_FORWARD: inputs input, target, weight?; outputs loss; nnp_nll_loss_params. */
NNP_API nnp_status nnp_nll_loss_forward(nnp_stream* stream, const nnp_nll_loss_params* params,
    const DLTensor* input, const DLTensor* target, const DLTensor* weight, const DLTensor* loss);
/** NNP_OP_NLL_LOSS_BACKWARD: inputs input, target, dloss, weight?; outputs dinput; nnp_nll_loss_params. */
NNP_API nnp_status nnp_nll_loss_backward(nnp_stream* stream, const nnp_nll_loss_params* params,
    const DLTensor* input, const DLTensor* target, const DLTensor* dloss, const DLTensor* weight,
    const DLTensor* dinput);
/** NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_FORWARD: inputs scores, labels, weights?; outputs loss, log_prob?; nnp_softmax_cross_entropy_loss_params. */
NNP_API nnp_status nnp_softmax_cross_entropy_loss_forward(nnp_stream* stream,
    const nnp_softmax_cross_entropy_loss_params* params, const DLTensor* scores,
    const DLTensor* labels, const DLTensor* weights, const DLTensor* loss,
    const DLTensor* log_prob);
/** NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_BACKWARD: inputs scores, labels, dloss, weights?; outputs dscores; nnp_softmax_cross_entropy_loss_params. */
NNP_API nnp_status nnp_softmax_cross_entropy_loss_backward(nnp_stream* stream,
    const nnp_softmax_cross_entropy_loss_params* params, const DLTensor* scores,
    const DLTensor* labels, const DLTensor* dloss, const DLTensor* weights,
    const DLTensor* dscores);
/** NNP_OP_BATCH_NORM_FORWARD_TRAINING: inputs x, scale, bias; outputs y, running_mean, running_var, saved_mean, saved_inv_std; nnp_batch_norm_params. */
NNP_API nnp_status nnp_batch_norm_forward_training(nnp_stream* stream,
    const nnp_batch_norm_params* params, const DLTensor* x, const DLTensor* scale,
    const DLTensor* bias, const DLTensor* y, const DLTensor* running_mean,
    const DLTensor* running_var, const DLTensor* saved_mean, const DLTensor* saved_inv_std);
/** NNP_OP_BATCH_NORM_FORWARD_INFERENCE: inputs x, scale, bias, mean, var; outputs y; nnp_batch_norm_params. */
NNP_API nnp_status nnp_batch_norm_forward_inference(nnp_stream* stream,
    const nnp_batch_norm_params* params, const DLTensor* x, const DLTensor* scale,
    const DLTensor* bias, const DLTensor* mean, const DLTensor* var, const DLTensor* y);
/** NNP_OP_BATCH_NORM_BACKWARD: inputs x, dy, scale, saved_mean, saved_inv_std; outputs dx, dscale, dbias; nnp_batch_norm_params. */
NNP_API nnp_status nnp_batch_norm_backward(nnp_stream* stream, const nnp_batch_norm_params* params,
    const DLTensor* x, const DLTensor* dy, const DLTensor* scale, const DLTensor* saved_mean,
    const DLTensor* saved_inv_std, const DLTensor* dx, const DLTensor* dscale,
    const DLTensor* dbias);
/** NNP_OP_LAYER_NORM_FORWARD: inputs x, scale, bias?; outputs y, mean?, inv_std?; nnp_layer_norm_params. */
NNP_API nnp_status nnp_layer_norm_forward(nnp_stream* stream, const nnp_layer_norm_params* params,
    const DLTensor* x, const DLTensor* scale, const DLTensor* bias, const DLTensor* y,
    const DLTensor* mean, const DLTensor* inv_std);
/** NNP_OP_LAYER_NORM_BACKWARD: inputs x, dy, scale, mean, inv_std; outputs dx, dscale, dbias?; nnp_layer_norm_params. */
NNP_API nnp_status nnp_layer_norm_backward(nnp_stream* stream, const nnp_layer_norm_params* params,
    const DLTensor* x, const DLTensor* dy, const DLTensor* scale, const DLTensor* mean,
    const DLTensor* inv_std, const DLTensor* dx, const DLTensor* dscale, const DLTensor* dbias);
/** NNP_OP_DROPOUT_FORWARD: inputs x; outputs y, mask?; nnp_dropout_params.
 * Added later, passed through nnp_op_execute only: step? (ABI 1.4). */
NNP_API nnp_status nnp_dropout_forward(nnp_stream* stream, const nnp_dropout_params* params,
    const DLTensor* x, const DLTensor* y, const DLTensor* mask);
/** NNP_OP_DROPOUT_BACKWARD: inputs dy; outputs dx; nnp_dropout_params.
 * Added later, passed through nnp_op_execute only: step? (ABI 1.4). */
NNP_API nnp_status nnp_dropout_backward(nnp_stream* stream, const nnp_dropout_params* params,
    const DLTensor* dy, const DLTensor* dx);
/** NNP_OP_BINARY: inputs a, b; outputs y; nnp_binary_params. */
NNP_API nnp_status nnp_binary(nnp_stream* stream, const nnp_binary_params* params,
    const DLTensor* a, const DLTensor* b, const DLTensor* y);
/** NNP_OP_SCALE: inputs x; outputs y; nnp_scale_params. */
NNP_API nnp_status nnp_scale(nnp_stream* stream, const nnp_scale_params* params, const DLTensor* x,
    const DLTensor* y);
/** NNP_OP_FILL: inputs none; outputs y; nnp_fill_params. */
NNP_API nnp_status nnp_fill(nnp_stream* stream, const nnp_fill_params* params, const DLTensor* y);
/** NNP_OP_COPY: inputs x; outputs y; params NULL. */
NNP_API nnp_status nnp_copy(nnp_stream* stream, const DLTensor* x, const DLTensor* y);
/** NNP_OP_TRANSPOSE: inputs x; outputs y; nnp_transpose_params. */
NNP_API nnp_status nnp_transpose(nnp_stream* stream, const nnp_transpose_params* params,
    const DLTensor* x, const DLTensor* y);
/** NNP_OP_CONCAT: inputs xs[n_xs]; outputs y; nnp_concat_params. */
NNP_API nnp_status nnp_concat(nnp_stream* stream, const nnp_concat_params* params, size_t n_xs,
    const DLTensor* const* xs, const DLTensor* y);
/** NNP_OP_SPLIT: inputs x; outputs ys[n_ys]; nnp_split_params. */
NNP_API nnp_status nnp_split(nnp_stream* stream, const nnp_split_params* params, const DLTensor* x,
    size_t n_ys, const DLTensor* const* ys);
/** NNP_OP_SLICE: inputs x; outputs y; nnp_slice_params. */
NNP_API nnp_status nnp_slice(nnp_stream* stream, const nnp_slice_params* params, const DLTensor* x,
    const DLTensor* y);
/** NNP_OP_GATHER: inputs data, indices; outputs y; nnp_gather_params. */
NNP_API nnp_status nnp_gather(nnp_stream* stream, const nnp_gather_params* params,
    const DLTensor* data, const DLTensor* indices, const DLTensor* y);
/** NNP_OP_SLICE_BACKWARD: inputs dy; outputs dx; nnp_slice_params. */
NNP_API nnp_status nnp_slice_backward(nnp_stream* stream, const nnp_slice_params* params,
    const DLTensor* dy, const DLTensor* dx);
/** NNP_OP_GATHER_BACKWARD: inputs dy, indices; outputs dx; nnp_gather_params. */
NNP_API nnp_status nnp_gather_backward(nnp_stream* stream, const nnp_gather_params* params,
    const DLTensor* dy, const DLTensor* indices, const DLTensor* dx);
/** NNP_OP_CAST: inputs x; outputs y; params NULL. */
NNP_API nnp_status nnp_cast(nnp_stream* stream, const DLTensor* x, const DLTensor* y);
/** NNP_OP_REDUCE: inputs x; outputs y; nnp_reduce_params. */
NNP_API nnp_status nnp_reduce(nnp_stream* stream, const nnp_reduce_params* params,
    const DLTensor* x, const DLTensor* y);
/** NNP_OP_CUMSUM: inputs x; outputs y; nnp_cumsum_params. */
NNP_API nnp_status nnp_cumsum(nnp_stream* stream, const nnp_cumsum_params* params,
    const DLTensor* x, const DLTensor* y);
/** NNP_OP_SGD_UPDATE: inputs grad; outputs param, momentum_buffer?; nnp_sgd_params. */
NNP_API nnp_status nnp_sgd_update(nnp_stream* stream, const nnp_sgd_params* params,
    const DLTensor* grad, const DLTensor* param, const DLTensor* momentum_buffer);
/** NNP_OP_ADAM_UPDATE: inputs grad; outputs param, m, v; nnp_adam_params.
 * Added later, passed through nnp_op_execute only: step? (ABI 1.4), lr? (ABI 1.4). */
NNP_API nnp_status nnp_adam_update(nnp_stream* stream, const nnp_adam_params* params,
    const DLTensor* grad, const DLTensor* param, const DLTensor* m, const DLTensor* v);
/** NNP_OP_CLIP: inputs x; outputs y; nnp_clip_params. */
NNP_API nnp_status nnp_clip(nnp_stream* stream, const nnp_clip_params* params, const DLTensor* x,
    const DLTensor* y);
/** NNP_OP_UNARY_FORWARD: inputs x; outputs y; nnp_unary_params. */
NNP_API nnp_status nnp_unary_forward(nnp_stream* stream, const nnp_unary_params* params,
    const DLTensor* x, const DLTensor* y);
/** NNP_OP_UNARY_BACKWARD: inputs x, dy; outputs dx; nnp_unary_params. */
NNP_API nnp_status nnp_unary_backward(nnp_stream* stream, const nnp_unary_params* params,
    const DLTensor* x, const DLTensor* dy, const DLTensor* dx);
/** NNP_OP_WHERE: inputs condition, x, y; outputs output; params NULL. */
NNP_API nnp_status nnp_where(nnp_stream* stream, const DLTensor* condition, const DLTensor* x,
    const DLTensor* y, const DLTensor* output);
/** NNP_OP_ALL_REDUCE: inputs x; outputs y; nnp_all_reduce_params. */
NNP_API nnp_status nnp_all_reduce(nnp_stream* stream, const nnp_all_reduce_params* params,
    const DLTensor* x, const DLTensor* y);
/** NNP_OP_BROADCAST: inputs x; outputs y; nnp_broadcast_params. */
NNP_API nnp_status nnp_broadcast(nnp_stream* stream, const nnp_broadcast_params* params,
    const DLTensor* x, const DLTensor* y);
/** NNP_OP_ALL_GATHER: inputs x; outputs y; nnp_all_gather_params. */
NNP_API nnp_status nnp_all_gather(nnp_stream* stream, const nnp_all_gather_params* params,
    const DLTensor* x, const DLTensor* y);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NNPLUG_OP_WRAPPERS_H_ */
