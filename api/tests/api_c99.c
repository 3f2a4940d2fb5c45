/*
 * api_c99.c — compiles as C99 -pedantic, references every function declared in nnplug.h
 * (oneDNN tests/api.c style) and links against libnnplug, so a declaration without a
 * definition (or a definition with C++ linkage) fails to link. Then runs the calls that need
 * no plugin and checks their results.
 */
#include <nnplug/nnplug.h>

#include <stdio.h>
#include <string.h>

typedef void (*any_fn)(void);

/* Every function of nnplug.h, in declaration order. */
static const any_fn all_functions[] = {
    (any_fn)nnp_get_version,
    (any_fn)nnp_version_string,
    (any_fn)nnp_status_string,
    (any_fn)nnp_last_error_message,
    (any_fn)nnp_op_kind_name,
    (any_fn)nnp_load_plugin,
    (any_fn)nnp_load_default_plugins,
    (any_fn)nnp_get_load_records,
    (any_fn)nnp_plugin_name,
    (any_fn)nnp_get_devices,
    (any_fn)nnp_get_device,
    (any_fn)nnp_device_get_props,
    (any_fn)nnp_device_get_dldevice,
    (any_fn)nnp_op_supported,
    (any_fn)nnp_malloc,
    (any_fn)nnp_free,
    (any_fn)nnp_memcpy_async,
    (any_fn)nnp_memcpy,
    (any_fn)nnp_stream_create,
    (any_fn)nnp_stream_destroy,
    (any_fn)nnp_stream_synchronize,
    (any_fn)nnp_stream_device,
    (any_fn)nnp_stream_set_attribute,
    (any_fn)nnp_stream_get_native,
    (any_fn)nnp_stream_begin_capture,
    (any_fn)nnp_stream_end_capture,
    (any_fn)nnp_graph_launch,
    (any_fn)nnp_graph_destroy,
    (any_fn)nnp_op_execute,
    (any_fn)nnp_op_infer_shapes,
#include "generated/op_wrapper_symbols.inc"
    (any_fn)nnp_comm_create,
    (any_fn)nnp_comm_get_unique_id,
    (any_fn)nnp_comm_destroy,
    (any_fn)nnp_comm_get_rank,
    (any_fn)nnp_comm_device,
    (any_fn)nnp_comm_description,
    (any_fn)nnp_shutdown,
};

static int failures = 0;
#define EXPECT(cond)                                                           \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

int main(void) {
  size_t i;
  int32_t major = -1, minor = -1, patch = -1;
  nnp_device* dev = NULL;
  void* ptr = NULL;
  for (i = 0; i < sizeof(all_functions) / sizeof(all_functions[0]); ++i)
    EXPECT(all_functions[i] != NULL);
  /* 37 functions (26 of ABI 1.0-1.2, the 6 communicator functions of 1.3, the 4 graph functions
     of 1.4, nnp_stream_get_native of 1.6) besides one typed wrapper per op kind */
  EXPECT(sizeof(all_functions) / sizeof(all_functions[0]) == 37 + NNP_OP_KIND_COUNT);

  nnp_get_version(&major, &minor, &patch);
  EXPECT(major == NNP_VERSION_MAJOR && minor == NNP_VERSION_MINOR && patch == NNP_VERSION_PATCH);
  EXPECT(strcmp(nnp_version_string(), NNP_VERSION_STRING) == 0);
  EXPECT(strcmp(nnp_status_string(NNP_STATUS_NOT_FOUND), "not found") == 0);
  EXPECT(strcmp(nnp_last_error_message(), "") == 0);
  EXPECT(strcmp(nnp_op_kind_name(NNP_OP_GEMM), "gemm") == 0);
  EXPECT(nnp_plugin_name(NULL) == NULL);
  EXPECT(nnp_stream_device(NULL) == NULL);
  EXPECT(nnp_stream_destroy(NULL) == NNP_STATUS_OK);
  EXPECT(nnp_stream_get_native(NULL, &ptr) == NNP_STATUS_INVALID_ARGUMENT && ptr == NULL);
  EXPECT(nnp_load_plugin(NULL, NULL) == NNP_STATUS_INVALID_ARGUMENT);
  EXPECT(strlen(nnp_last_error_message()) > 0);
  EXPECT(nnp_get_device(NULL, &dev) == NNP_STATUS_INVALID_ARGUMENT);
  EXPECT(nnp_malloc(NULL, 16, &ptr) == NNP_STATUS_INVALID_ARGUMENT);
  EXPECT(nnp_op_execute(NULL, NNP_OP_GEMM, NULL, 0, NULL, 0, NULL) == NNP_STATUS_INVALID_ARGUMENT);
  EXPECT(nnp_comm_create(NULL, NULL, NULL) == NNP_STATUS_INVALID_ARGUMENT);
  EXPECT(nnp_comm_destroy(NULL) == NNP_STATUS_INVALID_ARGUMENT);
  EXPECT(nnp_comm_device(NULL) == NULL && nnp_comm_description(NULL) == NULL);
  EXPECT(nnp_graph_destroy(NULL) == NNP_STATUS_OK);
  EXPECT(nnp_graph_launch(NULL, NULL) == NNP_STATUS_INVALID_ARGUMENT);
  {
    /* Shape inference needs no plugin: gemm [2, 3] x [3, 4] -> [2, 4] float32. */
    int64_t sa[2] = {2, 3}, sb[2] = {3, 4};
    DLTensor a, b;
    const DLTensor* in[2];
    nnp_gemm_params p;
    nnp_shape y;
    memset(&a, 0, sizeof a);
    a.device.device_type = kDLCPU;
    a.ndim = 2;
    a.dtype.code = kDLFloat;
    a.dtype.bits = 32;
    a.dtype.lanes = 1;
    a.shape = sa;
    b = a;
    b.shape = sb;
    in[0] = &a;
    in[1] = &b;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.alpha = 1.0;
    EXPECT(nnp_op_infer_shapes(NNP_OP_GEMM, &p, 2, in, 1, &y) == NNP_STATUS_OK);
    EXPECT(y.ndim == 2 && y.dims[0] == 2 && y.dims[1] == 4 && y.dtype.code == kDLFloat &&
           y.dtype.bits == 32);
  }
  EXPECT(nnp_shutdown() == NNP_STATUS_OK);
  if (failures == 0)
    printf("api_c99: %d functions referenced, all checks passed\n", 32 + NNP_OP_KIND_COUNT);
  return failures == 0 ? 0 : 1;
}
