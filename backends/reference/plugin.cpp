// plugin.cpp — registration file of the reference backend (libnnplug-reference.so): the one
// device "reference:0" (host memory, single-threaded, synchronous streams, from the plugin
// kit's host-device helpers), and the kernel rows: which op kinds and dtypes it implements
// (every kind, float32 and float64; copy and transpose any dtype). The plugin kit serves
// op_supported and op_execute from these rows. Ops themselves live in one file per family
// (see reference.hpp), in the static library nnplug_reference_kernels.
#include "reference.hpp"

#include <nnplug/kit/host_device.hpp>
#include <nnplug/nnplug_version.h>

namespace {

using nnp::kit::f32;
using nnp::kit::f64;
using nnp::kit::op_call;
using nnp::kit::op_row;

constexpr int32_t kDeviceCount = 1;

void check_device(int32_t index) {
  if (index < 0 || index >= kDeviceCount)
    nnp::fail(
        NNP_STATUS_INVALID_ARGUMENT,
        nnp::format("device index %d out of range (the reference backend has 1 device)", index));
}

// cast converts between float32 and float64 only (the row lists both dtypes for x).
void check_cast(const op_call& c) {
  const DLDataType& y = c.out(0)->dtype;
  if (!nnp::is_f32(y) && !nnp::is_f64(y))
    nnp::unsupported(nnp::format("the reference backend implements float32 and float64 only; "
                                 "output 0 is %s (cast supports float32 <-> float64 only)",
                                 nnp::dtype_name(y).c_str()));
}

constexpr uint32_t kFloats = f32 | f64;

// clang-format off
const op_row kRows[] = {
    {NNP_OP_GEMM,                           kFloats,        ref::gemm},
    {NNP_OP_CONV2D_FORWARD,                 kFloats,        ref::conv2d_forward},
    {NNP_OP_CONV2D_BACKWARD_DATA,           kFloats,        ref::conv2d_backward_data},
    {NNP_OP_CONV2D_BACKWARD_FILTER,         kFloats,        ref::conv2d_backward_filter},
    {NNP_OP_CONV2D_BACKWARD_BIAS,           kFloats,        ref::conv2d_backward_bias},
    {NNP_OP_POOL2D_FORWARD,                 kFloats,        ref::pool2d_forward},
    {NNP_OP_POOL2D_BACKWARD,                kFloats,        ref::pool2d_backward},
    {NNP_OP_ACTIVATION_FORWARD,             kFloats,        ref::activation_forward},
    {NNP_OP_ACTIVATION_BACKWARD,            kFloats,        ref::activation_backward},
    {NNP_OP_SOFTMAX_FORWARD,                kFloats,        ref::softmax_forward},
    {NNP_OP_SOFTMAX_BACKWARD,               kFloats,        ref::softmax_backward},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD,  kFloats,        ref::softmax_cross_entropy_forward},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, kFloats,        ref::softmax_cross_entropy_backward},
    {NNP_OP_BATCH_NORM_FORWARD_TRAINING,    kFloats,        ref::batch_norm_forward_training},
    {NNP_OP_BATCH_NORM_FORWARD_INFERENCE,   kFloats,        ref::batch_norm_forward_inference},
    {NNP_OP_BATCH_NORM_BACKWARD,            kFloats,        ref::batch_norm_backward},
    {NNP_OP_LAYER_NORM_FORWARD,             kFloats,        ref::layer_norm_forward},
    {NNP_OP_LAYER_NORM_BACKWARD,            kFloats,        ref::layer_norm_backward},
    {NNP_OP_DROPOUT_FORWARD,                kFloats,        ref::dropout_forward},
    {NNP_OP_DROPOUT_BACKWARD,               kFloats,        ref::dropout_backward},
    {NNP_OP_BINARY,                         kFloats,        ref::binary},
    {NNP_OP_SCALE,                          kFloats,        ref::scale},
    {NNP_OP_FILL,                           kFloats,        ref::fill},
    {NNP_OP_COPY,                           nnp::kit::any,  ref::copy},
    {NNP_OP_TRANSPOSE,                      nnp::kit::any,  ref::transpose},
    {NNP_OP_CAST,                           kFloats,        ref::cast, check_cast},
    {NNP_OP_REDUCE,                         kFloats,        ref::reduce},
    {NNP_OP_SGD_UPDATE,                     kFloats,        ref::sgd_update},
    {NNP_OP_ADAM_UPDATE,                    kFloats,        ref::adam_update},
    {NNP_OP_CLIP,                           kFloats,        ref::clip},
};
// clang-format on
constexpr nnp::kit::op_rows kOps = nnp::kit::make_op_rows("reference", kRows, check_device);

