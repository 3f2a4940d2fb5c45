/*
 * cuda_load_test.c — loads libnnplug-cuda.so directly (dlopen, no libnnplug) and checks the
 * behaviour that must hold on every machine, with or without a GPU:
 *  - the entry hands out a table named "cuda" of this ABI major;
 *  - get_device_count succeeds; with 0 devices it gives a non-empty reason (the runtime's);
 *    with devices, props of cuda:0 are sane and a stream can be created and destroyed;
 *  - op_supported answers UNSUPPORTED (with a message) for an unknown op kind and for float64
 *    GEMM; nothing prints or aborts.
 * Usage: nnplug-cuda-load-test <path to libnnplug-cuda.so>
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <nnplug/nnplug_plugin.h>

static int g_failures = 0;
static char g_last_error[1024];

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

static void on_error(void* ctx, nnp_status status, const char* message) {
  (void)ctx;
  (void)status;
  snprintf(g_last_error, sizeof(g_last_error), "%s", message ? message : "");
}
static void on_log(void* ctx, int32_t level, const char* message) {
  (void)ctx;
  (void)level;
  (void)message;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s libnnplug-cuda.so\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "dlopen failed: %s\n", dlerror());
    return 1;
  }
  nnp_plugin_get_api_fn entry = (nnp_plugin_get_api_fn)dlsym(lib, NNP_PLUGIN_ENTRY_SYMBOL);
  CHECK(entry != NULL);
  if (entry == NULL) return 1;

  nnp_host_api host;
  memset(&host, 0, sizeof(host));
  host.struct_size = sizeof(host);
  host.abi_version_major = NNP_ABI_VERSION_MAJOR;
  host.abi_version_minor = NNP_ABI_VERSION_MINOR;
  host.set_error = on_error;
  host.log = on_log;
  const nnp_plugin_api* api = NULL;
  CHECK(entry(&host, &api) == NNP_STATUS_OK);
  if (api == NULL) return 1;
  CHECK(strcmp(api->name, "cuda") == 0);
  CHECK(api->abi_version_major == NNP_ABI_VERSION_MAJOR);
  CHECK(api->struct_size >= NNP_PLUGIN_API_STRUCT_SIZE_1_0);

  int32_t n = -1;
  const char* reason = NULL;
  CHECK(api->get_device_count(&n, &reason) == NNP_STATUS_OK);
  CHECK(n >= 0);
  if (n == 0) {
    CHECK(reason != NULL && reason[0] != '\0');
    printf("cuda: 0 devices: %s\n", reason ? reason : "(null)");
    void* p = NULL;
    CHECK(api->mem_alloc(0, 64, &p) == NNP_STATUS_INVALID_ARGUMENT);
    CHECK(g_last_error[0] != '\0');
  } else {
    nnp_device_props props;
    memset(&props, 0, sizeof(props));
    props.struct_size = sizeof(props);
    CHECK(api->get_device_props(0, &props) == NNP_STATUS_OK);
    CHECK(props.name != NULL && strcmp(props.name, "cuda:0") == 0);
    CHECK(props.device_type == kDLCUDA);
    CHECK(props.auto_priority == 200);
    printf("cuda: %d device(s); cuda:0 = %s\n", n, props.description);
    void* stream = NULL;
    CHECK(api->stream_create(0, &stream) == NNP_STATUS_OK);
    if (stream != NULL) {
      CHECK(api->stream_set_attribute(stream, NNP_STREAM_ATTR_ALLOW_TF32, 1) == NNP_STATUS_OK);
      CHECK(api->stream_synchronize(stream) == NNP_STATUS_OK);
      CHECK(api->stream_destroy(stream) == NNP_STATUS_OK);
    }
  }

  if (n > 0) {
    /* Unknown op kind, and float64 GEMM: both UNSUPPORTED with a message. */
    int64_t shape[2] = {2, 2};
    DLTensor t;
    memset(&t, 0, sizeof(t));
    t.device.device_type = kDLCUDA;
    t.ndim = 2;
    t.shape = shape;
    t.dtype.code = kDLFloat;
    t.dtype.bits = 64;
    t.dtype.lanes = 1;
    const DLTensor* ins[2] = {&t, &t};
    const DLTensor* outs[1] = {&t};
    nnp_gemm_params gp;
    memset(&gp, 0, sizeof(gp));
    gp.struct_size = sizeof(gp);
    gp.alpha = 1.0;
    g_last_error[0] = '\0';
    CHECK(api->op_supported(0, NNP_OP_GEMM, &gp, 2, ins, 1, outs) == NNP_STATUS_UNSUPPORTED);
    CHECK(strstr(g_last_error, "float64") != NULL);
    g_last_error[0] = '\0';
    CHECK(api->op_supported(0, 12345, NULL, 0, NULL, 0, NULL) == NNP_STATUS_UNSUPPORTED);
    CHECK(g_last_error[0] != '\0');
  }

  if (api->shutdown != NULL) api->shutdown();
  /* The plugin is not dlclose'd: CUDA libraries do not like being unloaded mid-process. */
  if (g_failures == 0) printf("cuda_load_test: OK\n");
  return g_failures == 0 ? 0 : 1;
}
