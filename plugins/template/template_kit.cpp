// template_kit.cpp — the template plugin again, in C++ with the plugin kit (nnplug::plugin_sdk):
// the same device and ops as template_plugin.c (NNP_OP_FILL and NNP_OP_SCALE on float32, one
// host-memory device) in a fraction of the code. Start here when your plugin is C++.
//
// What the kit does for you (nnplug/kit/*.hpp):
//  - host_plugin.hpp fills every slot of the function table for a host-memory device with
//    synchronous streams (allocation, streams, copies, device properties);
//  - plugin.hpp serves op_supported and op_execute from kernel rows {kind, dtypes, kernel}:
//    a kind or dtype without a row is UNSUPPORTED in both, with the reason;
//  - every slot runs inside nnp::guard, so a kernel reports failure by throwing nnp::error
//    (nnp::fail, nnp::unsupported) and no exception crosses the C boundary;
//  - op_call::params_as<P>() reads the caller's params struct whatever its struct_size.
// libnnplug validates every call (counts, shapes, dtypes, params ranges) before it reaches a
// kernel, so a kernel only does its own work. A discrete device fills its slots itself
// (nnp::kit::table) and keeps the same rows.
#include <nnplug/kit/host_plugin.hpp>

namespace {

// y = value, every element.
void fill(const nnp::kit::op_call& c) {
  const float value = static_cast<float>(c.params_as<nnp_fill_params>().value);
  float* y = nnp::data_ptr<float>(*c.out(0));
  const int64_t n = nnp::numel(*c.out(0));
  for (int64_t i = 0; i < n; ++i) y[i] = value;
}

// y = alpha * x; y may be x itself (element by element is safe).
void scale(const nnp::kit::op_call& c) {
  const float alpha = static_cast<float>(c.params_as<nnp_scale_params>().alpha);
  const float* x = nnp::data_ptr<const float>(*c.in(0));
  float* y = nnp::data_ptr<float>(*c.out(0));
  const int64_t n = nnp::numel(*c.out(0));
  for (int64_t i = 0; i < n; ++i) y[i] = alpha * x[i];
}

const nnp::kit::op_row kRows[] = {
    {NNP_OP_FILL, nnp::kit::f32, fill},
    {NNP_OP_SCALE, nnp::kit::f32, scale},
};

constexpr nnp::kit::host_backend kBackend = [] {
  nnp::kit::host_backend b = nnp::kit::host_backend_of(
      "template_kit", "0.1.0", kRows, "nnplug template plugin, C++ kit (fill and scale, float32)");
  b.auto_priority = -1;  // never chosen by "auto"
  return b;
}();

const nnp_plugin_api kTable = nnp::kit::host_plugin_table<kBackend>();

}  // namespace

NNP_KIT_PLUGIN_ENTRY(kTable)
