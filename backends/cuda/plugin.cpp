// plugin.cpp — registration file of the CUDA backend (libnnplug-cuda.so): the nnp_plugin_api
// table, devices "cuda:<i>" (auto_priority 200), memory from a per-device pool, CUDA streams, and
// the kernel rows: which op kinds and dtypes it implements, each row naming the family function
// (one file per family) that runs it. The plugin kit serves op_supported and op_execute from these
// rows. Speed comes from the families: cuBLAS GEMM, cuDNN convolution, own fused CUDA kernels.
#include "ops.hpp"

#include <nnplug/nnplug_version.h>

namespace nnp::cuda {
namespace {

constexpr int32_t kAutoPriority = 200;

stream* as_stream(void* s) {
  if (s == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "stream is NULL");
  return static_cast<stream*>(s);
}

void check_device(int32_t index) {
  const auto& reg = devices();
  if (index < 0 || static_cast<size_t>(index) >= reg.devices.size())
    fail(NNP_STATUS_INVALID_ARGUMENT,
         format("device index %d out of range (the cuda backend has %zu device(s))", index,
                reg.devices.size()));
}

// ---- what is implemented ------------------------------------------------------------------------
// Each family file ends with the rows of the ops it implements (which kinds, which dtypes, its
// entry point run on the call's stream by on_stream, ops.hpp, and an optional row check); the
// plugin kit serves op_supported and op_execute from them.
// clang-format off
const kit::op_row_list* const kFamilies[] = {
    &kGemmRows,
    &kConvRows,
    &kPoolRows,
    &kActivationRows,
    &kSoftmaxRows,
    &kNormRows,
    &kDropoutRows,
    &kElementwiseRows,
    &kReduceRows,
    &kOptimRows,
    &kAttentionRows,
    &kDataRows,
    &kUnaryRows,
    &kLossRows,
};
// clang-format on
constexpr nnp::kit::op_rows kOps = nnp::kit::make_op_rows("cuda", kFamilies, check_device);

// ---- slots --------------------------------------------------------------------------------------
nnp_status get_device_count(int32_t* n_devices, const char** reason) {
  return guard([&] {
    if (n_devices == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "n_devices is NULL");
    const auto& reg = devices();
    *n_devices = static_cast<int32_t>(reg.devices.size());
    if (reason != nullptr) *reason = reg.devices.empty() ? reg.reason.c_str() : nullptr;
  });
}

nnp_status get_device_props(int32_t index, nnp_device_props* props) {
  return guard([&] {
    if (props == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "props is NULL");
    check_device(index);
    const device_info& d = devices().devices[static_cast<size_t>(index)];
    NNP_KIT_SET_PROP(props, name, d.name.c_str());
    NNP_KIT_SET_PROP(props, plugin_name, "cuda");
    NNP_KIT_SET_PROP(props, description, d.description.c_str());
    NNP_KIT_SET_PROP(props, device_type, static_cast<int32_t>(kDLCUDA));
    NNP_KIT_SET_PROP(props, device_id, index);
    NNP_KIT_SET_PROP(props, memory_bytes, d.memory_bytes);
    NNP_KIT_SET_PROP(props, auto_priority, kAutoPriority);
    NNP_KIT_SET_PROP(props, num_threads, d.multiprocessors);
  });
}

nnp_status mem_alloc(int32_t index, size_t size_bytes, void** ptr) {
  return guard([&] {
    if (ptr == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "ptr is NULL");
    use_device(index);
    *ptr = device_alloc(index, size_bytes == 0 ? 1 : size_bytes);  // 256-byte aligned
  });
}

nnp_status mem_free(int32_t index, void* ptr) {
  return guard([&] {
    use_device(index);
    device_free(index, ptr);
  });
}

nnp_status stream_create(int32_t index, void** out) {
  return guard([&] {
    if (out == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "stream is NULL");
    *out = create_stream(index);
  });
}

nnp_status stream_destroy(void* handle) {
  return guard([&] {
    stream* s = as_stream(handle);
    struct deleter {
      stream* s;
      ~deleter() { delete s; }
    } d{s};
    s->destroy();
  });
}

nnp_status stream_synchronize(void* handle) {
  return guard([&] {
    stream* s = as_stream(handle);
    use_device(s->device);
    // Also reports the errors kernels found in the values they read (an invalid step input):
    // INVALID_ARGUMENT with the cpu backend's message (context.hpp, kernel_error_record).
    s->synchronize();
  });
}

nnp_status memcpy_async(void* handle, void* dst, const void* src, size_t size_bytes, int32_t kind) {
  return guard([&] {
    stream* s = as_stream(handle);
    if (size_bytes == 0) return;
    use_device(s->device);
    s->memcpy_async(dst, src, size_bytes, kind);
  });
}

nnp_status stream_set_attribute(void* handle, int32_t attribute, int64_t value) {
  return guard([&] {
    stream* s = as_stream(handle);
    switch (attribute) {
      case NNP_STREAM_ATTR_ALLOW_TF32:
        if (value != 0 && value != 1)
          fail(NNP_STATUS_INVALID_ARGUMENT,
               format("NNP_STREAM_ATTR_ALLOW_TF32 takes 0 or 1, got %lld",
                      static_cast<long long>(value)));
        use_device(s->device);
        s->set_allow_tf32(value != 0);
        return;
      default:
        unsupported(
            format("stream attribute %d is not implemented by the cuda backend", attribute));
    }
  });
}

// The stream's cudaStream_t, for communication plugins that queue on it (NCCL). The device is
// made current, as NCCL calls on that stream expect.
nnp_status stream_get_native(void* handle, void** native) {
  return guard([&] {
    stream* s = as_stream(handle);
    if (native == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "native is NULL");
    use_device(s->device);
    *native = s->handle;
  });
}

// Graphs (ABI 1.4): native stream capture (context.cpp, docs/cuda-backend.md "Graphs").
nnp_status stream_begin_capture(void* handle) {
  return guard([&] {
    stream* s = as_stream(handle);
    use_device(s->device);
    s->begin_capture();
  });
}

nnp_status stream_end_capture(void* handle, void** graph) {
  return guard([&] {
    stream* s = as_stream(handle);
    use_device(s->device);
    stream::graph* g = s->end_capture();
    if (graph == nullptr) {
      destroy_graph(g);
      fail(NNP_STATUS_INVALID_ARGUMENT, "graph is NULL");
    }
    *graph = g;
  });
}

nnp_status graph_launch(void* graph, void* handle) {
  return guard([&] {
    stream* s = as_stream(handle);
    if (graph == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "graph is NULL");
    use_device(s->device);
    launch_graph(*static_cast<const stream::graph*>(graph), *s);
  });
}

nnp_status graph_destroy(void* graph) {
  return guard([&] {
    if (graph != nullptr) destroy_graph(static_cast<stream::graph*>(graph));
  });
}

// libnnplug has released every stream and allocation: the pools hand their cached memory back to
// the driver. The plugin itself stays mapped (-z nodelete, docs/cuda-backend.md), and so do the
// CUDA runtime's state, cuBLAS and cuDNN; a later load finds them as they were.
void plugin_shutdown() { trim_device_pools(); }

nnp_plugin_api make_table() {
  nnp_plugin_api t = nnp::kit::table("cuda", NNP_VERSION_STRING);
  // initialize: none, nothing to do; device discovery happens on first query.
  t.shutdown = plugin_shutdown;
  t.get_device_count = get_device_count;
  t.get_device_props = get_device_props;
  nnp::kit::set_memory_slots(t, mem_alloc, mem_free, stream_create, stream_destroy,
                             stream_synchronize, memcpy_async);
  t.op_supported = nnp::kit::op_supported_slot<kOps>;
  t.op_execute = nnp::kit::op_execute_slot<kOps>;
  t.stream_set_attribute = stream_set_attribute;
  t.stream_get_native = stream_get_native;
  nnp::kit::set_graph_slots(t, stream_begin_capture, stream_end_capture, graph_launch,
                            graph_destroy);
  return t;
}

const nnp_plugin_api kTable = make_table();

}  // namespace
}  // namespace nnp::cuda

NNP_KIT_PLUGIN_ENTRY(nnp::cuda::kTable)
