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
#include <nnplug/kit/host_plugin.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#ifndef NNP_MUTANT_NAME
#error "NNP_MUTANT_NAME must be defined (the <name> of libnnplug-<name>.so)"
#endif

namespace {

// Correct scale in a 16-bit float format (the kit's float16/bfloat16 codec).
template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void scale16(const DLTensor& x, const DLTensor& y, double alpha) {
  const uint16_t* src = nnp::data_ptr<uint16_t>(x);
  uint16_t* dst = nnp::data_ptr<uint16_t>(y);
  const int64_t n = nnp::numel(x);
  for (int64_t i = 0; i < n; ++i) dst[i] = Store(static_cast<float>(alpha * Load(src[i])));
}

void scale(const nnp::kit::op_call& c) {
  const DLTensor& X = *c.in(0);
  const DLTensor& Y = *c.out(0);
  if (nnp::is_f64(X.dtype))  // mutant "lies": its row claims float64
    nnp::unsupported("the mutant implements scale on float32, float16 and bfloat16 only");
  const double alpha = c.params_as<nnp_scale_params>().alpha;
  if (nnp::is_f16(X.dtype)) return scale16<nnp::half_to_float, nnp::float_to_half>(X, Y, alpha);
  if (nnp::is_bf16(X.dtype)) return scale16<nnp::bf16_to_float, nnp::float_to_bf16>(X, Y, alpha);
  float* x = nnp::data_ptr<float>(X);
  float* y = nnp::data_ptr<float>(Y);
  const int64_t n = nnp::numel(X);
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
}

using nnp::kit::bf16;
using nnp::kit::f16;
using nnp::kit::f32;
using nnp::kit::f64;
#if defined(NNP_MUTANT_LIES)
constexpr uint32_t kScaleTypes = f32 | f16 | bf16 | f64;
#else
constexpr uint32_t kScaleTypes = f32 | f16 | bf16;
#endif
const nnp::kit::op_row kRows[] = {{NNP_OP_SCALE, kScaleTypes, scale}};

constexpr nnp::kit::host_backend kBackend = [] {
  nnp::kit::host_backend b = nnp::kit::host_backend_of(NNP_MUTANT_NAME, "0.0.1", kRows,
                                                       "conformance mutant (host memory)");
  b.auto_priority = -100;
  b.memory_bytes = uint64_t{1} << 30;
  return b;
}();

#if defined(NNP_MUTANT_TOUCHES)
// Refuses float64 as it should, but writes into the output before refusing.
nnp_status touching_execute(void* stream, int32_t kind, const void* params, size_t n_in,
                            const DLTensor* const* in, size_t n_out, const DLTensor* const* out) {
  if (kind == NNP_OP_SCALE && n_in > 0 && n_out > 0 && nnp::is_f64(in[0]->dtype))
    std::memset(nnp::data_ptr<char>(*out[0]), 0, sizeof(double));
  return nnp::kit::op_execute_slot<nnp::kit::host_slots::kOps<kBackend>>(stream, kind, params, n_in,
                                                                         in, n_out, out);
}
#endif

nnp_plugin_api make_table() {
  nnp_plugin_api t = nnp::kit::host_plugin_table<kBackend>();
#if defined(NNP_MUTANT_TOUCHES)
  t.op_execute = touching_execute;
#endif
  return t;
}
const nnp_plugin_api kTable = make_table();

}  // namespace

NNP_KIT_PLUGIN_ENTRY(kTable)
