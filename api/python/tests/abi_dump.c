/*
 * abi_dump.c — prints, as one JSON object, what the C compiler makes of nnplug's public
 * headers: sizeof and offsetof of every struct the Python package mirrors with ctypes, and
 * the value of every enumerator. api/python/tests/test_abi.py compares it with the ctypes
 * classes (NNPLUG_ABI_DUMP names this program).
 */
#include <stddef.h>
#include <stdio.h>

#include <nnplug/nnplug.h>

static int g_first_struct = 1, g_first_field = 1, g_first_enum = 1, g_first_value = 1;

static void struct_begin(const char* name, size_t size) {
  printf("%s\n    \"%s\": {\"size\": %zu, \"fields\": {", g_first_struct ? "" : ",", name, size);
  g_first_struct = 0;
  g_first_field = 1;
}
static void field(const char* name, size_t offset) {
  printf("%s\"%s\": %zu", g_first_field ? "" : ", ", name, offset);
  g_first_field = 0;
}
static void struct_end(void) { printf("}}"); }

static void enum_begin(const char* name) {
  printf("%s\n    \"%s\": {", g_first_enum ? "" : ",", name);
  g_first_enum = 0;
  g_first_value = 1;
}
static void value(const char* name, long long v) {
  printf("%s\"%s\": %lld", g_first_value ? "" : ", ", name, v);
  g_first_value = 0;
}
static void enum_end(void) { printf("}"); }

#define S(T) struct_begin(#T, sizeof(T))
#define F(T, f) field(#f, offsetof(T, f))
#define V(e) value(#e, (long long)(e))

