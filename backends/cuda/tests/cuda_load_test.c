/*
 * cuda_load_test.c — loads libnnplug-cuda.so directly (dlopen, no libnnplug) and checks the
 * behaviour that must hold on every machine, with or without a GPU:
 *  - the entry hands out a table named "cuda" of this ABI major;
 *  - get_device_count succeeds; with 0 devices it gives a non-empty reason (the runtime's);
 *    with devices, props of cuda:0 are sane and a stream can be created and destroyed;
 *  - op_supported answers UNSUPPORTED (with a message) for an unknown op kind and for float64
 *    GEMM; nothing prints or aborts;
 *  - the CUDA runtime is linked in (libcudart.so is not mapped), and cuBLAS / cuDNN are mapped
 *    only when there are devices (with 0 devices the process must not have mapped them), unless
 *    an option below says otherwise.
 * Usage: nnplug-cuda-load-test <path to libnnplug-cuda.so> [options]
 *   --expect-reason TEXT   0 devices, and the reason contains TEXT (repeatable)
 *   --expect-log TEXT      a message the plugin logged contains TEXT (repeatable)
 *   --expect-mapped        cuBLAS and cuDNN are mapped after the device query
 *   --expect-not-mapped    neither is mapped after the device query
 *   --print-log            prints what the plugin logged (e.g. where it found cuBLAS and cuDNN)
 *   --driver-reason        where this process cannot dlopen the driver (libcuda.so.1): 0
 *                          devices and the reason says "no NVIDIA driver found"; where it can,
 *                          the reason (if any) does not say so
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#include <nnplug/nnplug_plugin.h>

static char g_last_error[1024];
static char g_logs[16384]; /* every message the plugin logged, one per line */

static void on_error(void* ctx, nnp_status status, const char* message) {
  (void)ctx;
  (void)status;
  snprintf(g_last_error, sizeof(g_last_error), "%s", message ? message : "");
}
static void on_log(void* ctx, int32_t level, const char* message) {
  (void)ctx;
  (void)level;
  size_t used = strlen(g_logs);
  if (message != NULL && used + 2 < sizeof(g_logs))
    snprintf(g_logs + used, sizeof(g_logs) - used, "%s\n", message);
}

/* Whether the process has mapped the library with this soname (never maps it). */
static int is_mapped(const char* soname) {
  void* h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
  if (h == NULL) return 0;
  dlclose(h);
  return 1;
}

enum { kMaxExpect = 16 };

int main(int argc, char** argv) {
  const char* reasons[kMaxExpect];
  const char* logs[kMaxExpect];
  int n_reasons = 0, n_logs = 0;
  int mapped = -1; /* -1: by the device count; 0: must not be; 1: must be */
  int print_log = 0;
  int driver_reason = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: %s libnnplug-cuda.so [options]\n", argv[0]);
    return 2;
  }
  for (int i = 2; i < argc; ++i) {
    if (strcmp(argv[i], "--expect-reason") == 0 && i + 1 < argc && n_reasons < kMaxExpect) {
      reasons[n_reasons++] = argv[++i];
    } else if (strcmp(argv[i], "--expect-log") == 0 && i + 1 < argc && n_logs < kMaxExpect) {
      logs[n_logs++] = argv[++i];
    } else if (strcmp(argv[i], "--expect-mapped") == 0) {
      mapped = 1;
    } else if (strcmp(argv[i], "--expect-not-mapped") == 0) {
      mapped = 0;
    } else if (strcmp(argv[i], "--print-log") == 0) {
      print_log = 1;
    } else if (strcmp(argv[i], "--driver-reason") == 0) {
      driver_reason = 1;
    } else {
      fprintf(stderr, "unknown argument '%s'\n", argv[i]);
      return 2;
    }
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
  if (print_log && g_logs[0] != '\0') printf("%s", g_logs);
  for (int i = 0; i < n_reasons; ++i) {
    CHECK(n == 0 && reason != NULL && strstr(reason, reasons[i]) != NULL);
    if (n != 0 || reason == NULL || strstr(reason, reasons[i]) == NULL)
      fprintf(stderr, "expected the reason to contain '%s', got: %s\n", reasons[i],
              reason ? reason : "(null)");
  }
  if (driver_reason) {
    /* Asked after the device query, so the plugin's discovery is not influenced. */
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    const int says_no_driver = reason != NULL && strstr(reason, "no NVIDIA driver found") != NULL;
    if (driver == NULL) {
      CHECK(n == 0 && says_no_driver);
      if (n != 0 || !says_no_driver)
        fprintf(stderr, "no libcuda.so.1 here: expected 'no NVIDIA driver found', got: %s\n",
                reason ? reason : "(null)");
    } else {
      CHECK(!says_no_driver);
      dlclose(driver);
    }
  }
  for (int i = 0; i < n_logs; ++i) {
    CHECK(strstr(g_logs, logs[i]) != NULL);
    if (strstr(g_logs, logs[i]) == NULL)
      fprintf(stderr, "expected a log message containing '%s'; logged:\n%s", logs[i], g_logs);
  }
  /* The runtime is linked in statically (without devices nothing may have mapped the shared
     one; with devices cuDNN's own engines might); cuBLAS and cuDNN are opened only with
     devices. */
  if (n == 0) CHECK(!is_mapped("libcudart.so.13"));
  if (mapped < 0) mapped = n > 0;
  CHECK(is_mapped("libcublas.so.13") == mapped);
  CHECK(is_mapped("libcudnn.so.9") == mapped);
  if (is_mapped("libcublas.so.13") != mapped || is_mapped("libcudnn.so.9") != mapped)
    fprintf(stderr, "expected cuBLAS and cuDNN to be %s\n", mapped ? "mapped" : "not mapped");
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
