// op_call.hpp — one op call through the public API, for the conformance suite and the fuzzer.
//
// The repository has one op-call type: the plugin kit's nnp::kit::op_call
// (<nnplug/kit/plugin.hpp>): an op kind, its params and the input and output tensor arrays, as
// nnp_op_execute, nnp_op_supported and nnp_op_infer_shapes take them (non-owning: the arrays,
// tensors and params belong to whoever made the view and must outlive it). A plugin's kernels
// receive it; the test programs make one per call they run, from their descriptions of calls:
//   conf::call_spec     (conformance/harness.hpp) operands as host values that follow a case's
//                       dtype; run_op binds it to guarded device buffers (conf::raw_call);
//   fuzz::call_desc     (fuzz/call_desc.hpp) adversarial tensor descriptions decoded from fuzz
//                       bytes; bind() makes the buffers (fuzz bound_call).
// The bindings (raw_call, bound_call) own what their view() points to; the descriptions are not
// calls by themselves.
#pragma once

#include <nnplug/kit/plugin.hpp>
#include <nnplug/nnplug.h>

namespace conf {

// nnp_op_execute on `stream` with the call's kind, params and tensors (the call's stream and
// device fields are a plugin's and are not used). Returns nnp_op_execute's status.
inline nnp_status execute(nnp_stream* stream, const nnp::kit::op_call& c) {
  return nnp_op_execute(stream, c.kind, c.params, c.n_inputs, c.inputs, c.n_outputs, c.outputs);
}

// nnp_op_supported on `device`. Returns its status.
inline nnp_status supported(const nnp_device* device, const nnp::kit::op_call& c) {
  return nnp_op_supported(device, c.kind, c.params, c.n_inputs, c.inputs, c.n_outputs, c.outputs);
}

// nnp_op_infer_shapes into out_shapes (c.n_outputs entries; the outputs' descriptions are not
// read). Returns its status.
inline nnp_status infer_shapes(const nnp::kit::op_call& c, nnp_shape* out_shapes) {
  return nnp_op_infer_shapes(c.kind, c.params, c.n_inputs, c.inputs, c.n_outputs, out_shapes);
}

// The view of a call made of these parts (stream nullptr, device -1).
inline nnp::kit::op_call make_op_call(int32_t kind, const void* params, size_t n_inputs,
                                      const DLTensor* const* inputs, size_t n_outputs,
                                      const DLTensor* const* outputs) {
  return nnp::kit::op_call{kind, params, n_inputs, inputs, n_outputs, outputs, nullptr, -1};
}

}  // namespace conf
