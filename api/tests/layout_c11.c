/*
 * layout_c11.c — ABI 1.0 layout pins: the size and every field offset of each public struct,
 * the *_STRUCT_SIZE_1_0 macros and every enumerator value, as released in 1.0 (LP64 Linux).
 * Fields are only ever appended (docs/abi.md): a change that moves, retypes or removes a
 * field, or renumbers an enumerator, fails to compile here. A struct that grows at its end
 * needs its NNP_PIN_SIZE line updated and a changelog entry; its offsets stay.
 */
#include <nnplug/nnplug.h>

#include <assert.h>
#include <stddef.h>
#include <stdio.h>

#define NNP_PIN(type, field, offset) \
  static_assert(offsetof(type, field) == (offset), #type "." #field " moved (ABI 1.0)")
#define NNP_PIN_SIZE(type, size) \
  static_assert(sizeof(type) == (size), "sizeof(" #type ") changed (ABI 1.0)")
#define NNP_PIN_VALUE(name, value) static_assert((name) == (value), #name " changed (ABI 1.0)")

#if defined(__x86_64__) || defined(__aarch64__)
/* nnp_device_props */
NNP_PIN_SIZE(nnp_device_props, 56);
NNP_PIN(nnp_device_props, struct_size, 0);
NNP_PIN(nnp_device_props, name, 8);
NNP_PIN(nnp_device_props, plugin_name, 16);
NNP_PIN(nnp_device_props, description, 24);
NNP_PIN(nnp_device_props, device_type, 32);
NNP_PIN(nnp_device_props, device_id, 36);
NNP_PIN(nnp_device_props, memory_bytes, 40);
NNP_PIN(nnp_device_props, auto_priority, 48);
NNP_PIN(nnp_device_props, num_threads, 52);
/* nnp_host_api */
NNP_PIN_SIZE(nnp_host_api, 40);
NNP_PIN(nnp_host_api, struct_size, 0);
NNP_PIN(nnp_host_api, abi_version_major, 8);
NNP_PIN(nnp_host_api, abi_version_minor, 12);
NNP_PIN(nnp_host_api, host_context, 16);
NNP_PIN(nnp_host_api, set_error, 24);
NNP_PIN(nnp_host_api, log, 32);
/* nnp_plugin_api */
NNP_PIN_SIZE(nnp_plugin_api, 136);
NNP_PIN(nnp_plugin_api, struct_size, 0);
NNP_PIN(nnp_plugin_api, abi_version_major, 8);
NNP_PIN(nnp_plugin_api, abi_version_minor, 12);
NNP_PIN(nnp_plugin_api, name, 16);
NNP_PIN(nnp_plugin_api, version, 24);
NNP_PIN(nnp_plugin_api, initialize, 32);
NNP_PIN(nnp_plugin_api, shutdown, 40);
NNP_PIN(nnp_plugin_api, get_device_count, 48);
NNP_PIN(nnp_plugin_api, get_device_props, 56);
NNP_PIN(nnp_plugin_api, mem_alloc, 64);
NNP_PIN(nnp_plugin_api, mem_free, 72);
NNP_PIN(nnp_plugin_api, stream_create, 80);
NNP_PIN(nnp_plugin_api, stream_destroy, 88);
NNP_PIN(nnp_plugin_api, stream_synchronize, 96);
NNP_PIN(nnp_plugin_api, memcpy_async, 104);
NNP_PIN(nnp_plugin_api, op_supported, 112);
NNP_PIN(nnp_plugin_api, op_execute, 120);
NNP_PIN(nnp_plugin_api, stream_set_attribute, 128);
/* nnp_load_record */
NNP_PIN_SIZE(nnp_load_record, 64);
NNP_PIN(nnp_load_record, struct_size, 0);
NNP_PIN(nnp_load_record, path, 8);
NNP_PIN(nnp_load_record, name, 16);
NNP_PIN(nnp_load_record, plugin_version, 24);
NNP_PIN(nnp_load_record, abi_version_major, 32);
NNP_PIN(nnp_load_record, abi_version_minor, 36);
NNP_PIN(nnp_load_record, state, 40);
NNP_PIN(nnp_load_record, status, 44);
NNP_PIN(nnp_load_record, reason, 48);
NNP_PIN(nnp_load_record, n_devices, 56);
/* nnp_gemm_params */
NNP_PIN_SIZE(nnp_gemm_params, 32);
NNP_PIN(nnp_gemm_params, struct_size, 0);
NNP_PIN(nnp_gemm_params, trans_a, 8);
NNP_PIN(nnp_gemm_params, trans_b, 12);
NNP_PIN(nnp_gemm_params, alpha, 16);
NNP_PIN(nnp_gemm_params, beta, 24);
/* nnp_conv2d_params */
NNP_PIN_SIZE(nnp_conv2d_params, 48);
NNP_PIN(nnp_conv2d_params, struct_size, 0);
NNP_PIN(nnp_conv2d_params, stride_h, 8);
NNP_PIN(nnp_conv2d_params, stride_w, 12);
NNP_PIN(nnp_conv2d_params, pad_top, 16);
NNP_PIN(nnp_conv2d_params, pad_bottom, 20);
NNP_PIN(nnp_conv2d_params, pad_left, 24);
NNP_PIN(nnp_conv2d_params, pad_right, 28);
NNP_PIN(nnp_conv2d_params, dilation_h, 32);
NNP_PIN(nnp_conv2d_params, dilation_w, 36);
NNP_PIN(nnp_conv2d_params, groups, 40);
/* nnp_pool2d_params */
NNP_PIN_SIZE(nnp_pool2d_params, 56);
NNP_PIN(nnp_pool2d_params, struct_size, 0);
NNP_PIN(nnp_pool2d_params, mode, 8);
NNP_PIN(nnp_pool2d_params, window_h, 12);
NNP_PIN(nnp_pool2d_params, window_w, 16);
NNP_PIN(nnp_pool2d_params, stride_h, 20);
NNP_PIN(nnp_pool2d_params, stride_w, 24);
NNP_PIN(nnp_pool2d_params, pad_top, 28);
NNP_PIN(nnp_pool2d_params, pad_bottom, 32);
NNP_PIN(nnp_pool2d_params, pad_left, 36);
NNP_PIN(nnp_pool2d_params, pad_right, 40);
NNP_PIN(nnp_pool2d_params, ceil_mode, 44);
NNP_PIN(nnp_pool2d_params, count_include_pad, 48);
NNP_PIN(nnp_pool2d_params, global, 52);
/* nnp_activation_params */
NNP_PIN_SIZE(nnp_activation_params, 24);
NNP_PIN(nnp_activation_params, struct_size, 0);
NNP_PIN(nnp_activation_params, function, 8);
NNP_PIN(nnp_activation_params, reserved0, 12);
NNP_PIN(nnp_activation_params, alpha, 16);
/* nnp_softmax_params */
NNP_PIN_SIZE(nnp_softmax_params, 16);
NNP_PIN(nnp_softmax_params, struct_size, 0);
NNP_PIN(nnp_softmax_params, axis, 8);
NNP_PIN(nnp_softmax_params, log, 12);
/* nnp_softmax_cross_entropy_params */
NNP_PIN_SIZE(nnp_softmax_cross_entropy_params, 24);
NNP_PIN(nnp_softmax_cross_entropy_params, struct_size, 0);
NNP_PIN(nnp_softmax_cross_entropy_params, reduction, 8);
NNP_PIN(nnp_softmax_cross_entropy_params, has_ignore_index, 12);
NNP_PIN(nnp_softmax_cross_entropy_params, ignore_index, 16);
/* nnp_batch_norm_params */
NNP_PIN_SIZE(nnp_batch_norm_params, 24);
NNP_PIN(nnp_batch_norm_params, struct_size, 0);
NNP_PIN(nnp_batch_norm_params, epsilon, 8);
NNP_PIN(nnp_batch_norm_params, momentum, 16);
/* nnp_layer_norm_params */
NNP_PIN_SIZE(nnp_layer_norm_params, 24);
NNP_PIN(nnp_layer_norm_params, struct_size, 0);
NNP_PIN(nnp_layer_norm_params, axis, 8);
NNP_PIN(nnp_layer_norm_params, reserved0, 12);
NNP_PIN(nnp_layer_norm_params, epsilon, 16);
/* nnp_dropout_params */
NNP_PIN_SIZE(nnp_dropout_params, 32);
NNP_PIN(nnp_dropout_params, struct_size, 0);
NNP_PIN(nnp_dropout_params, ratio, 8);
NNP_PIN(nnp_dropout_params, seed, 16);
NNP_PIN(nnp_dropout_params, offset, 24);
/* nnp_binary_params */
NNP_PIN_SIZE(nnp_binary_params, 16);
NNP_PIN(nnp_binary_params, struct_size, 0);
NNP_PIN(nnp_binary_params, op, 8);
/* nnp_scale_params */
NNP_PIN_SIZE(nnp_scale_params, 16);
NNP_PIN(nnp_scale_params, struct_size, 0);
NNP_PIN(nnp_scale_params, alpha, 8);
/* nnp_fill_params */
NNP_PIN_SIZE(nnp_fill_params, 16);
NNP_PIN(nnp_fill_params, struct_size, 0);
NNP_PIN(nnp_fill_params, value, 8);
/* nnp_transpose_params */
NNP_PIN_SIZE(nnp_transpose_params, 40);
NNP_PIN(nnp_transpose_params, struct_size, 0);
NNP_PIN(nnp_transpose_params, perm, 8);
/* nnp_reduce_params */
NNP_PIN_SIZE(nnp_reduce_params, 56);
NNP_PIN(nnp_reduce_params, struct_size, 0);
NNP_PIN(nnp_reduce_params, op, 8);
NNP_PIN(nnp_reduce_params, keepdims, 12);
NNP_PIN(nnp_reduce_params, n_axes, 16);
NNP_PIN(nnp_reduce_params, axes, 20);
/* nnp_sgd_params */
NNP_PIN_SIZE(nnp_sgd_params, 48);
NNP_PIN(nnp_sgd_params, struct_size, 0);
NNP_PIN(nnp_sgd_params, lr, 8);
NNP_PIN(nnp_sgd_params, momentum, 16);
NNP_PIN(nnp_sgd_params, dampening, 24);
NNP_PIN(nnp_sgd_params, weight_decay, 32);
NNP_PIN(nnp_sgd_params, nesterov, 40);
NNP_PIN(nnp_sgd_params, reserved0, 44);
/* nnp_adam_params */
NNP_PIN_SIZE(nnp_adam_params, 64);
NNP_PIN(nnp_adam_params, struct_size, 0);
NNP_PIN(nnp_adam_params, lr, 8);
NNP_PIN(nnp_adam_params, beta1, 16);
NNP_PIN(nnp_adam_params, beta2, 24);
NNP_PIN(nnp_adam_params, epsilon, 32);
NNP_PIN(nnp_adam_params, weight_decay, 40);
NNP_PIN(nnp_adam_params, step, 48);
NNP_PIN(nnp_adam_params, adamw, 56);
NNP_PIN(nnp_adam_params, reserved0, 60);
/* 1.0 sizes */
NNP_PIN_VALUE(NNP_DEVICE_PROPS_STRUCT_SIZE_1_0, 56);
NNP_PIN_VALUE(NNP_HOST_API_STRUCT_SIZE_1_0, 40);
NNP_PIN_VALUE(NNP_PLUGIN_API_STRUCT_SIZE_1_0, 136);
NNP_PIN_VALUE(NNP_GEMM_PARAMS_STRUCT_SIZE_1_0, 32);
NNP_PIN_VALUE(NNP_CONV2D_PARAMS_STRUCT_SIZE_1_0, 48);
NNP_PIN_VALUE(NNP_POOL2D_PARAMS_STRUCT_SIZE_1_0, 56);
NNP_PIN_VALUE(NNP_ACTIVATION_PARAMS_STRUCT_SIZE_1_0, 24);
NNP_PIN_VALUE(NNP_SOFTMAX_PARAMS_STRUCT_SIZE_1_0, 16);
NNP_PIN_VALUE(NNP_SOFTMAX_CROSS_ENTROPY_PARAMS_STRUCT_SIZE_1_0, 24);
NNP_PIN_VALUE(NNP_BATCH_NORM_PARAMS_STRUCT_SIZE_1_0, 24);
NNP_PIN_VALUE(NNP_LAYER_NORM_PARAMS_STRUCT_SIZE_1_0, 24);
NNP_PIN_VALUE(NNP_DROPOUT_PARAMS_STRUCT_SIZE_1_0, 32);
NNP_PIN_VALUE(NNP_BINARY_PARAMS_STRUCT_SIZE_1_0, 16);
NNP_PIN_VALUE(NNP_SCALE_PARAMS_STRUCT_SIZE_1_0, 16);
NNP_PIN_VALUE(NNP_FILL_PARAMS_STRUCT_SIZE_1_0, 16);
NNP_PIN_VALUE(NNP_TRANSPOSE_PARAMS_STRUCT_SIZE_1_0, 40);
NNP_PIN_VALUE(NNP_REDUCE_PARAMS_STRUCT_SIZE_1_0, 56);
NNP_PIN_VALUE(NNP_SGD_PARAMS_STRUCT_SIZE_1_0, 48);
NNP_PIN_VALUE(NNP_ADAM_PARAMS_STRUCT_SIZE_1_0, 64);
/* enumerator values (never reused) */
NNP_PIN_VALUE(NNP_STATUS_OK, 0);
NNP_PIN_VALUE(NNP_STATUS_INVALID_ARGUMENT, 1);
NNP_PIN_VALUE(NNP_STATUS_UNSUPPORTED, 2);
NNP_PIN_VALUE(NNP_STATUS_OUT_OF_MEMORY, 3);
NNP_PIN_VALUE(NNP_STATUS_NOT_FOUND, 4);
NNP_PIN_VALUE(NNP_STATUS_UNAVAILABLE, 5);
NNP_PIN_VALUE(NNP_STATUS_ABI_MISMATCH, 6);
NNP_PIN_VALUE(NNP_STATUS_DEVICE_ERROR, 7);
NNP_PIN_VALUE(NNP_STATUS_INTERNAL, 8);
NNP_PIN_VALUE(NNP_STATUS_LOAD_FAILED, 9);
NNP_PIN_VALUE(NNP_STATUS_VENDOR_BASE, 1000);
NNP_PIN_VALUE(NNP_OP_UNDEFINED, 0);
NNP_PIN_VALUE(NNP_OP_GEMM, 1);
NNP_PIN_VALUE(NNP_OP_CONV2D_FORWARD, 10);
NNP_PIN_VALUE(NNP_OP_CONV2D_BACKWARD_DATA, 11);
NNP_PIN_VALUE(NNP_OP_CONV2D_BACKWARD_FILTER, 12);
NNP_PIN_VALUE(NNP_OP_CONV2D_BACKWARD_BIAS, 13);
NNP_PIN_VALUE(NNP_OP_POOL2D_FORWARD, 20);
NNP_PIN_VALUE(NNP_OP_POOL2D_BACKWARD, 21);
NNP_PIN_VALUE(NNP_OP_ACTIVATION_FORWARD, 30);
NNP_PIN_VALUE(NNP_OP_ACTIVATION_BACKWARD, 31);
NNP_PIN_VALUE(NNP_OP_SOFTMAX_FORWARD, 40);
NNP_PIN_VALUE(NNP_OP_SOFTMAX_BACKWARD, 41);
NNP_PIN_VALUE(NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD, 50);
NNP_PIN_VALUE(NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, 51);
NNP_PIN_VALUE(NNP_OP_BATCH_NORM_FORWARD_TRAINING, 60);
NNP_PIN_VALUE(NNP_OP_BATCH_NORM_FORWARD_INFERENCE, 61);
NNP_PIN_VALUE(NNP_OP_BATCH_NORM_BACKWARD, 62);
NNP_PIN_VALUE(NNP_OP_LAYER_NORM_FORWARD, 65);
NNP_PIN_VALUE(NNP_OP_LAYER_NORM_BACKWARD, 66);
NNP_PIN_VALUE(NNP_OP_DROPOUT_FORWARD, 70);
NNP_PIN_VALUE(NNP_OP_DROPOUT_BACKWARD, 71);
NNP_PIN_VALUE(NNP_OP_BINARY, 80);
NNP_PIN_VALUE(NNP_OP_SCALE, 81);
NNP_PIN_VALUE(NNP_OP_FILL, 82);
NNP_PIN_VALUE(NNP_OP_COPY, 83);
NNP_PIN_VALUE(NNP_OP_TRANSPOSE, 84);
NNP_PIN_VALUE(NNP_OP_CAST, 85);
NNP_PIN_VALUE(NNP_OP_REDUCE, 90);
NNP_PIN_VALUE(NNP_OP_SGD_UPDATE, 100);
NNP_PIN_VALUE(NNP_OP_ADAM_UPDATE, 101);
NNP_PIN_VALUE(NNP_OP_VENDOR_BASE, 0x10000);
NNP_PIN_VALUE(NNP_POOL_UNDEFINED, 0);
NNP_PIN_VALUE(NNP_POOL_MAX, 1);
NNP_PIN_VALUE(NNP_POOL_AVERAGE, 2);
NNP_PIN_VALUE(NNP_ACTIVATION_UNDEFINED, 0);
NNP_PIN_VALUE(NNP_ACTIVATION_RELU, 1);
NNP_PIN_VALUE(NNP_ACTIVATION_LEAKY_RELU, 2);
NNP_PIN_VALUE(NNP_ACTIVATION_SIGMOID, 3);
NNP_PIN_VALUE(NNP_ACTIVATION_TANH, 4);
NNP_PIN_VALUE(NNP_ACTIVATION_GELU_ERF, 5);
NNP_PIN_VALUE(NNP_ACTIVATION_GELU_TANH, 6);
NNP_PIN_VALUE(NNP_ACTIVATION_ELU, 7);
NNP_PIN_VALUE(NNP_REDUCTION_UNDEFINED, 0);
NNP_PIN_VALUE(NNP_REDUCTION_MEAN, 1);
NNP_PIN_VALUE(NNP_REDUCTION_SUM, 2);
NNP_PIN_VALUE(NNP_REDUCTION_NONE, 3);
NNP_PIN_VALUE(NNP_BINARY_UNDEFINED, 0);
NNP_PIN_VALUE(NNP_BINARY_ADD, 1);
NNP_PIN_VALUE(NNP_BINARY_SUB, 2);
NNP_PIN_VALUE(NNP_BINARY_MUL, 3);
NNP_PIN_VALUE(NNP_BINARY_DIV, 4);
NNP_PIN_VALUE(NNP_REDUCE_UNDEFINED, 0);
NNP_PIN_VALUE(NNP_REDUCE_SUM, 1);
NNP_PIN_VALUE(NNP_REDUCE_MEAN, 2);
NNP_PIN_VALUE(NNP_REDUCE_MAX, 3);
NNP_PIN_VALUE(NNP_LOG_UNDEFINED, 0);
NNP_PIN_VALUE(NNP_LOG_ERROR, 1);
NNP_PIN_VALUE(NNP_LOG_WARNING, 2);
NNP_PIN_VALUE(NNP_LOG_INFO, 3);
NNP_PIN_VALUE(NNP_LOG_DEBUG, 4);
NNP_PIN_VALUE(NNP_MEMCPY_UNDEFINED, 0);
NNP_PIN_VALUE(NNP_MEMCPY_HOST_TO_DEVICE, 1);
NNP_PIN_VALUE(NNP_MEMCPY_DEVICE_TO_HOST, 2);
NNP_PIN_VALUE(NNP_MEMCPY_DEVICE_TO_DEVICE, 3);
NNP_PIN_VALUE(NNP_STREAM_ATTR_UNDEFINED, 0);
NNP_PIN_VALUE(NNP_STREAM_ATTR_ALLOW_TF32, 1);
NNP_PIN_VALUE(NNP_LOAD_UNDEFINED, 0);
NNP_PIN_VALUE(NNP_LOAD_LOADED, 1);
NNP_PIN_VALUE(NNP_LOAD_REJECTED, 2);
NNP_PIN_VALUE(NNP_LOAD_FAILED, 3);
NNP_PIN_VALUE(NNP_LOAD_DUPLICATE, 4);
#else
#error "layout pins are recorded for LP64 (x86_64, aarch64)"
#endif

int main(void) {
  printf("ABI 1.0 layout pins hold (sizeof(nnp_plugin_api) = %zu)\n", sizeof(nnp_plugin_api));
  return 0;
}
