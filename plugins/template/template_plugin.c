/*
 * template_plugin.c — a complete, minimal nnplug plugin in plain C99, for plugin authors.
 *
 * One host-memory device ("template:0") that implements NNP_OP_FILL and NNP_OP_SCALE for
 * float32 and declares every other op unsupported (an answer, not a failure: the conformance
 * runner reports it as "unsupported"). libnnplug validates every call before it reaches
 * op_supported/op_execute, so this file only checks what is specific to it (the dtype).
 */
#include <nnplug/nnplug_plugin.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const nnp_host_api* g_host;

static nnp_status report(nnp_status status, const char* message) {
  if (g_host != NULL && g_host->set_error != NULL)
    g_host->set_error(g_host->host_context, status, message);
  return status;
}

static nnp_status get_device_count(int32_t* n_devices, const char** reason) {
  *n_devices = 1;
  if (reason != NULL) *reason = NULL;
  return NNP_STATUS_OK;
}

static nnp_status get_device_props(int32_t index, nnp_device_props* props) {
  nnp_device_props p;
  size_t n = props->struct_size < sizeof(p) ? props->struct_size : sizeof(p);
  if (index != 0) return report(NNP_STATUS_INVALID_ARGUMENT, "no such device");
  memset(&p, 0, sizeof(p));
  p.struct_size = props->struct_size;
  p.name = "template:0";
  p.plugin_name = "template";
  p.description = "nnplug template plugin (fill and scale, float32)";
  p.device_type = kDLCPU;
  p.device_id = 0;
  p.memory_bytes = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
  p.auto_priority = -1; /* never chosen by "auto" */
  p.num_threads = 1;
  memcpy(props, &p, n); /* write only the fields the caller's struct has */
  return NNP_STATUS_OK;
}

static nnp_status mem_alloc(int32_t index, size_t size_bytes, void** ptr) {
  void* p = NULL;
  (void)index;
  if (posix_memalign(&p, 64, size_bytes) != 0) return report(NNP_STATUS_OUT_OF_MEMORY, "oom");
  *ptr = p;
  return NNP_STATUS_OK;
}

static nnp_status mem_free(int32_t index, void* ptr) {
  (void)index;
  free(ptr);
  return NNP_STATUS_OK;
}

/* Ops run synchronously, so a stream needs no state: any non-NULL token will do. */
static int g_stream_token;
static nnp_status stream_create(int32_t index, void** stream) {
  (void)index;
  *stream = &g_stream_token;
  return NNP_STATUS_OK;
}
static nnp_status stream_nop(void* stream) {
  (void)stream;
  return NNP_STATUS_OK;
}

static nnp_status memcpy_async(void* stream, void* dst, const void* src, size_t size_bytes,
                               int32_t kind) {
  (void)stream;
  (void)kind;
  memmove(dst, src, size_bytes);
  return NNP_STATUS_OK;
}

static int is_f32(const DLTensor* t) {
  return t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1;
}

static int64_t numel(const DLTensor* t) {
  int64_t n = 1;
  int i;
  for (i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

static nnp_status op_supported(int32_t index, int32_t op_kind, const void* params, size_t n_inputs,
                               const DLTensor* const* inputs, size_t n_outputs,
                               const DLTensor* const* outputs) {
  char message[128];
  (void)index;
  (void)params;
  (void)n_inputs;
  (void)inputs;
  if (op_kind != NNP_OP_FILL && op_kind != NNP_OP_SCALE) {
    snprintf(message, sizeof(message), "template implements fill and scale only (op %d)",
             (int)op_kind);
    return report(NNP_STATUS_UNSUPPORTED, message);
  }
  if (n_outputs < 1 || !is_f32(outputs[0]))
    return report(NNP_STATUS_UNSUPPORTED, "template implements float32 only");
  return NNP_STATUS_OK;
}

static nnp_status op_execute(void* stream, int32_t op_kind, const void* params, size_t n_inputs,
                             const DLTensor* const* inputs, size_t n_outputs,
                             const DLTensor* const* outputs) {
  nnp_status status = op_supported(0, op_kind, params, n_inputs, inputs, n_outputs, outputs);
  const DLTensor* y = outputs[0];
  float* yd;
  int64_t i, n;
  (void)stream;
  if (status != NNP_STATUS_OK) return status;
  yd = (float*)((char*)y->data + y->byte_offset);
  n = numel(y);
  if (op_kind == NNP_OP_FILL) {
    const float value = (float)((const nnp_fill_params*)params)->value;
    for (i = 0; i < n; ++i) yd[i] = value;
  } else { /* NNP_OP_SCALE: y may alias x, element by element is safe */
    const DLTensor* x = inputs[0];
    const float* xd = (const float*)((const char*)x->data + x->byte_offset);
    const float alpha = (float)((const nnp_scale_params*)params)->alpha;
    for (i = 0; i < n; ++i) yd[i] = alpha * xd[i];
  }
  return NNP_STATUS_OK;
}

static nnp_plugin_api g_api;

NNP_PLUGIN_ENTRY nnp_status nnp_plugin_get_api(const nnp_host_api* host,
                                               const nnp_plugin_api** api) {
  if (host == NULL || api == NULL) return NNP_STATUS_INVALID_ARGUMENT;
  if (host->abi_version_major != NNP_ABI_VERSION_MAJOR) return NNP_STATUS_ABI_MISMATCH;
  g_host = host;
  memset(&g_api, 0, sizeof(g_api));
  g_api.struct_size = sizeof(g_api);
  g_api.abi_version_major = NNP_ABI_VERSION_MAJOR;
  g_api.abi_version_minor = NNP_ABI_VERSION_MINOR;
  g_api.name = "template";
  g_api.version = "0.1.0";
  g_api.get_device_count = get_device_count;
  g_api.get_device_props = get_device_props;
  g_api.mem_alloc = mem_alloc;
  g_api.mem_free = mem_free;
  g_api.stream_create = stream_create;
  g_api.stream_destroy = stream_nop;
  g_api.stream_synchronize = stream_nop;
  g_api.memcpy_async = memcpy_async;
  g_api.op_supported = op_supported;
  g_api.op_execute = op_execute;
  /* initialize, shutdown, stream_set_attribute: optional, left NULL (documented defaults) */
  *api = &g_api;
  return NNP_STATUS_OK;
}
