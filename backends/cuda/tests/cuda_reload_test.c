/*
 * cuda_reload_test.c — the cuda plugin through libnnplug, twice: load → query devices →
 * nnp_shutdown (which dlcloses the plugin) → load again → query devices. The plugin is linked
 * with -z nodelete, so the dlclose leaves it (and the CUDA runtime, cuBLAS and cuDNN it holds)
 * mapped, and the second round must see exactly what the first saw: the same device, or the same
 * UNAVAILABLE reason. With a device, each round also allocates, copies and frees a little memory.
 * After each nnp_shutdown the plugin must still be mapped (RTLD_NOLOAD finds it).
 * Usage: nnplug-cuda-reload-test <path to libnnplug-cuda.so>
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#include <nnplug/nnplug.h>

/* One round; writes what it saw ("device: <description>" or "unavailable: <reason>") to seen. */
static void round_trip(const char* path, char* seen, size_t seen_size) {
  nnp_plugin* plugin = NULL;
  nnp_status st = nnp_load_plugin(path, &plugin);
  CHECK(st == NNP_STATUS_OK);
  if (st != NNP_STATUS_OK) {
    fprintf(stderr, "nnp_load_plugin: %s: %s\n", nnp_status_string(st), nnp_last_error_message());
    snprintf(seen, seen_size, "load failed");
    return;
  }
  CHECK(plugin != NULL && strcmp(nnp_plugin_name(plugin), "cuda") == 0);

  nnp_device* dev = NULL;
  st = nnp_get_device("cuda:0", &dev);
  if (st == NNP_STATUS_OK) {
    nnp_device_props props;
    memset(&props, 0, sizeof(props));
    props.struct_size = sizeof(props);
    CHECK(nnp_device_get_props(dev, &props) == NNP_STATUS_OK);
    snprintf(seen, seen_size, "device: %s", props.description ? props.description : "?");
    float host[256];
    for (int i = 0; i < 256; ++i) host[i] = (float)i;
    void* p = NULL;
    CHECK(nnp_malloc(dev, sizeof(host), &p) == NNP_STATUS_OK);
    if (p != NULL) {
      float back[256];
      memset(back, 0, sizeof(back));
      CHECK(nnp_memcpy(dev, p, NULL, host, sizeof(host)) == NNP_STATUS_OK);
      CHECK(nnp_memcpy(NULL, back, dev, p, sizeof(back)) == NNP_STATUS_OK);
      CHECK(memcmp(host, back, sizeof(host)) == 0);
      CHECK(nnp_free(dev, p) == NNP_STATUS_OK);
    }
  } else {
    CHECK(st == NNP_STATUS_UNAVAILABLE);
    const char* msg = nnp_last_error_message();
    CHECK(msg != NULL && msg[0] != '\0');
    snprintf(seen, seen_size, "unavailable: %s", msg ? msg : "");
  }
  CHECK(nnp_shutdown() == NNP_STATUS_OK);
  void* still = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  CHECK(still != NULL); /* -z nodelete: libnnplug's dlclose left it mapped */
  if (still != NULL) dlclose(still);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s libnnplug-cuda.so\n", argv[0]);
    return 2;
  }
  char first[2048], second[2048];
  round_trip(argv[1], first, sizeof(first));
  printf("round 1: %s\n", first);
  round_trip(argv[1], second, sizeof(second));
  printf("round 2: %s\n", second);
  CHECK(strcmp(first, second) == 0);
  if (g_failures == 0) printf("cuda_reload_test: OK\n");
  return g_failures == 0 ? 0 : 1;
}
