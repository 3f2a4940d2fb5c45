// plugin.cpp — registration file of the reference backend (libnnplug-reference.so): the
// nnp_plugin_api table, the one device "reference:0" (host memory, single-threaded), 64-byte
// aligned host allocations, trivial synchronous streams, and the op dispatch by kind.
// Ops themselves live in one file per family (see reference.hpp).
#include "reference.hpp"

#include <nnplug_common/op_kinds.hpp>

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace {

constexpr int32_t kDeviceCount = 1;
constexpr size_t kAlignment = 64;

// A stream of the reference device: ops run synchronously inside op_execute, so a stream
// only remembers its device.
struct stream {
  int32_t device;
};

void check_device(int32_t index) {
  if (index < 0 || index >= kDeviceCount)
    nnp::fail(
        NNP_STATUS_INVALID_ARGUMENT,
        nnp::format("device index %d out of range (the reference backend has 1 device)", index));
}

uint64_t host_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

// Writes props->field = value only if the caller's struct is large enough to hold it.
#define NNP_REF_SET_PROP(props, field, value)                                               \
  do {                                                                                      \
    if ((props)->struct_size >= offsetof(nnp_device_props, field) + sizeof((props)->field)) \
      (props)->field = (value);                                                             \
  } while (0)

// ---- op support ------------------------------------------------------------------------------
// Throws UNSUPPORTED (touching nothing) unless op_execute can run this validated call.
// The reference implements every op kind for float32 and float64 (int64 labels, uint8 masks);
// COPY and TRANSPOSE move elements without arithmetic and so accept any dtype.
void check_supported(int32_t kind, const ref::op_args& a) {
  if (!nnp::is_known_op_kind(kind))
    nnp::unsupported(nnp::format("op kind %d is not implemented by the reference backend", kind));
  if (kind == NNP_OP_COPY || kind == NNP_OP_TRANSPOSE) return;
  auto check = [&](const DLTensor* t, const char* role, size_t i) {
    if (t == nullptr) return;
    const bool is_float = t->dtype.code == kDLFloat || t->dtype.code == kDLBfloat;
    if (is_float && !nnp::is_f32(t->dtype) && !nnp::is_f64(t->dtype))
      nnp::unsupported(
          nnp::format("the reference backend implements float32 and float64 only; %s %zu is %s%s",
                      role, i, nnp::dtype_name(t->dtype).c_str(),
                      kind == NNP_OP_CAST ? " (cast supports float32 <-> float64 only)" : ""));
  };
  for (size_t i = 0; i < a.n_inputs; ++i) check(a.inputs[i], "input", i);
  for (size_t i = 0; i < a.n_outputs; ++i) check(a.outputs[i], "output", i);
}

void execute(int32_t kind, const ref::op_args& a) {
  switch (kind) {
    case NNP_OP_GEMM:
      return ref::gemm(a);
    case NNP_OP_CONV2D_FORWARD:
      return ref::conv2d_forward(a);
    case NNP_OP_CONV2D_BACKWARD_DATA:
      return ref::conv2d_backward_data(a);
    case NNP_OP_CONV2D_BACKWARD_FILTER:
      return ref::conv2d_backward_filter(a);
    case NNP_OP_CONV2D_BACKWARD_BIAS:
      return ref::conv2d_backward_bias(a);
    case NNP_OP_POOL2D_FORWARD:
      return ref::pool2d_forward(a);
    case NNP_OP_POOL2D_BACKWARD:
      return ref::pool2d_backward(a);
    case NNP_OP_ACTIVATION_FORWARD:
      return ref::activation_forward(a);
    case NNP_OP_ACTIVATION_BACKWARD:
      return ref::activation_backward(a);
    case NNP_OP_SOFTMAX_FORWARD:
      return ref::softmax_forward(a);
    case NNP_OP_SOFTMAX_BACKWARD:
      return ref::softmax_backward(a);
    case NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD:
      return ref::softmax_cross_entropy_forward(a);
    case NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD:
      return ref::softmax_cross_entropy_backward(a);
    case NNP_OP_BATCH_NORM_FORWARD_TRAINING:
      return ref::batch_norm_forward_training(a);
    case NNP_OP_BATCH_NORM_FORWARD_INFERENCE:
      return ref::batch_norm_forward_inference(a);
    case NNP_OP_BATCH_NORM_BACKWARD:
      return ref::batch_norm_backward(a);
    case NNP_OP_LAYER_NORM_FORWARD:
      return ref::layer_norm_forward(a);
    case NNP_OP_LAYER_NORM_BACKWARD:
      return ref::layer_norm_backward(a);
    case NNP_OP_DROPOUT_FORWARD:
      return ref::dropout_forward(a);
    case NNP_OP_DROPOUT_BACKWARD:
      return ref::dropout_backward(a);
    case NNP_OP_BINARY:
      return ref::binary(a);
    case NNP_OP_SCALE:
      return ref::scale(a);
    case NNP_OP_FILL:
      return ref::fill(a);
    case NNP_OP_COPY:
      return ref::copy(a);
    case NNP_OP_TRANSPOSE:
      return ref::transpose(a);
    case NNP_OP_CAST:
      return ref::cast(a);
    case NNP_OP_REDUCE:
      return ref::reduce(a);
    case NNP_OP_SGD_UPDATE:
      return ref::sgd_update(a);
    case NNP_OP_ADAM_UPDATE:
      return ref::adam_update(a);
    default:
      nnp::unsupported(nnp::format("op kind %d is not implemented by the reference backend", kind));
  }
}

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
    NNP_REF_SET_PROP(props, name, "reference:0");
    NNP_REF_SET_PROP(props, plugin_name, "reference");
    NNP_REF_SET_PROP(props, description,
                     "nnplug reference backend (naive, single-threaded, float32/float64)");
    NNP_REF_SET_PROP(props, device_type, static_cast<int32_t>(kDLCPU));
    NNP_REF_SET_PROP(props, device_id, 0);
    NNP_REF_SET_PROP(props, memory_bytes, host_memory_bytes());
    NNP_REF_SET_PROP(props, auto_priority, 0);
    NNP_REF_SET_PROP(props, num_threads, 1);
  });
}

