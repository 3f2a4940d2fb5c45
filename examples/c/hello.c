/*
 * hello.c — the smallest complete nnplug program: lists the plugin load records and the
 * devices, then runs one 2x3 · 3x2 GEMM (plus a bias row) on every device and checks the
 * result against the value computed by hand.
 *
 *   hello            (exit status 0 if at least one device computed the right answer)
 *
 * A device that fails prints why and the program moves on to the next one.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nnplug/nnplug.h>

/* Fatal check for calls that must work for the program to make sense at all. */
#define CHECK(call)                                                                          \
  do {                                                                                       \
    nnp_status check_status_ = (call);                                                       \
    if (check_status_ != NNP_STATUS_OK) {                                                    \
      fprintf(stderr, "hello: %s failed: %s: %s\n", #call, nnp_status_string(check_status_), \
              nnp_last_error_message());                                                     \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

/* Per-device check: prints why and jumps to the device's cleanup. */
#define TRY(call)                                                               \
  do {                                                                          \
    nnp_status try_status_ = (call);                                            \
    if (try_status_ != NNP_STATUS_OK) {                                         \
      printf("    FAILED: %s: %s: %s\n", #call, nnp_status_string(try_status_), \
             nnp_last_error_message());                                         \
      goto done;                                                                \
    }                                                                           \
  } while (0)

static const char* state_name(int32_t state) {
  switch (state) {
    case NNP_LOAD_LOADED:
      return "loaded";
    case NNP_LOAD_REJECTED:
      return "rejected";
    case NNP_LOAD_FAILED:
      return "failed";
    case NNP_LOAD_DUPLICATE:
      return "duplicate";
    default:
      return "undefined";
  }
}

/* Y[2,2] = A[2,3] · B[3,2] + C[2] on `dev`; returns 1 if the answer is right. */
static int gemm_on_device(nnp_device* dev) {
  static const float a[6] = {1, 2, 3, 4, 5, 6};
  static const float b[6] = {7, 8, 9, 10, 11, 12};
  static const float c[2] = {0.5f, -1.0f};
  /* by hand: [1 2 3]·B = [58 64], [4 5 6]·B = [139 154]; plus C row */
  static const float expected[4] = {58.5f, 63.0f, 139.5f, 153.0f};
  float y[4] = {0, 0, 0, 0};
  int ok = 0;
  void *da = NULL, *db = NULL, *dc = NULL, *dy = NULL;
  nnp_stream* stream = NULL;
  DLDevice dl;
  TRY(nnp_device_get_dldevice(dev, &dl));
  TRY(nnp_malloc(dev, sizeof a, &da));
  TRY(nnp_malloc(dev, sizeof b, &db));
  TRY(nnp_malloc(dev, sizeof c, &dc));
  TRY(nnp_malloc(dev, sizeof y, &dy));
  TRY(nnp_memcpy(dev, da, NULL, a, sizeof a));
  TRY(nnp_memcpy(dev, db, NULL, b, sizeof b));
  TRY(nnp_memcpy(dev, dc, NULL, c, sizeof c));
  TRY(nnp_stream_create(dev, &stream));
  {
    int64_t sa[2] = {2, 3}, sb[2] = {3, 2}, sc[1] = {2}, sy[2] = {2, 2};
    const DLDataType f32 = {kDLFloat, 32, 1};
    DLTensor ta = {da, dl, 2, f32, sa, NULL, 0};
    DLTensor tb = {db, dl, 2, f32, sb, NULL, 0};
    DLTensor tc = {dc, dl, 1, f32, sc, NULL, 0};
    DLTensor ty = {dy, dl, 2, f32, sy, NULL, 0};
    nnp_gemm_params p = {sizeof p, 0, 0, 1.0, 1.0};
    TRY(nnp_gemm(stream, &p, &ta, &tb, &tc, &ty));
  }
  TRY(nnp_stream_synchronize(stream));
  TRY(nnp_memcpy(NULL, y, dev, dy, sizeof y));
  ok = 1;
  for (int i = 0; i < 4; ++i)
    if (fabsf(y[i] - expected[i]) > 1e-4f * fabsf(expected[i])) ok = 0;
  printf("    gemm: [[%g %g] [%g %g]] %s\n", y[0], y[1], y[2], y[3],
         ok ? "correct" : "WRONG (expected [[58.5 63] [139.5 153]])");
done:
  if (stream) CHECK(nnp_stream_destroy(stream));
  CHECK(nnp_free(dev, da));
  CHECK(nnp_free(dev, db));
  CHECK(nnp_free(dev, dc));
  CHECK(nnp_free(dev, dy));
  return ok;
}

int main(void) {
  int32_t major, minor, patch;
  nnp_get_version(&major, &minor, &patch);
  printf("nnplug %d.%d.%d (headers %s)\n", major, minor, patch, NNP_VERSION_STRING);

  /* Load records: every candidate plugin library and what happened to it. */
  CHECK(nnp_load_default_plugins());
  size_t n_records = 0;
  CHECK(nnp_get_load_records(NULL, &n_records));
  nnp_load_record* records = calloc(n_records ? n_records : 1, sizeof *records);
  if (!records) return 1;
  for (size_t i = 0; i < n_records; ++i) records[i].struct_size = sizeof *records;
  CHECK(nnp_get_load_records(records, &n_records));
  printf("%zu plugin candidate(s):\n", n_records);
  for (size_t i = 0; i < n_records; ++i)
    printf("  %-10s %-9s %d device(s)  %s%s%s\n", records[i].name, state_name(records[i].state),
           records[i].n_devices, records[i].path, records[i].reason[0] ? "\n             " : "",
           records[i].reason);
  free(records);

  /* Devices, and one GEMM on each. */
  size_t n_devices = 0;
  CHECK(nnp_get_devices(NULL, &n_devices));
  nnp_device** devices = calloc(n_devices ? n_devices : 1, sizeof *devices);
  if (!devices) return 1;
  CHECK(nnp_get_devices(devices, &n_devices));
  printf("%zu device(s):\n", n_devices);
  int worked = 0;
  for (size_t i = 0; i < n_devices; ++i) {
    nnp_device_props props = {.struct_size = sizeof props};
    CHECK(nnp_device_get_props(devices[i], &props));
    printf("  %-12s %s, %.1f GiB, %d thread(s)/SMs, auto priority %d\n", props.name,
           props.description, (double)props.memory_bytes / (1024.0 * 1024.0 * 1024.0),
           props.num_threads, props.auto_priority);
    worked += gemm_on_device(devices[i]);
  }
  free(devices);
  CHECK(nnp_shutdown());
  if (!worked) {
    fprintf(stderr, "hello: no device computed the GEMM correctly\n");
    return 1;
  }
  printf("%d of %zu device(s) OK\n", worked, n_devices);
  return 0;
}
