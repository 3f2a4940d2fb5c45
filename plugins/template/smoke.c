/*
 * smoke.c — a consumer of the installed nnplug package: loads a template plugin by path,
 * fills a tensor on its device and scales it, checks every status and every value.
 * Usage: template_smoke <path to libnnplug-NAME.so> NAME   (NAME: template or template_kit)
 */
#include <nnplug/nnplug.h>

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                        \
  do {                                                                     \
    nnp_status s_ = (call);                                                \
    if (s_ != NNP_STATUS_OK) {                                             \
      fprintf(stderr, "%s failed: %s: %s\n", #call, nnp_status_string(s_), \
              nnp_last_error_message());                                   \
      return 1;                                                            \
    }                                                                      \
  } while (0)

int main(int argc, char** argv) {
  nnp_device* device = NULL;
  nnp_stream* stream = NULL;
  nnp_fill_params fill = {sizeof(nnp_fill_params), 1.5};
  nnp_scale_params scale = {sizeof(nnp_scale_params), -2.0};
  float data[6];
  int64_t shape[2] = {2, 3};
  DLTensor t;
  int i;
  if (argc != 3) {
    fprintf(stderr, "usage: %s <libnnplug-NAME.so> NAME\n", argv[0]);
    return 2;
  }
  CHECK(nnp_load_plugin(argv[1], NULL));
  CHECK(nnp_get_device(argv[2], &device));
  CHECK(nnp_stream_create(device, &stream));
  t.data = data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = 2;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  t.strides = NULL;
  t.byte_offset = 0;
  CHECK(nnp_fill(stream, &fill, &t));
  CHECK(nnp_scale(stream, &scale, &t, &t));
  CHECK(nnp_stream_synchronize(stream));
  for (i = 0; i < 6; ++i) {
    if (data[i] != -3.0f) {
      fprintf(stderr, "element %d: expected -3, got %g\n", i, (double)data[i]);
      return 1;
    }
  }
  if (nnp_op_supported(device, NNP_OP_GEMM, NULL, 0, NULL, 0, NULL) == NNP_STATUS_OK) {
    fprintf(stderr, "gemm must not be reported as supported by the %s plugin\n", argv[2]);
    return 1;
  }
  CHECK(nnp_stream_destroy(stream));
  CHECK(nnp_shutdown());
  printf("%s plugin: fill and scale OK (nnplug %s)\n", argv[2], nnp_version_string());
  return 0;
}