int main(void) {
  printf("{\n  \"structs\": {");
  S(DLDevice);
  F(DLDevice, device_type);
  F(DLDevice, device_id);
  struct_end();
  S(DLDataType);
  F(DLDataType, code);
  F(DLDataType, bits);
  F(DLDataType, lanes);
  struct_end();
  S(DLTensor);
  F(DLTensor, data);
  F(DLTensor, device);
  F(DLTensor, ndim);
  F(DLTensor, dtype);
  F(DLTensor, shape);
  F(DLTensor, strides);
  F(DLTensor, byte_offset);
  struct_end();
  S(DLManagedTensor);
  F(DLManagedTensor, dl_tensor);
  F(DLManagedTensor, manager_ctx);
  F(DLManagedTensor, deleter);
  struct_end();
  S(nnp_device_props);
  F(nnp_device_props, struct_size);
  F(nnp_device_props, name);
  F(nnp_device_props, plugin_name);
  F(nnp_device_props, description);
  F(nnp_device_props, device_type);
  F(nnp_device_props, device_id);
  F(nnp_device_props, memory_bytes);
  F(nnp_device_props, auto_priority);
  F(nnp_device_props, num_threads);
  struct_end();
  S(nnp_load_record);
  F(nnp_load_record, struct_size);
  F(nnp_load_record, path);
  F(nnp_load_record, name);
  F(nnp_load_record, plugin_version);
  F(nnp_load_record, abi_version_major);
  F(nnp_load_record, abi_version_minor);
  F(nnp_load_record, state);
  F(nnp_load_record, status);
  F(nnp_load_record, reason);
  F(nnp_load_record, n_devices);
  struct_end();
  S(nnp_gemm_params);
  F(nnp_gemm_params, struct_size);
  F(nnp_gemm_params, trans_a);
  F(nnp_gemm_params, trans_b);
  F(nnp_gemm_params, alpha);
  F(nnp_gemm_params, beta);
  struct_end();
  S(nnp_conv2d_params);
  F(nnp_conv2d_params, struct_size);
  F(nnp_conv2d_params, stride_h);
  F(nnp_conv2d_params, stride_w);
  F(nnp_conv2d_params, pad_top);
  F(nnp_conv2d_params, pad_bottom);
  F(nnp_conv2d_params, pad_left);
  F(nnp_conv2d_params, pad_right);
  F(nnp_conv2d_params, dilation_h);
  F(nnp_conv2d_params, dilation_w);
  F(nnp_conv2d_params, groups);
  struct_end();
  S(nnp_pool2d_params);
  F(nnp_pool2d_params, struct_size);
  F(nnp_pool2d_params, mode);
  F(nnp_pool2d_params, window_h);
  F(nnp_pool2d_params, window_w);
  F(nnp_pool2d_params, stride_h);
  F(nnp_pool2d_params, stride_w);
  F(nnp_pool2d_params, pad_top);
  F(nnp_pool2d_params, pad_bottom);
  F(nnp_pool2d_params, pad_left);
  F(nnp_pool2d_params, pad_right);
  F(nnp_pool2d_params, ceil_mode);
  F(nnp_pool2d_params, count_include_pad);
  F(nnp_pool2d_params, global);
  struct_end();
  S(nnp_activation_params);
  F(nnp_activation_params, struct_size);
  F(nnp_activation_params, function);
  F(nnp_activation_params, reserved0);
  F(nnp_activation_params, alpha);
  struct_end();
  S(nnp_softmax_params);
  F(nnp_softmax_params, struct_size);
  F(nnp_softmax_params, axis);
  F(nnp_softmax_params, log);
  struct_end();
  S(nnp_softmax_cross_entropy_params);
  F(nnp_softmax_cross_entropy_params, struct_size);
  F(nnp_softmax_cross_entropy_params, reduction);
  F(nnp_softmax_cross_entropy_params, has_ignore_index);
  F(nnp_softmax_cross_entropy_params, ignore_index);
  struct_end();
  S(nnp_batch_norm_params);
  F(nnp_batch_norm_params, struct_size);
  F(nnp_batch_norm_params, epsilon);
  F(nnp_batch_norm_params, momentum);
  struct_end();
  S(nnp_layer_norm_params);
  F(nnp_layer_norm_params, struct_size);
  F(nnp_layer_norm_params, axis);
  F(nnp_layer_norm_params, reserved0);
  F(nnp_layer_norm_params, epsilon);
  struct_end();
  S(nnp_dropout_params);
  F(nnp_dropout_params, struct_size);
  F(nnp_dropout_params, ratio);
  F(nnp_dropout_params, seed);
  F(nnp_dropout_params, offset);
  struct_end();
  S(nnp_binary_params);
  F(nnp_binary_params, struct_size);
  F(nnp_binary_params, op);
  struct_end();
  S(nnp_scale_params);
  F(nnp_scale_params, struct_size);
  F(nnp_scale_params, alpha);
  struct_end();
  S(nnp_fill_params);
  F(nnp_fill_params, struct_size);
  F(nnp_fill_params, value);
  struct_end();
  S(nnp_transpose_params);
  F(nnp_transpose_params, struct_size);
  F(nnp_transpose_params, perm);
  struct_end();
  S(nnp_reduce_params);
  F(nnp_reduce_params, struct_size);
  F(nnp_reduce_params, op);
  F(nnp_reduce_params, keepdims);
  F(nnp_reduce_params, n_axes);
  F(nnp_reduce_params, axes);
  struct_end();
  S(nnp_sgd_params);
  F(nnp_sgd_params, struct_size);
  F(nnp_sgd_params, lr);
  F(nnp_sgd_params, momentum);
  F(nnp_sgd_params, dampening);
  F(nnp_sgd_params, weight_decay);
  F(nnp_sgd_params, nesterov);
  F(nnp_sgd_params, reserved0);
  struct_end();
  S(nnp_adam_params);
  F(nnp_adam_params, struct_size);
  F(nnp_adam_params, lr);
  F(nnp_adam_params, beta1);
  F(nnp_adam_params, beta2);
  F(nnp_adam_params, epsilon);
  F(nnp_adam_params, weight_decay);
  F(nnp_adam_params, step);
  F(nnp_adam_params, adamw);
  F(nnp_adam_params, reserved0);
  struct_end();
  printf("\n  },\n  \"enums\": {");

  enum_begin("nnp_status");
  V(NNP_STATUS_OK);
  V(NNP_STATUS_INVALID_ARGUMENT);
  V(NNP_STATUS_UNSUPPORTED);
  V(NNP_STATUS_OUT_OF_MEMORY);
  V(NNP_STATUS_NOT_FOUND);
  V(NNP_STATUS_UNAVAILABLE);
  V(NNP_STATUS_ABI_MISMATCH);
  V(NNP_STATUS_DEVICE_ERROR);
  V(NNP_STATUS_INTERNAL);
  V(NNP_STATUS_LOAD_FAILED);
  V(NNP_STATUS_VENDOR_BASE);
  enum_end();
  enum_begin("nnp_load_state");
  V(NNP_LOAD_UNDEFINED);
  V(NNP_LOAD_LOADED);
  V(NNP_LOAD_REJECTED);
  V(NNP_LOAD_FAILED);
  V(NNP_LOAD_DUPLICATE);
  enum_end();
  enum_begin("nnp_op_kind");
  V(NNP_OP_UNDEFINED);
  V(NNP_OP_GEMM);
  V(NNP_OP_CONV2D_FORWARD);
  V(NNP_OP_CONV2D_BACKWARD_DATA);
  V(NNP_OP_CONV2D_BACKWARD_FILTER);
  V(NNP_OP_CONV2D_BACKWARD_BIAS);
  V(NNP_OP_POOL2D_FORWARD);
  V(NNP_OP_POOL2D_BACKWARD);
  V(NNP_OP_ACTIVATION_FORWARD);
  V(NNP_OP_ACTIVATION_BACKWARD);
  V(NNP_OP_SOFTMAX_FORWARD);
  V(NNP_OP_SOFTMAX_BACKWARD);
  V(NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD);
  V(NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD);
  V(NNP_OP_BATCH_NORM_FORWARD_TRAINING);
  V(NNP_OP_BATCH_NORM_FORWARD_INFERENCE);
  V(NNP_OP_BATCH_NORM_BACKWARD);
  V(NNP_OP_LAYER_NORM_FORWARD);
  V(NNP_OP_LAYER_NORM_BACKWARD);
  V(NNP_OP_DROPOUT_FORWARD);
  V(NNP_OP_DROPOUT_BACKWARD);
  V(NNP_OP_BINARY);
  V(NNP_OP_SCALE);
  V(NNP_OP_FILL);
  V(NNP_OP_COPY);
  V(NNP_OP_TRANSPOSE);
  V(NNP_OP_CAST);
  V(NNP_OP_REDUCE);
  V(NNP_OP_SGD_UPDATE);
  V(NNP_OP_ADAM_UPDATE);
  V(NNP_OP_VENDOR_BASE);
  enum_end();
  enum_begin("nnp_pool_mode");
  V(NNP_POOL_UNDEFINED);
  V(NNP_POOL_MAX);
  V(NNP_POOL_AVERAGE);
  enum_end();
  enum_begin("nnp_activation");
  V(NNP_ACTIVATION_UNDEFINED);
  V(NNP_ACTIVATION_RELU);
  V(NNP_ACTIVATION_LEAKY_RELU);
  V(NNP_ACTIVATION_SIGMOID);
  V(NNP_ACTIVATION_TANH);
  V(NNP_ACTIVATION_GELU_ERF);
  V(NNP_ACTIVATION_GELU_TANH);
  V(NNP_ACTIVATION_ELU);
  enum_end();
  enum_begin("nnp_reduction");
  V(NNP_REDUCTION_UNDEFINED);
  V(NNP_REDUCTION_MEAN);
  V(NNP_REDUCTION_SUM);
  V(NNP_REDUCTION_NONE);
  enum_end();
  enum_begin("nnp_binary_op");
  V(NNP_BINARY_UNDEFINED);
  V(NNP_BINARY_ADD);
  V(NNP_BINARY_SUB);
  V(NNP_BINARY_MUL);
  V(NNP_BINARY_DIV);
  enum_end();
  enum_begin("nnp_reduce_op");
  V(NNP_REDUCE_UNDEFINED);
  V(NNP_REDUCE_SUM);
  V(NNP_REDUCE_MEAN);
  V(NNP_REDUCE_MAX);
  enum_end();
  enum_begin("nnp_stream_attribute");
  V(NNP_STREAM_ATTR_UNDEFINED);
  V(NNP_STREAM_ATTR_ALLOW_TF32);
  enum_end();
  enum_begin("DLDeviceType");
  V(kDLCPU);
  V(kDLCUDA);
  V(kDLCUDAHost);
  V(kDLCUDAManaged);
  enum_end();
  enum_begin("DLDataTypeCode");
  V(kDLInt);
  V(kDLUInt);
  V(kDLFloat);
  V(kDLBfloat);
  enum_end();
  enum_begin("constants");
  V(NNP_MAX_DIMS);
  V(NNP_ABI_VERSION_MAJOR);
  V(NNP_ABI_VERSION_MINOR);
  V(DLPACK_VERSION);
  V(NNP_VERSION_MAJOR);
  V(NNP_VERSION_MINOR);
  V(NNP_VERSION_PATCH);
  enum_end();
  printf("\n  }\n}\n");
  return 0;
}
