/*
 * layout_c11.c — ABI layout pins: the size and every field offset of each public struct, the
 * *_STRUCT_SIZE_1_<m> macros, every enumerator value and every enum's 4-byte size (LP64 Linux).
 * The op structs and enums come from the op table (generated/op_layout_pins.inc: offsets the
 * generator computes from api/ops/ops.toml, confirmed here by the compiler).
 * Fields are only ever appended (docs/abi.md): a change that moves, retypes or removes a
 * field, or renumbers an enumerator, fails to compile here. A struct that grows at its end
 * needs its NNP_PIN_SIZE line updated and a changelog entry; its offsets stay.
 */
#include <nnplug/nnplug.h>
#include <nnplug/nnplug_comm_plugin.h>

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
NNP_PIN_SIZE(nnp_plugin_api, 176); /* 136 up to ABI 1.2; 1.3 appends stream_get_native, 1.4 the
                                      four graph slots */
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
NNP_PIN(nnp_plugin_api, stream_get_native, 136);
NNP_PIN(nnp_plugin_api, stream_begin_capture, 144);
NNP_PIN(nnp_plugin_api, stream_end_capture, 152);
NNP_PIN(nnp_plugin_api, graph_launch, 160);
NNP_PIN(nnp_plugin_api, graph_destroy, 168);
/* ABI 1.3: communicators (nnplug.h) and communication plugins (nnplug_comm_plugin.h) */
NNP_PIN_SIZE(nnp_comm_unique_id, 128);
NNP_PIN_SIZE(nnp_comm_config, 40);
NNP_PIN(nnp_comm_config, struct_size, 0);
NNP_PIN(nnp_comm_config, transport, 8);
NNP_PIN(nnp_comm_config, rank, 12);
NNP_PIN(nnp_comm_config, size, 16);
NNP_PIN(nnp_comm_config, reserved0, 20);
NNP_PIN(nnp_comm_config, mpi_comm, 24);
NNP_PIN(nnp_comm_config, unique_id, 32);
NNP_PIN_SIZE(nnp_comm_plugin_create_args, 40);
NNP_PIN(nnp_comm_plugin_create_args, config, 8);
NNP_PIN(nnp_comm_plugin_create_args, device, 16);
NNP_PIN(nnp_comm_plugin_create_args, device_name, 24);
NNP_PIN(nnp_comm_plugin_create_args, device_plugin_name, 32);
NNP_PIN_SIZE(nnp_comm_plugin_api, 96);
NNP_PIN(nnp_comm_plugin_api, transport, 16);
NNP_PIN(nnp_comm_plugin_api, version, 24);
NNP_PIN(nnp_comm_plugin_api, memory, 32);
NNP_PIN(nnp_comm_plugin_api, device_type, 36);
NNP_PIN(nnp_comm_plugin_api, initialize, 40);
NNP_PIN(nnp_comm_plugin_api, shutdown, 48);
NNP_PIN(nnp_comm_plugin_api, get_unique_id, 56);
NNP_PIN(nnp_comm_plugin_api, comm_create, 64);
NNP_PIN(nnp_comm_plugin_api, comm_destroy, 72);
NNP_PIN(nnp_comm_plugin_api, comm_supported, 80);
NNP_PIN(nnp_comm_plugin_api, comm_execute, 88);
NNP_PIN_SIZE(nnp_comm_transport, 4);
NNP_PIN_SIZE(nnp_comm_memory, 4);
NNP_PIN_VALUE(NNP_COMM_TRANSPORT_SELF, 1);
NNP_PIN_VALUE(NNP_COMM_TRANSPORT_MPI, 2);
NNP_PIN_VALUE(NNP_COMM_TRANSPORT_NCCL, 3);
NNP_PIN_VALUE(NNP_COMM_MEMORY_HOST, 1);
NNP_PIN_VALUE(NNP_COMM_MEMORY_DEVICE_STREAM, 2);
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
NNP_PIN(nnp_load_record, reserved0, 60);
NNP_PIN_VALUE(NNP_LOAD_RECORD_STRUCT_SIZE_1_0, 60);
NNP_PIN_VALUE(NNP_LOAD_RECORD_STRUCT_SIZE_1_1, 64);
NNP_PIN_SIZE(nnp_shape, 72);
NNP_PIN(nnp_shape, ndim, 0);
NNP_PIN(nnp_shape, dtype, 4);
NNP_PIN(nnp_shape, dims, 8);
/* op params structs, op kinds and op value enums: from the op table */
#include "generated/op_layout_pins.inc"

/* 1.0 sizes */
NNP_PIN_VALUE(NNP_DEVICE_PROPS_STRUCT_SIZE_1_0, 56);
NNP_PIN_VALUE(NNP_HOST_API_STRUCT_SIZE_1_0, 40);
NNP_PIN_VALUE(NNP_PLUGIN_API_STRUCT_SIZE_1_0, 136);
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
NNP_PIN_VALUE(NNP_STATUS_FORCE_INT32, 0x7FFFFFFF);
NNP_PIN_SIZE(nnp_status, 4);
NNP_PIN_SIZE(nnp_log_level, 4);
NNP_PIN_SIZE(nnp_memcpy_kind, 4);
NNP_PIN_SIZE(nnp_stream_attribute, 4);
NNP_PIN_SIZE(nnp_load_state, 4);
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
  printf("ABI 1.4 layout pins hold (sizeof(nnp_plugin_api) = %zu)\n", sizeof(nnp_plugin_api));
  return 0;
}