// A stream of the reference device: ops run synchronously inside op_execute, so a stream
// only remembers its device.
struct stream {
  int32_t device;
};

// ---- table slots -----------------------------------------------------------------------------
nnp_status get_device_count(int32_t* n_devices, const char** reason) {
  return nnp::guard([&] {
    if (n_devices == nullptr) nnp::fail(NNP_STATUS_INVALID_ARGUMENT, "n_devices is NULL");
    *n_devices = kDeviceCount;
    if (reason != nullptr) *reason = nullptr;
  });
}

nnp_status get_device_props(int32_t index, nnp_device_props* props) {
  return nnp::guard([&] {
    check_device(index);
    if (props == nullptr) nnp::fail(NNP_STATUS_INVALID_ARGUMENT, "props is NULL");
    NNP_KIT_SET_PROP(props, name, "reference:0");
    NNP_KIT_SET_PROP(props, plugin_name, "reference");
    NNP_KIT_SET_PROP(props, description,
                     "nnplug reference backend (naive, single-threaded, float32/float64)");
    NNP_KIT_SET_PROP(props, device_type, static_cast<int32_t>(kDLCPU));
    NNP_KIT_SET_PROP(props, device_id, 0);
    NNP_KIT_SET_PROP(props, memory_bytes, nnp::kit::host_memory_bytes());
    NNP_KIT_SET_PROP(props, auto_priority, 0);
    NNP_KIT_SET_PROP(props, num_threads, 1);
  });
}

nnp_status mem_alloc(int32_t index, size_t size_bytes, void** ptr) {
  return nnp::guard([&] {
    check_device(index);
    if (ptr == nullptr) nnp::fail(NNP_STATUS_INVALID_ARGUMENT, "ptr is NULL");
    *ptr = nnp::kit::host_alloc(size_bytes, "reference");
  });
}

nnp_status mem_free(int32_t index, void* ptr) {
  return nnp::guard([&] {
    check_device(index);
    nnp::kit::host_free(ptr);
  });
}

nnp_status stream_create(int32_t index, void** out) {
  return nnp::guard([&] {
    check_device(index);
    if (out == nullptr) nnp::fail(NNP_STATUS_INVALID_ARGUMENT, "stream is NULL");
    *out = new stream{index};
  });
}

nnp_status stream_destroy(void* s) {
  return nnp::guard([&] { delete static_cast<stream*>(s); });
}

nnp_status stream_synchronize(void* s) {
  return nnp::guard([&] {
    if (s == nullptr) nnp::fail(NNP_STATUS_INVALID_ARGUMENT, "stream is NULL");
    // Every op already ran in op_execute: nothing is pending.
  });
}

nnp_status memcpy_async(void* s, void* dst, const void* src, size_t size_bytes, int32_t kind) {
  return nnp::guard([&] {
    if (s == nullptr) nnp::fail(NNP_STATUS_INVALID_ARGUMENT, "stream is NULL");
    nnp::kit::host_memcpy(dst, src, size_bytes, kind);
  });
}

nnp_status stream_set_attribute(void* s, int32_t attribute, int64_t value) {
  return nnp::guard([&] {
    if (s == nullptr) nnp::fail(NNP_STATUS_INVALID_ARGUMENT, "stream is NULL");
    if (attribute == NNP_STREAM_ATTR_ALLOW_TF32) {
      if (value != 0 && value != 1)
        nnp::fail(NNP_STATUS_INVALID_ARGUMENT,
                  nnp::format("ALLOW_TF32 takes 0 or 1, got %lld", static_cast<long long>(value)));
      return;  // no TF32 here: accepted and ignored, as the header says
    }
    nnp::unsupported(
        nnp::format("stream attribute %d is not known to the reference backend", attribute));
  });
}

nnp_plugin_api make_table() {
  nnp_plugin_api t = nnp::kit::table("reference", NNP_VERSION_STRING);
  t.get_device_count = get_device_count;
  t.get_device_props = get_device_props;
  t.mem_alloc = mem_alloc;
  t.mem_free = mem_free;
  t.stream_create = stream_create;
  t.stream_destroy = stream_destroy;
  t.stream_synchronize = stream_synchronize;
  t.memcpy_async = memcpy_async;
  t.op_supported = nnp::kit::op_supported_slot<kOps>;
  t.op_execute = nnp::kit::op_execute_slot<kOps>;
  t.stream_set_attribute = stream_set_attribute;
  return t;
}

const nnp_plugin_api kTable = make_table();

}  // namespace

NNP_PLUGIN_ENTRY nnp_status nnp_plugin_get_api(const nnp_host_api* host,
                                               const nnp_plugin_api** api) {
  return nnp::accept_host(host, &kTable, api);
}
