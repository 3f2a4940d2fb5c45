// mutant_plugin.cpp — deliberately broken plugins that prove the conformance runner catches
// bugs end to end (mutation testing of the runner). One host-memory device implementing
// NNP_OP_SCALE on float32 (where the bug lives) and, correctly, on float16 and bfloat16 (so the
// runner's half-precision path, checked against the reference in float32, is exercised too);
// compiled once per NNP_MUTANT_<KIND> (conformance/CMakeLists.txt):
//   none        correct: the runner must pass it (the control)
//   wrong       y = alpha * x * (1 + 1e-3): NMSE above the float32 threshold
//   nan         y[0] = NaN
//   skip_last   the last element is never written
//   oob_after   also writes one element past the end (guard after the tensor)
//   oob_before  also writes one element before the start (guard before the tensor)
//   clobber     writes into its input x
//   lies        says float64 is supported, then refuses to run it
//   touches     refuses float64 as it should, but writes into the output before refusing
// Built into the build tree's conformance/mutants folder, never the plugin folder, so default
// discovery never sees them. Never links libnnplug.
#include <nnplug/nnplug_plugin.h>

#include <nnplug/kit/half.hpp>
#include <nnplug/kit/plugin.hpp>
#include <nnplug/kit/tensor.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#ifndef NNP_MUTANT_NAME
#error "NNP_MUTANT_NAME must be defined (the <name> of libnnplug-<name>.so)"
#endif

namespace {

nnp_status get_device_count(int32_t* n, const char** reason) {
  *n = 1;
  *reason = nullptr;
  return NNP_STATUS_OK;
}
nnp_status get_device_props(int32_t index, nnp_device_props* props) {
  return nnp::guard([&] {
    if (index != 0) nnp::fail(NNP_STATUS_INVALID_ARGUMENT, "device index out of range");
    props->name = NNP_MUTANT_NAME ":0";
    props->plugin_name = NNP_MUTANT_NAME;
    props->description = "conformance mutant (host memory)";
    props->device_type = kDLCPU;
    props->device_id = 0;
    props->memory_bytes = 1u << 30;
    if (props->struct_size >= NNP_DEVICE_PROPS_STRUCT_SIZE_1_0) {
      props->auto_priority = -100;
      props->num_threads = 1;
    }
  });
}
nnp_status mem_alloc(int32_t, size_t size_bytes, void** ptr) {
  void* p = std::aligned_alloc(64, (size_bytes + 63) / 64 * 64);
  if (p == nullptr) return NNP_STATUS_OUT_OF_MEMORY;
  *ptr = p;
  return NNP_STATUS_OK;
}
nnp_status mem_free(int32_t, void* ptr) {
  std::free(ptr);
  return NNP_STATUS_OK;
}
int g_stream;  // synchronous: every stream is this token
nnp_status stream_create(int32_t, void** stream) {
  *stream = &g_stream;
  return NNP_STATUS_OK;
}
nnp_status stream_destroy(void*) { return NNP_STATUS_OK; }
nnp_status stream_synchronize(void*) { return NNP_STATUS_OK; }
nnp_status memcpy_async(void*, void* dst, const void* src, size_t size_bytes, int32_t) {
  std::memmove(dst, src, size_bytes);
  return NNP_STATUS_OK;
}

// Half-precision conversions, round to nearest even (finite values only: enough for scale).
using nnp::bf16_to_float;  // the kit's float16/bfloat16 codec
using nnp::float_to_bf16;
using nnp::float_to_half;
using nnp::half_to_float;

// Correct scale in a 16-bit float format.
template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void scale16(const DLTensor& x, const DLTensor& y, double alpha) {
  const uint16_t* src = nnp::data_ptr<uint16_t>(x);
  uint16_t* dst = nnp::data_ptr<uint16_t>(y);
  const int64_t n = nnp::numel(x);
  for (int64_t i = 0; i < n; ++i) dst[i] = Store(static_cast<float>(alpha * Load(src[i])));
}

bool claims(int32_t kind, const DLTensor& x) {
  if (kind != NNP_OP_SCALE) return false;
  if (nnp::is_f16(x.dtype) || nnp::is_bf16(x.dtype)) return true;
#if defined(NNP_MUTANT_LIES)
  return nnp::is_f32(x.dtype) || nnp::is_f64(x.dtype);
#else
  return nnp::is_f32(x.dtype);
#endif
}

nnp_status op_supported(int32_t, int32_t kind, const void*, size_t n_in, const DLTensor* const* in,
                        size_t, const DLTensor* const*) {
  return nnp::guard([&] {
    if (n_in < 1 || !in[0] || !claims(kind, *in[0]))
      nnp::unsupported("the mutant implements scale on float32, float16 and bfloat16 only");
  });
}

nnp_status op_execute(void*, int32_t kind, const void* params, size_t n_in,
                      const DLTensor* const* in, size_t, const DLTensor* const* out) {
  return nnp::guard([&] {
#if defined(NNP_MUTANT_TOUCHES)
    if (kind == NNP_OP_SCALE && nnp::is_f64(in[0]->dtype))  // writes, then refuses
      std::memset(nnp::data_ptr<char>(*out[0]), 0, sizeof(double));
#endif
    if (n_in < 1 || !in[0] || !claims(kind, *in[0]) || nnp::is_f64(in[0]->dtype))
      nnp::unsupported("the mutant implements scale on float32, float16 and bfloat16 only");
    const double alpha = static_cast<const nnp_scale_params*>(params)->alpha;
    if (nnp::is_f16(in[0]->dtype))
      return scale16<half_to_float, float_to_half>(*in[0], *out[0], alpha);
    if (nnp::is_bf16(in[0]->dtype))
      return scale16<bf16_to_float, float_to_bf16>(*in[0], *out[0], alpha);
    float* x = nnp::data_ptr<float>(*in[0]);
    float* y = nnp::data_ptr<float>(*out[0]);
    const int64_t n = nnp::numel(*in[0]);
    int64_t written = n;
#if defined(NNP_MUTANT_SKIP_LAST)
    written = n - 1;
#endif
    for (int64_t i = 0; i < written; ++i) {
      double v = alpha * x[i];
#if defined(NNP_MUTANT_WRONG)
      v *= 1 + 1e-3;
#endif
      y[i] = static_cast<float>(v);
    }
#if defined(NNP_MUTANT_NAN)
    if (n > 0) y[0] = std::numeric_limits<float>::quiet_NaN();
#elif defined(NNP_MUTANT_OOB_AFTER)
    y[n] = 1.0f;
#elif defined(NNP_MUTANT_OOB_BEFORE)
    y[-1] = 1.0f;
#elif defined(NNP_MUTANT_CLOBBER)
    if (n > 0 && x != y) x[0] = 0.0f;
#endif
  });
}

nnp_plugin_api make_table() {
  nnp_plugin_api t = nnp::kit::table(NNP_MUTANT_NAME, "0.0.1");
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
  return t;
}
const nnp_plugin_api kTable = make_table();

}  // namespace

NNP_PLUGIN_ENTRY nnp_status nnp_plugin_get_api(const nnp_host_api* host,
                                               const nnp_plugin_api** api) {
  return nnp::accept_host(host, &kTable, api);
}
