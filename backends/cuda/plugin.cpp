// plugin.cpp — registration file of the CUDA backend (libnnplug-cuda.so): the nnp_plugin_api
// table, devices "cuda:<i>" (auto_priority 200), memory from a per-device pool, CUDA streams, and
// the kernel rows: which op kinds and dtypes it implements, each row naming the family function
// (one file per family) that runs it. The plugin kit serves op_supported and op_execute from these
// rows. Speed comes from the families: cuBLAS GEMM, cuDNN convolution, own fused CUDA kernels.
#include "ops.hpp"

#include <nnplug/nnplug_version.h>

namespace nnp::cuda {
namespace {

using nnp::kit::any;
using nnp::kit::bf16;
using nnp::kit::f16;
using nnp::kit::f32;
using nnp::kit::op_row;

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
// What cudaPointerGetAttributes says a pointer is, for messages.
const char* memory_type_name(cudaMemoryType type) {
  switch (type) {
    case cudaMemoryTypeUnregistered:
      return "unregistered host memory";
    case cudaMemoryTypeHost:
      return "pinned host memory";
    case cudaMemoryTypeDevice:
      return "device memory";
    case cudaMemoryTypeManaged:
      return "managed memory";
  }
  return "unknown memory";
}

// libnnplug checked that every tensor is labelled with the stream's device (kDLCUDA, its index);
// a kernel given host memory so labelled would fault and poison the CUDA context (a sticky
// error), so the data pointers are checked too: device memory of the stream's device, or
// managed memory (any device may access it). Pointers once found good are cached in the stream
// until memory of its device is freed (stream::known_device_pointer): in the steady state a
// tensor costs one hash lookup. Tensors without elements (whose data may be NULL) are skipped.
void check_tensor_memory(stream& s, const DLTensor* t, const char* role, size_t index) {
  if (t == nullptr || t->data == nullptr || numel(*t) == 0) return;
  const void* p = t->data;
  if (s.known_device_pointer(p)) return;
  cudaPointerAttributes attr{};
  const cudaError_t e = cudaPointerGetAttributes(&attr, p);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // CUDA < 11 refused host pointers with an error
    attr.type = cudaMemoryTypeUnregistered;
  }
  const bool ok = (attr.type == cudaMemoryTypeDevice && attr.device == s.device) ||
                  attr.type == cudaMemoryTypeManaged;
  if (!ok) {
    std::string what = memory_type_name(attr.type);
    if (attr.type == cudaMemoryTypeDevice) what += format(" of cuda:%d", attr.device);
    fail(NNP_STATUS_INVALID_ARGUMENT,
         format("%s %zu: data %p is not memory of cuda:%d (cudaPointerGetAttributes says %s)", role,
                index, const_cast<void*>(p), s.device, what.c_str()));
  }
  s.remember_device_pointer(p);
}

// The row kernel of a family: runs `family` on the call's stream (op_execute's c.stream), with
// the stream's device current, once every tensor's data is known to be memory of that device.
template <void (*family)(stream&, const op_call&)>
void on_stream(const op_call& c) {
  stream& s = *static_cast<stream*>(c.stream);
  use_device(s.device);
  for (size_t i = 0; i < c.n_inputs; ++i) check_tensor_memory(s, c.in(i), "input", i);
  for (size_t i = 0; i < c.n_outputs; ++i) check_tensor_memory(s, c.out(i), "output", i);
  family(s, c);
}

// fill and cast: every operand is a floating-point tensor (the row matches the first one only).
void check_float_operands(const op_call& c) {
  for (size_t i = 0; i < c.n_inputs + c.n_outputs; ++i) {
    const DLTensor* t = i < c.n_inputs ? c.in(i) : c.out(i - c.n_inputs);
    if (t != nullptr && !is_float_dtype(t->dtype))
      unsupported(format("dtype %s is not implemented by the cuda backend for this op",
                         dtype_name(t->dtype).c_str()));
  }
}

// copy and transpose move elements of 1, 2, 4 or 8 bytes (one lane).
void check_element_size(const op_call& c) {
  const DLTensor* x = c.in(0);
  if (x == nullptr) return;
  const int bits = x->dtype.bits;
  if (x->dtype.lanes != 1 || (bits != 8 && bits != 16 && bits != 32 && bits != 64))
    unsupported(
        format("dtype %s is not implemented by the cuda backend for this op "
               "(implemented: any 1-, 2-, 4- or 8-byte dtype)",
               dtype_name(x->dtype).c_str()));
}

// gemm: cuBLAS's 32-bit sizes (C broadcasts into Y in every ONNX unidirectional form).
void check_gemm(const op_call& c) { check_gemm_limits(c); }

// binary: add, sub, mul, div (ABI 1.0) and pow (ABI 1.2); later ops are not implemented.
void check_binary(const op_call& c) {
  const int32_t op = c.params_as<nnp_binary_params>().op;
  if (op < NNP_BINARY_ADD || op > NNP_BINARY_POW)
    unsupported(
        format("binary op %d is not implemented by the cuda backend (implemented: ADD, "
               "SUB, MUL, DIV, POW)",
               op));
}

// reduce: sum, mean, max (ABI 1.0), min, l2, l1, sum_square, log_sum_exp (ABI 1.2); later ops
// are not implemented.
void check_reduce(const op_call& c) {
  const int32_t op = c.params_as<nnp_reduce_params>().op;
  if (op < NNP_REDUCE_SUM || op > NNP_REDUCE_LOG_SUM_EXP)
    unsupported(
        format("reduce op %d is not implemented by the cuda backend (implemented: SUM, "
               "MEAN, MAX, MIN, L2, L1, SUM_SQUARE, LOG_SUM_EXP)",
               op));
}

constexpr uint32_t kHalfFloats = f32 | f16 | bf16;  // float32 and the 16-bit floats
constexpr uint32_t kAllFloats = nnp::kit::all_floats;

// clang-format off
const op_row kRows[] = {
    {NNP_OP_GEMM,                           kHalfFloats, on_stream<op_gemm>,      check_gemm},
    {NNP_OP_CONV2D_FORWARD,                 kHalfFloats, on_stream<op_conv2d_forward>},
    {NNP_OP_CONV2D_BACKWARD_DATA,           kHalfFloats, on_stream<op_conv2d_backward_data>},
    {NNP_OP_CONV2D_BACKWARD_FILTER,         kHalfFloats, on_stream<op_conv2d_backward_filter>},
    {NNP_OP_CONV2D_BACKWARD_BIAS,           kHalfFloats, on_stream<op_conv_backward_bias>},
    {NNP_OP_POOL2D_FORWARD,                 kHalfFloats, on_stream<op_pool2d_forward>},
    {NNP_OP_POOL2D_BACKWARD,                kHalfFloats, on_stream<op_pool2d_backward>},
    {NNP_OP_ACTIVATION_FORWARD,             kHalfFloats, on_stream<op_activation_forward>},
    {NNP_OP_ACTIVATION_BACKWARD,            kHalfFloats, on_stream<op_activation_backward>},
    {NNP_OP_SOFTMAX_FORWARD,                kHalfFloats, on_stream<op_softmax_forward>},
    {NNP_OP_SOFTMAX_BACKWARD,               kHalfFloats, on_stream<op_softmax_backward>},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD,  f32,         on_stream<op_softmax_cross_entropy_forward>},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD, f32,         on_stream<op_softmax_cross_entropy_backward>},
    {NNP_OP_BATCH_NORM_FORWARD_TRAINING,    f32,         on_stream<op_batch_norm_forward_training>},
    {NNP_OP_BATCH_NORM_FORWARD_INFERENCE,   f32,         on_stream<op_batch_norm_forward_inference>},
    {NNP_OP_BATCH_NORM_BACKWARD,            f32,         on_stream<op_batch_norm_backward>},
    {NNP_OP_LAYER_NORM_FORWARD,             f32,         on_stream<op_layer_norm_forward>},
    {NNP_OP_LAYER_NORM_BACKWARD,            f32,         on_stream<op_layer_norm_backward>},
    {NNP_OP_DROPOUT_FORWARD,                kHalfFloats, on_stream<op_dropout_forward>},
    {NNP_OP_DROPOUT_BACKWARD,               kHalfFloats, on_stream<op_dropout_backward>},
    {NNP_OP_BINARY,                         kHalfFloats, on_stream<op_binary>,    check_binary},
    {NNP_OP_SCALE,                          kHalfFloats, on_stream<op_scale>},
    {NNP_OP_FILL,                           kAllFloats,  on_stream<op_fill>,      check_float_operands},
    {NNP_OP_COPY,                           any,         on_stream<op_copy>,      check_element_size},
    {NNP_OP_TRANSPOSE,                      any,         on_stream<op_transpose>, check_element_size},
    {NNP_OP_GATHER,                         any,         on_stream<op_gather>,    check_element_size},
    {NNP_OP_CAST,                           kAllFloats,  on_stream<op_cast>,      check_float_operands},
    {NNP_OP_REDUCE,                         kHalfFloats, on_stream<op_reduce>,    check_reduce},
    {NNP_OP_SGD_UPDATE,                     f32,         on_stream<op_sgd>},
    {NNP_OP_ADAM_UPDATE,                    f32,         on_stream<op_adam>},
    {NNP_OP_CLIP,                           kHalfFloats, on_stream<op_clip>},
    {NNP_OP_ATTENTION_FORWARD,              f32,         on_stream<op_attention_forward>,  check_attention_forward_limits},
    {NNP_OP_ATTENTION_BACKWARD,             f32,         on_stream<op_attention_backward>, check_attention_backward_limits},
    {NNP_OP_MATMUL,                         kHalfFloats, on_stream<op_matmul>, check_matmul},
    {NNP_OP_CONV_FORWARD,                   kHalfFloats, on_stream<op_conv_forward>},
    {NNP_OP_CONV_BACKWARD_DATA,             kHalfFloats, on_stream<op_conv_backward_data>},
    {NNP_OP_CONV_BACKWARD_FILTER,           kHalfFloats, on_stream<op_conv_backward_filter>},
    {NNP_OP_CONV_BACKWARD_BIAS,             kHalfFloats, on_stream<op_conv_backward_bias>},
    {NNP_OP_CONV_TRANSPOSE_FORWARD,         kHalfFloats, on_stream<op_conv_transpose_forward>},
    {NNP_OP_CONV_TRANSPOSE_BACKWARD_DATA,   kHalfFloats, on_stream<op_conv_transpose_backward_data>},
    {NNP_OP_CONV_TRANSPOSE_BACKWARD_FILTER, kHalfFloats, on_stream<op_conv_transpose_backward_filter>},
    {NNP_OP_POOL_FORWARD,                   kHalfFloats, on_stream<op_pool_forward>},
    {NNP_OP_POOL_BACKWARD,                  kHalfFloats, on_stream<op_pool_backward>},
    {NNP_OP_CONCAT,                         any,         on_stream<op_concat>,   check_element_size},
    {NNP_OP_SPLIT,                          any,         on_stream<op_split>,    check_element_size},
    {NNP_OP_SLICE,                          any,         on_stream<op_slice>,    check_element_size},
    {NNP_OP_SLICE_BACKWARD,                 any,         on_stream<op_slice_backward>, check_element_size},
    {NNP_OP_GATHER_BACKWARD,                kAllFloats,  on_stream<op_gather_backward>},
    {NNP_OP_WHERE,                          kAllFloats,  on_stream<op_where>},
    {NNP_OP_UNARY_FORWARD,                  kHalfFloats, on_stream<op_unary_forward>},
    {NNP_OP_UNARY_BACKWARD,                 kHalfFloats, on_stream<op_unary_backward>},
    {NNP_OP_NLL_LOSS_FORWARD,               f32,         on_stream<op_nll_loss_forward>},
    {NNP_OP_NLL_LOSS_BACKWARD,              f32,         on_stream<op_nll_loss_backward>},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_FORWARD,  f32,    on_stream<op_sce_loss_forward>},
    {NNP_OP_SOFTMAX_CROSS_ENTROPY_LOSS_BACKWARD, f32,    on_stream<op_sce_loss_backward>},
};
// clang-format on
constexpr nnp::kit::op_rows kOps = nnp::kit::make_op_rows("cuda", kRows, check_device);

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
  t.stream_begin_capture = stream_begin_capture;
  t.stream_end_capture = stream_end_capture;
  t.graph_launch = graph_launch;
  t.graph_destroy = graph_destroy;
  return t;
}

const nnp_plugin_api kTable = make_table();

}  // namespace
}  // namespace nnp::cuda

NNP_KIT_PLUGIN_ENTRY(nnp::cuda::kTable)
