// Op dispatch of libnnplug: nnp_op_execute / nnp_op_supported validate the call (validate.cpp)
// and forward it to the plugin of the stream's (device's) device; the typed wrappers of
// nnplug.h build the tensor arrays in the order nnplug_ops.h documents; nnp_op_kind_name.
#include "internal.hpp"
#include "validate.hpp"

#include <nnplug_common/op_kinds.hpp>

using namespace nnp::host;

extern "C" {

NNP_API const char* nnp_op_kind_name(int32_t op_kind) { return nnp::op_kind_name(op_kind); }

NNP_API nnp_status nnp_op_execute(nnp_stream* stream, int32_t op_kind, const void* params,
                                  size_t n_inputs, const DLTensor* const* inputs, size_t n_outputs,
                                  const DLTensor* const* outputs) {
  if (nnp_status st = check_stream("nnp_op_execute", "stream", stream)) return st;
  const nnp_device* dev = stream->device;
  if (nnp_status st = nnp::host::validate_op(op_kind, params, n_inputs, inputs, n_outputs, outputs,
                                             dev->dl, /*require_data=*/true))
    return st;
  const nnp_plugin* p = dev->plugin;
  return call_slot(p, "op_execute", [&] {
    return p->api->op_execute(stream->handle, op_kind, params, n_inputs, inputs, n_outputs,
                              outputs);
  });
}

NNP_API nnp_status nnp_op_supported(const nnp_device* device, int32_t op_kind, const void* params,
                                    size_t n_inputs, const DLTensor* const* inputs,
                                    size_t n_outputs, const DLTensor* const* outputs) {
  if (nnp_status st = check_device("nnp_op_supported", "device", device)) return st;
  if (nnp_status st = nnp::host::validate_op(op_kind, params, n_inputs, inputs, n_outputs, outputs,
                                             device->dl, /*require_data=*/false))
    return st;
  const nnp_plugin* p = device->plugin;
  return call_slot(p, "op_supported", [&] {
    return p->api->op_supported(device->index, op_kind, params, n_inputs, inputs, n_outputs,
                                outputs);
  });
}

// ------------------------------------------------------------------------ typed wrappers --
#define NNP_IN(...)                     \
  const DLTensor* in[] = {__VA_ARGS__}; \
  const size_t n_in = sizeof(in) / sizeof(in[0])
#define NNP_OUT(...)                     \
  const DLTensor* out[] = {__VA_ARGS__}; \
  const size_t n_out = sizeof(out) / sizeof(out[0])

NNP_API nnp_status nnp_gemm(nnp_stream* s, const nnp_gemm_params* p, const DLTensor* a,
                            const DLTensor* b, const DLTensor* c, const DLTensor* y) {
  NNP_IN(a, b, c);
  NNP_OUT(y);
  return nnp_op_execute(s, NNP_OP_GEMM, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_conv2d_forward(nnp_stream* s, const nnp_conv2d_params* p, const DLTensor* x,
                                      const DLTensor* w, const DLTensor* b, const DLTensor* y) {
  NNP_IN(x, w, b);
  NNP_OUT(y);
  return nnp_op_execute(s, NNP_OP_CONV2D_FORWARD, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_conv2d_backward_data(nnp_stream* s, const nnp_conv2d_params* p,
                                            const DLTensor* dy, const DLTensor* w,
                                            const DLTensor* dx) {
  NNP_IN(dy, w);
  NNP_OUT(dx);
  return nnp_op_execute(s, NNP_OP_CONV2D_BACKWARD_DATA, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_conv2d_backward_filter(nnp_stream* s, const nnp_conv2d_params* p,
                                              const DLTensor* x, const DLTensor* dy,
                                              const DLTensor* dw) {
  NNP_IN(x, dy);
  NNP_OUT(dw);
  return nnp_op_execute(s, NNP_OP_CONV2D_BACKWARD_FILTER, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_conv2d_backward_bias(nnp_stream* s, const DLTensor* dy, const DLTensor* db) {
  NNP_IN(dy);
  NNP_OUT(db);
  return nnp_op_execute(s, NNP_OP_CONV2D_BACKWARD_BIAS, nullptr, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_pool2d_forward(nnp_stream* s, const nnp_pool2d_params* p, const DLTensor* x,
                                      const DLTensor* y) {
  NNP_IN(x);
  NNP_OUT(y);
  return nnp_op_execute(s, NNP_OP_POOL2D_FORWARD, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_pool2d_backward(nnp_stream* s, const nnp_pool2d_params* p, const DLTensor* x,
                                       const DLTensor* y, const DLTensor* dy, const DLTensor* dx) {
  NNP_IN(x, y, dy);
  NNP_OUT(dx);
  return nnp_op_execute(s, NNP_OP_POOL2D_BACKWARD, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_activation_forward(nnp_stream* s, const nnp_activation_params* p,
                                          const DLTensor* x, const DLTensor* y) {
  NNP_IN(x);
  NNP_OUT(y);
  return nnp_op_execute(s, NNP_OP_ACTIVATION_FORWARD, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_activation_backward(nnp_stream* s, const nnp_activation_params* p,
                                           const DLTensor* x, const DLTensor* dy,
                                           const DLTensor* dx) {
  NNP_IN(x, dy);
  NNP_OUT(dx);
  return nnp_op_execute(s, NNP_OP_ACTIVATION_BACKWARD, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_softmax_forward(nnp_stream* s, const nnp_softmax_params* p,
                                       const DLTensor* x, const DLTensor* y) {
  NNP_IN(x);
  NNP_OUT(y);
  return nnp_op_execute(s, NNP_OP_SOFTMAX_FORWARD, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_softmax_backward(nnp_stream* s, const nnp_softmax_params* p,
                                        const DLTensor* y, const DLTensor* dy, const DLTensor* dx) {
  NNP_IN(y, dy);
  NNP_OUT(dx);
  return nnp_op_execute(s, NNP_OP_SOFTMAX_BACKWARD, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_softmax_cross_entropy_forward(nnp_stream* s,
                                                     const nnp_softmax_cross_entropy_params* p,
                                                     const DLTensor* logits, const DLTensor* labels,
                                                     const DLTensor* loss,
                                                     const DLTensor* log_prob) {
  NNP_IN(logits, labels);
  NNP_OUT(loss, log_prob);
  return nnp_op_execute(s, NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_softmax_cross_entropy_backward(nnp_stream* s,
                                                      const nnp_softmax_cross_entropy_params* p,
                                                      const DLTensor* logits,
                                                      const DLTensor* labels, const DLTensor* dloss,
                                                      const DLTensor* dlogits) {
  NNP_IN(logits, labels, dloss);
  NNP_OUT(dlogits);
  return nnp_op_execute(s, NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_batch_norm_forward_training(
    nnp_stream* s, const nnp_batch_norm_params* p, const DLTensor* x, const DLTensor* scale,
    const DLTensor* bias, const DLTensor* y, const DLTensor* running_mean,
    const DLTensor* running_var, const DLTensor* saved_mean, const DLTensor* saved_inv_std) {
  NNP_IN(x, scale, bias);
  NNP_OUT(y, running_mean, running_var, saved_mean, saved_inv_std);
  return nnp_op_execute(s, NNP_OP_BATCH_NORM_FORWARD_TRAINING, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_batch_norm_forward_inference(nnp_stream* s, const nnp_batch_norm_params* p,
                                                    const DLTensor* x, const DLTensor* scale,
                                                    const DLTensor* bias, const DLTensor* mean,
                                                    const DLTensor* var, const DLTensor* y) {
  NNP_IN(x, scale, bias, mean, var);
  NNP_OUT(y);
  return nnp_op_execute(s, NNP_OP_BATCH_NORM_FORWARD_INFERENCE, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_batch_norm_backward(nnp_stream* s, const nnp_batch_norm_params* p,
                                           const DLTensor* x, const DLTensor* dy,
                                           const DLTensor* scale, const DLTensor* saved_mean,
                                           const DLTensor* saved_inv_std, const DLTensor* dx,
                                           const DLTensor* dscale, const DLTensor* dbias) {
  NNP_IN(x, dy, scale, saved_mean, saved_inv_std);
  NNP_OUT(dx, dscale, dbias);
  return nnp_op_execute(s, NNP_OP_BATCH_NORM_BACKWARD, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_layer_norm_forward(nnp_stream* s, const nnp_layer_norm_params* p,
                                          const DLTensor* x, const DLTensor* scale,
                                          const DLTensor* bias, const DLTensor* y,
                                          const DLTensor* mean, const DLTensor* inv_std) {
  NNP_IN(x, scale, bias);
  NNP_OUT(y, mean, inv_std);
  return nnp_op_execute(s, NNP_OP_LAYER_NORM_FORWARD, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_layer_norm_backward(nnp_stream* s, const nnp_layer_norm_params* p,
                                           const DLTensor* x, const DLTensor* dy,
                                           const DLTensor* scale, const DLTensor* mean,
                                           const DLTensor* inv_std, const DLTensor* dx,
                                           const DLTensor* dscale, const DLTensor* dbias) {
  NNP_IN(x, dy, scale, mean, inv_std);
  NNP_OUT(dx, dscale, dbias);
  return nnp_op_execute(s, NNP_OP_LAYER_NORM_BACKWARD, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_dropout_forward(nnp_stream* s, const nnp_dropout_params* p,
                                       const DLTensor* x, const DLTensor* y, const DLTensor* mask) {
  NNP_IN(x);
  NNP_OUT(y, mask);
  return nnp_op_execute(s, NNP_OP_DROPOUT_FORWARD, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_dropout_backward(nnp_stream* s, const nnp_dropout_params* p,
                                        const DLTensor* dy, const DLTensor* dx) {
  NNP_IN(dy);
  NNP_OUT(dx);
  return nnp_op_execute(s, NNP_OP_DROPOUT_BACKWARD, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_binary(nnp_stream* s, const nnp_binary_params* p, const DLTensor* a,
                              const DLTensor* b, const DLTensor* y) {
  NNP_IN(a, b);
  NNP_OUT(y);
  return nnp_op_execute(s, NNP_OP_BINARY, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_scale(nnp_stream* s, const nnp_scale_params* p, const DLTensor* x,
                             const DLTensor* y) {
  NNP_IN(x);
  NNP_OUT(y);
  return nnp_op_execute(s, NNP_OP_SCALE, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_fill(nnp_stream* s, const nnp_fill_params* p, const DLTensor* y) {
  NNP_OUT(y);
  return nnp_op_execute(s, NNP_OP_FILL, p, 0, nullptr, n_out, out);
}

NNP_API nnp_status nnp_copy(nnp_stream* s, const DLTensor* x, const DLTensor* y) {
  NNP_IN(x);
  NNP_OUT(y);
  return nnp_op_execute(s, NNP_OP_COPY, nullptr, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_transpose(nnp_stream* s, const nnp_transpose_params* p, const DLTensor* x,
                                 const DLTensor* y) {
  NNP_IN(x);
  NNP_OUT(y);
  return nnp_op_execute(s, NNP_OP_TRANSPOSE, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_cast(nnp_stream* s, const DLTensor* x, const DLTensor* y) {
  NNP_IN(x);
  NNP_OUT(y);
  return nnp_op_execute(s, NNP_OP_CAST, nullptr, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_reduce(nnp_stream* s, const nnp_reduce_params* p, const DLTensor* x,
                              const DLTensor* y) {
  NNP_IN(x);
  NNP_OUT(y);
  return nnp_op_execute(s, NNP_OP_REDUCE, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_sgd_update(nnp_stream* s, const nnp_sgd_params* p, const DLTensor* grad,
                                  const DLTensor* param, const DLTensor* momentum_buffer) {
  NNP_IN(grad);
  NNP_OUT(param, momentum_buffer);
  return nnp_op_execute(s, NNP_OP_SGD_UPDATE, p, n_in, in, n_out, out);
}

NNP_API nnp_status nnp_adam_update(nnp_stream* s, const nnp_adam_params* p, const DLTensor* grad,
                                   const DLTensor* param, const DLTensor* m, const DLTensor* v) {
  NNP_IN(grad);
  NNP_OUT(param, m, v);
  return nnp_op_execute(s, NNP_OP_ADAM_UPDATE, p, n_in, in, n_out, out);
}

}  // extern "C"
