/*
 * abi_dump.c — prints, as one JSON object, what the C compiler makes of nnplug's public
 * headers: sizeof and offsetof of every struct the Python package mirrors with ctypes, and
 * the value of every enumerator. api/python/tests/test_abi.py compares it with the ctypes
 * classes (NNPLUG_ABI_DUMP names this program).
 */
#include <stddef.h>
#include <stdio.h>

#include <nnplug/nnplug.h>

#include "generated/op_abi_dump.inc"

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

/* The op structs and enums (NNP_DUMP_OP_STRUCTS, NNP_DUMP_OP_ENUMS) come from the op table. */

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
  F(nnp_load_record, reserved0);
  struct_end();
  S(nnp_shape);
  F(nnp_shape, ndim);
  F(nnp_shape, dtype);
  F(nnp_shape, dims);
  struct_end();
  NNP_DUMP_OP_STRUCTS
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
  NNP_DUMP_OP_ENUMS
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
