/*
 * gemm_consumer.c — an application of the installed nnplug, built with pkg-config alone
 * (scripts/consumer-test.sh; docs/install.md):
 *
 *   cc -std=c99 gemm_consumer.c $(pkg-config --cflags --libs nnplug) \
 *      -Wl,-rpath,$(pkg-config --variable=libdir nnplug) -o gemm_consumer
 *   ./gemm_consumer "$(pkg-config --variable=plugindir nnplug)" reference cpu
 *
 * Loads the default plugins, checks that every plugin loaded comes from PLUGINDIR (the
 * install tree's, found by libnnplug next to itself), then runs Y[2,2] = A[2,3] · B[3,2] + C[2]
 * on each named device and compares it with the values computed by hand.
 * Usage: gemm_consumer PLUGINDIR DEVICE...   Exit status 0 when every device is right.
 */
#include <nnplug/nnplug.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                       \
  do {                                                                                    \
    nnp_status s_ = (call);                                                               \
    if (s_ != NNP_STATUS_OK) {                                                            \
      fprintf(stderr, "gemm_consumer: %s failed: %s: %s\n", #call, nnp_status_string(s_), \
              nnp_last_error_message());                                                  \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

/* Every LOADED plugin lies directly in `plugindir`; 0 when so. */
static int check_plugin_paths(const char* plugindir) {
  size_t n = 0, i, len = strlen(plugindir);
  nnp_load_record* records;
  int bad = 0;
  CHECK(nnp_load_default_plugins());
  CHECK(nnp_get_load_records(NULL, &n));
  records = (nnp_load_record*)calloc(n ? n : 1, sizeof *records);
  if (!records) return 1;
  for (i = 0; i < n; ++i) records[i].struct_size = sizeof *records;
  if (nnp_get_load_records(records, &n) != NNP_STATUS_OK) bad = 1;
  for (i = 0; i < n && !bad; ++i) {
    if (records[i].state != NNP_LOAD_LOADED) continue;
    if (strncmp(records[i].path, plugindir, len) != 0 || records[i].path[len] != '/' ||
        strchr(records[i].path + len + 1, '/')) {
      fprintf(stderr, "gemm_consumer: plugin %s loaded from %s, not from %s\n", records[i].name,
              records[i].path, plugindir);
      bad = 1;
    }
  }
  free(records);
  return bad;
}

/* A float32 tensor of `ndim` dimensions `shape` (dense, row-major) at `data` on `dl`. */
static DLTensor f32_tensor(void* data, DLDevice dl, int32_t ndim, int64_t* shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device = dl;
  t.ndim = ndim;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

/* Y = A · B + C on the device named `name`; 0 when the result is right. */
static int gemm_on(const char* name) {
  static const float a[6] = {1, 2, 3, 4, 5, 6};
  static const float b[6] = {7, 8, 9, 10, 11, 12};
  static const float c[2] = {0.5f, -1.0f};
  static const float expected[4] = {58.5f, 63.0f, 139.5f, 153.0f};
  float y[4] = {0, 0, 0, 0};
  int64_t sa[2] = {2, 3}, sb[2] = {3, 2}, sc[1] = {2}, sy[2] = {2, 2};
  void *da = NULL, *db = NULL, *dc = NULL, *dy = NULL;
  nnp_device* dev = NULL;
  nnp_stream* stream = NULL;
  nnp_gemm_params p;
  DLDevice dl;
  DLTensor ta, tb, tc, ty;
  int i;
  CHECK(nnp_get_device(name, &dev));
  CHECK(nnp_device_get_dldevice(dev, &dl));
  CHECK(nnp_malloc(dev, sizeof a, &da));
  CHECK(nnp_malloc(dev, sizeof b, &db));
  CHECK(nnp_malloc(dev, sizeof c, &dc));
  CHECK(nnp_malloc(dev, sizeof y, &dy));
  CHECK(nnp_memcpy(dev, da, NULL, a, sizeof a));
  CHECK(nnp_memcpy(dev, db, NULL, b, sizeof b));
  CHECK(nnp_memcpy(dev, dc, NULL, c, sizeof c));
  ta = f32_tensor(da, dl, 2, sa);
  tb = f32_tensor(db, dl, 2, sb);
  tc = f32_tensor(dc, dl, 1, sc);
  ty = f32_tensor(dy, dl, 2, sy);
  memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  p.alpha = 1.0;
  p.beta = 1.0;
  CHECK(nnp_stream_create(dev, &stream));
  CHECK(nnp_gemm(stream, &p, &ta, &tb, &tc, &ty));
  CHECK(nnp_stream_synchronize(stream));
  CHECK(nnp_stream_destroy(stream));
  CHECK(nnp_memcpy(NULL, y, dev, dy, sizeof y));
  CHECK(nnp_free(dev, da));
  CHECK(nnp_free(dev, db));
  CHECK(nnp_free(dev, dc));
  CHECK(nnp_free(dev, dy));
  for (i = 0; i < 4; ++i) {
    if (fabsf(y[i] - expected[i]) > 1e-4f * fabsf(expected[i])) {
      fprintf(stderr, "gemm_consumer: %s: Y[%d] = %g, expected %g\n", name, i, (double)y[i],
              (double)expected[i]);
      return 1;
    }
  }
  printf("gemm_consumer: GEMM on %s OK\n", name);
  return 0;
}

int main(int argc, char** argv) {
  int i;
  if (argc < 3) {
    fprintf(stderr, "usage: %s PLUGINDIR DEVICE...\n", argv[0]);
    return 2;
  }
  if (check_plugin_paths(argv[1])) return 1;
  for (i = 2; i < argc; ++i)
    if (gemm_on(argv[i])) return 1;
  CHECK(nnp_shutdown());
  printf("gemm_consumer: nnplug %s (headers %s) OK\n", nnp_version_string(), NNP_VERSION_STRING);
  return 0;
}