nnp_status mem_alloc(int32_t index, size_t size_bytes, void** ptr) {
  return nnp::guard([&] {
    check_device(index);
    if (ptr == nullptr) nnp::fail(NNP_STATUS_INVALID_ARGUMENT, "ptr is NULL");
    // aligned_alloc needs a size that is a multiple of the alignment.
    const size_t rounded = (size_bytes + kAlignment - 1) / kAlignment * kAlignment;
    if (rounded < size_bytes)
      nnp::fail(NNP_STATUS_OUT_OF_MEMORY, nnp::format("cannot allocate %zu bytes", size_bytes));
    void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
    if (p == nullptr)
      nnp::fail(NNP_STATUS_OUT_OF_MEMORY,
                nnp::format("host allocation of %zu bytes failed", size_bytes));
    *ptr = p;
  });
}

nnp_status mem_free(int32_t index, void* ptr) {
  return nnp::guard([&] {
    check_device(index);
    std::free(ptr);
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
    if (kind != NNP_MEMCPY_HOST_TO_DEVICE && kind != NNP_MEMCPY_DEVICE_TO_HOST &&
        kind != NNP_MEMCPY_DEVICE_TO_DEVICE)
      nnp::fail(NNP_STATUS_INVALID_ARGUMENT, nnp::format("unknown memcpy kind %d", kind));
    if (size_bytes == 0) return;
    if (dst == nullptr || src == nullptr)
      nnp::fail(NNP_STATUS_INVALID_ARGUMENT, "memcpy with a NULL pointer");
    // Host memory on both sides: a plain copy (memmove tolerates overlap).
    std::memmove(dst, src, size_bytes);
  });
}

nnp_status op_supported(int32_t index, int32_t op_kind, const void* params, size_t n_inputs,
                        const DLTensor* const* inputs, size_t n_outputs,
                        const DLTensor* const* outputs) {
  return nnp::guard([&] {
    check_device(index);
    check_supported(op_kind, ref::op_args{params, n_inputs, inputs, n_outputs, outputs});
  });
}

nnp_status op_execute(void* s, int32_t op_kind, const void* params, size_t n_inputs,
                      const DLTensor* const* inputs, size_t n_outputs,
                      const DLTensor* const* outputs) {
  return nnp::guard([&] {
    if (s == nullptr) nnp::fail(NNP_STATUS_INVALID_ARGUMENT, "stream is NULL");
    const ref::op_args a{params, n_inputs, inputs, n_outputs, outputs};
    check_supported(op_kind, a);
    execute(op_kind, a);
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
  nnp_plugin_api t{};
  t.struct_size = sizeof(nnp_plugin_api);
  t.abi_version_major = NNP_ABI_VERSION_MAJOR;
  t.abi_version_minor = NNP_ABI_VERSION_MINOR;
  t.name = "reference";
  t.version = "0.1.0";
  t.initialize = nullptr;
  t.shutdown = nullptr;
  t.get_device_count = get_device_count;
  t.get_device_props = get_device_props;
  t.mem_alloc = mem_alloc;
  t.mem_free = mem_free;
  t.stream_create = stream_create;
  t.stream_destroy = stream_destroy;
  t.stream_synchronize = stream_synchronize;
  t.memcpy_async = memcpy_async;
  t.op_supported = op_supported;
  t.op_execute = op_execute;
  t.stream_set_attribute = stream_set_attribute;
  return t;
}

const nnp_plugin_api kTable = make_table();

}  // namespace

NNP_PLUGIN_ENTRY nnp_status nnp_plugin_get_api(const nnp_host_api* host,
                                               const nnp_plugin_api** api) {
  return nnp::accept_host(host, &kTable, api);
}
