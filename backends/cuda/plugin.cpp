// plugin.cpp — registration file of the CUDA backend (libnnplug-cuda.so): the nnp_plugin_api
// table, devices "cuda:<i>" (auto_priority 200), cudaMalloc'd memory, CUDA streams, the dtype
// support table (op_supported) and the dispatch of op kinds to one file per family.
// Speed comes from the families: cuBLAS GEMM, cuDNN convolution, own fused CUDA kernels.
#include "ops.hpp"

#include <cstring>

namespace nnp::cuda {
namespace {

constexpr int32_t kAutoPriority = 200;

#define NNP_CUDA_SET_PROP(props, field, value)                                              \
  do {                                                                                      \
    if ((props)->struct_size >= offsetof(nnp_device_props, field) + sizeof((props)->field)) \
      (props)->field = (value);                                                             \
  } while (0)

stream* as_stream(void* s) {
  if (s == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "stream is NULL");
  return static_cast<stream*>(s);
}

// ---- what is implemented ------------------------------------------------------------------------
// The floating-point dtype of a call: the first float operand (labels are int64, masks uint8).
const DLTensor* first_float_operand(const op_call& c) {
  for (size_t i = 0; i < c.n_in; ++i)
    if (c.in[i] != nullptr && is_float_dtype(c.in[i]->dtype)) return c.in[i];
  for (size_t i = 0; i < c.n_out; ++i)
    if (c.out[i] != nullptr && is_float_dtype(c.out[i]->dtype)) return c.out[i];
  return nullptr;
}

enum class dtypes { f32, f32_f16_bf16, any_float, any };

bool known_kind(int32_t kind, dtypes* allowed) {
  switch (kind) {
    case NNP_OP_GEMM:
    case NNP_OP_CONV2D_FORWARD:
    case NNP_OP_CONV2D_BACKWARD_DATA:
    case NNP_OP_CONV2D_BACKWARD_FILTER:
    case NNP_OP_CONV2D_BACKWARD_BIAS:
    case NNP_OP_POOL2D_FORWARD:
    case NNP_OP_POOL2D_BACKWARD:
    case NNP_OP_ACTIVATION_FORWARD:
    case NNP_OP_ACTIVATION_BACKWARD:
    case NNP_OP_SOFTMAX_FORWARD:
    case NNP_OP_SOFTMAX_BACKWARD:
    case NNP_OP_DROPOUT_FORWARD:
    case NNP_OP_DROPOUT_BACKWARD:
    case NNP_OP_BINARY:
    case NNP_OP_SCALE:
    case NNP_OP_REDUCE:
      *allowed = dtypes::f32_f16_bf16;
      return true;
    case NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD:
    case NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD:
    case NNP_OP_BATCH_NORM_FORWARD_TRAINING:
    case NNP_OP_BATCH_NORM_FORWARD_INFERENCE:
    case NNP_OP_BATCH_NORM_BACKWARD:
    case NNP_OP_LAYER_NORM_FORWARD:
    case NNP_OP_LAYER_NORM_BACKWARD:
    case NNP_OP_SGD_UPDATE:
    case NNP_OP_ADAM_UPDATE:
      *allowed = dtypes::f32;
      return true;
    case NNP_OP_FILL:
    case NNP_OP_CAST:
      *allowed = dtypes::any_float;
      return true;
    case NNP_OP_COPY:
    case NNP_OP_TRANSPOSE:
      *allowed = dtypes::any;
      return true;
    default:
      return false;
  }
}

// Throws UNSUPPORTED with the reason if this backend does not implement the call.
void check_supported(const op_call& c) {
  dtypes allowed;
  if (!known_kind(c.kind, &allowed))
    unsupported(format("op kind %d is not implemented by the cuda backend", c.kind));
  if (allowed == dtypes::any) {
    const DLTensor* x = c.input(0);
    if (x != nullptr) {
      const int bits = x->dtype.bits;
      if (x->dtype.lanes != 1 || (bits != 8 && bits != 16 && bits != 32 && bits != 64))
        unsupported(format("dtype %s is not implemented by the cuda backend for this op",
                           dtype_name(x->dtype).c_str()));
    }
    return;
  }
  if (allowed == dtypes::any_float) {
    for (size_t i = 0; i < c.n_in; ++i)
      if (c.in[i] != nullptr && !is_float_dtype(c.in[i]->dtype))
        unsupported(format("dtype %s is not implemented by the cuda backend for this op",
                           dtype_name(c.in[i]->dtype).c_str()));
    for (size_t i = 0; i < c.n_out; ++i)
      if (c.out[i] != nullptr && !is_float_dtype(c.out[i]->dtype))
        unsupported(format("dtype %s is not implemented by the cuda backend for this op",
                           dtype_name(c.out[i]->dtype).c_str()));
    return;
  }
  const DLTensor* t = first_float_operand(c);
  if (t == nullptr) unsupported("no floating-point operand");
  const DLDataType d = t->dtype;
  const bool ok = allowed == dtypes::f32 ? is_f32(d) : (is_f32(d) || is_f16(d) || is_bf16(d));
  if (!ok)
    unsupported(format(
        "dtype %s is not implemented by the cuda backend for this op "
        "(implemented: %s)",
        dtype_name(d).c_str(), allowed == dtypes::f32 ? "float32" : "float32, float16, bfloat16"));
}

void execute(stream& s, const op_call& c) {
  switch (c.kind) {
    case NNP_OP_GEMM:
      return op_gemm(s, c);
    case NNP_OP_CONV2D_FORWARD:
    case NNP_OP_CONV2D_BACKWARD_DATA:
    case NNP_OP_CONV2D_BACKWARD_FILTER:
    case NNP_OP_CONV2D_BACKWARD_BIAS:
      return op_conv2d(s, c);
    case NNP_OP_POOL2D_FORWARD:
    case NNP_OP_POOL2D_BACKWARD:
      return op_pool2d(s, c);
    case NNP_OP_ACTIVATION_FORWARD:
    case NNP_OP_ACTIVATION_BACKWARD:
      return op_activation(s, c);
    case NNP_OP_SOFTMAX_FORWARD:
    case NNP_OP_SOFTMAX_BACKWARD:
      return op_softmax(s, c);
    case NNP_OP_SOFTMAX_CROSS_ENTROPY_FORWARD:
    case NNP_OP_SOFTMAX_CROSS_ENTROPY_BACKWARD:
      return op_cross_entropy(s, c);
    case NNP_OP_BATCH_NORM_FORWARD_TRAINING:
    case NNP_OP_BATCH_NORM_FORWARD_INFERENCE:
    case NNP_OP_BATCH_NORM_BACKWARD:
      return op_batch_norm(s, c);
    case NNP_OP_LAYER_NORM_FORWARD:
    case NNP_OP_LAYER_NORM_BACKWARD:
      return op_layer_norm(s, c);
    case NNP_OP_DROPOUT_FORWARD:
    case NNP_OP_DROPOUT_BACKWARD:
      return op_dropout(s, c);
    case NNP_OP_BINARY:
      return op_binary(s, c);
    case NNP_OP_SCALE:
      return op_scale(s, c);
    case NNP_OP_FILL:
      return op_fill(s, c);
    case NNP_OP_COPY:
      return op_copy(s, c);
    case NNP_OP_TRANSPOSE:
      return op_transpose(s, c);
    case NNP_OP_CAST:
      return op_cast(s, c);
    case NNP_OP_REDUCE:
      return op_reduce(s, c);
    case NNP_OP_SGD_UPDATE:
      return op_sgd(s, c);
    case NNP_OP_ADAM_UPDATE:
      return op_adam(s, c);
    default:
      unsupported(format("op kind %d is not implemented by the cuda backend", c.kind));
  }
}

// ---- slots --------------------------------------------------------------------------------------
nnp_status get_device_count(int32_t* n_devices, const char** reason) {
  return guard([&] {
    if (n_devices == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "n_devices is NULL");
    const auto& reg = devices();
    *n_devices = static_cast<int32_t>(reg.devices.size());
    if (reason != nullptr) *reason = reg.devices.empty() ? reg.reason : nullptr;
  });
}

nnp_status get_device_props(int32_t index, nnp_device_props* props) {
  return guard([&] {
    if (props == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "props is NULL");
    const auto& reg = devices();
    if (index < 0 || static_cast<size_t>(index) >= reg.devices.size())
      fail(NNP_STATUS_INVALID_ARGUMENT,
           format("device index %d out of range (the cuda backend has %zu device(s))", index,
                  reg.devices.size()));
    const device_info& d = reg.devices[static_cast<size_t>(index)];
    NNP_CUDA_SET_PROP(props, name, d.name.c_str());
    NNP_CUDA_SET_PROP(props, plugin_name, "cuda");
    NNP_CUDA_SET_PROP(props, description, d.description.c_str());
    NNP_CUDA_SET_PROP(props, device_type, static_cast<int32_t>(kDLCUDA));
    NNP_CUDA_SET_PROP(props, device_id, index);
    NNP_CUDA_SET_PROP(props, memory_bytes, d.memory_bytes);
    NNP_CUDA_SET_PROP(props, auto_priority, kAutoPriority);
    NNP_CUDA_SET_PROP(props, num_threads, d.multiprocessors);
  });
}

nnp_status mem_alloc(int32_t index, size_t size_bytes, void** ptr) {
  return guard([&] {
    if (ptr == nullptr) fail(NNP_STATUS_INVALID_ARGUMENT, "ptr is NULL");
    use_device(index);
    void* p = nullptr;
    NNP_CUDA_CHECK(cudaMalloc(&p, size_bytes == 0 ? 1 : size_bytes));  // 256-byte aligned
    *ptr = p;
  });
}

nnp_status mem_free(int32_t index, void* ptr) {
  return guard([&] {
    use_device(index);
    NNP_CUDA_CHECK(cudaFree(ptr));
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
    NNP_CUDA_CHECK(cudaStreamSynchronize(s->handle));
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

nnp_status op_supported(int32_t index, int32_t op_kind, const void* params, size_t n_inputs,
                        const DLTensor* const* inputs, size_t n_outputs,
                        const DLTensor* const* outputs) {
  return guard([&] {
    const auto& reg = devices();
    if (index < 0 || static_cast<size_t>(index) >= reg.devices.size())
      fail(NNP_STATUS_INVALID_ARGUMENT, format("device index %d out of range", index));
    check_supported(op_call{op_kind, params, n_inputs, inputs, n_outputs, outputs});
  });
}

nnp_status op_execute(void* handle, int32_t op_kind, const void* params, size_t n_inputs,
                      const DLTensor* const* inputs, size_t n_outputs,
                      const DLTensor* const* outputs) {
  return guard([&] {
    stream* s = as_stream(handle);
    const op_call c{op_kind, params, n_inputs, inputs, n_outputs, outputs};
    check_supported(c);
    use_device(s->device);
    execute(*s, c);
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

void plugin_shutdown() {}

const nnp_plugin_api kApi = {
    sizeof(nnp_plugin_api),
    NNP_ABI_VERSION_MAJOR,
    NNP_ABI_VERSION_MINOR,
    "cuda",
    "0.1.0",
    nullptr,  // initialize: nothing to do; device discovery happens on first query
    plugin_shutdown,
    get_device_count,
    get_device_props,
    mem_alloc,
    mem_free,
    stream_create,
    stream_destroy,
    stream_synchronize,
    memcpy_async,
    op_supported,
    op_execute,
    stream_set_attribute,
};

}  // namespace
}  // namespace nnp::cuda

NNP_PLUGIN_ENTRY nnp_status nnp_plugin_get_api(const nnp_host_api* host,
                                               const nnp_plugin_api** api) {
  return nnp::accept_host(host, &nnp::cuda::kApi, api);
}
